"""The PDF checks read LaTeX logs as intended (the full PDF builds are in test_pdf.py)."""

import pytest
from pdf_checks import log_problems


@pytest.mark.parametrize("log, found", [
    ("Overfull \\hbox (5.1234pt too wide) in paragraph at lines 10--12\n", 1),
    ("Overfull \\hbox (1.5pt too wide) in paragraph at lines 10--12\n", 0),
    ("Missing character: There is no ✗ (U+2717) in font FreeSerif!\n", 1),
    # One problem per character, however many fonts and places the log names it in.
    (("Missing character: There is no 你 (U+4F60) in font FreeSerif/OT:script=latn;lang\n"
      "Missing character: There is no 你 (U+4F60) in font DejaVu Sans Mono/OT:script=la\n"
      "Missing character: There is no 🙂 (U+1F642) in font FreeSerif/OT:script=latn;lan\n"), 2),
    ("Underfull \\hbox (badness 10000) in paragraph\n", 0),
    # A letter in math (TeX's math font) and the same in text: two problems, two fixes.
    (("Missing character: There is no α (U+03B1) in font cmmi10!\n"
      "Missing character: There is no α (U+03B1) in font FreeSerif/OT:script=latn;lang\n"), 2),
])
def test_log_problems(tmp_path, log, found):
    path = tmp_path / "book.log"
    path.write_text(log)
    assert len(log_problems(path)) == found


def test_without_tex_the_pdf_build_stops_with_one_line_naming_the_packages(tmp_path):
    import os
    import subprocess
    import sys

    from conftest import ROOT
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "build_pdf.py"), "student",
                           "--build", str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, "PATH": str(tmp_path)})
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "lualatex" in done.stderr and "make pdf-deps" in done.stderr
    assert "texlive-luatex" in done.stderr


def test_a_problem_is_located_in_the_chapter_file_whose_part_of_the_tex_it_is(tmp_path):
    from pdf_checks import locate_chapters

    tex = tmp_path / "book.tex"
    tex.write_text("\\begin{document}\n\\label{\\detokenize{index::doc}}\ncontents\n"
                   # Sphinx puts a section's label first on the same line.
                   "\\label{\\detokenize{pt01:intro}}\\label{\\detokenize{pt01::doc}}\nline\nline\n"
                   "\\label{\\detokenize{museum::doc}}\nline\n")
    log = tmp_path / "book.log"
    log.write_text("Overfull \\hbox (9.0pt too wide) in paragraph at lines 5--6\n"
                   "Overfull \\hbox (9.0pt too wide) in paragraph at lines 9--9\n"
                   "Overfull \\hbox (9.0pt too wide) in paragraph at lines 1--1\n"
                   # A box of its own, as a display equation too wide: one line.
                   "Overfull \\hbox (9.0pt too wide) detected at line 6\n")
    located = locate_chapters(log_problems(log), tmp_path / "book.pdf", tmp_path / "book.aux",
                              tex, lambda doc: f"book/{doc}.md")
    assert [problem.chapter for problem in located] == ["book/pt01.md", "book/museum.md", "",
                                                        "book/pt01.md"]
    assert str(located[0]).startswith("book/pt01.md: book.log: Overfull")


def test_a_font_not_installed_stops_the_pdf_build_with_one_line_naming_its_package(tmp_path):
    """fontconfig lists only the serif font (a stand-in fc-list first on PATH): the build stops
    before Sphinx runs, naming each missing font, its package and `make pdf-deps`."""
    import os
    import shutil
    import subprocess
    import sys

    from conftest import ROOT
    from coursebook.render.pdf_fonts import FONTS, SERIF
    if shutil.which("lualatex") is None:
        pytest.skip("TeX is not installed (make pdf-deps)")
    fc_list = tmp_path / "fc-list"
    fc_list.write_text(f"#!/bin/sh\necho '{SERIF.family}'\n")
    fc_list.chmod(0o755)
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "build_pdf.py"), "student",
                           "--build", str(tmp_path)], check=False, capture_output=True,
                          text=True, env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"})
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "make pdf-deps" in done.stderr, done.stderr
    assert all(f"{font.family} ({font.package})" in done.stderr for font in FONTS if font != SERIF)
    assert not (tmp_path / "student").exists()
