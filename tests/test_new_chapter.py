"""`make chapter`: a new chapter from the skeleton, listed in the contents, never overwriting
one; and (slow) a new chapter accepted and built in both editions, not yet verified on Colab,
passes the checks `make test-fast` runs on the book's runtimes."""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
import yaml

from conftest import BOOK, ROOT, load_tool, sphinx_build
from coursebook.model.notebooks import cell_tags, is_chapter_source, read_chapter

tool = load_tool("new_chapter")


def _book(tmp_path: Path) -> Path:
    """A copy of the book's pages (the chapters' sources and the home page)."""
    book = tmp_path / "book"
    book.mkdir()
    for page in BOOK.glob("*.md"):
        shutil.copy(page, book)
    return book


def _new_name(book: Path) -> str:
    """A chapter name the book does not have yet (it may have a PT02 of its own)."""
    return next(f"pt{n:02}" for n in range(2, 100) if not (book / f"pt{n:02}.md").exists())


def _toctree(index: Path) -> list[str]:
    body = tool._TOCTREE.search(index.read_text())["body"]
    return [line.strip() for line in body.splitlines() if line.strip() and not line.startswith(":")]


def test_a_chapter_is_written_from_the_skeleton_and_listed_after_the_last_chapter(tmp_path, capsys):
    book = _book(tmp_path)
    name = _new_name(book)
    before = _toctree(book / "index.md")
    assert tool.main([name, "A new chapter: training loops", "--book", str(book)]) == 0
    out = capsys.readouterr().out
    for command in ("make preview", "make accept-outputs", "make instructor", "make test-fast"):
        assert command in out
    text = (book / f"{name}.md").read_text()
    assert is_chapter_source(text) and f"({name})=\n# A new chapter: training loops\n" in text
    cells = read_chapter(text).cells
    code = [c for c in cells if c.cell_type == "code"]
    assert "remove-cell" in cell_tags(code[0]) and "%xmode Minimal" in code[0].source
    assert any("answer" not in cell_tags(c) for c in code[1:])  # a first cell, the check's
    assert [c.cell_type for c in cells if "answer" in cell_tags(c)] == ["markdown", "code"]
    # After the last chapter, before the pages that are not chapters.
    chapters = [n for n in before if (book / f"{n}.md").is_file()
                and is_chapter_source((book / f"{n}.md").read_text())]
    after = _toctree(book / "index.md")
    assert after.index(name) == before.index(chapters[-1]) + 1
    assert [n for n in after if n != name] == before


def test_an_existing_chapter_is_never_overwritten(tmp_path, capsys):
    book = _book(tmp_path)
    name = _new_name(book)
    assert tool.main([name, "A new chapter", "--book", str(book)]) == 0
    (book / f"{name}.md").write_text("the author's work")
    index = (book / "index.md").read_text()
    capsys.readouterr()
    assert tool.main([name, "Another title", "--book", str(book)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"{name}.md exists: nothing written" in error
    assert (book / f"{name}.md").read_text() == "the author's work"
    assert (book / "index.md").read_text() == index


@pytest.mark.parametrize("name, title", [("", "A title"), ("PT 02", "A title"), ("pt99", " ")])
def test_a_bad_name_or_title_is_one_line_and_writes_nothing(tmp_path, capsys, name, title):
    book = _book(tmp_path)
    assert tool.main([name, title, "--book", str(book)]) == 1
    assert capsys.readouterr().err.count("\n") == 1
    assert sorted(p.name for p in book.iterdir()) == sorted(p.name for p in BOOK.glob("*.md"))


def test_the_skeleton_opens_as_the_first_chapter_does():
    """The one template (tools/chapter-template.md) keeps PT01's top matter and first cell."""
    skeleton, first = tool.chapter_text("x", "X"), (BOOK / "pt01.md").read_text()
    top = yaml.safe_load(skeleton.split("---")[1])
    assert top.items() <= yaml.safe_load(first.split("---")[1]).items()
    first_code = [next(c for c in read_chapter(text).cells if c.cell_type == "code")
                  for text in (skeleton, first)]
    assert first_code[0].source == first_code[1].source


def test_make_help_lists_the_chapter_command():
    listed = subprocess.run(["make", "-s", "help"], capture_output=True, text=True, cwd=ROOT).stdout
    assert "make chapter " in listed and "NAME=" in listed


@pytest.mark.slow
def test_a_new_chapter_is_accepted_built_and_not_yet_verified_on_colab(tiny_book, tmp_path):
    """The first-chapter walk-through on the tiny book: the skeleton, `make accept-outputs`
    (both editions), the builds, then the fast tests' checks of expected outputs and runtimes,
    without a Colab replica."""
    from test_expectations import unstated_reasons
    from test_runtimes import NotYetVerified, State, declared_standings, fail_on_stale

    from coursebook.model.versions import release
    from coursebook.verify.expectations import EDITIONS, expectations_path, read_expectations

    assert tool.new_chapter("pt02", "PT02: A first chapter", tiny_book).is_file()
    cache = tmp_path / "cache"
    builds = {}
    for accept in (True, False):  # accept-outputs, then the builds a person runs next
        for edition, tags in (("student", ()), ("instructor", ("instructor",))):
            build = sphinx_build(tiny_book, tmp_path / edition, cache, *tags,
                                 settings={"coursebook_accept_outputs": "1"} if accept else {})
            assert build.returncode == 0, build.log[-3000:]
            builds[edition] = build
    torch_version = release(__import__("torch").__version__)
    expected = read_expectations(expectations_path(tiny_book / "expected", torch_version, "pt02"))
    assert all(expected.by_edition[edition] for edition in EDITIONS)
    for edition, build in builds.items():
        assert "expected outputs: pt02.md" in build.log
        assert "expected outputs: pt02: not yet verified on Colab" in build.log
    instructor = (tmp_path / "instructor" / "html" / "pt02.html").read_text()
    student = (tmp_path / "student" / "html" / "pt02.html").read_text()
    assert "not yet verified on Colab" in instructor and "accept-outputs-runtime" in instructor
    assert "not yet verified" not in student and "accept-outputs" not in student
    # What `make test-fast` holds the book's chapters to.
    assert unstated_reasons((tiny_book / "pt02.md").read_text()) == []
    found = [s for s in declared_standings(tiny_book) if s.chapter == "pt02"]
    assert found and all(s.state is State.NOT_YET for s in found)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        fail_on_stale(found)  # passes
    assert {type(w.message) for w in said} == {NotYetVerified}
