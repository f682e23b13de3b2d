"""The leak audit: a student build holds no answer. An answer's fingerprints are its runs of
:data:`FINGERPRINT_RUN` words (punctuation included) that no student-visible text holds; the
search index, stemmed, is searched for words and headings only answers hold."""

from __future__ import annotations

import html
import json
import pickle
import re
import subprocess
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache, partial
from itertools import groupby
from pathlib import Path

import nbformat
from sphinx.search.en import SearchEnglish
from sphinx.util.tags import Tags

from coursebook.answer_checks.audit import notebook_leaks
from coursebook.answer_checks.model import AnswerCheck, cell_checks
from coursebook.audit.spoilers import spoilers
from coursebook.config import BookConfig
from coursebook.model.cell_notes import cell_line, place_at, source_line
from coursebook.model.faults import BookError, shown_path
from coursebook.model.notebooks import (
    CHAPTER_SUFFIXES,
    COMPLETES_EXERCISE_TAG,
    cell_tags,
    chapter_files,
    first_line,
    is_answer,
    is_chapter_source,
    read_chapter,
    short_digest,
    top_matter_line,
)
from coursebook.model.solutions import (builder_tags, comments, markdown_parser, shown_by,
                                        without_comments, without_unshown)
from coursebook.model.toml_files import TomlFile, read_toml
from coursebook.reporting import report, report_book_error
from coursebook.self_check import digest
from coursebook.torch_versions.model import expected_files
from coursebook.verify.expectations import read_expectations

FINGERPRINT_RUN = 8
CODE_LINE_WORDS = 4  # an answer line this long or longer, found in visible code, is a copy
TEXT_SUFFIXES = frozenset({".html", ".js", ".md", ".txt", ".ipynb", ".json", ".tex", ".pdf"})
# Packages' theme and MathJax assets, no chapter's text (MathJax took most of the audit's time).
VENDORED = frozenset({"_static"})
_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-",
                         "\u00a0": " ", "¶": " "})


def fingerprint_words(text: str, lower: bool = True) -> list[str]:
    """Words (lower-cased: prose's), without the markup that differs between source and page."""
    text = html.unescape(text).translate(_QUOTES)
    text = re.sub(r"[`*]", "", text)
    # Punctuation counts as words of its own, so one short line of code is many words.
    return re.findall(r"\w+|[^\w\s]", text.lower() if lower else text)


def _cell_text(cell) -> str:
    """The text a page shows of a cell, Markdown as myst-parser reads it, without comments;
    ``$`` math breaks runs (MathJax's delimiters), an amsmath environment is shown as written."""
    if cell.cell_type != "markdown":
        return cell.source
    # Here: a warm build (its overlap check passed before) imports no parser (20 ms).
    from coursebook.audit.own_words import markdown_tokens

    parts = []
    for token in (block.token for block in markdown_tokens(without_comments(cell.source))):
        if token.type in ("fence", "code_block", "html_block", "amsmath"):
            parts.append(token.content)
        elif token.type.startswith("math"):
            parts.append("\x00")
        elif token.type == "inline":
            parts.append("".join(
                "\n" if child.type in ("softbreak", "hardbreak") else
                "\n\x00\n" if child.type == "math_inline" else
                re.sub(r"\s*<[^<>]*>$", "", child.content) if child.type == "myst_role" else
                child.content if child.type in ("text", "code_inline", "image") else ""
                for child in token.children or []))
    return "\n".join(parts)


_NAME = re.compile(r"[a-z_]\w+")


# A short answer (``11.5``, ``A.flip(dims=[1])``) has no run: its names and values are its
# fingerprints, each a whole token (``3.11`` is not in ``3.11.5``, ``A.flip`` in ``x.A.flip``).
_TERM = re.compile(r"(?<!\w)(?<!\w\.)(?:\d+\.\d+(?!\w|\.\d)|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")


