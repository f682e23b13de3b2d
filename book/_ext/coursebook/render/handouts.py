"""Lab handouts (docs/publishing.md): a ``<chapter>.tex`` per chapter, its cover
``<chapter>-cover.tex``, and ``handouts.json`` for ``tools/build_pdf.py``."""

from __future__ import annotations

import json
import mimetypes
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.texescape import escape

from coursebook.config import book_config
from coursebook.model.faults import shown_path
from coursebook.model.provenance import source_commit
from coursebook.page_state import chapters_in_reading_order, page_states
from coursebook.prepare.chapters import edition_of
from coursebook.prepare.editions import Edition
from coursebook.render.downloads import colab_url, page_url
from coursebook.verify.chapter_checks import code_cells, verified_against

MANIFEST = "handouts.json"  # for tools/build_pdf.py
# A code cell with its output up to this many lines is kept on one page; a longer one
# may break (it would leave a gap of most of a page).
KEEP_TOGETHER_LINES = 28


def handouts(app: Sphinx) -> list[dict[str, str]]:  # handouts.json's entries
    config = book_config(app.config)
    return [{"docname": docname,  # its .tex file's stem
             "title": app.env.titles[docname].astext(),
             "source": str(shown_path(app.env.doc2path(docname))),  # as build messages name it
             "page_url": page_url(app.config.html_baseurl, docname),
             "colab_url": colab_url(config.repository_url, config.published_branch, docname)
             if config.repository_url else ""}
            for docname in chapters_in_reading_order(app.env)]


def set_handout_documents(app: Sphinx, env) -> None:
    """``env-updated``, before the LaTeX builder takes its documents ("howto": a chapter's
    sections run on; the title is LaTeX there)."""
    if book_config(app.config).handouts and app.builder.name == "latex":
        app.config.latex_documents = [
            (handout["docname"], f"{handout['docname']}.tex",
             escape(handout["title"], app.config.latex_engine), app.config.author, "howto")
            for handout in handouts(app)]


def cover(app: Sphinx, handout: dict[str, str], outdir: Path) -> str:
    """The LaTeX of a handout's cover; writes its QR codes into ``outdir``."""
    import segno

    links = []
    for kind, caption in (("page", "This chapter online"), ("colab", "Run it in Colab")):
        if url := handout[f"{kind}_url"]:
            image = f"{handout['docname']}-{kind}-qr.png"
            # Error correction M survives a smudge; the quiet zone (border) is the
            # standard's 4. PNG, whole pixels per module: xdvipdfmx cannot include a PDF.
            segno.make(url, error="m", micro=False).save(str(outdir / image), kind="png",
                                                          scale=12, border=4)
            links.append(rf"\begin{{minipage}}[t]{{0.46\linewidth}}\centering"
                         rf"\includegraphics[width=3.6cm]{{{image}}}\par\smallskip"
                         rf"{{\small\bfseries {escape(caption)}}}\par"
                         rf"{{\footnotesize\hypersetup{{urlcolor=black}}"
                         rf"\href{{{url}}}{{\nolinkurl{{{url.split('://', 1)[-1]}}}}}\par}}"
                         r"\end{minipage}")
    # The outputs' provenance, the build's date and commit are for the course team: a
    # student's handout says where outputs come from under the chapter's title, as the page does.
    chapter = page_states(app.env).get(handout["docname"])
    if chapter is not None and chapter.recorded_with:  # its marks under each cell say which
        provenance = f"{chapter.recorded_with}. A mark under each cell says where it ran."
    else:
        provenance = ("Outputs executed and verified with " + verified_against(
            book_config(app.config).torch, chapter and chapter.notebook))
    built = (rf"{{\large {escape(provenance)}\par}}\vspace{{3mm}}"
             rf"{{\large Built on {escape(book_config(app.config).build_date)} from commit "
             rf"{escape(source_commit(Path(app.srcdir)))}\par}}"
             if edition_of(app) is Edition.INSTRUCTOR else "")
    return "\n".join([
        r"\begin{titlepage}\centering\sffamily",
        r"\vspace*{2.5cm}",
        rf"{{\Large {escape(app.config.project)}\par}}\vspace{{1cm}}",
        rf"{{\Huge\bfseries {escape(handout['title'])}\par}}\vspace{{1cm}}",
        rf"{{\LARGE {escape(edition_of(app).value.capitalize())} edition\par}}\vspace{{1.5cm}}",
        built,
        r"\vfill",
        r"\hfill".join(links),
        r"\vspace*{1cm}",
        r"\end{titlepage}",
    ]) + "\n"


