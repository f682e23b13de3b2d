"""Where a character no font of the PDF has was printed: the chapter file, its line, the cell.

The LaTeX log names the character only (:func:`coursebook.render.pdf_checks.log_problems`).
It is looked for in each document's source (prose and code), then in the outputs its
cells printed (the doctrees the LaTeX was written from: outputs as the book shows them),
then in the document's part of the ``.tex`` file. Every character found in one place
becomes one message, which says what to install.
"""

from __future__ import annotations

import pickle
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import nbformat
from docutils import nodes

from coursebook.model.faults import shown_path
from coursebook.model.notebooks import first_line, line_of
from coursebook.render.pdf_checks import Problem, document_at, document_starts_on_lines
from coursebook.render.pdf_fonts import FALLBACK_FONTS

FONTS_MODULE = "book/_ext/coursebook/render/pdf_fonts.py"


@dataclass(frozen=True)
class Place:
    where: str  # ``file:line``, or the file alone
    what: str  # "the chapter's text holds", "the output of the cell `…` holds"


def describe(character: str) -> str:
    """``'你' (U+4F60 CJK UNIFIED IDEOGRAPH-4F60)``: a terminal may not show the character."""
    name = unicodedata.name(character, "")
    if not name:
        name = "private use" if unicodedata.category(character) == "Co" else "unassigned"
    return f"'{character}' (U+{ord(character):04X} {name})"


def _in_source(character: str, path: Path) -> Place | None:
    text = path.read_text(encoding="utf8", errors="replace") if path.is_file() else ""
    if character not in text:
        return None
    return Place(f"{shown_path(path)}:{text.count(chr(10), 0, text.index(character)) + 1}",
                 "the chapter's text holds")


def _cells(doctree: Path) -> list[dict[str, str]]:
    """Each code cell of a document's doctree: the text of its parts (myst-nb's
    ``cell_code_source`` and ``cell_code_output``; a hidden part is absent)."""
    if not doctree.is_file():
        return []
    document = pickle.loads(doctree.read_bytes())  # as Sphinx wrote it, in this build
    return [{part.get("nb_element"): part.astext() for part in cell.children
             if isinstance(part, nodes.container)}
            for cell in document.findall(nodes.container) if cell.get("nb_element") == "cell_code"]


def _in_outputs(character: str, path: Path, doctree: Path) -> Place | None:
    text = path.read_text(encoding="utf8", errors="replace") if path.is_file() else ""
    for cell in _cells(doctree):
        if character in cell.get("cell_code_output", ""):
            code = nbformat.v4.new_code_cell(cell.get("cell_code_source", ""))
            line = line_of(code.source, text)  # 0: code hidden, or a cell the book added
            shown = f"the cell `{first_line(code)}`" if code.source else "a cell whose code is hidden"
            return Place(f"{shown_path(path)}{f':{line}' if line else ''}",
                         f"the output of {shown} holds")
    return None


def _in_tex(character: str, tex: Path, source_of: Callable[[str], Path]) -> Place | None:
    lines = tex.read_text(encoding="utf8", errors="replace").splitlines() if tex.is_file() else []
    number = next((n for n, line in enumerate(lines, start=1) if character in line), None)
    if number is None:
        return None
    docname = document_at(document_starts_on_lines(tex), number)
    if docname is None:  # before the first document: the title page
        return Place(f"{shown_path(tex)}:{number}", "the title pages hold")
    return Place(str(shown_path(source_of(docname))), "a part the build adds holds")


def place_of(character: str, docnames: Iterable[str], source_of: Callable[[str], Path],
             doctrees: Path, tex: Path) -> Place | None:
    """The first place that prints ``character``: a source line, a cell's output, the .tex."""
    docnames = list(docnames)
    places = chain((_in_source(character, source_of(doc)) for doc in docnames),
                   (_in_outputs(character, source_of(doc), doctrees / f"{doc}.doctree")
                    for doc in docnames))
    return next(filter(None, places), None) or _in_tex(character, tex, source_of)


def advice(characters: list[str]) -> str:
    codes = " ".join(f"{ord(character):x}" for character in characters)
    return (f"install a font that has {'them' if len(characters) > 1 else 'it'} "
            f"(`fc-list ':charset={codes}' family` lists the installed ones), add its family to "
            f"FALLBACK_FONTS in {FONTS_MODULE} and its Debian package to tools/pdf-packages.txt, "
            f"or print something else")


def locate_characters(problems: list[Problem], docnames: Iterable[str] | None,
                      source_of: Callable[[str], Path], doctrees: Path, tex: Path) -> list[Problem]:
    """The problems, each missing character replaced by one message per place that prints
    characters no font has: ``file:line: the output of the cell `…` holds '…' (U+…)``.
    ``docnames``: the documents to search, in order (None: every document of ``tex``)."""
    if docnames is None:
        docnames = [doc for _, doc in document_starts_on_lines(tex)] if tex.is_file() else []
    docnames = list(docnames)
    at: dict[Place | None, list[str]] = {}
    for problem in problems:
        if problem.character:
            place = place_of(problem.character, docnames, source_of, doctrees, tex)
            at.setdefault(place, []).append(problem.character)
    fallbacks = ", ".join(font.family for font in FALLBACK_FONTS)
    located = [problem for problem in problems if not problem.character]
    for place, characters in at.items():
        printed = ", ".join(describe(character) for character in characters)
        what = (f"{place.what if place else 'the PDF holds'} {printed}, which no font of the "
                f"PDF has, fallbacks included ({fallbacks}): {advice(characters)}")
        located.append(Problem(what, chapter=place.where if place else ""))
    return located
