"""What a reader downloads (docs/authoring.md, "Downloads"): this edition's notebook and .md,
never the file on disk, which Sphinx copies with the answers into ``_sources/``."""

from __future__ import annotations

import copy
import io
import json
import re
import textwrap
import tokenize
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from myst_parser.config.main import merge_file_level
from sphinx.application import Sphinx

from coursebook.answer_checks.prepare import SETUP_TAG, without_exact
from coursebook.config import book_config
from coursebook.model.notebooks import (ANSWER_TAG, BOOK_ONLY_TAG, RAISES_TAG, RESTART_TAG,
                                        cell_tags, code_cell, is_chapter_source, is_claim,
                                        markdown_cell, parsed_cell, with_stable_ids)
from coursebook.museum.prepare import REVEAL_TAG, fold_into_reveal
from coursebook.page_state import chapter_notebook, page_state_of
from coursebook.prepare.chapter_packages import install_cell
from coursebook.prepare.chapters import edition_of
from coursebook.prepare.editions import Edition
from coursebook.prepare.proofs import proof_blocks

if TYPE_CHECKING:  # mdformat with it is imported when a page is written (a no-op writes none)
    from coursebook.render.plain_markdown import PlainMarkdown, Target

# myst-nb's glue, which Colab lacks, is a function that shows the value there: the page pastes
# each value into its text, and so does the download (markdown_for), from the build's run.
GLUE_IMPORT = re.compile(
    r"^(?:from myst_nb import (glue)|import (myst_nb))(?: as (\w+))?[ \t]*(?:#.*)?$", re.M)
GLUE_STAND_IN = ("def {}(name, value, display=True):  # in place of myst-nb's glue: shows it\n"
                 "    from IPython.display import display as show\n\n"
                 "    if display:\n        show(value)")


def glue_stand_in(found: re.Match) -> str:  # ``import myst_nb``: a class of that name holds it
    if found[1]:
        return GLUE_STAND_IN.format(found[3] or "glue")
    return (f"class {found[3] or 'myst_nb'}:  # in place of myst-nb, which Colab lacks\n"
            + textwrap.indent(GLUE_STAND_IN.format("glue"), "    "))


# A caught cell's first line. The types it prints are in a folded cell at the top (and after
# each restart): in a cell the student reads before predicting, they would tell what goes wrong.
CAUGHT = "with run_all_goes_on():  # set up at the top: rerun that cell after a restart\n"
GOES_ON = """#@title Run first, and again after a restart: Run all goes on past the book's errors
# A cell that begins `with run_all_goes_on():` runs its code as written. An error of a type
# this chapter's cells raise on purpose is printed as the book's page shows it, and Run all
# goes on; any other error stops the cell, as usual. The types are kept here, out of sight
# of the cells that ask you to predict first.
class run_all_goes_on:
    raised = {!r}

    def __enter__(self):
        pass

    def __exit__(self, kind, error, traceback):
        if kind is not None and kind.__name__ in self.raised:
            print(f"{{kind.__name__}}: {{error}}")
            return True  # printed, not raised"""
GOES_ON_FOLDED = {"cellView": "form", "jupyter": {"source_hidden": True}}  # Colab's, Jupyter's
# The .md download's summary of the check() cell: its hundreds of lines of digests would stop
# the text at the first check.
CHECKS_CODE = "The code that defines check(), which the notebook runs"
SET_ASIDE_HEADING = "Kept for after your predictions"  # where the .md prints what it set aside
COLAB = "https://colab.research.google.com/github"


def catching(source: str) -> str:
    """The cell under :data:`CAUGHT`, indented but for a multi-line string's lines (its text) and
    the margin comments that end it (``# Your version here``: a student types under them there).
    A cell that is no Python (``x = # TODO``) stays as it is: wrapped, it fails all the same."""
    lines = source.strip("\n").splitlines()
    try:  # not plain Python (a magic, say): every line is code, indented
        tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(lines)).readline))
    except (tokenize.TokenError, SyntaxError):
        tokens = []
    inside_strings = {number for token in tokens if token.type == tokenize.STRING
                      for number in range(token.start[0] + 1, token.end[0] + 1)}
    code_ends = max((token.end[0] for token in tokens if token.type not in (
        tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.DEDENT, tokenize.ENDMARKER)),
        default=0) if tokens else len(lines)
    if parsed_cell(source) is None or not code_ends:
        return source
    # A comment in a block (a loop's) stays in it: the tail is the comments at the margin.
    code_ends = max([code_ends, *(n for n, line in enumerate(lines, 1) if line[:1].isspace())])
    body = "\n".join(line if number in inside_strings or not line.strip() else "    " + line
                     for number, line in enumerate(lines[:code_ends], 1))
    tail = "\n".join(lines[code_ends:]).strip("\n")
    return f"{CAUGHT}{body}" + (f"\n\n{tail}" if tail else "")