def write_covers(app: Sphinx, exception: Exception | None) -> None:
    """``build-finished``."""
    if exception is not None or not book_config(app.config).handouts or app.builder.name != "latex":
        return
    outdir = Path(app.outdir)
    written = handouts(app)
    for handout in written:
        (outdir / f"{handout['docname']}-cover.tex").write_text(cover(app, handout, outdir),
                                                                encoding="utf8")
    (outdir / MANIFEST).write_text(json.dumps(written, indent=1), encoding="utf8")


def keep_short_cells_together(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """``doctree-resolved``: no page break between a short cell's code and its output."""
    if not book_config(app.config).handouts or app.builder.name != "latex":
        return
    for cell in list(code_cells(doctree)):
        lines = sum(block.astext().count("\n") + 1 for block in cell.findall(nodes.literal_block))
        if 0 < lines <= KEEP_TOGETHER_LINES:
            # A frame and the gap between input and output take about three lines more.
            needed = nodes.raw("", f"\\needspace{{{lines + 3}\\baselineskip}}\n", format="latex")
            cell.parent.insert(cell.parent.index(cell), needed)


class OtherChapterReferences(SphinxPostTransform):
    """A reference into another chapter reads "section (in chapter)" on a handout, not its
    bare label: the chapter named once a paragraph, and not after its own title."""

    default_priority = 5  # before Sphinx resolves references (10)
    builders = ("latex",)

    def run(self, **kwargs) -> None:
        if not book_config(self.config).handouts:
            return
        labels = self.env.get_domain("std").labels
        included = self.app.builder.docnames  # the LaTeX document's
        named: set[tuple[int, str]] = set()  # (a paragraph, a chapter it named)
        for node in list(self.document.findall(addnodes.pending_xref)):
            target = labels.get(node.get("reftarget", ""))
            if node.get("reftype") != "ref" or target is None or target[0] in included:
                continue
            docname, _, section = target
            shown = node.astext() if node.get("refexplicit") else section
            title, paragraph = self.env.titles[docname].astext(), node.parent
            while isinstance(paragraph, nodes.Inline):  # in emphasis, say: its paragraph
                paragraph = paragraph.parent
            text = shown if shown == title or (id(paragraph), title) in named else (
                f"{shown} (in {title})")
            named.add((id(paragraph), title))
            node.replace_self(nodes.emphasis(text, text))


class ImagesNoPdfShows(SphinxPostTransform):
    """Warns at an image no PDF shows, with what to do: an SVG or GIF beside a chapter (lualatex
    stopped later, naming no place), one on the web (the PDF needed the network), a figure a
    cell drew as SVG alone (d2l's: the PDF printed `<Figure size 350x250 …>`)."""

    default_priority = 5  # before Sphinx's image converters and its fetch
    builders = ("latex",)

    def run(self, **kwargs) -> None:
        shown = self.app.builder.supported_image_types
        known = mimetypes.MimeTypes(filenames=())  # Python's table alone: the same on every machine
        for node in list(self.document.findall(nodes.image)):
            uri = node["uri"]
            kind = known.guess_type(uri)[0] or "unknown type"
            if "://" in uri:
                why = "is on the web: a PDF is typeset without the network; save it"
            elif "*" in uri or kind in shown:
                continue  # chosen among candidates, or one LaTeX includes
            else:
                why = f"({kind}) is of a kind no PDF shows: save it as a PNG or PDF"
            placed = node  # MyST gives a Markdown image line 0, its paragraph its line
            while not placed.line and placed.parent is not None:
                placed = placed.parent
            logging.getLogger(__name__).warning(
                "the image %s %s beside the chapter and show that file", uri, why,
                location=placed, type="coursebook", subtype="pdf")
            node.parent.remove(node)  # neither fetched nor converted: said once, here
        for block in self.document.findall(nodes.literal_block):  # the output myst-nb chose
            text = block.astext()  # matplotlib's repr: `<Figure size 350x250 with 1 Axes>`
            if "text_plain" in block["classes"] and text.startswith("<Figure size ") \
                    and text.endswith(" Axes>"):
                logging.getLogger(__name__).warning(
                    "its figure has no image a PDF shows (SVG alone, or none), so the PDF prints "
                    "`%s` in its place: draw PNG too, `backend_inline.set_matplotlib_formats("
                    "'svg', 'png')` (matplotlib_inline's; d2l sets SVG alone as it draws: "
                    "`d2l.use_svg_display = lambda: backend_inline.set_matplotlib_formats('svg', "
                    "'png')`)",
                    text, location=block, type="coursebook", subtype="pdf")


def setup_handouts(app: Sphinx) -> None:
    app.connect("env-updated", set_handout_documents)
    app.connect("doctree-resolved", keep_short_cells_together)
    app.connect("build-finished", write_covers)
    app.add_post_transform(OtherChapterReferences)
    app.add_post_transform(ImagesNoPdfShows)  # the book's PDF's images too