def _is_telling_term(term: str) -> bool:
    """A value of three digits or more, or a code name (with ``_`` or ``.``): not prose."""
    if term[0].isdigit():
        return sum(character.isdigit() for character in term) >= 3
    return len(term) >= 4 and ("_" in term or "." in term)


def _runs(tokens: list[str]) -> Iterator[tuple[int, tuple[str, ...]]]:
    """Each (index, run) with three names or more: ``( [ 2 . , 4 . ]`` is as likely an output."""
    at = 0
    for broken, group in groupby(tokens, key=lambda token: "\x00" in token):  # math breaks
        segment = list(group)
        names = [not broken and bool(_NAME.fullmatch(word)) for word in segment]
        for start in range(len(segment) - FINGERPRINT_RUN + 1):
            if sum(names[start:start + FINGERPRINT_RUN]) >= 3:
                yield at + start, tuple(segment[start:start + FINGERPRINT_RUN])
        at += len(segment)


def _padded(words: list[str]) -> str:
    return " " + " ".join(words) + " "


@dataclass(frozen=True)
class Fingerprints:
    runs: set[tuple[str, ...]]
    short: set[str]  # names and values only answers hold
    answer_stems: set[str]  # search stems only answers hold
    headings: set[str]
    comments: set[str]  # an author's comments, marks and all, no visible text holds (_padded)
    checks: dict[str, AnswerCheck]  # each checkable answer, by its digest in a student table


def chapter_fingerprints(book_dir: Path, exhibits_dir: Path | None = None) -> Fingerprints:
    """The chapters' fingerprints; other pages and the exhibits count as visible."""
    chapters = chapter_files(book_dir)
    read = {path for path, _ in chapters}
    visible = [path.read_text(encoding="utf8") for path in sorted(book_dir.rglob("*.md"))
               if path not in read and not {"_build", ".ipynb_checkpoints"} & set(path.parts)]
    if exhibits_dir is not None and exhibits_dir.is_dir():
        visible += [p.read_text(encoding="utf8") for p in sorted(exhibits_dir.rglob("*.toml"))]
    # As the build's overlap check reads them: what no student edition shows left out.
    notebooks = [[place.cell for place, *_ in source_cells(*chapter)] for chapter in chapters]
    chapter_cells = [cell for cells in notebooks for cell in cells]
    # A student's documents show a chapter's cells one after another: a run across two (an
    # exercise's last comment, then the next heading's `#`: mrdbourke's exercises) is visible.
    visible += ["\n".join(form(cell) for cell in cells if not is_answer(cell))
                for cells in notebooks
                for form in (_cell_text, lambda cell: without_comments(cell.source))]
    # What the student edition prints is visible (rasbt's solutions quote a chapter's output).
    visible += [text for path in expected_files(book_dir / BookConfig.expected_dir)
                for text in read_expectations(path).by_edition["student"].values()]
    # A check's question and tolerance, on its answer's cell, show in the download's check cell.
    checks = [check for cell in chapter_cells for check in cell_checks(cell)]
    visible += [f"{check.ask} {check.tolerance!r}" for check in checks]
    cells = [(cell.source, _cell_text(cell), is_answer(cell), cell.cell_type == "markdown")
             for cell in chapter_cells] + [(text, text, False, False) for text in visible]
    headings = set()
    # Each keyed by whether the text is an answer's.
    runs, terms, stems = ({True: set(), False: set()} for _ in range(3))
    for source, shown, answer, markdown in cells:
        terms[answer].update(_TERM.findall(source))
        runs[answer].update(run for _, run in _runs(fingerprint_words(shown)))
        stems[answer].update(_search_words(source))
        if answer and markdown and (heading := re.match(r"#+\s+(.+)", source.strip())):
            headings.add(heading.group(1).strip())
    shown = _padded(fingerprint_words("\n".join(text for _, text, _, _ in cells)))
    notes = {_padded(fingerprint_words(cell.source[start:end])) for cell in chapter_cells
             if cell.cell_type == "markdown" for start, end in comments(cell.source)}  # marks too
    return Fingerprints(runs[True] - runs[False],
                        {term for term in terms[True] - terms[False] if _is_telling_term(term)},
                        {stem for stem in stems[True] - stems[False] if len(stem) > 2}, headings,
                        {note for note in notes if note not in shown},
                        {digest(c.name, c.answer, c.tolerance): c for c in checks})


