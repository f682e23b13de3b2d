"""Both editions of the real book, built from scratch with a fresh execution cache."""

import re

import nbformat
import pytest

from conftest import BOOK, EXHIBITS
from coursebook.audit.answer_leaks import (_cell_text, _runs, audit_build, chapter_fingerprints,
                                           file_texts, fingerprint_words)
from coursebook.model.notebooks import is_answer, is_chapter_source, read_chapter

pytestmark = pytest.mark.slow


def _page(built, edition: str, name: str = "pt01.html") -> str:
    return (built[edition].outdir / "html" / name).read_text(encoding="utf8")


def _chapters() -> list[str]:
    """The chapters a build executes (a recorded chapter's outputs come from its recordings)."""
    from coursebook.model.recordings import recording_name
    return [p.read_text() for p in sorted(BOOK.glob("*.md"))
            if is_chapter_source(p.read_text()) and not recording_name(read_chapter(p.read_text()))]


def test_each_edition_executed_its_own_notebooks_once(built):
    """A chapter without answers is the same notebook in both editions: run once, cached,
    though both editions build at the same time (either may be the one that runs it)."""
    with_answers = [t for t in _chapters() if any(map(is_answer, read_chapter(t).cells))]
    assert len(_chapters()) >= 2 and len(with_answers) >= 1
    assert built["student"].executed >= len(with_answers)
    assert built["instructor"].executed >= len(with_answers)
    assert (built["student"].executed + built["instructor"].executed
            == len(_chapters()) + len(with_answers))


def test_student_exercises_are_still_to_be_written(built):
    page = file_texts(built["student"].outdir / "html" / "pt01.html")[0]
    for name in ("sum_diagonals", "normalize_rows", "cosine_similarity"):
        assert re.search(rf"^Write {name} first\.$", page, re.M), name
    assert "passed: odd, even" not in page.replace('print("sum_diagonals passed: odd, even', "")


def test_instructor_solutions_pass_their_checks(built):
    page = file_texts(built["instructor"].outdir / "html" / "pt01.html")[0]
    assert re.search(r"^sum_diagonals passed: odd, even, 1x1 and asymmetric matrices\.$", page,
                     re.M)
    assert re.search(r"^normalize_rows passed, including the constant row", page, re.M)
    assert not re.search(r"^Write \w+ first\.$", page, re.M)


def test_the_student_build_holds_no_answer(built):
    """As `make audit` reads it: the exhibits' text is the student's to see."""
    assert audit_build(built["student"].outdir, chapter_fingerprints(BOOK, EXHIBITS)) == []


def test_the_instructor_page_shows_every_answer_the_audit_looks_for(built):
    """The audit's view of a page sees each answer cell, so a leak of any would be caught."""
    found = chapter_fingerprints(BOOK)
    page = {run for _, run in _runs(fingerprint_words(
        file_texts(built["instructor"].outdir / "html" / "pt01.html")[0]))}
    for cell in read_chapter((BOOK / "pt01.md").read_text()).cells:
        fingerprints = {run for _, run in _runs(fingerprint_words(_cell_text(cell)))} & found.runs
        if is_answer(cell) and fingerprints:
            assert fingerprints & page, cell.source.splitlines()[0]


def test_instructor_answers_are_marked(built):
    page = _page(built, "instructor")
    assert page.count('class="instructor-answer admonition') >= 5
    assert page.count("tag_answer") >= 10
    assert "Instructor edition" in page
    student = _page(built, "student")
    assert "tag_answer" not in student and "instructor" not in student.lower()


def test_machine_details_are_normalised(built):
    page = file_texts(built["student"].outdir / "html" / "pt01.html")[0]
    assert "MulBackward0 object at 0x…" in page
    assert not re.search(r"object at 0x[0-9a-f]{4,}", page)
    assert "ipykernel_" not in page and "<cell>:" in page


def test_tracebacks_are_short_and_plain(built):
    page = _page(built, "student")
    assert "\x1b[" not in page and "site-packages" not in page
    assert "a leaf Variable that requires grad is being used in an in-place operation." in page


def test_the_student_download_is_the_student_notebook(built):
    """It runs: test_downloads' run-all of every student download (pt01 printing its
    "Write sum_diagonals first." included)."""
    html = built["student"].outdir / "html"
    assert 'href="_sources/pt01.ipynb"' in _page(built, "student")
    notebook = nbformat.read(html / "_sources" / "pt01.ipynb", as_version=4)
    assert not any(is_answer(cell) for cell in notebook.cells)
    assert any("%pip install" in cell.source for cell in notebook.cells)  # Colab needs it


def test_sources_hold_the_student_text(built):
    copied = (built["student"].outdir / "html" / "_sources" / "pt01.md").read_text()
    answers = [cell.source for cell in read_chapter((BOOK / "pt01.md").read_text()).cells
               if is_answer(cell) and cell.cell_type == "code"]
    assert answers and not is_chapter_source(copied)  # a document, not the MyST notebook
    assert not [answer for answer in answers if answer.strip() in copied]


def test_the_words_a_torch_upgrade_changed_are_bold_on_the_page(built):
    """The versions page and the museum's "changed since" boxes (the instructor edition's)
    mark the differing words (Sphinx would syntax-highlight those blocks, flattening the
    marks, if they read as code)."""
    html = built["instructor"].outdir / "html"
    for page in ("torch-versions.html", "museum-pytorch.html"):
        text = (html / page).read_text()
        assert '<strong class="torch-diff-changed">' in text, page
