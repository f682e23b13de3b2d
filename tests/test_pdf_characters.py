"""Any character a chapter prints reaches the PDF: CJK, emoji and mathematical symbols
print through the fallback fonts, in the book and in its handouts; a character no font
of the PDF has stops it with one message naming the chapter file, the line, the cell and
the character. Fast tests locate a character on made-up files; slow ones build PDFs (each
typeset once: --single-pass), of one tiny book that also has a word too long for any line, its
answers untagged and every LaTeX special in its title: each problem is named at its place, the
characters a font has and the title print in the PDF that failed, and the answer audit finds
the answers in it."""

from __future__ import annotations

import pickle
import shutil
import subprocess
from pathlib import Path

import pytest
from docutils import nodes
from docutils.utils import new_document
from pdf_checks import Problem, locate_characters
from test_handouts import build_handouts, pdf_text
from test_pdf import build_pdf

from conftest import TINY_BOOK, tiny_book_with_an_overflow
from coursebook.audit.answer_leaks import audit_build, chapter_fingerprints

PRINTED = "✓ done — 你好 🙂 α∇∑"
# Supplementary Private Use Area-B: no installed font has it (the test checks).
NO_FONT_HAS = 0x10FFFD
ACCEPT = "-Dcoursebook_accept_outputs=1"  # the planted cell's output is new


def with_cell(chapter: Path, prose: str, code: str) -> Path:
    """The chapter with a paragraph and a cell added before its worked example."""
    chapter.write_text(chapter.read_text(encoding="utf8").replace(
        "A worked example",
        f"{prose}\n\n```{{code-cell}} ipython3\n{code}\n```\n\nA worked example"),
        encoding="utf8")
    return chapter


def tiny_book_with(tmp_path: Path, prose: str, code: str) -> Path:
    """A copy of the tiny book with a paragraph and a cell added; its chapter file."""
    source = tmp_path / "src"
    shutil.copytree(TINY_BOOK, source)
    return with_cell(source / "chapter.md", prose, code)


# --- Fast: a character is found where it is printed ---------------------------------------

def _locate(tmp_path: Path, character: str, prose: str, code: str, output: str) -> Problem:
    """Where locate_characters puts ``character`` in a tiny book whose added cell printed
    ``output`` (its doctree made here, with the parts myst-nb gives a code cell)."""
    chapter = tiny_book_with(tmp_path, prose, code)
    document = new_document("chapter.md")
    cell = nodes.container(nb_element="cell_code")
    # The author's line of the cell, as the build leaves it on the node (myst-nb's, put back
    # at the author's by coursebook's doctree-read).
    cell.line = chapter.read_text(encoding="utf8").splitlines().index(code) + 1
    cell += nodes.container("", nodes.literal_block(code, code), nb_element="cell_code_source")
    cell += nodes.container("", nodes.literal_block(output, output), nb_element="cell_code_output")
    document += cell
    doctrees = tmp_path / "doctrees"
    doctrees.mkdir()
    (doctrees / "chapter.doctree").write_bytes(pickle.dumps(document))
    tex = tmp_path / "book.tex"
    tex.write_text("\\label{\\detokenize{chapter::doc}}\n" + output, encoding="utf8")
    [problem] = locate_characters([Problem("book.log: no font has it", character=character)],
                                  None, lambda doc: chapter.parent / f"{doc}.md", doctrees, tex)
    return problem


def test_a_character_only_an_output_holds_is_named_at_its_cell(tmp_path):
    code = "print(chr(0x10fffd))"
    problem = _locate(tmp_path, chr(NO_FONT_HAS), "Plain prose.", code, chr(NO_FONT_HAS))
    line = (tmp_path / "src" / "chapter.md").read_text(encoding="utf8").splitlines().index(code)
    assert problem.chapter.endswith(f"chapter.md:{line + 1}"), problem
    assert f"the output of the cell `{code}` holds '{chr(NO_FONT_HAS)}' (U+10FFFD" in problem.what


