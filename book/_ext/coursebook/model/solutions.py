"""sphinx-exercise's solutions are answers: each becomes answer cells of its own when a
chapter is read, so whatever handles answers handles solutions, with no rule of its own."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from functools import partial
from itertools import accumulate
from typing import TYPE_CHECKING

import nbformat
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig, merge_file_level
from myst_parser.parsers.mdit import create_md_parser

from coursebook.model.cell_notes import CELL_NOTE, line_within, place_at
from coursebook.model.faults import BookError

if TYPE_CHECKING:
    from markdown_it.token import Token
    from sphinx.util.tags import Tags

SOLUTION = "solution"
START = "solution-start"
END = "solution-end"

_DIRECTIVE = re.compile(r"\{([\w:-]+)\}")  # a domain's too: `{prf:proof}`
# A gated marker stands alone in its cell (sphinx-exercise pairs the two as siblings, so
# neither may go inside a box).
_MARKER = re.compile(rf"^\s*(`{{3,}}|:{{3,}})[ \t]*\{{({START}|{END})\}}")
_NESTED = re.compile(rf"^\s*(`{{3,}}|:{{3,}})[ \t]*\{{({SOLUTION}|{START}|{END})\}}",
                     re.MULTILINE)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_CODE_SPAN = re.compile(r"(`+)(?s:.+?)(?<!`)\1(?!`)")  # shows a comment as it is
# No directive (None), or one whose body is shown as written: no comment or role inside.
_AS_WRITTEN = (None, "code-block", "code-cell", "code", "math")
# The book's MyST syntax (conf.py's myst_enable_extensions is this list): a tool that runs no
# build reads Markdown as a build does.
MYST_EXTENSIONS = ["colon_fence", "dollarmath", "amsmath", "deflist"]
# Read whatever a build enables (as before a495520): a solution in a colon fence the parser
# missed would reach the student edition; a `%` in math is LaTeX's.
_ALWAYS = {"colon_fence", "dollarmath", "amsmath"}
_BOOK: list[MarkdownIt] = []  # the parser of a build's MyST settings (-D overrides too)


def use_book_markdown(app, *finished) -> None:
    """``builder-inited``, after myst-parser's: the book's MyST settings are the build's, until
    ``build-finished`` (a later reader in its process, a tool's, reads the book's own)."""
    config = app.env.myst_config
    extensions = _ALWAYS | set(config.enable_extensions)
    _BOOK[:] = [] if finished else [
        create_md_parser(replace(config, enable_extensions=extensions), RendererHTML)]


def markdown_parser() -> MarkdownIt:
    """myst-parser's parser as the book reads Markdown (a build's settings, else the book's)."""
    if not _BOOK:
        _BOOK.append(create_md_parser(MdParserConfig(enable_extensions=MYST_EXTENSIONS),
                                      RendererHTML))
    return _BOOK[0]


def reading_changed(metadata: dict) -> tuple[str, str] | None:
    """The key of a chapter's `myst:` settings (myst-parser puts them in the book's place for
    its page) under which the page would read its markup otherwise than the book; its line."""
    book = markdown_parser().options["myst_config"]  # a wrong value: myst-nb warns of it
    page = merge_file_level(book, {"myst": metadata.get("myst", {})}, lambda *_: None)
    missing = sorted(set(book.enable_extensions) - set(page.enable_extensions))
    key = "enable_extensions" if missing else next((key for key in (  # fences, directives
        "commonmark_only", "gfm_only", "disable_syntax", "fence_as_directive",
        "colon_fence_exact_match") if getattr(page, key) != getattr(book, key)), None)
    fix = f"list {', '.join(missing)} too" if missing else "remove it"
    return key and (key, f"top matter `myst: {key}` would have this page read its markup "
                    "otherwise than the book, which leaves the answers out of the student "
                    f"edition by its own reading: {fix}")


def comments(markdown: str) -> Iterator[tuple[int, int]]:
    """Where each comment of the Markdown is (its start and end): HTML's, and MyST's ``%``
    lines from their ``%`` (a quote's ``>`` stays). No student's: an author's note."""
    lines = markdown.split("\n")
    at = [0, *accumulate(len(line) + 1 for line in lines)]  # where each line starts
    for token, offset, _ in _blocks(markdown, ("<!--", "%")):
        start, end = (offset + n for n in token.map or (0, 0))
        if token.type == "myst_line_comment":
            yield from ((at[n] + lines[n].index("%"), at[n + 1] - 1) for n in range(start, end))
        elif token.type in ("html_block", "inline") and "<!--" in token.content:
            masked = _CODE_SPAN.sub(lambda span: "`" * len(span[0]), markdown[at[start]:at[end]])
            yield from ((at[start] + found.start(), at[start] + found.end())
                        for found in _HTML_COMMENT.finditer(masked))


