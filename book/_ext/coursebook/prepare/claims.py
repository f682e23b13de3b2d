"""Claim cells in the notebook an edition executes: one cell per claim, run, never shown.

Each claim cell becomes one cell per ``# claim:`` line, tagged ``raises-exception`` (a
claim that fails is reported, and later cells still run) and ``remove-cell``; each is
located at the sentence it quotes. :mod:`coursebook.verify.claims` checks what they did.
"""

from __future__ import annotations

from dataclasses import dataclass

import nbformat

from coursebook.model.claims import (
    CITED_URL,
    CLAIM_LINE,
    Claim,
    claim_blocks,
    find_in_prose,
    source_comments,
)
from coursebook.model.cell_notes import CELL_NOTE, line_within, place_at, source_line
from coursebook.model.faults import BookError
from coursebook.model.notebooks import RAISES_TAG, cell_tags, first_line, is_claim

# A claim's run may raise (its verdict), and nothing of it is shown.
_RUN_TAGS = (RAISES_TAG, "remove-cell")


def one_cell_per_claim(notebook: nbformat.NotebookNode, source_path: str) -> None:
    """Split each claim cell into one cell per claim, tagged to run hidden, each at its
    own line; a claim cell without a ``# claim:`` line stops the chapter, at its line."""
    cells = []
    for cell in notebook.cells:
        if not is_claim(cell):
            cells.append(cell)
            continue
        blocks = claim_blocks(cell.source)
        if not blocks:
            raise BookError(f"claim cell `{first_line(cell)}` names no claim: begin it with "
                            "`# claim: ` and a fragment of the sentence above it",
                            source_path, source_line(cell))
        tags = cell_tags(cell) + [tag for tag in _RUN_TAGS if tag not in cell_tags(cell)]
        metadata = {key: value for key, value in cell.metadata.items() if key != CELL_NOTE}
        position = 0
        for block in blocks:
            position = cell.source.index(block.code, position)  # the blocks, in order
            cells.append(place_at(nbformat.v4.new_code_cell(
                block.code, metadata={**metadata, "tags": tags}), line_within(cell, position),
                cell))
    notebook.cells = cells


@dataclass(frozen=True)
class ClaimCell:
    """A claim and the index of its cell in the notebook the edition executes."""

    index: int
    claim: Claim


@dataclass(frozen=True)
class ChapterClaims:
    """The claims a chapter checks (its own and its exhibits'), how many it cites, and the
    source comments that cite nothing (misspelled, or naming no address): line and text."""

    checked: tuple[ClaimCell, ...] = ()
    cited: int = 0
    unsourced: tuple[tuple[int, str], ...] = ()


def _located(cell, prose: list) -> Claim:
    """A chapter's claim at its sentence's line, or at its `# claim:` line without a sentence
    when the prose above does not hold its fragment."""
    code = cell.source
    says = claim_blocks(code)[0].says
    found = find_in_prose(says, [text.source for text in prose])
    here = line_within(cell, CLAIM_LINE.search(code).start())  # after any set-up
    if found is None:
        return Claim(says, here, check=code)
    return Claim(says, line_within(prose[found.text], found.start) or here, found.sentence, code)


def chapter_claims(notebook: nbformat.NotebookNode,
                   from_exhibits: dict[str, Claim]) -> ChapterClaims:
    """Every claim cell of an edition's notebook, located, and the number of cited claims."""
    checked, prose, cited, unsourced = [], [], 0, []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown":
            prose.append(cell)
            for comment in source_comments(cell.source):
                if comment["word"].lower() == "source" and CITED_URL.match(comment["url"]):
                    cited += 1
                else:
                    unsourced.append((line_within(cell, comment.start()), comment[0]))
        elif is_claim(cell):
            exhibits = from_exhibits.get(cell.source.strip())
            checked.append(ClaimCell(index, exhibits or _located(cell, prose)))
        elif cell.cell_type == "code":
            prose = []
    return ChapterClaims(tuple(checked), cited, tuple(unsourced))
