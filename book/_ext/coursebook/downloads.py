"""What a reader can download: this edition's notebook and source, never the file on disk.

Sphinx copies each page's file from disk into ``_sources/`` (that file holds the
answers), and the theme offers an ``.ipynb`` only when launch buttons are on. Here each
chapter page offers its edition's notebook, without outputs, ready to run in Colab, and
the student edition's ``_sources/`` holds the student text.
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
from sphinx.application import Sphinx

from .chapters import edition_of, prepared_notebook
from .editions import Edition
from .notebooks import BOOK_ONLY_TAG, cell_tags, notebook_to_myst


def _download_notebook(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """What a reader runs elsewhere: no outputs, no cells that need the book's own code."""
    notebook = copy.deepcopy(notebook)  # the prepared chapter is shared by the build's hooks
    notebook.cells = [cell for cell in notebook.cells if BOOK_ONLY_TAG not in cell_tags(cell)]
    notebook.metadata.setdefault("language_info", {"name": "python"})
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return notebook


def offer_edition_notebook(app: Sphinx, pagename: str, templatename: str,
                           context: dict, doctree) -> None:
    """``html-page-context``, before the theme's buttons: write and link the notebook."""
    if doctree is None or app.builder.format != "html":
        return
    notebook = prepared_notebook(app, pagename)
    if notebook is None:
        return
    target = Path(app.outdir, "_sources", pagename + ".ipynb")
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(_download_notebook(notebook), target)
    context["ipynb_source"] = pagename + ".ipynb"


COLAB = "https://colab.research.google.com/github"


def colab_url(repository_url: str, branch: str, pagename: str) -> str:
    """Where Colab opens the published student notebook of a page."""
    repository = repository_url.rstrip("/").removesuffix(".git").split("github.com/")[-1]
    return f"{COLAB}/{repository}/blob/{branch}/_sources/{pagename}.ipynb"


def add_colab_button(app: Sphinx, pagename: str, templatename: str, context: dict,
                     doctree) -> None:
    """``html-page-context``, after the theme's buttons: "Open in Colab", when configured.

    Colab opens the student notebook where the student HTML is published (the branch
    ``coursebook_published_branch`` of ``coursebook_repository_url``), never a source.
    """
    repository = app.config.coursebook_repository_url
    if not repository or "header_buttons" not in context or "ipynb_source" not in context:
        return
    context["header_buttons"].append({
        "type": "link", "url": colab_url(repository, app.config.coursebook_published_branch,
                                         pagename),
        "text": "Colab", "tooltip": "Open the student notebook in Colab",
        "icon": "fas fa-rocket", "label": "colab-launch-button",
    })


def replace_copied_sources(app: Sphinx, exception: Exception | None) -> None:
    """``build-finished``: overwrite the copied chapter files with the student text."""
    if exception is not None or app.builder.format != "html" or not app.config.html_copy_source:
        return
    if edition_of(app) is not Edition.STUDENT:
        return
    suffix = app.config.html_sourcelink_suffix
    for docname in app.env.found_docs:
        notebook = prepared_notebook(app, docname)
        if notebook is None:
            continue
        source_name = Path(app.env.doc2path(docname)).name
        copied = Path(app.outdir, "_sources", Path(docname).parent, source_name + suffix)
        copied.parent.mkdir(parents=True, exist_ok=True)
        copied.write_text(notebook_to_myst(notebook), encoding="utf8")