def download_notebook(notebook: nbformat.NotebookNode, markdown: PlainMarkdown,
                      raised: tuple[str, ...] = (), instructor: bool = False
                      ) -> nbformat.NotebookNode:
    """What a reader runs elsewhere with "Run all"; ``raised``: the error types its cells raise
    on purpose (none: no cell is caught; the .md, read as text, shows the code as is)."""
    notebook = copy.deepcopy(notebook)  # the prepared chapter is shared by the build's hooks
    cells, notebook.cells = notebook.cells, []
    goes_on = GOES_ON.format(raised)
    waiting: dict[str, str] = {}  # a book-only cell's glue imports, by the name each binds:
    for cell in cells:  # each goes to the first cell kept after it that names it (or binds it)
        imports = {found[3] or found[1] or found[2]: found[0]
                   for found in GLUE_IMPORT.finditer(cell.source) if cell.cell_type == "code"}
        if BOOK_ONLY_TAG in cell_tags(cell):
            waiting |= imports
        elif not is_claim(cell):
            waiting = {name: line for name, line in waiting.items() if name not in imports}
            if names := [name for name in waiting if cell.cell_type == "code"
                         and re.search(rf"\b{name}\b", cell.source)]:
                cell.source = "\n".join([waiting.pop(name) for name in names] + [cell.source])
            # The page folds the rest of an exhibit into its reveal; a notebook, its markdown;
            # the .md, read as text, a running exhibit's fix code too.
            if notebook.cells and (folded := fold_into_reveal(notebook.cells[-1], cell if (
                    markdown.set_aside is None) else markdown_cell(as_text(cell)))):
                notebook.cells[-1].source = folded
                continue
            notebook.cells.append(cell)
            if raised and RESTART_TAG in cell_tags(cell):  # a new process: defined again
                notebook.cells.append(code_cell(goes_on))
    if raised:  # first, for Run all (after the packages)
        notebook.cells.insert(0, code_cell(goes_on))
    if (installs := install_cell(notebook)) is not None:  # where it runs, it installs them
        notebook.cells.insert(0, installs)
    # The rest of the top matter is the build's (an answer's `{{ ans }}` substitution, saved
    # widget state). A recorded chapter names the machine's kernel; a reader has Python 3.
    notebook.metadata = nbformat.from_dict({
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": notebook.metadata.get("language_info", {"name": "python"})})
    for index, cell in enumerate(notebook.cells):
        tags = cell_tags(cell)
        if cell.cell_type == "markdown":
            cell.source = markdown.convert(cell.source)
        elif cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.source = GLUE_IMPORT.sub(glue_stand_in, cell.source)
            # A predict-first cell is wrapped too, whether it raises or not: a wrapper on
            # the failing ones alone would answer "does it raise?" before the reader runs it.
            if raised and (RAISES_TAG in tags or REVEAL_TAG in tags):
                cell.source = catching(cell.source)
            if SETUP_TAG in tags and not instructor:
                cell.source = without_exact(cell.source)
            if SETUP_TAG in tags and markdown.set_aside is not None:  # the .md, read as text
                notebook.cells[index] = markdown_cell(markdown.kept_for_the_end(
                    CHECKS_CODE, as_text(cell)))
    # A cell whose whole text is another edition's (an ``{only}`` block) is left out.
    notebook.cells = [cell for cell in notebook.cells
                      if cell.cell_type != "markdown" or cell.source.strip()]
    # A code cell's id is its expected output's key; then the notes go. An instructor's
    # answer tag stays; the build's and myst-nb's tags, the cache key and an ``unverified``
    # reason go: a reader's notebook carries no build metadata.
    for cell in with_stable_ids(notebook).cells:
        cell.metadata = nbformat.from_dict(GOES_ON_FOLDED if cell.source == goes_on else
                                           {"tags": [ANSWER_TAG]} if ANSWER_TAG in cell_tags(cell)
                                           else {})
    return notebook


def as_text(cell: nbformat.NotebookNode) -> str:  # in the .md download
    from coursebook.render.plain_markdown import fenced

    return cell.source.strip("\n") if cell.cell_type == "markdown" else fenced(cell.source,
                                                                                "python")


def download_document(notebook: nbformat.NotebookNode, markdown: PlainMarkdown,
                      instructor: bool = False) -> str:
    """The ``.md`` download: the download notebook as text, each dropdown (which a text editor
    shows open) and glued image set aside, numbered, after the last cell."""
    markdown = replace(markdown, set_aside=[], images=[])
    cells = download_notebook(notebook, markdown, instructor=instructor).cells
    parts = [as_text(cell) for cell in cells if cell.source.strip()]
    if markdown.set_aside:
        parts.append(f"## {SET_ASIDE_HEADING}")
        parts += [f"### Note {number}: {summary}\n\n{content}"
                  for number, (summary, content) in enumerate(markdown.set_aside, 1)]
    if markdown.images:
        parts.append("\n".join(f"[glued-{number}]: {address}"
                               for number, address in enumerate(markdown.images, 1)))
    return "\n\n".join(parts) + "\n"


def page_url(published_url: str, docname: str, anchor: str = "") -> str:
    """A page's address on the published student book ("" when the book has none)."""
    if not published_url:
        return ""
    return f"{published_url.rstrip('/')}/{docname}.html" + (f"#{anchor}" if anchor else "")


def markdown_for(app: Sphinx, pagename: str) -> PlainMarkdown:
    """The converter for one page: references resolved by Sphinx's own tables."""
    from myst_nb.sphinx_ import NbMetadataCollector

    from coursebook.render.plain_markdown import PlainMarkdown, Target

    labels, published = app.env.get_domain("std").labels, app.config.html_baseurl

    def resolve(role: str, target: str) -> Target | None:
        if role == "doc":
            docname = target.lstrip("/").removesuffix(".md")
            if docname not in app.env.titles:
                return None
            return Target(app.env.titles[docname].astext(), page_url(published, docname))
        if role == "prf:ref":  # sphinx-proof's: "Theorem 2", as the page shows it
            if (block := proof_blocks(app.env).get(target)) is None:
                return None
            number = app.env.toc_fignumbers.get(block["docname"], {}).get(
                block["countertype"], {}).get(target, ())
            return Target(f"{block['realtype'].title()} {'.'.join(map(str, number))}".strip(),
                          page_url(published, block["docname"], target))
        if role == "eq":  # "(1)", as Sphinx's math domain numbers it on the page
            math = app.env.get_domain("math")
            found = math.resolve_xref(app.env, pagename, app.builder, "eq", target, None, None)
            if found is None:
                return None
            anchor = found.get("refid") or found["refuri"].partition("#")[2]  # another page's
            return Target(found.astext(), page_url(published, math.equations[target][0], anchor))
        if role == "download":
            return Target(target, copied(app.env.dlfiles, "_downloads", target))
        if target.lower() not in labels:
            return None
        docname, anchor, title = labels[target.lower()]
        return Target(title or target, page_url(published, docname, anchor))

    def copied(files, folder: str, path: str) -> str:  # the HTML builder's copy (_images/…)
        if "://" in path:
            return path
        # By the path from the book's folder: a str for an image, a Path for a download.
        found = {str(key): made for key, made in files.items()}.get(
            app.env.relfn2path(path, pagename)[0])
        return f"{published.rstrip('/')}/{folder}/{found[1]}" if found and published else ""

    # A chapter's top matter may add MyST syntax (``myst: enable_extensions``), as myst-nb reads it.
    notebook = chapter_notebook(app.env, pagename)
    md_config = merge_file_level(app.env.myst_config, notebook.metadata if notebook else {},
                                 lambda kind, message: None)  # myst-nb warned already
    numbers = {kind: iter(found) for kind, found in block_numbers(app.env, pagename).items()}
    glued = {}  # each value the page's cells glue, from myst-nb's file of this run:
    if NbMetadataCollector.get_doc_data(app.env)[pagename].get("glue"):  # not an earlier run's
        glue_file = Path(app.env.mystnb_config.output_folder, pagename + ".glue.json")
        glued = {key: output["data"] for key, output in json.loads(glue_file.read_bytes()).items()}
    return PlainMarkdown(resolve, page_url(published, pagename), md_config, app.tags.eval_condition,
                         lambda path: copied(app.env.images, "_images", path),
                         numbers=defaultdict(lambda: iter(()), numbers), glued=glued)


def block_numbers(env, pagename: str) -> dict[str, list[str]]:
    """The page's numbered blocks' numbers by kind, in order, as its HTML shows them (numfig's)."""
    return {kind: [".".join(map(str, number)) for number in sorted(numbers.values())]
            for kind, numbers in env.toc_fignumbers.get(pagename, {}).items()}


def offer_edition_notebook(app: Sphinx, pagename: str, templatename: str,
                           context: dict, doctree) -> None:
    """``html-page-context``, before the theme's buttons: write and link the notebook."""
    if doctree is None or (notebook := chapter_notebook(app.env, pagename)) is None:
        return
    target = Path(app.outdir, "_sources", pagename + ".ipynb")
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(download_notebook(notebook, markdown_for(app, pagename),
                                     page_state_of(app.env, pagename).raised,
                                     edition_of(app) is Edition.INSTRUCTOR), target)
    context["ipynb_source"] = pagename + ".ipynb"
    # The theme's source download: a chapter in any format offers its .md document there
    # (Sphinx copies the file to this name; replace_copied_sources writes over it). A book
    # that copies no sources gets no name: Sphinx would copy the raw chapter to it.
    if app.config.html_copy_source:
        context["sourcename"] = _copied_source(app, pagename)
        context["page_source_suffix"] = ".md"


def _copied_source(app: Sphinx, docname: str) -> str:
    """The name Sphinx copies a page's file to under ``_sources/`` (a chapter's: its .md)."""
    suffix = (".md" if chapter_notebook(app.env, docname) is not None
              else Path(app.env.doc2path(docname)).suffix)
    return docname + suffix + app.config.html_sourcelink_suffix


def colab_url(repository_url: str, branch: str, pagename: str) -> str:
    repository = repository_url.rstrip("/").removesuffix(".git").split("github.com/")[-1]
    return f"{COLAB}/{repository}/blob/{branch}/_sources/{pagename}.ipynb"


def add_colab_button(app: Sphinx, pagename: str, templatename: str, context: dict,
                     doctree) -> None:
    """``html-page-context``, after the theme's buttons: "Open in Colab", when configured."""
    config = book_config(app.config)
    if (not config.repository_url
            or "header_buttons" not in context or "ipynb_source" not in context):
        return
    context["header_buttons"].append({
        "type": "link", "url": colab_url(config.repository_url, config.published_branch, pagename),
        "text": "Colab", "tooltip": "Open the student notebook in Colab",
        "icon": "fas fa-rocket", "label": "colab-launch-button",
    })


def replace_copied_sources(app: Sphinx, exception: Exception | None) -> None:
    """``build-finished``: each page file Sphinx copied this build becomes the edition's: a
    chapter's .md download, another page as plain Markdown (a differing copy is done)."""
    if exception is not None or app.builder.format != "html" or not app.config.html_copy_source:
        return
    for docname in app.env.found_docs:
        source = Path(app.env.doc2path(docname))
        copied = Path(app.outdir, "_sources", _copied_source(app, docname))
        if not copied.is_file() or copied.read_bytes() != source.read_bytes():
            continue
        text = source.read_text(encoding="utf8")
        notebook = Path(app.outdir, "_sources", docname + ".ipynb")
        if not is_chapter_source(text):
            copied.write_text(markdown_for(app, docname).convert(text) + "\n", encoding="utf8")
        elif (prepared := chapter_notebook(app.env, docname)) is not None and notebook.is_file():
            copied.write_text(download_document(prepared, markdown_for(app, docname),
                                                edition_of(app) is Edition.INSTRUCTOR),
                              encoding="utf8")
        else:
            copied.unlink()  # a chapter that failed to build: its file holds the answers
