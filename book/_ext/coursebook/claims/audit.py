"""Factual sentences that no claim checks and no source cites, for ``make audit`` to list
(docs/authoring.md, "Sentences neither checked nor cited")."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from pathlib import Path

from coursebook.audit.own_words import markdown_tokens, museum_prose
from coursebook.claims.model import chapter_claims, normalised, sentences_of
from coursebook.model.cell_notes import cell_line
from coursebook.model.faults import BookError
from coursebook.model.notebooks import chapter_files, read_chapter
from coursebook.model.toml_files import line_of
from coursebook.museum.model import Wing

_LIBRARY = re.compile(r"`|\{term\}|\b(?:PyTorch|torch|autograd|JAX|jax|XLA|torchax|torch_xla|"
                      r"TPU|GPU|CUDA)\b")
_INSTRUCTION = re.compile(
    r"^(?:you|run|try|change|predict|write|compute|fix|use|read|look|make|add|call|rewrite|"
    r"repeat|keep|take|open|compare|check|find|replace|explain|decide|note|see|install|"
    r"restart|switch|then|before|after|do|don't|go|start|pick|give|pass|put|ask|set|turn|"
    r"remove|insert|save|print|plot|define|build|train|copy|edit|sketch|work|solve|end)\b",
    re.I)
_OWN_CELLS = re.compile(r"\b(?:the|this|that|each|every|next|previous) (?:cell|code below)\b", re.I)
_CITES = re.compile(r"\]\([^)]+\)|<https?://|\{cite[:\w]*\}|https?://")


def is_factual(sentence: str) -> bool:
    return (sentence.endswith(".") and bool(_LIBRARY.search(sentence))
            and not _INSTRUCTION.match(sentence.lstrip("*_ ")) and not _OWN_CELLS.search(sentence))


def _held(sentence: str, held: set[str]) -> bool:  # a claim's may run past it, or stop short
    flat = normalised(sentence)[0]
    return any(flat in other or other in flat for other in held)


def _unbacked(markdown: str, held: set[str], path: Path,
              line_of: Callable[[int], int]) -> list[BookError]:
    held = {normalised(sentence)[0] for sentence in held}
    return [BookError(sentence, path, line_of(block.line)) for block in markdown_tokens(markdown)
            if block.before == "paragraph_open" and not block.cited  # a paragraph's inline
            for sentence in sentences_of(block.token.content)
            if is_factual(sentence) and not _held(sentence, held) and not _CITES.search(sentence)]


def chapter_unbacked(path: Path, text: str) -> list[BookError]:
    notebook = read_chapter(text)
    held = {c.claim.sentence for c in chapter_claims(notebook, {}, str(path)).checked} - {""}
    return [u for cell in notebook.cells if cell.cell_type == "markdown"
            for u in _unbacked(cell.source, held, path, partial(cell_line, cell))]


def _field_line(path: Path, field: str, within: int) -> int:
    """The line of line ``within`` of a TOML field (one below a multi-line string's opening)."""
    line = line_of(path, field)
    opens = path.read_text(encoding="utf8").splitlines()[line - 1].rstrip().endswith(
        ('"""', "'''"))
    return line + opens + within


def museum_unbacked(museum: dict[str, Wing]) -> list[BookError]:
    return [u for owner, field, text in museum_prose(museum)
            for u in _unbacked(text, {claim.sentence for claim in owner.claims}, owner.path,
                               lambda within, owner=owner, field=field:
                               _field_line(owner.path, field, within))]


def book_unbacked(book_dir: Path, museum: dict[str, Wing]) -> list[BookError]:
    return [unbacked for path, text in chapter_files(book_dir)
            for unbacked in chapter_unbacked(path, text)] + museum_unbacked(museum)