def without_comments(markdown: str) -> str:
    """The Markdown without its :func:`comments`, each line kept."""
    for start, end in reversed(list(comments(markdown))):
        markdown = markdown[:start] + "\n" * markdown.count("\n", start, end) + markdown[end:]
    return markdown


def builder_tags(name: str, builder_format: str | None = None) -> list[str]:
    """The tags Sphinx sets for a builder (its "Including content based on tags"); the format
    of its html and latex builders is their name."""
    builder_format = name if builder_format is None else builder_format
    return [builder_format, name, f"format_{builder_format}", f"builder_{name}"]


def shown_by(builds: Iterable[Tags], condition: str) -> bool:
    """Whether a build of one of these tag sets shows an ``{only}`` block of this condition
    (Sphinx's test; a malformed one Sphinx names, and shows)."""
    try:
        return any(tags.eval_condition(condition) for tags in builds)
    except Exception:
        return True


def without_unshown(markdown: str, shown: Callable[[str], bool]) -> str:
    """The Markdown without the ``{only}`` blocks ``shown`` rejects, each line kept: the build
    would not show them, but myst-nb reads them (a glue of a value only the other edition's
    run holds stopped the build)."""
    lines = markdown.split("\n")
    for token, offset, _ in _blocks(markdown, ("{only}",)):
        if _directive(token) == "only" and not shown(token.info.strip()[6:].strip()):
            start, end = offset + token.map[0], offset + token.map[1]
            lines[start:end] = [""] * (end - start)
    return "\n".join(lines)


def myst_roles(markdown: str) -> Iterator[tuple[str, int]]:
    """Each role in the Markdown as MyST reads it: its name and its line (from 0)."""
    for token, offset, _ in _blocks(markdown):
        if token.type == "inline":  # its line: in the paragraph's text as written (a code
            at = 0  # span or HTML may go on over a line end)
            for child in (child for child in token.children if child.type == "myst_role"):
                at = max(token.content.find(f"{{{child.meta['name']}}}`", at), 0) + 1
                yield child.meta["name"], offset + token.map[0] + token.content.count("\n", 0, at)


class SolutionError(BookError):
    """A solution the reader cannot cut out: inside another block, or a gate left open."""


# A grader's mark of what its tools cut from the students' notebook (nbgrader's `### BEGIN
# SOLUTION`, hidden tests and mark scheme, otter's `# BEGIN SOLUTION`, `x = 2 # SOLUTION`); a
# solution where CS231n's students write (their notebooks keep its marks around a `pass`).
GRADER_MARK = re.compile(r"^([ \t]*)(?:[#%/*<!=-]+[ \t]*)?(BEGIN|END) (SOLUTION|HIDDEN TESTS|MARK "
                         r"SCHEME)\b|[ \t]*#[ \t]?SOLUTION(?: NO PROMPT)?[ \t]*$", re.M)
OWN_CODE = re.compile(r"^([ \t]*)# \*+START OF YOUR CODE.*\n((?s:.*?))^[ \t]*# \*+END OF YOUR CODE",
                      re.M)
# A comment runs to its line's end: one way to read a line of `#`s (CS231n's banners), not 2^n.
STUB = re.compile(r"\s*(?:(?:#.*(?!.)|pass|\.\.\.|raise NotImplementedError(?:\(.*\))?)\s*)*")


def graders_mark(cell) -> tuple[int, str] | None:
    """Where the cell holds a grader's mark of a solution (its offset) and which mark."""
    if (cell.metadata.get("nbgrader") or {}).get("solution"):
        return 0, "nbgrader's `solution: true`"
    marks = [*GRADER_MARK.finditer(cell.source), *(found for found in OWN_CODE.finditer(
        cell.source) if not STUB.fullmatch(found[2]))]
    at = min((found.start() for found in marks), default=None)
    line = cell.source[cell.source.rfind("\n", 0, at or 0) + 1:].split("\n")[0]
    return None if at is None else (at, f"`{line.strip()}`")


def heading_in_only(markdown: str) -> int | None:
    """The line (from 0) of a heading inside an ``{only}`` block: MyST places its section
    outside the block, in every edition, with the text after it."""
    return next((offset + token.map[0] for token, offset, within in (
        _blocks(markdown) if "{only}" in markdown else ())
        if token.type == "heading_open" and "only" in within), None)


