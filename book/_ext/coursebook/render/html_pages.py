"""What every HTML page gets besides its text: the instructor's build stamp, MathJax offline,
templates compiled once, a search index kept by a build that writes no page
(docs/performance.md), a rule where docutils allows none."""

from __future__ import annotations

import importlib.resources
import shutil
import sys
from pathlib import Path

from docutils import nodes
from jinja2 import FileSystemBytecodeCache
from sphinx.application import Sphinx
from sphinx.builders.html import StandaloneHTMLBuilder
from sphinx.transforms import SphinxTransform

from coursebook.config import book_config
from coursebook.model.provenance import NOT_IN_GIT, source_commit
from coursebook.page_state import page_states
from coursebook.prepare.chapters import edition_of
from coursebook.prepare.editions import Edition

PACKAGE = "sphinx-mathjax-offline"  # the distribution whose files are served
SERVED = "mathjax"  # under the pages' _static/
MATHJAX_PATH = f"{SERVED}/tex-chtml.js"  # Sphinx's mathjax_path, relative to _static/
FOLDER = "compiled-templates"  # in the environment's folder (sys.prefix)


class NestedRules(SphinxTransform):
    """A rule (`---`) in a block (a cell's Markdown output: nbdev's show_doc opens with one),
    which docutils refuses (a transition is a section's child): HTML's rule; a PDF has none."""

    default_priority = 820  # before docutils refuses it (misc.Transitions, 830)

    def apply(self, **kwargs) -> None:
        for rule in list(self.document.findall(nodes.transition)):
            if not isinstance(rule.parent, (nodes.document, nodes.section)):
                rule.replace_self(nodes.raw("", "<hr>", format="html"))


def add_build_stamp(app: Sphinx, pagename: str, templatename: str, context: dict,
                    doctree) -> None:  # for the footer template build-stamp.html
    if edition_of(app) is not Edition.INSTRUCTOR:
        return
    date = book_config(app.config).build_date
    commit = source_commit(Path(app.srcdir))
    chapter = page_states(app.env).get(pagename) if doctree is not None else None
    # None: not a chapter; no notebook: a failed one (reported when it was read)
    executed = "" if chapter is None or chapter.notebook is None else (
        chapter.recorded_with or f"Executed with torch {book_config(app.config).torch}")
    source = f"commit {commit}" if commit != NOT_IN_GIT else NOT_IN_GIT
    built = f"built from {source} on {date}"
    context["coursebook_stamp"] = (f"{executed}; {built}." if executed else
                                   built[0].upper() + built[1:] + ".")


def mathjax_files() -> Path:
    return Path(importlib.resources.files(PACKAGE), "static", "mathjax")


def copy_changed_files(source: Path, target: Path) -> list[Path]:
    """Copies the files under ``source`` whose copy differs in size or time (as rsync decides)."""
    def signature(path: Path) -> tuple[int, int] | None:
        return (path.stat().st_size, path.stat().st_mtime_ns) if path.exists() else None

    copied = []
    for path in sorted(path for path in source.rglob("*") if path.is_file()):
        copy = target / path.relative_to(source)
        if signature(copy) != signature(path):
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, copy)
            copied.append(copy)
    return copied


class BookHTMLBuilder(StandaloneHTMLBuilder):
    """Sphinx's, except that a build which writes and removes no page keeps the search page and
    index: Sphinx would make both the same again (after a stopped build: process/next_build.py)."""

    written: frozenset[str] = frozenset()  # the pages this build wrote (and indexed)
    removed_pages = False

    def init_templates(self) -> None:
        super().init_templates()
        folder = Path(sys.prefix, FOLDER)
        try:
            folder.mkdir(exist_ok=True)
        except OSError:
            return  # a read-only environment: templates are compiled on each build
        self.templates.environment.bytecode_cache = FileSystemBytecodeCache(str(folder))

    def write_documents(self, docnames) -> None:
        self.written = frozenset(docnames)
        super().write_documents(docnames)

    def copy_static_files(self) -> None:
        super().copy_static_files()
        if self.config.mathjax_path == MATHJAX_PATH:  # conf.py's names the copy
            copy_changed_files(mathjax_files(), Path(self.outdir, "_static", SERVED))

    def keeps(self, filename: Path) -> bool:
        return not (self.written or self.removed_pages) and filename.is_file()

    def handle_page(self, pagename: str, addctx: dict, templatename: str = "page.html",
                    **options) -> None:
        if pagename == "search" and self.keeps(Path(self.get_outfilename(pagename))):
            return
        super().handle_page(pagename, addctx, templatename, **options)

    def dump_search_index(self) -> None:
        """Indexes again the unwritten pages with index entries (a glossary's terms): Sphinx
        reads its old index without them (sphinx-doc/sphinx#12599). Writing them again cost a
        no-op build 0.4 s; this, 0.05 s. tests/test_search_index.py says when Sphinx is fixed."""
        if self.keeps(Path(self.outdir, self.searchindex_filename)):
            return  # the last build's index, its entries included, stays
        for docname, entries in sorted(self.env.get_domain("index").entries.items()):
            if entries and docname not in self.written and self.indexer is not None:
                title = self.env.longtitles.get(docname)
                self.index_page(docname, self.env.get_and_resolve_doctree(docname, self),
                                title.astext() if title else "")
        super().dump_search_index()


def note_removed_pages(app: Sphinx, env, added: set, changed: set, removed: set) -> list:
    """``env-get-outdated``: a removed page leaves the search index (Sphinx drops it)."""
    if removed and isinstance(app.builder, BookHTMLBuilder):
        app.builder.removed_pages = True
    return []