def test_a_character_the_source_holds_is_named_at_its_line(tmp_path):
    problem = _locate(tmp_path, "你", "Prose: 你.", "print(1)", "1")
    line = (tmp_path / "src" / "chapter.md").read_text(encoding="utf8").splitlines().index(
        "Prose: 你.")
    assert problem.chapter.endswith(f"chapter.md:{line + 1}"), problem
    assert "the chapter's text holds '你' (U+4F60 CJK UNIFIED IDEOGRAPH-4F60)" in problem.what
    assert "fc-list ':charset=4f60' family" in problem.what


def test_a_character_found_only_in_the_latex_names_its_chapter(tmp_path):
    chapter = tiny_book_with(tmp_path, "Plain prose.", "print(1)")
    tex = tmp_path / "book.tex"
    tex.write_text("title\n\\label{\\detokenize{chapter::doc}}\n你\n", encoding="utf8")
    [problem] = locate_characters([Problem("no font has it", character="你")], None,
                                  lambda doc: chapter.parent / f"{doc}.md", tmp_path, tex)
    assert problem.chapter.endswith("chapter.md"), problem
    assert "a part the build adds holds '你'" in problem.what


def test_an_overfull_box_is_named_at_the_heading_of_its_section(tmp_path):
    """mrdbourke's fundamentals has two tables wider than the page: `make pdf` named each by its
    chapter file and a line of the .tex ('Overfull \\hbox (11.18pt too wide) in paragraph at
    lines 4863--4863'), not where the author looks. Now the heading of its section."""
    document = new_document("chapter.md")
    section = nodes.section(ids=["getting-a-gpu"])
    section += nodes.title("", "Getting a GPU")
    section[0].line = 12
    document += section
    (tmp_path / "chapter.doctree").write_bytes(pickle.dumps(document))
    tex = tmp_path / "book.tex"
    tex.write_text("\\label{\\detokenize{chapter::doc}}\nIntro.\n\\section{Getting a GPU}"
                   "\\label{\\detokenize{chapter:getting-a-gpu}}\n\\begin{tabulary}\n",
                   encoding="utf8")
    overfull = [Problem("book.log: Overfull \\hbox (21pt too wide) in paragraph at lines "
                        f"{line}--{line}", tex_line=line, chapter="book/chapter.md")
                for line in (4, 2)]
    table, intro = locate_characters(overfull, None, lambda doc: tmp_path / f"{doc}.md",
                                     tmp_path, tex)
    assert str(table).startswith("book/chapter.md:12: book.log: Overfull"), table
    assert table.what.endswith("(in the section from this line: a table, code or a word "
                               "wider than the page)"), table
    assert intro == overfull[1]  # before any heading of its document: the file alone


def test_a_chapter_in_a_folder_is_found_by_its_labels_and_its_doctree(tmp_path):
    """A chapter in a folder (`part/ch`): where it starts and where its section starts are
    read by one label pattern, its box's line and its cell's output by one doctree reader
    (HR's F19: two of each)."""
    from pdf_checks import locate_chapters

    document = new_document("part/ch.md")
    document += nodes.section("", nodes.title("", "Wide"), ids=["wide"])
    document[0][0].line = 7
    document += nodes.container("", nodes.container("", nodes.Text("你"),
                                                    nb_element="cell_code_output"),
                                nb_element="cell_code")
    document[1].line = 9
    (tmp_path / "part").mkdir()
    (tmp_path / "part" / "ch.doctree").write_bytes(pickle.dumps(document))
    tex = tmp_path / "book.tex"
    tex.write_text("\\label{\\detokenize{part/ch::doc}}\n\\section{Wide}"
                   "\\label{\\detokenize{part/ch:wide}}\nbox\n", encoding="utf8")
    [box] = locate_chapters([Problem("Overfull", tex_line=3)], tmp_path / "book.pdf",
                            tmp_path / "book.aux", tex, lambda doc: f"book/{doc}.md")
    box, character = locate_characters([box, Problem("no font has it", character="你")], None,
                                       lambda doc: tmp_path / f"{doc}.md", tmp_path, tex)
    assert str(box).startswith("book/part/ch.md:7: Overfull"), box
    assert character.chapter.endswith("part/ch.md:9"), character


