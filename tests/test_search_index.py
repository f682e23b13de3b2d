"""The search index finds a glossary's terms after every build, not only after one that
wrote the glossary (coursebook/render/html_pages.py: BookHTMLBuilder.dump_search_index, the
work-around for sphinx-doc/sphinx#12599), and only those of the pages a build did not write
itself. A build that writes and removes no page keeps the search page and the search index
(html_pages.BookHTMLBuilder); one that removes a page drops it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from docutils import nodes
from sphinx.builders.html import StandaloneHTMLBuilder

from conftest import run_sphinx, sphinx_build
from coursebook.render.html_pages import BookHTMLBuilder

TERMS = "tensor\n  An array of numbers.\n\ngradient\n  A slope.\n"


def _search_index(html: Path) -> dict:
    text = (html / "searchindex.js").read_text()
    return json.loads(text[text.index("(") + 1:text.rindex(")")])


def _index_entries(html: Path) -> dict:
    return _search_index(html)["indexentries"]


@pytest.mark.slow
def test_a_rebuild_keeps_the_glossarys_terms_and_one_that_removes_a_page_drops_it(
        tiny_book, cache_copy, tmp_path):
    index = tiny_book / "index.md"
    index.write_text(index.read_text().replace("chapter\n", "chapter\nglossary\n"))
    (tiny_book / "glossary.md").write_text(f"# Glossary\n\n```{{glossary}}\n{TERMS}```\n")
    (tiny_book / "aside.md").write_text("---\norphan: true\n---\n# An aside\n\nZebras.\n")
    first = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    assert first.returncode == 0, first.log[-3000:]
    html = tmp_path / "out" / "html"
    written = (html / "searchindex.js").read_bytes()
    assert set(_index_entries(html)) == {"tensor", "gradient"}
    assert "aside" in _search_index(html)["docnames"]
    kept = {name: (html / name).stat().st_mtime_ns for name in ("search.html", "searchindex.js")}

    again = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    assert again.returncode == 0, again.log[-3000:]
    assert "no targets are out of date" in again.log  # a build that writes no page
    assert set(_index_entries(html)) == {"tensor", "gradient"}
    # The index a build of every page writes, and the search page, as that build left them.
    assert (html / "searchindex.js").read_bytes() == written
    assert {name: (html / name).stat().st_mtime_ns for name in kept} == kept

    (tiny_book / "aside.md").unlink()  # a build that writes no page but removes one
    removed = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    assert removed.returncode == 0, removed.log[-3000:]
    assert "1 removed" in removed.log and "no targets are out of date" in removed.log
    assert "aside" not in _search_index(html)["docnames"]
    assert set(_index_entries(html)) == {"tensor", "gradient"}


@pytest.mark.slow
def test_sphinx_itself_still_drops_the_terms_of_a_page_it_does_not_write(tmp_path):
    """Fails once Sphinx keeps them itself: then BookHTMLBuilder's indexing can go."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "conf.py").write_text("")
    (source / "index.rst").write_text("Glossary\n========\n\n.. glossary::\n\n"
                                      + "".join(f"   {line}\n" for line in TERMS.splitlines()))
    found = []
    for _ in range(2):
        done = run_sphinx([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(source),
                           str(tmp_path / "html")])
        assert done.returncode == 0, done.stderr
        found.append(set(_index_entries(tmp_path / "html")))
    assert found == [{"tensor", "gradient"}, set()], (
        "sphinx-doc/sphinx#12599 is fixed in this Sphinx: remove "
        "coursebook.render.html_pages.BookHTMLBuilder.dump_search_index's indexing and this test")


def test_only_the_pages_with_index_entries_that_the_build_did_not_write_are_indexed_again(
        tmp_path, monkeypatch):
    """Sphinx indexed the pages it wrote itself; indexing one again would only repeat it."""
    monkeypatch.setattr(StandaloneHTMLBuilder, "dump_search_index", lambda builder: None)
    builder = object.__new__(BookHTMLBuilder)  # no build: its state at the index's dump
    builder.outdir, builder.written, builder.indexer = tmp_path, frozenset({"glossary"}), {}
    builder.index_page = lambda docname, doctree, title: indexed.append((docname, title))
    entries = {"glossary": [("single", "tensor", "term-tensor", True, None)],
               "terms": [("single", "view", "term-view", True, None)], "chapter": []}
    builder.env = SimpleNamespace(
        get_domain=lambda name: SimpleNamespace(entries=entries),
        longtitles={docname: nodes.title(text=docname.title()) for docname in entries},
        get_and_resolve_doctree=lambda docname, builder: None)
    indexed: list[tuple[str, str]] = []
    builder.dump_search_index()
    assert indexed == [("terms", "Terms")]