_SEARCH = SearchEnglish({})
_stem = cache(_SEARCH.stem)  # snowball's stemmer keeps none; the same words fill every page


def _search_words(text: str) -> set[str]:
    return set(map(_stem, _SEARCH.split(text)))


def _strings(value) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (dict, list)):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _strings(item)


# Short fingerprints are looked for only in the part of a file a reader sees (``0.84`` also
# stands in LaTeX's preamble, a script, a notebook's metadata); passages in all of its text.
_SCRIPTS = re.compile(r"<(script|style)\b.*?</\1\s*>", re.S | re.I)
_SHOWN = re.compile(r'\s(?:content|alt|title)="([^"]*)"')  # a page's head, a tooltip


def file_texts(path: Path) -> tuple[str, str | None]:
    """A file's text, and the part a reader sees (None: a file no reader opens)."""
    if path.suffix == ".pdf":
        text = subprocess.run(["pdftotext", "-layout", str(path), "-"], check=True,
                              capture_output=True, text=True).stdout
        return text, text
    raw = path.read_text(encoding="utf8", errors="replace")
    if path.suffix == ".html":  # a comment stays, and the text a tag shows (a description)
        return tuple(html.unescape(re.sub(r"<(?!!--)[^>]+>", lambda tag: "".join(
            f" {text} " for text in _SHOWN.findall(tag[0])), page))
            for page in (raw, _SCRIPTS.sub("", raw)))
    if path.suffix == ".ipynb":
        try:
            notebook = json.loads(raw)
        except ValueError:  # no JSON: its text
            return raw, raw
        try:
            seen = [cell.get(key, []) for cell in notebook["cells"]
                    for key in ("source", "outputs")]
        except (LookupError, TypeError, AttributeError):  # no v4 notebook: all its strings
            seen = notebook
        return "\n".join(_strings(notebook)), "\n".join(_strings(seen))
    return raw, raw if path.suffix in {".md", ".txt"} else None


def audit_build(build_dir: Path, found: Fingerprints, files: list[Path] = ()) -> list[BookError]:
    """Every place under ``build_dir`` (or in ``files``) where an answer shows (a student
    notebook's check tables included), every spoiler."""
    files = files or sorted(p for p in build_dir.rglob("*")
                            if p.is_file() and p.suffix in TEXT_SUFFIXES
                            and p.name != "searchindex.js"
                            and not VENDORED.intersection(p.relative_to(build_dir).parts))
    leaks: list[BookError] = []
    page_stems: set[str] = set()
    for path in files:
        text, seen = file_texts(path)
        page_stems.update(_search_words(text))
        padded = _padded(words := fingerprint_words(text))
        if hits := {run for _, run in _runs(words)} & found.runs:
            leaks.append(BookError(f"{len(hits)} answer passage(s), e.g. "
                                   f"{' '.join(sorted(hits)[0])!r}", path))
        elif comments := sorted(c for c in found.comments if c in padded):
            leaks.append(BookError(f"{len(comments)} comment(s) of a chapter's author, e.g. "
                                   f"{comments[0].strip()!r}", path))
        elif terms := sorted(found.short.intersection(_TERM.findall(seen or ""))):
            leaks.append(BookError(f"name(s) or value(s) found only in answers: "
                                   f"{', '.join(terms[:5])}", path))
        if path.suffix == ".ipynb":
            leaks += notebook_leaks(path, found.checks)
    for path in sorted(build_dir.rglob("searchindex.js")):
        raw = path.read_text(encoding="utf8")
        index = json.loads(raw[raw.index("(") + 1:raw.rindex(")")])
        titles = set(_strings(index.get("titles", []))) | set(index.get("alltitles", {}))
        terms = set(index.get("terms", {})) | set(index.get("titleterms", {}))
        leaks += [BookError(f"answer heading {heading!r} among the titles", path)
                  for heading in sorted(found.headings & {html.unescape(t) for t in titles})]
        leaks += [BookError(f"search term {stem!r}, found only in answers", path)
                  for stem in sorted((found.answer_stems - page_stems) & terms)]
    leaks += [BookError(what, path) for path, what in spoilers(p for p in files
                                                                if p.suffix == ".html")]
    return leaks


