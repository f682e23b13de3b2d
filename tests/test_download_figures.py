"""A download mentions no figure it lacks: the book draws its figures with its own code
(cells tagged book-only, left out of the downloads), so the text about a figure is
book-only too."""

from __future__ import annotations

import re

import pytest
import torch

from conftest import BOOK, book_machine_kinds, book_museum
from coursebook.model.notebooks import is_chapter_source
from coursebook.prepare.chapters import edition_chapter
from coursebook.prepare.editions import Edition
from coursebook.render.downloads import download_notebook
from coursebook.render.plain_markdown import PlainMarkdown, Target

FIGURE_WORDS = re.compile(r"\b(?:picture|figure|diagram)\b", re.I)


def _figure_mentions(notebook) -> list[str]:
    """Markdown of a download that speaks of a figure, where the download has no image."""
    has_image = any("image/png" in output.get("data", {}) for cell in notebook.cells
                    for output in cell.get("outputs", []))
    return [] if has_image else [cell.source[:80] for cell in notebook.cells
                                 if cell.cell_type == "markdown" and FIGURE_WORDS.search(cell.source)]


def _download(text: str, path: str):
    """The student download of a chapter, as a reader gets it."""
    notebook = edition_chapter(text, path, Edition.STUDENT, book_museum(), torch.__version__,
                               machine_kinds=book_machine_kinds())
    return download_notebook(notebook, PlainMarkdown(
        lambda role, target: Target(target, f"https://book.example/{target}.html")))


CHAPTERS = [path for path in sorted(BOOK.glob("*.md"))
            if is_chapter_source(path.read_text(encoding="utf8"))]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.stem)
def test_a_download_speaks_of_no_figure_it_lacks(path):
    assert _figure_mentions(_download(path.read_text(encoding="utf8"), str(path))) == []


def test_the_check_sees_a_caption_left_in_a_download():
    chapter = BOOK / "pt01.md"
    text = chapter.read_text(encoding="utf8").replace('+++ {"tags": ["book-only"]}\n', "", 1)
    assert _figure_mentions(_download(text, str(chapter)))
