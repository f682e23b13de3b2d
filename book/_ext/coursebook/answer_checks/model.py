"""Checkable answers: the ``checks`` an answer code cell lists in its metadata, which a
student runs without seeing the answer (docs/authoring.md, "Answers students can check")."""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import nbformat

from coursebook.model.cell_notes import source_line
from coursebook.model.faults import BookError, shown_path
from coursebook.model.notebooks import Section, first_line, is_answer, labelled_sections

CHECKS_KEY = "checks"
_TEXTS = ("name", "ask", "value", "hint")
DEFAULT_TOLERANCE = 1e-4
LISTS = ("accept", "refuse")  # the answers a check must accept, and those it must refuse
CHECK_TAG = "self-check"  # a cell of check() calls, which each edition writes its own way


class AnswerCheckError(BookError):
    """A ``checks`` entry the book cannot use, at its cell's line."""


@dataclass(frozen=True)
class AnswerCheck:
    name: str
    ask: str
    value: str
    answer: object
    hint: str
    tolerance: float
    cell: str  # the answer cell's first line, to name it
    taught_in: tuple[str, ...] = ()  # the labels of the sections that teach what it asks
    line: int = 0  # the answer cell's line in the author's file
    accept: tuple[str, ...] = ()  # right answers in other forms, as a student types them
    refuse: tuple[str, ...] = ()  # wrong answers, as a student types them
    inputs: str = ""  # for a function: code setting ``inputs``, the argument tuples it runs on
    # Its taught_in sections' titles in its own chapter, named after a wrong try.
    revisit: tuple[str, ...] = ()


def literal(entry: str):
    """The value an ``accept`` or ``refuse`` entry stands for (ValueError: not a literal)."""
    try:
        return ast.literal_eval(entry)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ValueError(entry) from None


def _is_entry(entry, function: bool) -> bool:
    try:
        compile(entry, "<entry>", "eval") if function else literal(entry)
    except (ValueError, SyntaxError):
        return False
    return True


def _entry(raw, cell) -> AnswerCheck:
    where = f"answer cell `{first_line(cell)}`: field '{CHECKS_KEY}'"
    if not isinstance(raw, dict):
        raise AnswerCheckError(f"{where}: each check is a table of name, ask, value, answer, hint",
                               line=source_line(cell))
    missing = [name for name in (*_TEXTS, "answer", "taught_in", *LISTS) if name not in raw]
    wrong = [name for name in (*_TEXTS, "inputs") if name in raw and not isinstance(raw[name], str)]
    taught_in = raw.get("taught_in")
    unlisted = ["taught_in"] if "taught_in" in raw and not (
        isinstance(taught_in, list) and taught_in
        and all(isinstance(label, str) for label in taught_in)
    ) else []
    function = "inputs" in raw
    not_literals = [name for name in LISTS if name in raw and not (
        isinstance(raw[name], list) and raw[name]
        and all(isinstance(entry, str) and _is_entry(entry, function) for entry in raw[name]))]
    unknown = sorted(set(raw) - {*_TEXTS, "answer", "tolerance", "taught_in", "inputs", *LISTS})
    problems = "".join(f"{label} {', '.join(names)}; " for label, names in
                       (("missing", missing), ("not text:", wrong),
                        ("not a list of labels:", unlisted),
                        ("not a list of Python literals (for a function with inputs, "
                         "expressions) in quotes:", not_literals),
                        ("unknown:", unknown)) if names)
    if problems:
        named = f" check '{raw['name']}':" if isinstance(raw.get("name"), str) else ""
        raise AnswerCheckError(f"{where}:{named} {problems}each check has name, ask, value, "
                               "answer, hint (text), accept and refuse (right and wrong "
                               "answers as a student types them, each a Python literal in "
                               "quotes, such as \"(5, 7)\") and taught_in (the labels of the "
                               "sections before it that teach what it asks) and may have a "
                               "tolerance and inputs (code setting inputs, for a function)",
                               line=source_line(cell))
    tolerance = raw.get("tolerance", DEFAULT_TOLERANCE)
    if not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or not (
            0 < tolerance < math.inf):  # not nan either
        raise AnswerCheckError(f"{where}: check '{raw['name']}': tolerance must be a positive "
                               "finite number", line=source_line(cell))
    return AnswerCheck(raw["name"], raw["ask"], raw["value"], raw["answer"], raw["hint"],
                       float(tolerance), first_line(cell), tuple(taught_in), source_line(cell),
                       tuple(raw["accept"]), tuple(raw["refuse"]), raw.get("inputs", ""))


