"""Both PDF books: built from the same sources and cache, checked, audited (a planted
overflow, characters and answer: tests/test_pdf_characters.py)."""

import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import BOOK, copy_of_built_cache, tool_in_process
from coursebook.audit.answer_leaks import audit_build, chapter_fingerprints
from test_student_pages import build_talk, known_commits

pytestmark = pytest.mark.slow
EDITIONS = ("student", "instructor")


def build_pdf(edition: str, source, build, cache, *options: str, single_pass: bool = False):
    """The tool's exit status and output, run in this process (:func:`tool_in_process`: its
    builds forked, about 3 s of CPU a run less than the program's)."""
    arguments = [edition, "--source", str(source), "--build", str(build),
                 *(["--single-pass"] if single_pass else []),
                 f"--sphinx-option=-Dnb_execution_cache_path={cache}",
                 *(f"--sphinx-option={option}" for option in options)]
    return tool_in_process("build_pdf", arguments)


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory, built):
    root = tmp_path_factory.mktemp("pdf")
    copy_of_built_cache(built, root / "cache")  # no chapter runs again for the PDFs
    # Both at once: most of the time is lualatex, one process each. The student's book is
    # typeset in full, as shipped: its promise (no answer anywhere) covers the contents and
    # index pages the later passes add, and the audit reads them. The instructor's once, its
    # chapters' pages as printed: its contents and index lines hold the student's
    # (test_the_student_books_contents_and_index_lines_are_the_instructors).
    with ThreadPoolExecutor(2) as pool:
        results = dict(zip(EDITIONS, pool.map(
            lambda edition: build_pdf(edition, BOOK, root, root / "cache",
                                      single_pass=edition == "instructor"), EDITIONS)))
    return root, results


@pytest.mark.parametrize("edition", ["student", "instructor"])
def test_the_pdf_builds_and_passes_its_checks(pdfs, edition):
    root, results = pdfs
    code, log = results[edition]
    assert code == 0, log[-3000:]
    assert (root / edition / "pdf" / f"deep-learning-labs-{edition}.pdf").is_file()


def contents_and_index_lines(latex) -> set[str]:
    """What the book's contents and index list (their entries, without page numbers), from the
    files the first pass writes."""
    toc = (latex / "deep-learning-labs.toc").read_text(encoding="utf8")
    idx = (latex / "deep-learning-labs.idx").read_text(encoding="utf8")
    # The index's own line: the pass that typesets the index adds it.
    index_title = re.search(r"\\renewcommand\{\\indexname\}\{(.*)\}",
                            (latex / "deep-learning-labs.tex").read_text(encoding="utf8"))[1]
    return ({f"contents: {level} {title}" for level, title in
             re.findall(r"\\contentsline \{(\w+)\}\{(.*)\}\{\d+\}\{.*\}%$", toc, re.M)
             if (level, title) != ("chapter", index_title)}
            | {f"index: {entry}"
               for entry in re.findall(r"^\\indexentry\{(.*)\}\{\d+\}$", idx, re.M)})


def test_the_student_books_contents_and_index_lines_are_the_instructors(pdfs):
    """The student edition adds no line to the contents or the index: each of its lines is
    one of the instructor's (typeset once, pdfs: its contents and index pages are not)."""
    root, _ = pdfs
    student = contents_and_index_lines(root / "student" / "latex")
    assert student and {line.split(":")[0] for line in student} == {"contents", "index"}
    assert student <= contents_and_index_lines(root / "instructor" / "latex")


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
