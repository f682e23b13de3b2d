"""Checks of a built PDF and its LaTeX log: no word in the margins (sideways conf.py's
2 cm ``hmargin``, up and down the 5 mm no printer reaches), no ``Overfull \\hbox`` wider
than :data:`OVERFULL_LIMIT_PT`, no missing character, every font embedded.

Each problem names its chapter file: a page by the PDF destination of the ``DOC::doc``
label Sphinx writes where each document starts, a log line by that label's line in the
``.tex``; a missing character by where it was printed, with what to install.
"""

from __future__ import annotations

import bisect
import pickle
import re
import subprocess
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from itertools import chain
from pathlib import Path
from xml.etree import ElementTree

from docutils import nodes

from coursebook.model.faults import shown_path
from coursebook.model.notebooks import first_line
from coursebook.render.pdf_fonts import FALLBACK_FONTS

OVERFULL_LIMIT_PT = 2.0
SIDE_MARGIN_PT = 2 / 2.54 * 72 - 1.0  # the 2 cm hmargin of conf.py, less 1 pt of rounding
TOP_BOTTOM_MARGIN_PT = 5 / 25.4 * 72  # 5 mm
POPPLER = ("pdftotext", "pdffonts", "pdfinfo")


@dataclass(frozen=True)
class Problem:
    what: str
    page: int | None = None  # the PDF's page, counted from 1
    tex_line: int | None = None  # the line of the .tex file a log message names
    chapter: str = ""  # the source file, once located
    character: str = ""  # a character no font of the PDF has
    in_math: bool = False  # that character stood in math, set in TeX's own math fonts

    def __str__(self) -> str:
        return f"{self.chapter}: {self.what}" if self.chapter else self.what


def _poppler(*command: str, check: bool = True) -> str:
    return subprocess.run(command, check=check, capture_output=True, text=True).stdout


def overflowing_words(pdf: Path) -> list[Problem]:
    xhtml = _poppler("pdftotext", "-bbox", str(pdf), "-")
    tree = ElementTree.fromstring(re.sub(r"<!DOCTYPE[^>]*>", "", xhtml))
    problems = []
    for number, page in enumerate(tree.iter("{http://www.w3.org/1999/xhtml}page"), start=1):
        width, height = float(page.get("width")), float(page.get("height"))
        for word in page.iter("{http://www.w3.org/1999/xhtml}word"):
            x0, y0, x1, y1 = (float(word.get(k)) for k in ("xMin", "yMin", "xMax", "yMax"))
            if (x0 < SIDE_MARGIN_PT or x1 > width - SIDE_MARGIN_PT
                    or y0 < TOP_BOTTOM_MARGIN_PT or y1 > height - TOP_BOTTOM_MARGIN_PT):
                problems.append(Problem(f"page {number}: {word.text!r} runs into the margin "
                                        f"(x {x0:.0f}-{x1:.0f} of {width:.0f} pt)", page=number))
    return problems


def log_problems(log: Path) -> list[Problem]:
    """Overfull boxes too wide, each with its ``.tex`` line ("at lines 5--6", "detected at
    line 6"), and missing characters, each once, from a LaTeX log."""
    text = log.read_text(encoding="utf8", errors="replace")
    problems = [Problem(f"{log.name}: {m.group(0)}",
                        tex_line=int(m.group(2)) if m.group(2) else None)
                for m in re.finditer(r"Overfull \\hbox \((\d+(?:\.\d+)?)pt too wide\)"
                                     r"(?:[^\n]*?lines? (\d+))?[^\n]*", text)
                if float(m.group(1)) > OVERFULL_LIMIT_PT]
    # A math font is one of TeX's own (cmmi10, lmsy10): a Unicode letter in `$…$` lands there.
    missing = dict.fromkeys(
        (chr(int(code, 16)), re.match(r"(?:cm|lm)[a-z]*\d+$", font) is not None)
        for code, font in re.findall(r"Missing character: There is no .*?\(U\+([0-9A-F]+)\)"
                                     r"(?: in font ([^!\n]*))?", text))
    return problems + [Problem(f"{log.name}: no font has {character!r} (U+{ord(character):04X})",
                               character=character, in_math=math) for character, math in missing]


def unembedded_fonts(pdf: Path) -> list[Problem]:
    # Columns: name type [type...] encoding emb sub uni object ID; emb is 5th from the end.
    return [Problem(f"font not embedded: {row.split()[0]}")
            for row in _poppler("pdffonts", str(pdf)).splitlines()[2:]
            if row.split() and row.split()[-5] != "yes"]