# --- At build time: answer passages that student-visible text repeats -------------------

ALLOWANCES_FILE = "answer-overlaps.toml"  # in the book's sources, reviewed like them


@dataclass(frozen=True)
class Place:  # a cell of a source file, or a whole page at line 1
    path: Path
    line: int
    first_line: str
    cell: dict | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.path.name}:{self.line} (`{self.first_line[:60]}`)"


@dataclass(frozen=True)
class AnswerOverlap:
    answer: Place
    visible: Place
    passage: str


def _at_passage(place: Place, run: tuple[str, ...]) -> Place:
    """The place moved to its cell's line where the run starts (it may go on over the next
    lines), else to the first line holding the run's names (a page's: markup between them)."""
    run = run[:FINGERPRINT_RUN]  # a longer passage: where it starts
    names = [token for token in run if re.fullmatch(r"\w+", token)]
    lines = place.cell.source.split("\n")
    words = [(word, at) for at, line in enumerate(lines) for word in fingerprint_words(line)]
    at = next((words[i][1] for i in range(len(words) - len(run) + 1)
               if tuple(word for word, _ in words[i:i + len(run)]) == run),
              next((i for i, line in enumerate(lines)
                    if set(names) <= set(fingerprint_words(line))), None))
    return place if at is None else Place(place.path, cell_line(place.cell, at), lines[at].strip())


@dataclass(frozen=True)
class Allowance:  # an ``[[allow]]`` table
    passage: str
    why: str


@dataclass(frozen=True)
class _AllowancesFile:
    allow: tuple[Allowance, ...] = ()


def read_allowances(path: Path) -> tuple[list[str], TomlFile | None]:
    if not path.is_file():
        return [], None
    allowances, file = read_toml(path, _AllowancesFile)
    return [_padded(fingerprint_words(e.passage)) for e in allowances.allow], file


# Each cell: its place, its runs (each after its index), its lines of code (each a token
# string), its values, whether it is an answer, whether prose.
SourceCells = list[tuple[Place, list[tuple[int, tuple[str, ...]]], list[str], set[str], bool, bool]]


# An import, and an argument-less call of a name one binds (``fig, ax = plt.subplots()``), set
# up or show: neither holds what an answer works out, and chapters repeat both.
_IMPORT = re.compile(r"\s*(?:from\s+[\w.]+\s+)?import\s+([\w.,\s]+?)\s*(?:#.*)?")
# Of a function (lower case), not a class: ``nn.CrossEntropyLoss()`` may be an exercise's answer.
_BARE_CALL = re.compile(r"\s*(?:[\w\s,]+=\s*)?(\w+)([\w.]*)\(\s*\)\s*;?\s*(?:#.*)?")


def _code_lines(cell, imported: set[str]) -> list[str]:
    # A trailing comment is no part of the line (an answer pasted with one is found). Code's
    # case is its own: `X = w @ x` is not `x = w @ x` (told, and allowed, lower-cased).
    tokens = (fingerprint_words(re.sub(r"\s#.*", "", line), lower=False)
              for line in cell.source.splitlines()
              if cell.cell_type == "code" and not line.strip().startswith("#")
              and not _IMPORT.fullmatch(line)
              and not ((call := _BARE_CALL.fullmatch(line)) and call[1] in imported
                       and (call[1] + call[2]).rsplit(".", 1)[-1][:1].islower()))
    return [_padded(words) for words in tokens if len(words) >= CODE_LINE_WORDS]


