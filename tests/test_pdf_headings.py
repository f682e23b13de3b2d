"""One numbering of headings: the chapters' own, in the PDF as on the HTML pages."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_sphinx, sphinx_command
from coursebook.render.pdf_fonts import ENGINE

SECTION = "5. Classification uses the same steps"
# What LaTeX would print in front of it in the book's first chapter, had it numbered too.
DOUBLE = re.compile(r"\b1\.1\s+" + re.escape(SECTION))
CLASS_DEFAULT = 2  # sphinxmanual.cls numbers down to subsections


def _latex(tmp_path: Path, *options: str) -> Path:
    """The LaTeX of a one-chapter book with a self-numbered section, built with conf.py."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "index.md").write_text("# Book\n\n```{toctree}\nchapter\n```\n", encoding="utf8")
    (source / "chapter.md").write_text(
        f"# PT00: A chapter\n\nText.\n\n## {SECTION}\n\nMore text.\n", encoding="utf8")
    out = tmp_path / "latex"
    done = run_sphinx([*sphinx_command(source, out, tmp_path / "doctrees", builder="latex",
                                       strict=False, jobs=None, settings={
                                           "nb_execution_cache_path": str(tmp_path / "cache")}),
                       "-q", *options])
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def effective_secnumdepth(tex: str) -> int:
    """The section depth LaTeX numbers: the last setting before the document begins."""
    preamble = tex.split(r"\begin{document}")[0]
    settings = re.findall(r"\\setcounter\{secnumdepth\}\{(-?\d+)\}", preamble)
    return int(settings[-1]) if settings else CLASS_DEFAULT


@pytest.mark.slow  # a LaTeX build, then TeX
@pytest.mark.parametrize("options, doubled", [((), False),
                                              (("-D", "latex_elements.secnumdepth="), True)])
def test_the_typeset_heading_carries_one_number(tmp_path, options, doubled):
    """LaTeX numbers no heading of its own (the book's setting); without the setting it
    would number sections twice."""
    latex = _latex(tmp_path, *options)
    tex = (latex / "deep-learning-labs.tex").read_text(encoding="utf8")
    assert effective_secnumdepth(tex) == (CLASS_DEFAULT if doubled else -1)
    assert SECTION in tex
    if shutil.which(ENGINE) is None or shutil.which("pdftotext") is None:
        pytest.skip("TeX or poppler is not installed (make pdf-deps)")
    # conf.py's latex_engine, once: a heading's number is set on its page in the first pass
    # (later passes add the contents, where a doubled number would show again).
    subprocess.run([ENGINE, "-interaction=nonstopmode", "-halt-on-error",
                    "deep-learning-labs.tex"], cwd=latex, capture_output=True, check=True)
    text = subprocess.run(["pdftotext", "-layout", str(latex / "deep-learning-labs.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    assert SECTION in " ".join(text.split())
    assert bool(DOUBLE.search(" ".join(text.split()))) == doubled
