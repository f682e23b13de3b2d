"""Figures in the downloads: an image a chapter shows with a figure or image directive reaches
its download as an image (a link to the published page's copy), and the text about a figure
the book draws with its own code (cells tagged book-only, left out of the downloads) is
book-only too, so a download never speaks of a figure it lacks."""

from __future__ import annotations

import shutil

import pytest

from conftest import BOOK, TORCH_VERSION, book_machine_kinds, book_museum
from coursebook.model.notebooks import cell_tags, is_chapter_source
from coursebook.prepare.chapters import edition_chapter
from coursebook.prepare.editions import Edition
from coursebook.render.downloads import download_notebook
from coursebook.render.plain_markdown import PlainMarkdown, Target

PUBLISHED = "https://book.example"


def _converter(**options) -> PlainMarkdown:
    return PlainMarkdown(lambda role, target: Target(target, f"{PUBLISHED}/{target}.html"),
                         f"{PUBLISHED}/chapter.html", **options)


def _published_image(path: str) -> str:
    return f"{PUBLISHED}/_images/{path.rsplit('/', 1)[-1]}"


def test_a_figure_reaches_the_download_as_an_image_with_its_caption():
    text = "```{figure} images/loss.png\n:alt: The loss falls\n\nThe loss, epoch by epoch.\n```"
    assert _converter(image_url=_published_image).convert(text) == (
        f"![The loss falls]({PUBLISHED}/_images/loss.png)\n\n*The loss, epoch by epoch.*")


def test_a_figures_caption_is_its_alt_text_as_written():
    """Without `:alt:`, a figure's alt text is its caption's first line, Markdown already: it
    was escaped again, so the image's description held the markup (`\\*\\*tiny\\*\\*`, HR's
    H8; 9614f5b fixed the same for `{glue:figure}`, whose rule this is now too)."""
    text = "```{figure} images/loss.png\nA **tiny** line, see `x`.\n```"
    assert _converter(image_url=_published_image).convert(text) == (
        f"![A **tiny** line, see `x`.]({PUBLISHED}/_images/loss.png)\n\n"
        "*A **tiny** line, see `x`.*")


def test_a_markdown_images_alt_text_keeps_its_emphasised_words():
    """`![An *alt*](x)` downloaded as `![An ](...)`: only the description's first level was
    read (hr3's H18)."""
    assert _converter(image_url=_published_image).convert("![An *alt* `x`](plots/fit.png)") == (
        f"![An alt x]({PUBLISHED}/_images/fit.png)")


def test_an_image_reaches_the_download_as_an_image():
    text = "```{image} images/loss.png\n:alt: The loss falls\n```"
    assert _converter(image_url=_published_image).convert(text) == (
        f"![The loss falls]({PUBLISHED}/_images/loss.png)")
    # its options as MyST reads them for the page: a quoted value is the text inside the quotes
    text = '```{image} images/loss.png\n:alt: "The loss: falling"\n```'
    assert _converter(image_url=_published_image).convert(text) == (
        f"![The loss: falling]({PUBLISHED}/_images/loss.png)")
    # an image on the web is linked as it is, wherever the book is published
    assert _converter().convert("```{image} https://example.org/a.png\n```") == (
        "![A figure](https://example.org/a.png)")


def test_a_figure_with_no_published_copy_links_to_the_page():
    text = "```{figure} images/loss.png\n\nThe loss, epoch by epoch.\n```"
    assert _converter().convert(text) == (
        f"*[Figure]({PUBLISHED}/chapter.html):* The loss, epoch by epoch.")


def test_a_markdown_image_reaches_the_download_as_a_figure_directives_does():
    """A lesson's `![X-OR](res/x-or.png)` kept its path, which no Colab notebook has."""
    text = "The circuit: ![X-OR gate](res/x-or.png) and ![web](https://example.org/a.png)."
    assert _converter(image_url=_published_image).convert(text.split(" and ")[0]) == (
        f"The circuit: ![X-OR gate]({PUBLISHED}/_images/x-or.png)")
    # No published copy: the page named instead; an image on the web linked as it is
    assert _converter().convert(text) == (
        f"The circuit: *[Figure]({PUBLISHED}/chapter.html):* X-OR gate and "
        "![web](https://example.org/a.png).")


def _download(text: str, path: str):
    """A chapter's student edition, and its download as a reader gets it."""
    notebook = edition_chapter(text, path, Edition.STUDENT, book_museum(), TORCH_VERSION,
                               machine_kinds=book_machine_kinds()).notebook
    return notebook, download_notebook(notebook, _converter())


def _book_only_text_downloaded(notebook, download) -> list[str]:
    """The book-only prose (about a figure the book draws) that reached the download."""
    downloaded = "\n".join(cell.source for cell in download.cells)
    return [cell.source[:80] for cell in notebook.cells if cell.cell_type == "markdown"
            and "book-only" in cell_tags(cell) and cell.source.strip() in downloaded]


CHAPTERS = [path for path in sorted(BOOK.glob("*.md"))
            if is_chapter_source(path.read_text(encoding="utf8"))]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.stem)
def test_a_download_holds_no_text_about_a_figure_the_book_draws(path):
    assert _book_only_text_downloaded(*_download(path.read_text(encoding="utf8"), str(path))) == []


def test_the_check_sees_book_only_text_left_in_a_download():
    chapter = BOOK / "pt01.md"
    notebook, download = _download(chapter.read_text(encoding="utf8"), str(chapter))
    book_only = next(cell for cell in notebook.cells
                     if cell.cell_type == "markdown" and "book-only" in cell_tags(cell))
    download.cells.append(book_only)  # planted: as if the download kept it
    assert _book_only_text_downloaded(notebook, download)


@pytest.mark.slow
def test_a_built_download_links_each_figure_to_its_published_copy(tiny_book, tmp_path,
                                                                   cache_copy):
    import struct
    import zlib

    import nbformat

    from conftest import sphinx_build

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    (tiny_book / "images").mkdir()
    (tiny_book / "images" / "dot.png").write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\x00\x00")) + chunk(b"IEND", b""))
    # and a Markdown image, as `make chapter FROM=` writes a lesson's (its <img> too)
    (tiny_book / "chapter" / "res").mkdir(parents=True)
    shutil.copy(tiny_book / "images" / "dot.png", tiny_book / "chapter" / "res" / "dot2.png")
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text().replace(
        "A worked example.", "A worked example.\n\n```{figure} images/dot.png\n:alt: A dot\n\n"
                             "One dot.\n```\n\nAgain: ![Another dot](chapter/res/dot2.png)", 1))
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy,  # prose: the cached run holds
                         settings={"html_baseurl": PUBLISHED})
    assert build.returncode == 0, build.log[-3000:]
    html = build.outdir / "html"
    assert (html / "_images" / "dot.png").is_file()
    download = nbformat.read(html / "_sources" / "chapter.ipynb", as_version=4)
    for text in ["\n".join(cell.source for cell in download.cells),
                 (html / "_sources" / "chapter.md").read_text()]:  # the notebook, the document
        assert f"![A dot]({PUBLISHED}/_images/dot.png)\n\n*One dot.*" in text, text
        assert f"Again: ![Another dot]({PUBLISHED}/_images/dot2.png)" in text, text