def check_pdf(pdf: Path, log: Path) -> list[Problem]:
    return overflowing_words(pdf) + log_problems(log) + unembedded_fonts(pdf)


# Sphinx's label of a place in a document: (docname, target); a document's start's: ``:doc``.
_LABEL = re.compile(r"\\label\{\\detokenize\{([^{}:]+):(:?[^{}]+)\}\}")


def document_starts_on_lines(tex: Path) -> list[tuple[int, str]]:
    lines = tex.read_text(encoding="utf8", errors="replace").splitlines()
    return [(number, doc) for number, line in enumerate(lines, start=1)
            for doc, target in _LABEL.findall(line) if target == ":doc"]


def _document_starts_on_pages(pdf: Path, aux: Path,
                              lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """(page, docname) where each document starts, from the .aux and ``pdfinfo -dests``;
    documents on the same page in their ``.tex`` order (``lines``)."""
    anchors = dict(re.findall(r"\\newlabel\{([^{}]+)::doc\}\{\{.*?\}\{.*?\}\{.*?\}\{(.+?)\}",
                              aux.read_text(encoding="utf8", errors="replace")))
    pages = {name: int(page) for page, name in re.findall(
        r'^\s*(\d+) \[.*\] "(.*)"$', _poppler("pdfinfo", "-dests", str(pdf), check=False), re.M)}
    order = {doc: number for number, doc in lines}
    return [(page, doc) for page, _, doc in sorted(
        (pages[anchor], order.get(doc, 0), doc) for doc, anchor in anchors.items()
        if anchor in pages)]


def document_at(starts: list[tuple[int, str]], position: int | None) -> str | None:
    if position is None:
        return None
    index = bisect.bisect_right([start for start, _ in starts], position) - 1
    return starts[index][1] if index >= 0 else None


def locate_chapters(problems: list[Problem], pdf: Path, aux: Path, tex: Path,
                    source_of: Callable[[str], str]) -> list[Problem]:
    """The problems, each naming its chapter file where known."""
    lines = document_starts_on_lines(tex) if tex.is_file() else []
    pages = _document_starts_on_pages(pdf, aux, lines) if aux.is_file() else []
    docnames = [document_at(pages, problem.page) or document_at(lines, problem.tex_line)
                for problem in problems]
    return [replace(problem, chapter=source_of(docname)) if docname else problem
            for problem, docname in zip(problems, docnames)]


# --- Where a character no font has was printed: (``file:line`` or the file, what holds it)

# The Greek capitals LaTeX has a command for (the others are Latin letters: A, B, E ...).
_GREEK_CAPITALS = {"Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi",
                   "Psi", "Omega"}


def latex_command(character: str) -> str | None:
    """A Greek letter's LaTeX command (δ: ``\\delta``, Δ: ``\\Delta``), else None."""
    kind, _, letter = unicodedata.name(character, "").replace("LAMDA", "LAMBDA").partition(
        " LETTER ")
    if kind == "GREEK SMALL" and letter.isalpha() and letter != "OMICRON":
        return "\\" + letter.lower()
    return "\\" + letter.title() if kind == "GREEK CAPITAL" and letter.title() in _GREEK_CAPITALS \
        else None


def describe(character: str) -> str:
    """``'你' (U+4F60 CJK UNIFIED IDEOGRAPH-4F60)``: a terminal may not show the character."""
    name = unicodedata.name(character, "") or (
        "private use" if unicodedata.category(character) == "Co" else "unassigned")
    return f"'{character}' (U+{ord(character):04X} {name})"


def _in_source(character: str, path: Path) -> tuple[str, str] | None:
    text = path.read_text(encoding="utf8", errors="replace") if path.is_file() else ""
    if character not in text:
        return None
    return (f"{shown_path(path)}:{text.count(chr(10), 0, text.index(character)) + 1}",
            "the chapter's text holds")


def _doctree(doctrees: Path, doc: str) -> nodes.document | None:
    """A document's doctree as Sphinx wrote it, in this build; None where there is none."""
    path = doctrees / f"{doc}.doctree"
    return pickle.loads(path.read_bytes()) if path.is_file() else None


def _in_outputs(character: str, path: Path, document: nodes.document) -> tuple[str, str] | None:
    for cell in document.findall(nodes.container):
        parts = {part.get("nb_element"): part.astext() for part in cell.children
                 if isinstance(part, nodes.container)}
        if cell.get("nb_element") == "cell_code" \
                and character in parts.get("cell_code_output", ""):
            code = parts.get("cell_code_source", "")
            shown = f"the cell `{first_line(code)}`" if code else "a cell whose code is hidden"
            # cell.line: the author's line (coursebook.model.cell_notes)
            return (f"{shown_path(path)}{f':{cell.line}' if cell.line else ''}",
                    f"the output of {shown} holds")
    return None


def _in_tex(character: str, tex: Path, source_of: Callable[[str], Path]) -> tuple[str, str] | None:
    lines = tex.read_text(encoding="utf8", errors="replace").splitlines() if tex.is_file() else []
    number = next((n for n, line in enumerate(lines, start=1) if character in line), None)
    if number is None:
        return None
    docname = document_at(document_starts_on_lines(tex), number)
    if docname is None:  # before the first document: the title page
        return f"{shown_path(tex)}:{number}", "the title pages hold"
    return str(shown_path(source_of(docname))), "a part the build adds holds"


def line_of_section(tex_lines: list[str], number: int, doctrees: Path) -> int | None:
    """The author's line of the heading (or other labelled place) the ``.tex`` line
    ``number`` comes after, read from its document's doctree: an overfull box's place."""
    for tex_line in reversed(tex_lines[:number]):
        for doc, target in reversed(_LABEL.findall(tex_line)):
            if target.startswith(":") or (document := _doctree(doctrees, doc)) is None:
                return None  # the document's start: before any heading of it
            node = next((n for n in document.findall(nodes.Element) if target in n["ids"]), None)
            return next((n.line for n in node.findall(nodes.Element) if n.line), None) \
                if node else None
    return None


def locate_characters(problems: list[Problem], docnames: Iterable[str] | None,
                      source_of: Callable[[str], Path], doctrees: Path, tex: Path) -> list[Problem]:
    """The problems, the missing characters as one message per place that prints them:
    ``file:line: the output of the cell `…` holds '…' (U+…)``, the first place of a source
    line, a cell's output, the .tex. ``docnames``: the documents to search, in order (None:
    every document of ``tex``)."""
    if docnames is None:
        docnames = [doc for _, doc in document_starts_on_lines(tex)] if tex.is_file() else []
    docnames = list(docnames)
    at: dict[tuple[tuple[str, str] | None, bool], list[str]] = {}
    for problem in problems:
        if problem.character:
            places = chain((_in_source(problem.character, source_of(doc)) for doc in docnames),
                           (_in_outputs(problem.character, source_of(doc), document)
                            for doc in docnames if (document := _doctree(doctrees, doc))))
            place = next(filter(None, places), None) or _in_tex(problem.character, tex, source_of)
            at.setdefault((place, problem.in_math), []).append(problem.character)
    fallbacks = ", ".join(font.family for font in FALLBACK_FONTS)
    tex_lines = tex.read_text(encoding="utf8", errors="replace").splitlines() \
        if tex.is_file() else []
    located = [replace(problem, chapter=f"{problem.chapter}:{line}", what=f"{problem.what} (in the "
                       "section from this line: a table, code or a word wider than the page)")
               if problem.chapter and problem.tex_line and (line := line_of_section(
                   tex_lines, problem.tex_line, doctrees)) else problem
               for problem in problems if not problem.character]
    for (place, in_math), characters in at.items():
        codes = " ".join(f"{ord(character):x}" for character in characters)
        where, what = place or ("", "the PDF holds")
        said = f"{what} {', '.join(map(describe, characters))}"
        located.append(Problem(
            f"{said} in math, which TeX's math fonts do not have (MathJax shows it on the page, "
            "LaTeX cannot): write it there as its LaTeX command ("
            + ("; ".join(f"`{latex_command(c)}` for '{c}'" for c in characters if latex_command(c))
               or "`\\alpha` for 'α', say") + "), or outside the math" if in_math else
            f"{said}, which no font of the PDF has, fallbacks included ({fallbacks}): install a "
            f"font that has {'them' if len(characters) > 1 else 'it'} (`fc-list "
            f"':charset={codes}' family` lists the installed ones), add its family to "
            "FALLBACK_FONTS in book/_ext/coursebook/render/pdf_fonts.py and its Debian package "
            "to tools/pdf-packages.txt, or print something else", chapter=where))
    return located
