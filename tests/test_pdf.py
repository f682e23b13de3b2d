"""Both PDF handouts: built from the same sources and cache, checked, audited (a planted
overflow and characters: tests/test_pdf_characters.py)."""

import shutil
import subprocess
import sys

import pytest

from conftest import BOOK, ROOT, TINY_BOOK, copy_of_built_cache
from coursebook.audit.answer_leaks import audit_build, chapter_fingerprints
from test_student_pages import build_talk, known_commits

pytestmark = pytest.mark.slow
TOOL = ROOT / "tools" / "build_pdf.py"


def build_pdf(edition: str, source, build, cache, *options: str):
    done = subprocess.run([sys.executable, str(TOOL), edition, "--source", str(source),
                           "--build", str(build),
                           f"--sphinx-option=-Dnb_execution_cache_path={cache}",
                           *(f"--sphinx-option={option}" for option in options)],
                          capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory, built):
    root = tmp_path_factory.mktemp("pdf")
    copy_of_built_cache(built, root / "cache")  # no chapter runs again for the PDFs
    results = {edition: build_pdf(edition, BOOK, root, root / "cache")
               for edition in ("student", "instructor")}
    return root, results


@pytest.mark.parametrize("edition", ["student", "instructor"])
def test_the_pdf_builds_and_passes_its_checks(pdfs, edition):
    root, results = pdfs
    code, log = results[edition]
    assert code == 0, log[-3000:]
    assert (root / edition / "pdf" / f"deep-learning-labs-{edition}.pdf").is_file()


def test_the_student_pdf_holds_no_answer_and_the_instructor_pdf_does(pdfs):
    root, _ = pdfs
    found = chapter_fingerprints(BOOK)
    assert audit_build(root / "student" / "pdf", found) == []
    assert audit_build(root / "instructor" / "pdf", found)


def test_the_build_is_named_on_the_instructor_pdfs_title_page_only(pdfs):
    """The torch and date that built the book moved to the instructor's PDF, not away: the
    student book's title page and running header carry no build date, torch or commit."""
    root, _ = pdfs
    student = root / "student" / "pdf" / "deep-learning-labs-student.pdf"
    # Issue 44: the student's title page speaks of the subject; test_handouts reads the covers.
    assert "Student edition" in pdf_pages(student)[0], pdf_pages(student)[0]
    assert build_talk_on_first_page(student) == [], pdf_pages(student)[0]
    assert not [page for page in pdf_pages(student) if "executed with torch" in page.lower()]
    instructor = pdf_pages(root / "instructor" / "pdf" / "deep-learning-labs-instructor.pdf")
    assert "Executed with torch" in instructor[0] and "Built on" in instructor[0], instructor[0]
    assert any("executed with torch" in page for page in instructor[1:])  # the running header


def test_a_planted_answer_in_the_pdf_is_caught(tmp_path):
    """A student PDF built as if the answer tag were lost carries the answers: caught."""
    source = tmp_path / "src"
    shutil.copytree(TINY_BOOK, source)
    chapter = source / "chapter.md"
    chapter.write_text(chapter.read_text().replace('"answer"', '"was-answer"')
                       .replace("[answer]", "[was-answer]"))
    # The untagged answer now prints in the student edition: take its output as expected.
    code, log = build_pdf("student", source, tmp_path / "build", tmp_path / "cache",
                          "-Dcoursebook_accept_outputs=1")
    assert code == 0, log[-2000:]
    leaks = audit_build(tmp_path / "build" / "student" / "pdf", chapter_fingerprints(TINY_BOOK))
    assert leaks and leaks[0].path.suffix == ".pdf"


def pdf_pages(pdf) -> list[str]:
    """Each page's text, its whitespace runs made one space."""
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True,
                          text=True, check=True).stdout
    return [" ".join(page.split()) for page in text.split("\f")]


def build_talk_on_first_page(pdf) -> list[str]:
    """What the first page of a PDF says of the build: test_student_pages' kinds, a commit."""
    page = pdf_pages(pdf)[0]
    return build_talk(page) + [f"commit id {commit}" for commit in known_commits()
                               if commit in page]
