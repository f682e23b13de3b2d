"""A build that writes no page keeps the book-wide pages of the last clean build
(coursebook.render.unchanged_finish); any page written, or a build that failed, makes
them again."""

from __future__ import annotations

import shutil

import pytest

from conftest import sphinx_build

pytestmark = pytest.mark.slow

KEPT = "no page written: the index, search and inventory pages are kept"
BOOK_WIDE = ["search.html", "searchindex.js", "objects.inv"]


def _book_wide(html) -> dict[str, tuple[bytes, int]]:
    return {name: ((html / name).read_bytes(), (html / name).stat().st_mtime_ns)
            for name in BOOK_WIDE}


def test_a_build_that_writes_no_page_keeps_the_book_wide_pages(tiny_book, tmp_path):
    out, cache = tmp_path / "out", tmp_path / "cache"
    first = sphinx_build(tiny_book, out, cache)
    assert first.returncode == 0, first.log[-2000:]
    assert KEPT not in first.log
    finished = _book_wide(out / "html")

    # Nothing changed: the pages are those the first build's finish wrote, not rewritten.
    again = sphinx_build(tiny_book, out, cache)
    assert again.returncode == 0 and KEPT in again.log
    assert _book_wide(out / "html") == finished

    # A prose edit writes its page, so the book-wide pages are made again: the search
    # index knows the new word.
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text().replace("A worked example.",
                                                   "A worked example, zanzibarquux."))
    edited = sphinx_build(tiny_book, out, cache)
    assert edited.returncode == 0 and KEPT not in edited.log
    assert "zanzibarquux" in (out / "html" / "searchindex.js").read_text()

    # Pages written with nothing read (their HTML deleted, the doctrees kept): the
    # book-wide pages and the images are written again too.
    shutil.rmtree(out / "html")
    rewritten = sphinx_build(tiny_book, out, cache)
    assert rewritten.returncode == 0 and KEPT not in rewritten.log
    assert all((out / "html" / name).is_file() for name in BOOK_WIDE)


def test_a_build_that_failed_leaves_the_next_to_finish_in_full(tiny_book, tmp_path):
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert sphinx_build(tiny_book, out, cache).returncode == 0
    index = tiny_book / "index.md"
    index.write_text(index.read_text() + "\nSee {ref}`no-such-label`.\n")
    warned = sphinx_build(tiny_book, out, cache)
    assert warned.returncode != 0 and "no-such-label" in warned.log
    # Sphinx does not repeat the warning of a page it does not read again; this build
    # writes no page, but the failed one before it left no record to keep pages by.
    after = sphinx_build(tiny_book, out, cache)
    assert KEPT not in after.log
