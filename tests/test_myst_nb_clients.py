"""myst-nb's execution clients are imported when a build has pages to read, not as myst-nb
loads (coursebook.execute.myst_nb_clients): a build that reads nothing never imports
jupyter-cache, SQLAlchemy or nbclient; one that reads gets myst-nb's own clients, the book's
chapter client in cache mode. Only speed rides on the deferral: COURSEBOOK_DEFER_IMPORTS=0
turns it off (test_faults.py builds so)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest
from conftest import ROOT, run_in_python
from coursebook.execute.myst_nb_clients import CLIENTS, PACKAGE

HEAVY = ["jupyter_cache", "sqlalchemy", "nbclient"]


def test_a_client_made_before_the_import_is_myst_nbs_own():
    made = run_in_python(
        "import json, logging, sys\n"
        "import nbformat\n"
        "from coursebook.execute.myst_nb_clients import defer\n"
        "defer()\n"
        "import myst_nb.core.execute as execute\n"
        "from myst_nb.core.config import NbParserConfig\n"
        "client = execute.create_client(nbformat.v4.new_notebook(), '<string>',\n"
        "    NbParserConfig(execution_mode='cache'), logging.getLogger('test'))\n"
        "cache = sys.modules['myst_nb.core.execute.cache']\n"
        "print(json.dumps([type(client).__module__, type(client).__name__,\n"
        "    type(client) is execute.NotebookClientCache is cache.NotebookClientCache,\n"
        "    'sqlalchemy' in sys.modules]))")
    assert made == ["myst_nb.core.execute.cache", "NotebookClientCache", True, True]


def test_myst_nb_loads_without_them_and_its_cache_mode_takes_the_books_chapter_client():
    """As a build: myst-nb's Sphinx module loads without jupyter-cache, SQLAlchemy or nbclient
    (test_nothing_is_deferred_when_turned_off shows the check sees them); myst-nb decides what
    runs and with which settings; what it creates to run a page from the cache, once a build
    reads pages, is the book's client (execute/cached_chapters.py)."""
    loaded, made = run_in_python(
        "import json, logging, sys\n"
        "from types import SimpleNamespace\n"
        "from coursebook.execute.myst_nb_clients import defer, import_for_reading\n"
        "defer()\n"
        "import myst_nb.sphinx_\n"
        f"loaded = [name for name in {HEAVY!r} if name in sys.modules]\n"
        "import nbformat\n"
        "import myst_nb.core.execute as execute\n"
        "from myst_nb.core.config import NbParserConfig\n"
        "import_for_reading(SimpleNamespace(), None, ['chapter'])\n"
        "client = execute.create_client(nbformat.v4.new_notebook(), '<string>',\n"
        "    NbParserConfig(execution_mode='cache'), logging.getLogger('test'))\n"
        "print(json.dumps([loaded, [type(client).__module__, type(client).__name__,\n"
        "    type(client).__mro__[1].__name__]]))")
    assert loaded == []
    assert made == ["coursebook.execute.cached_chapters", "ChapterClient", "NotebookClientCache"]


def test_the_placeholders_are_the_names_myst_nb_takes_from_its_client_modules():
    # A myst-nb that renames a client or adds one fails here, not in a build.
    package = Path(importlib.util.find_spec(PACKAGE).origin)
    imported = {node.module: [alias.name for alias in node.names]
                for node in ast.walk(ast.parse(package.read_text()))
                if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module != "base"}
    assert imported == {module: [name] for module, name in CLIENTS.items()}


def test_nothing_is_deferred_when_turned_off():
    # No placeholders, as without defer(): loading myst-nb's Sphinx module imports all three,
    # and the check sees them.
    loaded = run_in_python(
        "import json, os, sys\n"
        "os.environ['COURSEBOOK_DEFER_IMPORTS'] = '0'\n"
        "from coursebook.execute.myst_nb_clients import defer\n"
        "defer()\n"
        "import myst_nb.sphinx_\n"
        f"print(json.dumps([name for name in {HEAVY!r} if name in sys.modules]))")
    assert loaded == HEAVY


@pytest.mark.slow  # builds a page (HTML) twice, in a Python of its own
def test_a_build_imports_them_only_when_it_reads_pages(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.md").write_text("# Title\n\nText.\n")
    build = (
        "import json, sys\nfrom sphinx.application import Sphinx\n"
        f"app = Sphinx({str(tmp_path / 'src')!r}, {str(ROOT)!r}, {str(tmp_path / 'out')!r},\n"
        f"    {str(tmp_path / 'doctrees')!r}, 'html', status=None,\n"
        f"    confoverrides={{'nb_execution_cache_path': {str(tmp_path / 'cache')!r}}})\n"
        "app.build()\n"
        f"print(json.dumps([app.statuscode, [n for n in {HEAVY!r} if n in sys.modules]]))")
    assert run_in_python(build) == [0, HEAVY]  # the page was read
    assert run_in_python(build) == [0, []]  # nothing to read


# Imported where they are used, not as the extension loads (speed only): the cache's locks
# (execute/shared_cache.py, cached_chapters.py, kernel_pool.py), a chapter's declared
# packages checked (prepare/chapter_packages.py), jupytext where a page is read
# (model/notebooks.py), mdformat where a page is written (render/downloads.py). A build that
# reads and writes nothing uses none of them. (The PDF checks are tools/pdf_checks.py's; the
# answer audit reads a PDF with pdftotext.)
USED_WHEN_NEEDED = ["filelock", "packaging.requirements", "jupytext", "mdformat"]


def test_the_extension_loads_without_what_only_a_read_a_written_page_or_an_audit_uses():
    loaded = run_in_python(
        "import json, sys\n"
        "import coursebook.extension\n"
        f"print(json.dumps([name for name in {USED_WHEN_NEEDED!r} if name in sys.modules]))")
    assert loaded == []
