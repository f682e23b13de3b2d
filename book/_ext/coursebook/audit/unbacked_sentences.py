"""Factual sentences that are neither checked nor cited, for ``make audit`` to list.

A sentence about what a library does is held to a claim's check or to a source
(:mod:`coursebook.model.claims`). This module finds the sentences a check or a source holds,
and lists the *factual* ones that neither holds, so that an author can back each one or
decide it needs nothing. What counts as factual is a heuristic, kept simple and stated here:

- a sentence of a chapter's prose (markdown cells, answers included) or of an exhibit's or
  a wing's prose; headings, code, tables, targets, comments and directive lines are no prose;
- it speaks of a library: it quotes code (an inline code span) or names a glossary term
  (``{term}``), PyTorch, torch, autograd, JAX, XLA, a bridge (torchax, torch_xla), a TPU or
  a GPU;
- it states something: it ends with a full stop, and it is not an instruction (it does not
  open with a verb of the list below, nor with "you"), nor about the chapter's own cells
  ("the cell", "this cell", "the code below": their outputs are verified as outputs).

Checked: a claim's fragment is in it (its whole sentence is then bound to the check,
:mod:`coursebook.verify.claims`). Cited: its paragraph is followed by a ``% source:`` comment,
it holds a link or a ``{cite}``, or an exhibit's ``[[claim]]`` cites it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from coursebook.model.cell_notes import line_within
from coursebook.model.claims import claim_blocks, find_in_prose, normalised, sentences_of
from coursebook.model.faults import shown_path
from coursebook.model.museum import Wing, prose_fields
from coursebook.model.notebooks import is_claim, read_chapter
from coursebook.model.recordings import chapter_files
from coursebook.model.toml_files import line_of

_LIBRARY = re.compile(r"`|\{term\}|\b(?:PyTorch|torch|autograd|JAX|jax|XLA|torchax|torch_xla|"
                      r"TPU|GPU|CUDA)\b")
_INSTRUCTION = re.compile(
    r"^(?:you|run|try|change|predict|write|compute|fix|use|read|look|make|add|call|rewrite|"
    r"repeat|keep|take|open|compare|check|find|replace|explain|decide|note|see|install|"
    r"restart|switch|then|before|after|do|don't|go|start|pick|give|pass|put|ask|set|turn|"
    r"remove|insert|save|print|plot|define|build|train|copy|edit|sketch|work|solve|end)\b",
    re.I)
_OWN_CELLS = re.compile(r"\b(?:the|this|that|each|every|next|previous) (?:cell|code below)\b",
                        re.I)
_CITES = re.compile(r"\]\([^)]+\)|<https?://|\{cite[:\w]*\}|https?://")
_NOT_PROSE = re.compile(r"^\s*(?:#|\(|%|\||:|`{3,}|~{3,}|\+\+\+|-{3,}|<)")


@dataclass(frozen=True)
class Unbacked:
    """A factual sentence that no check and no source holds, and where it is."""

    path: Path
    line: int
    sentence: str

    def __str__(self) -> str:
        return f"{shown_path(self.path)}:{self.line}: {self.sentence}"


_SOURCE = re.compile(r"%\s*source\s*:\s*https?://", re.I)


def _paragraphs(markdown: str) -> Iterable[tuple[str, bool]]:
    """(text, cited by a ``% source:`` comment right after it) of each prose paragraph."""
    fenced = False
    lines = markdown.splitlines()
    block: list[str] = []
    for index, line in enumerate([*lines, ""]):
        if re.match(r"^\s*(`{3,}|~{3,})", line):
            fenced = not fenced
        if not fenced and line.strip() and not _NOT_PROSE.match(line):
            block.append(line)
        elif block:
            following = next((later for later in lines[index:] if later.strip()), "")
            yield "\n".join(block).strip(), bool(_SOURCE.match(following.strip()))
            block = []


def is_factual(sentence: str) -> bool:
    return (sentence.endswith(".") and bool(_LIBRARY.search(sentence))
            and not _INSTRUCTION.match(sentence.lstrip("*_ ")) and not _OWN_CELLS.search(sentence))


def _held(sentence: str, held: set[str]) -> bool:
    """Whether a claim's sentence is this one (each as a reader reads it; a claim's sentence
    may run past the end this module finds, or stop short of it)."""
    flat = normalised(sentence)[0]
    return any(flat in other or other in flat for other in held)


def _unbacked(markdown: str, held: set[str], path: Path,
              line_of: Callable[[str], int]) -> list[Unbacked]:
    """``line_of``: the line of the file where a paragraph of ``markdown`` starts."""
    held = {normalised(sentence)[0] for sentence in held}
    found = []
    for paragraph, cited in _paragraphs(markdown):
        if cited:
            continue
        line = line_of(paragraph)
        for sentence in sentences_of(paragraph):
            if is_factual(sentence) and not _held(sentence, held) and not _CITES.search(sentence):
                found.append(Unbacked(path, line, sentence))
    return found


def chapter_unbacked(path: Path, text: str) -> list[Unbacked]:
    """A chapter's factual sentences that no claim cell checks and no source cites."""
    notebook = read_chapter(text)
    held: set[str] = set()
    prose: list[str] = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            prose.append(cell.source)
        elif is_claim(cell):
            for block in claim_blocks(cell.source):
                found = find_in_prose(block.says, prose)
                if found is not None:
                    held.add(found.sentence)
        else:
            prose = []
    # A paragraph's line: its cell's noted line, plus where it stands in the cell.
    return [u for cell in notebook.cells if cell.cell_type == "markdown"
            for u in _unbacked(cell.source, held, path, lambda paragraph, cell=cell:
                               line_within(cell, max(cell.source.find(paragraph), 0)))]


def _field_line(path: Path, field: str, text: str, paragraph: str) -> int:
    """The line of a paragraph of a TOML field's ``text``: from the field's line, or the
    next one where its text opens a multi-line string."""
    line = line_of(path, field)
    opens = path.read_text(encoding="utf8").splitlines()[line - 1].rstrip().endswith(
        ('"""', "'''"))
    return line + opens + text.count("\n", 0, max(text.find(paragraph), 0))


def museum_unbacked(museum: dict[str, Wing]) -> list[Unbacked]:
    """The exhibits' and wings' factual sentences (not their titles) no ``[[claim]]`` holds."""
    found = []
    for owner in [*museum.values(), *(e for wing in museum.values() for e in wing.exhibits)]:
        held = {claim.sentence for claim in owner.claims}
        for field, text in prose_fields(owner):
            if field != "title":
                found += _unbacked(text, held, owner.path, lambda paragraph, field=field, text=text:
                                   _field_line(owner.path, field, text, paragraph))
    return found


def book_unbacked(book_dir: Path, museum: dict[str, Wing]) -> list[Unbacked]:
    """Every chapter's and exhibit's factual sentences that neither a check nor a source holds."""
    found = []
    for path, text in chapter_files(book_dir):
        found += chapter_unbacked(path, text)
    return found + museum_unbacked(museum)

