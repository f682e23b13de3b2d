"""The leak audit: a student build must hold no answer anywhere.

What counts as an answer is derived from the chapters themselves: the text of every
cell tagged ``answer``. Each answer cell is cut into runs of :data:`RUN` words (punctuation included); a run
that also occurs in some student-visible cell is common text, every other run is a
fingerprint. The audit reads every text file of a build (pages, ``_sources/``,
notebooks, ``jupyter_execute/``, the search index, the PDF's text; not the vendored assets
under ``_static/``) and reports each file holding a fingerprint. The search index holds stemmed words, not sentences, so for it the audit
looks for words found only in answers, and for the answers' headings among its titles.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sphinx.search.en import SearchEnglish

from .notebooks import is_answer, is_chapter_source, read_chapter

RUN = 8
TEXT_SUFFIXES = frozenset({".html", ".js", ".md", ".txt", ".ipynb", ".json", ".tex", ".pdf"})
# Folders of theme and MathJax assets, copied from packages: no chapter text is in them
# (reading MathJax's bundles took most of the audit's minutes).
VENDORED = frozenset({"_static"})
_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-",
                         "\u00a0": " ", "¶": " "})


def words(text: str) -> list[str]:
    """Lower-cased words of a text, with markup that differs between source and page removed."""
    text = html.unescape(text).translate(_QUOTES)
    text = re.sub(r"[`*]", "", text)
    # Punctuation counts as words of its own, so one short line of code is many words.
    return re.findall(r"\w+|[^\w\s]", text.lower())


def _markdown_as_shown(source: str) -> str:
    """Markdown source reduced to the words a page shows; math breaks runs (MathJax)."""
    source = re.sub(r"\$\$.*?\$\$|\$[^$\n]*\$", "\n\x00\n", source, flags=re.S)
    source = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", source)
    source = re.sub(r"\{[a-z-]+\}", " ", source)  # roles such as {ref}
    source = re.sub(r"^\s*(#+|\d+\.|[-+>]|:{3,}.*)\s*", "", source, flags=re.M)
    return source


def _is_telling(run: tuple[str, ...]) -> bool:
    """A run with few names in it (``( [ 2 . , 4 . ]``) is as likely an output as an answer."""
    return sum(1 for token in run if re.fullmatch(r"[a-z_]\w+", token)) >= 3


def _runs(tokens: list[str]) -> Iterator[tuple[str, ...]]:
    segment: list[str] = []
    for token in tokens + ["\x00"]:
        if "\x00" in token:
            candidates = (tuple(segment[i:i + RUN]) for i in range(len(segment) - RUN + 1))
            yield from filter(_is_telling, candidates)
            segment = []
        else:
            segment.append(token)


def _cell_text(cell) -> str:
    return _markdown_as_shown(cell.source) if cell.cell_type == "markdown" else cell.source


@dataclass
class Fingerprints:
    """What identifies the answers of a set of chapters."""

    runs: set[tuple[str, ...]] = field(default_factory=set)
    answer_stems: set[str] = field(default_factory=set)
    visible_stems: set[str] = field(default_factory=set)
    headings: set[str] = field(default_factory=set)

    @classmethod
    def of_chapters(cls, texts: Iterable[str], other_visible: Iterable[str] = ()) -> Fingerprints:
        answer_runs: set[tuple[str, ...]] = set()
        visible_runs: set[tuple[str, ...]] = set()
        found = cls()
        for text in texts:
            for cell in read_chapter(text).cells:
                tokens = words(_cell_text(cell))
                if is_answer(cell):
                    answer_runs.update(_runs(tokens))
                    found.answer_stems.update(_search_words(cell.source))
                    heading = re.match(r"#+\s+(.+)", cell.source.strip())
                    if heading and cell.cell_type == "markdown":
                        found.headings.add(heading.group(1).strip())
                else:
                    visible_runs.update(_runs(tokens))
                    found.visible_stems.update(_search_words(cell.source))
        for text in other_visible:
            visible_runs.update(_runs(words(text)))
            found.visible_stems.update(_search_words(text))
        found.runs = answer_runs - visible_runs
        return found


_SEARCH = SearchEnglish({})


def _search_words(text: str) -> set[str]:
    """The stems Sphinx's English search index would hold for a text."""
    return {_SEARCH.stem(word.lower()) for word in _SEARCH.split(text)}


def _strings(value) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def shown_text(path: Path) -> str:
    """The text a file holds, as a reader would see it."""
    if path.suffix == ".pdf":
        from .pdfcheck import pdf_text

        return pdf_text(path)
    raw = path.read_text(encoding="utf8", errors="replace")
    if path.suffix == ".ipynb":
        try:
            return "\n".join(_strings(json.loads(raw)))
        except json.JSONDecodeError:
            return raw
    if path.suffix == ".html":
        return html.unescape(re.sub(r"<[^>]+>", "", raw))
    return raw


@dataclass(frozen=True)
class Leak:
    path: Path
    evidence: str

    def __str__(self) -> str:
        return f"{self.path}: {self.evidence}"


def _search_index_leaks(path: Path, found: Fingerprints, page_stems: set[str]) -> list[Leak]:
    raw = path.read_text(encoding="utf8")
    index = json.loads(raw[raw.index("(") + 1:raw.rindex(")")])
    leaks = []
    titles = set(_strings(index.get("titles", []))) | set(index.get("alltitles", {}))
    for heading in sorted(found.headings & {html.unescape(t) for t in titles}):
        leaks.append(Leak(path, f"answer heading {heading!r} among the titles"))
    only_in_answers = {stem for stem in found.answer_stems - found.visible_stems - page_stems
                       if len(stem) > 2}
    terms = set(index.get("terms", {})) | set(index.get("titleterms", {}))
    for stem in sorted(only_in_answers & terms):
        leaks.append(Leak(path, f"search term {stem!r}, found only in answers"))
    return leaks


def audit_build(build_dir: Path, found: Fingerprints) -> list[Leak]:
    """Every place under ``build_dir`` where an answer shows."""
    files = sorted(p for p in build_dir.rglob("*")
                   if p.is_file() and p.suffix in TEXT_SUFFIXES and p.name != "searchindex.js"
                   and not VENDORED.intersection(p.relative_to(build_dir).parts))
    leaks: list[Leak] = []
    page_stems: set[str] = set()
    for path in files:
        text = shown_text(path)
        page_stems.update(_search_words(text))
        tokens = words(text)
        hits = {run for run in _runs(tokens) if run in found.runs}
        if hits:
            sample = " ".join(sorted(hits)[0])
            leaks.append(Leak(path, f"{len(hits)} answer passage(s), e.g. {sample!r}"))
    for index in sorted(build_dir.rglob("searchindex.js")):
        leaks += _search_index_leaks(index, found, page_stems)
    return leaks


def chapter_fingerprints(book_dir: Path) -> Fingerprints:
    """Fingerprints of all chapters under ``book_dir``; other pages count as visible."""
    chapters, others = [], []
    for path in sorted(book_dir.rglob("*.md")):
        if "_build" in path.parts:
            continue
        text = path.read_text(encoding="utf8")
        (chapters if is_chapter_source(text) else others).append(text)
    return Fingerprints.of_chapters(chapters, others)