def test_a_letter_in_math_is_told_to_be_written_as_its_latex_command(tmp_path):
    """QuantEcon's lecture-jax writes `$$ s = 0.2, \\quad α = 0.5 $$`: lualatex found no α in
    cmmi10 (TeX's math font, whatever the text fonts), and the build said no font of the PDF
    had it and to install one, though DejaVu Sans has it. A letter in math is told apart."""
    from pdf_checks import log_problems

    chapter = tiny_book_with(tmp_path, "$$\ns = 0.2, \\quad α = 0.5, δ ≤ 1\n$$", "print(1)")
    log = tmp_path / "book.log"
    log.write_text("Missing character: There is no α (U+03B1) in font cmmi10!\n"
                   "Missing character: There is no δ (U+03B4) in font cmmi10!\n"
                   "Missing character: There is no ✗ (U+2717) in font name:DejaVuSans;!\n")
    tex = tmp_path / "book.tex"
    tex.write_text("\\label{\\detokenize{chapter::doc}}\n", encoding="utf8")
    math, text = locate_characters(log_problems(log), None,
                                   lambda doc: chapter.parent / f"{doc}.md", tmp_path, tex)
    lines = chapter.read_text(encoding="utf8").splitlines()
    line = lines.index("s = 0.2, \\quad α = 0.5, δ ≤ 1") + 1
    assert math.chapter.endswith(f"chapter.md:{line}"), math
    assert math.what == ("the chapter's text holds 'α' (U+03B1 GREEK SMALL LETTER ALPHA), 'δ' "
                         "(U+03B4 GREEK SMALL LETTER DELTA) in math, which TeX's math fonts do not "
                         "have (MathJax shows it on the page, LaTeX cannot): write it there as its "
                         "LaTeX command (`\\alpha` for 'α'; `\\delta` for 'δ'), or outside the "
                         "math"), math
    # a letter with no such command known here: the command's form, by an example
    [other] = locate_characters([Problem("no font has it", character="≤", in_math=True)], None,
                                lambda doc: chapter.parent / f"{doc}.md", tmp_path, tex)
    assert "its LaTeX command (`\\alpha` for 'α', say)" in other.what, other
    assert "'✗' (U+2717" in text.what and "which no font of the PDF has" in text.what, text


# --- Slow: PDFs built ----------------------------------------------------------------------

NO_FONT_CELL = f"print('mark:', chr({NO_FONT_HAS:#x}))"  # only the output holds the character
TITLE = r"Datasets & loaders: 100% of x_1, #1 {a} ~b^c \d"  # LaTeX's specials, typeset as written
LONG_HEADING = "A question that goes on " + " ".join(["and footnoted"] * 20) + " to its end"


@pytest.fixture(scope="module")
def planted_book(tmp_path_factory):
    """The tiny book with five plants in its chapter: a word too long for any line, prose
    and a cell printing CJK, emoji and mathematical symbols, a cell printing a character
    no font has, its answers untagged (as if the tag were lost: the student edition
    prints them) and a title of LaTeX specials. Its PDFs share one cache (the chapter runs
    once)."""
    covering = subprocess.run(["fc-list", f":charset={NO_FONT_HAS:x}", "family"],
                              check=True, capture_output=True, text=True).stdout
    assert not covering.strip(), f"an installed font has U+{NO_FONT_HAS:X}: pick another"
    root = tmp_path_factory.mktemp("characters")
    chapter = tiny_book_with_an_overflow(root)
    with_cell(chapter, f"Prose prints them too: {PRINTED}.", f'print("{PRINTED}")')
    with_cell(chapter, "Nothing unusual here.", NO_FONT_CELL)
    # A question as a heading of 40 words (mrdbourke's exercises): each page's footer after
    # the chapter's first repeats it, and it ran into the margins on three lines.
    chapter.write_text(chapter.read_text(encoding="utf8").replace(
        "Nothing unusual here.", "A page of lines.\n\n" * 50 + f"## {LONG_HEADING}\n\n"
        # the HTML theme's {margin}: 'Unknown directive type' stopped the PDF, which loads no
        # HTML theme (HL3, jupyter-book's output-insert.md)
        ":::{margin}\nA note beside the text.\n:::\n\nNothing unusual here."), encoding="utf8")
    chapter.write_text(chapter.read_text(encoding="utf8").replace('"answer"', '"was-answer"')
                       .replace("[answer]", "[was-answer]")
                       .replace("# A tiny chapter", f"# {TITLE}"), encoding="utf8")
    return root, chapter