def cell_checks(cell) -> list[AnswerCheck]:
    raw = cell.get("metadata", {}).get(CHECKS_KEY)
    if raw is None:
        return []
    if cell.cell_type != "code" or not is_answer(cell):
        raise AnswerCheckError(f"cell `{first_line(cell)}`: only an answer code cell "
                               f"(tag `answer`) may list '{CHECKS_KEY}'", line=source_line(cell))
    if not isinstance(raw, list):
        raise AnswerCheckError(f"answer cell `{first_line(cell)}`: field '{CHECKS_KEY}' "
                               "must be a list of checks", line=source_line(cell))
    return [_entry(entry, cell) for entry in raw]


def notebook_checks(notebook: nbformat.NotebookNode) -> list[AnswerCheck]:
    """Every check of a chapter, in reading order; names are unique."""
    titles = {section.label: section.title for section in labelled_sections(notebook)}
    checks: list[AnswerCheck] = []
    for cell in notebook.cells:
        for check in cell_checks(cell):
            if any(check.name == earlier.name for earlier in checks):
                raise AnswerCheckError(f"answer cell `{check.cell}`: check name '{check.name}' "
                                       "is used twice in this chapter", line=source_line(cell))
            checks.append(replace(check, revisit=tuple(
                titles[label] for label in check.taught_in if label in titles)))
    return checks


# --- What a check asks was taught before it ------------------------------------------

@dataclass(frozen=True)
class ChapterTeaching:
    path: str
    sections: tuple[Section, ...]
    checks: tuple[AnswerCheck, ...]


def chapter_teaching(notebook: nbformat.NotebookNode, path: Path | str) -> ChapterTeaching:
    try:
        checks = notebook_checks(notebook)
    except AnswerCheckError as error:
        raise AnswerCheckError(error.message, path, error.line) from None
    return ChapterTeaching(str(path), tuple(labelled_sections(notebook)), tuple(checks))


def untaught_checks(chapters: Sequence[ChapterTeaching]) -> list[AnswerCheckError]:
    """Each ``taught_in`` label (chapters in reading order) naming no section before its check."""
    sections: dict[str, tuple[int, ChapterTeaching, Section]] = {}
    for place, chapter in enumerate(chapters):
        for section in chapter.sections:
            sections.setdefault(section.label, (place, chapter, section))
    errors = []
    for place, chapter in enumerate(chapters):
        for check in chapter.checks:
            for label in check.taught_in:
                at, owner, section = sections.get(label, (None, None, None))
                if section is None:
                    fault = "no section of this chapter or an earlier one has that label"
                elif at > place:
                    fault = (f"that is '{section.title}' in {shown_path(owner.path)}, "
                             "a chapter after this one in the reading order")
                elif at == place and section.line > check.line:
                    fault = f"that is '{section.title}' at line {section.line}, after the check"
                else:
                    continue
                errors.append(AnswerCheckError(
                    f"check '{check.name}' (answer cell `{check.cell}`): taught_in names "
                    f"'{label}', but {fault}: a check asks only what was taught before it, so "
                    "name the label `(label)=` above the heading of an earlier section that "
                    "teaches it, or teach it there first", chapter.path, check.line))
    return errors