def _values(cell) -> set[str]:
    checks = cell.get("metadata", {}).get("checks")
    data = json.dumps([entry.get("answer") for entry in checks if isinstance(entry, dict)]
                      ) if isinstance(checks, list) else ""
    return {term for term in _TERM.findall(f"{cell.source} {data}")
            if term[0].isdigit() and _is_telling_term(term)}


# The builds of a student edition, by their tags (HTML, the PDF, its handouts).
_STUDENT_BUILDS = [Tags([*builder_tags(name), *more])
                   for name, more in (("html", ()), ("latex", ()), ("latex", ("handout",)))]


def source_cells(path: Path, text: str) -> SourceCells:
    chapter = read_chapter(text) if is_chapter_source(text) else None
    cells = chapter.cells if chapter else [place_at(nbformat.v4.new_markdown_cell(text), 1)]
    for cell in cells:  # an `{only} instructor` note is in no student's page
        if cell.cell_type == "markdown" and not is_answer(cell):
            cell.source = without_unshown(cell.source, partial(shown_by, _STUDENT_BUILDS))
    # The page's head shows its top matter's `myst: html_meta` (a description), in no cell.
    meta = (chapter.metadata.get("myst") or {}).get("html_meta") if chapter else None
    cells += [place_at(nbformat.v4.new_markdown_cell(str(value)), top_matter_line(
        text, "myst", "html_meta", key))
        for key, value in (meta.items() if isinstance(meta, dict) else ())]
    imported = {name.split()[-1].split(".")[0] for cell in cells if cell.cell_type == "code"
                for match in map(_IMPORT.fullmatch, cell.source.splitlines()) if match
                for name in match[1].split(",") if name.strip()}
    return [(Place(path, source_line(cell), first_line(cell), cell),
             list(_runs(fingerprint_words(_cell_text(cell)))), _code_lines(cell, imported),
             _values(cell), is_answer(cell), cell.cell_type == "markdown") for cell in cells]


def answer_overlaps(sources: dict[Path, str], allowed: list[str] = (),
                    cells_of: Callable[[Path, str], SourceCells] = source_cells
                    ) -> tuple[list[AnswerOverlap], list[int]]:
    """Each (answer cell, visible cell) pair sharing a passage (whole), line or value no
    allowance covers, and the allowances (their indices) no shared passage lies in. Answer
    prose is looked for in any visible text, answer code in prose, lines of code in code,
    values in their own chapter and on pages no chapter owns."""
    # Each visible place, in order, by what it shows: a run of its prose or code, a line of
    # code, a value by its chapter (None: a page no chapter owns; ch03's input 0.58 is no leak
    # of pt01's answer 0.58, which no one there can place).
    shown: dict[tuple, list[Place]] = defaultdict(list)
    answers = []
    for path, text in sources.items():
        above = None  # the visible cell right above, if code
        owner = path if is_chapter_source(text) else None
        for place, runs, code_lines, cell_values, answer, is_prose in cells_of(path, text):
            if answer:
                exercise = above if COMPLETES_EXERCISE_TAG in cell_tags(place.cell) else None
                answers.append((place, runs, code_lines, cell_values, is_prose, exercise))
                continue
            for key in [*((is_prose, run) for _, run in runs), *code_lines,
                        *((owner, value) for value in cell_values)]:
                shown[key].append(place)
            above = None if is_prose else place
    found: dict[tuple[Place, Place, str], tuple[str, ...]] = {}
    used: set[int] = set()
    for place, runs, code_lines, cell_values, is_prose, exercise in answers:
        def at(key, exercise=exercise):  # the first visible place but the exercise
            return next((seen for seen in shown.get(key, ()) if seen is not exercise), None)
        shared = [(run, at((True, run)) or (at((False, run)) if is_prose else None), start)
                  for start, run in runs]
        shared += [(tuple(line.lower().split()), at(line), line) for line in code_lines]
        shared += [(tuple(fingerprint_words(value)), at((place.path, value))
                    or at((None, value)), value) for value in sorted(cell_values)]
        named = None
        for run, visible, key in shared:
            passage = _padded(run)
            if visible is None:
                continue
            covers = {i for i, allowance in enumerate(allowed) if passage in allowance}
            used |= covers
            if not covers and isinstance(key, int) and named and named[1] is visible and (
                    gap := named[2] + len(found[named]) - key) >= 0:  # a run going on from the
                found[named] += run[gap:]  # passage named last: whole, one allowance covers it
            elif not covers and (named := (place, visible, key)) not in found:
                found[named] = run
    return ([AnswerOverlap(_at_passage(answer, run), _at_passage(visible, run), " ".join(run))
             for (answer, visible, _), run in found.items()],
            [i for i in range(len(allowed)) if i not in used])