def assert_each_problem_named(log: str, chapter: Path, where: str, page: str) -> list[str]:
    """The overflow (its place named ``where`` and, in the margin, ``page``) and the
    character no font has, each named in the chapter; the characters the fonts have are
    not named. The problems' lines."""
    assert "Traceback" not in log and "Missing character" not in log, log[-3000:]
    problems = [line for line in log.splitlines() if line.startswith("pdf: ")]
    assert any(page in line and "runs into the margin" in line for line in problems), log[-3000:]
    assert any(where in line and "Overfull \\hbox" in line for line in problems), log[-3000:]
    named = [line for line in problems if "U+" in line]
    assert len(named) == 1 and f"U+{NO_FONT_HAS:X}" in named[0], log[-3000:]
    line = chapter.read_text(encoding="utf8").splitlines().index(NO_FONT_CELL) + 1
    assert f"chapter.md:{line}:" in named[0], named[0]
    assert chr(NO_FONT_HAS) in named[0] and "install" in named[0], named[0]
    return problems


@pytest.mark.slow
def test_the_pdf_names_each_problem_at_its_chapter_and_prints_cjk_emoji_and_math(planted_book):
    root, chapter = planted_book
    build = root / "book" / "student"
    code, log = build_pdf("student", chapter.parent, root / "book", root / "cache", ACCEPT,
                          single_pass=True)
    assert code == 1, log[-3000:]
    # Each problem names the chapter file it lies in, not only the page.
    heading = chapter.read_text(encoding="utf8").splitlines().index(f"## {LONG_HEADING}") + 1
    problems = assert_each_problem_named(log, chapter, f"chapter.md:{heading}: ",
                                         "chapter.md: page")  # the overflow's section
    # The long heading is cut short in the footer, one line, without an overflow to tell.
    assert not [line for line in problems if "footnoted" in line or "\\output" in line], problems
    assert not (build / "pdf" / "deep-learning-labs-student.pdf").exists()
    # The prose, the cell's code and its output, in the PDF that failed (the log names it).
    failed = build / "latex" / "deep-learning-labs.pdf"
    assert str(failed) in log and pdf_text(failed).count(PRINTED) >= 3, pdf_text(failed)
    assert TITLE.upper() in " ".join(pdf_text(failed).split())  # the book's chapter headings
    # The student PDF printed the untagged answers: the audit finds them in the PDF itself.
    leaks = audit_build(build / "latex", chapter_fingerprints(TINY_BOOK))
    assert [leak for leak in leaks if leak.path == failed], leaks


@pytest.mark.slow
def test_a_handout_names_each_problem_at_its_chapter_and_prints_cjk_emoji_and_math(planted_book):
    root, chapter = planted_book
    build = root / "handouts" / "student"
    code, log = build_handouts("student", chapter.parent, root / "handouts", root / "cache",
                               ACCEPT)
    assert code == 1, log[-3000:]
    problems = assert_each_problem_named(log, chapter, "chapter.md", "chapter.md")
    assert all(str(chapter) in line or "chapter.md" in line for line in problems), problems
    assert not (build / "pdf" / "handouts" / "chapter.pdf").exists()
    failed = build / "latex-handouts" / "chapter.pdf"
    assert str(failed) in log and pdf_text(failed).count(PRINTED) >= 3, pdf_text(failed)
    assert TITLE in " ".join(pdf_text(failed).split())