def is_solution_marker(cell) -> bool:
    """A cell holding only a gated solution's start or end (never boxed)."""
    return cell.get("cell_type") == "markdown" and bool(_MARKER.match(cell.source))


def _directive(token) -> str | None:
    if token.type not in ("fence", "colon_fence") or token.level != 0:
        return None
    found = _DIRECTIVE.match(token.info.strip())
    return found.group(1) if found else None


def _blocks(markdown: str, needles: tuple[str, ...] = (), offset: int = 0,
            within: tuple[str, ...] = ()) -> Iterator[tuple[Token, int, tuple[str, ...]]]:
    """Each token of the Markdown, in a directive's body too (not code's or math's), the line
    its ``map`` counts from and the directives around it; a text without ``needles``: none."""
    if needles and not any(needle in markdown for needle in needles):
        return
    for token in markdown_parser().parse(markdown):
        yield token, offset, within
        if (name := _directive(token)) not in _AS_WRITTEN:
            yield from _blocks(token.content, needles, offset + token.map[0] + 1, (*within, name))


def _pieces(cell, gated: bool, answer: bool, strict: bool) -> tuple[list, bool]:
    """The markdown cut where solutions start and end: (text, is a solution, its line) pieces,
    and whether a gate is still open. ``answer``: the text is an answer already (no leak); a
    solution inside another block is taken whole as a solution (the safe side)."""
    lines = cell.source.splitlines(keepends=True)
    line_at = partial(line_within, cell)
    pieces: list[tuple[str, bool, int]] = []
    done = 0  # lines already in a piece

    def cut(until: int, solution: bool) -> None:
        nonlocal done
        text = "".join(lines[done:until])
        if text.strip():
            start = len("".join(lines[:done])) + len(text) - len(text.lstrip("\n"))
            pieces.append((text.strip("\n"), solution, line_at(start)))
        done = until

    for token in markdown_parser().parse(cell.source):
        name = _directive(token)
        if name not in (SOLUTION, START, END):
            if (not answer and token.type in ("fence", "colon_fence")
                    and _NESTED.search(token.content)):
                if strict:
                    raise SolutionError(
                        f"a solution inside a `{token.info.strip()}` block cannot be left out "
                        "of the student edition: move it out, after the block",
                        line=line_at(len("".join(lines[:token.map[0]]))))
                cut(token.map[0], gated)
                cut(token.map[1], True)
            continue
        if (name == END) == gated:  # a solution or a gate's start outside a gate, its end in one
            cut(token.map[0], gated)
            cut(token.map[1], True)  # a gate's marker: a piece of its own
            gated = {SOLUTION: gated, START: True, END: False}[name]
    cut(len(lines), gated)
    return pieces, gated


def solutions_as_answers(notebook: nbformat.NotebookNode, tag: str,
                         strict: bool = False) -> nbformat.NotebookNode:
    """The notebook, each solution (a gated one's cells too) in markdown cells of its own
    tagged ``tag``; one that cannot be cut out raises when ``strict``, else is all answer."""
    def tagged(cell) -> None:
        if tag not in cell.metadata.get("tags", []):
            cell.metadata["tags"] = [*cell.metadata.get("tags", []), tag]

    cells = []
    gated, opened = False, 0  # where the open gate starts
    for cell in notebook.cells:
        was_gated, pieces = gated, [("", gated, 0)]  # a cell without a solution: whole
        if cell.cell_type == "markdown" and "{solution" in cell.source:
            pieces, gated = _pieces(cell, gated, tag in cell.metadata.get("tags", []), strict)
            if gated and not was_gated:
                opened = next(line for text, _, line in reversed(pieces) if _MARKER.match(text))
        if len(pieces) == 1 and pieces[0][1] == was_gated == gated:
            if gated:
                tagged(cell)
            cells.append(cell)
            continue
        for text, solution, line in pieces:
            piece = nbformat.v4.new_markdown_cell(text, metadata=copy.deepcopy(cell.metadata))
            piece.metadata.pop(CELL_NOTE, None)
            place_at(piece, line, cell)
            if solution:
                tagged(piece)
            cells.append(piece)
    if gated and strict:
        raise SolutionError(f"a `{{{START}}}` has no `{{{END}}}` after it: close it, or the "
                            "rest of the chapter would be left out of the student edition",
                            line=opened)
    notebook.cells = cells
    return notebook