def check_answer_overlaps(app, env, *_docnames) -> None:
    """``env-before-read-docs``: an answer passage in student-visible text stops the build
    (the leak audit counts anything visible as no answer), unless :data:`ALLOWANCES_FILE`
    allows it."""
    allowances = Path(app.srcdir, ALLOWANCES_FILE)
    try:
        allowed, allowances_file = read_allowances(allowances)
    except BookError as error:
        report_book_error(error, "audit")
        app.statuscode = 1
        return
    paths = [Path(env.doc2path(docname)) for docname in sorted(env.found_docs)]
    sources = {path: path.read_text(encoding="utf8") for path in paths
               if path.suffix in CHAPTER_SUFFIXES}
    # The same inputs as a build that found nothing: nothing to find (the search took a
    # sixth of a warm build). Beside the doctrees: Sphinx saves the environment only when it
    # read a page. The code is this extension's (its env version), the parsers' and their MyST.
    code = repr((sorted(env.version.items()), sorted(
        markdown_parser().options["myst_config"].enable_extensions)))
    inputs = short_digest("\0".join([*(part for item in sorted(sources.items())
                                       for part in map(str, item)), *allowed, code]), 64)
    passed = Path(app.doctreedir, "coursebook-answer-overlaps.sha256")
    if passed.is_file() and passed.read_text(encoding="ascii") == inputs:
        return
    # Each source's cells are kept: after an edit, only that chapter is cut up again.
    store = Path(app.doctreedir, "coursebook-answer-cells.pickle")
    try:
        known: dict[str, SourceCells] = pickle.loads(store.read_bytes())
    except Exception:  # none yet, or unreadable: every source is read again
        known = {}
    used: dict[str, SourceCells] = {}  # the cells of the sources searched now, only those

    def cells(path: Path, text: str) -> SourceCells:
        key = short_digest(f"{path}\0{text}\0{code}", 64)
        used[key] = known.get(key) or source_cells(path, text)
        return used[key]

    overlaps, unneeded = answer_overlaps(sources, allowed, cells)
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_bytes(pickle.dumps(used))
    if not overlaps and not unneeded:
        passed.write_text(inputs, encoding="ascii")
    # An allowance kept after its overlap went would let a later leak of that passage pass.
    for index in unneeded:
        report_book_error(allowances_file.fault(
            f"allow[{index}].passage", "is shared by no answer with student-visible text",
            "remove its [[allow]] table, or correct the passage"), "audit")
        app.statuscode = 1
    for overlap in overlaps:
        report(f"an answer passage also shows in student-visible text, at {overlap.visible}: "
               f"{overlap.passage!r}. Reword one of them, or allow the overlap in "
               f"{shown_path(allowances)} (passage and why).",
               f"{shown_path(overlap.answer.path)}:{overlap.answer.line}", "audit")
        app.statuscode = 1  # also without -W
