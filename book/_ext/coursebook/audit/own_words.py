"""Own words: each run of :data:`SHARED_RUN` or more words the book's prose shares with the
course material (``../shared/seeds/``); an inline code span is one word (a quoted error)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import NamedTuple

from markdown_it.token import Token

from coursebook.museum.model import Exhibit, Wing, prose_fields
from coursebook.model.cell_notes import cell_line
from coursebook.model.notebooks import chapter_files, is_chapter_source, read_chapter
from coursebook.model.solutions import markdown_parser
from coursebook.render.plain_markdown import split_options

SHARED_RUN = 12

_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "\u00a0": " "})
_EDGES = "\"'.,;:!?()[]{}<>*`"

def word(text: str) -> str:  # as compared: lower case, straight quotes, bare edges
    return " ".join(text.translate(_QUOTES).lower().split()).strip(_EDGES)


def prose_words(text: str) -> list[str]:  # of a plain text (a seed)
    return [w for w in map(word, text.split()) if re.search(r"\w", w)]


@dataclass(frozen=True)
class Passage:  # prose with no break in it: a paragraph, list item or table cell
    where: str  # "book/pt01.md:42" or "exhibits/pytorch/09-….toml: lesson"
    shown: tuple[str, ...]  # its words as written (each compared as its word())


def _inline_runs(children) -> Iterator[list[str]]:
    run: list[str] = []
    for child in children:
        if child.type == "text":
            run += [w for w in child.content.split() if re.search(r"\w", word(w))]
        elif child.type == "code_inline":
            run.append(f"`{child.content}`")
        elif child.type in ("math_inline", "myst_role", "image"):
            yield run  # not words a reader could copy from a sentence
            run = []
    yield run


class Block(NamedTuple):
    line: int  # in the text, from 0
    token: Token
    before: str  # the type of the token before it ("paragraph_open": a paragraph's inline)
    cited: bool  # a ``% source:`` comment follows it


_SOURCE = re.compile(r"\s*source\s*:\s*https?://", re.I)


def markdown_tokens(markdown: str) -> Iterator[Block]:
    """The tokens of a MyST text, an admonition's body's in its place (not its options)."""
    tokens = markdown_parser().parse(markdown)
    for index, token in enumerate(tokens):
        if token.type == "colon_fence":
            body = split_options(token.content)[1]
            start = token.map[0] + 1 + len(token.content.splitlines()) - len(body.splitlines())
            yield from (block._replace(line=start + block.line) for block in markdown_tokens(body))
            continue
        after = next((later for later in tokens[index + 1:] if later.map), None)
        yield Block(token.map[0] if token.map else 0, token,
                    tokens[index - 1].type if index else "", bool(
                        after and after.type == "myst_line_comment"
                        and _SOURCE.match(after.content)))


def markdown_passages(text: str, source: str,
                      line_of: Callable[[int], int] | None = None) -> Iterator[Passage]:
    """The prose of a MyST text, at ``source:LINE`` given ``line_of``, else ``source``."""
    for block in markdown_tokens(text):
        if block.token.type != "inline" or block.before == "heading_open":
            continue
        where = source if line_of is None else f"{source}:{line_of(block.line)}"
        for run in _inline_runs(block.token.children or []):
            if run:
                yield Passage(where, tuple(run))


def chapter_passages(path: Path, root: Path) -> Iterator[Passage]:
    text = path.read_text(encoding="utf8")
    name = str(path.relative_to(root))
    if not is_chapter_source(text):
        yield from markdown_passages(text, name, lambda line: line + 1)
        return
    for cell in read_chapter(text).cells:
        if cell.cell_type == "markdown":
            yield from markdown_passages(cell.source, name, partial(cell_line, cell))


def museum_prose(museum: dict[str, Wing]) -> Iterator[tuple[Wing | Exhibit, str, str]]:
    """(wing or exhibit, field, text) of each prose field but titles (headings)."""
    for owner in [*museum.values(), *(e for wing in museum.values() for e in wing.exhibits)]:
        yield from ((owner, field, text) for field, text in prose_fields(owner) if field != "title")


def exhibit_passages(museum: dict[str, Wing], root: Path) -> Iterator[Passage]:
    for owner, field, text in museum_prose(museum):
        yield from markdown_passages(text, f"{owner.path.relative_to(root)}: {field}")


@dataclass(frozen=True)
class SeedOverlap:
    where: str
    seed: str
    shown: str  # the shared run, as the book words it

    def __str__(self) -> str:
        return (f"{self.where}: {len(self.shown.split())} words in common with {self.seed}: "
                f"“{self.shown}”")


def seed_runs(seeds: Iterable[Path], run: int = SHARED_RUN) -> dict[tuple[str, ...], str]:
    """Each run of ``run`` words in the seeds, and its seed's name."""
    runs: dict[tuple[str, ...], str] = {}
    for seed in seeds:
        tokens = prose_words(seed.read_text(encoding="utf8"))
        for i in range(len(tokens) - run + 1):
            runs.setdefault(tuple(tokens[i:i + run]), seed.name)
    return runs


def overlaps(passages: Iterable[Passage], seeds: dict[tuple[str, ...], str],
             run: int = SHARED_RUN) -> list[SeedOverlap]:
    """Each maximal stretch of a passage made of runs found in the seeds."""
    found = []
    for passage in passages:
        words = tuple(map(word, passage.shown))
        hits = [i for i in range(len(words) - run + 1) if words[i:i + run] in seeds]
        while hits:
            start = end = hits.pop(0)
            while hits and hits[0] <= end + run:
                end = hits.pop(0)
            seed = seeds[words[start:start + run]]
            found.append(SeedOverlap(passage.where, seed, " ".join(passage.shown[start:end + run])))
    return found


def book_overlaps(root: Path, book: Path, museum: dict[str, Wing], seeds_dir: Path,
                  run: int = SHARED_RUN) -> list[SeedOverlap]:
    """Every run of ``run`` or more words the book's prose (chapters, pages, museum) shares
    with a seed."""
    pages = {*book.rglob("*.md"), *(path for path, _ in chapter_files(book))}
    passages = [p for page in sorted(pages)
                if not any(part.startswith("_") for part in page.relative_to(book).parts)
                for p in chapter_passages(page, root)]
    passages += exhibit_passages(museum, root)
    return overlaps(passages, seed_runs(sorted(seeds_dir.glob("*.txt")), run), run)
