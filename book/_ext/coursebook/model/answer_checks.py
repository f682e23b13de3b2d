"""Checkable answers: an answer cell's ``checks``, as a chapter states them.

An answer code cell (tag ``answer``) may list, in its metadata, answers a student can
check without seeing them::

    ```{code-cell} ipython3
    ---
    tags: [answer]
    checks:
    - name: pt01-check-2
      ask: the contents of a.grad after both calls
      value: first_grad
      answer: [5.0, 7.0]
      hint: Does backward() replace .grad, or add to it?
    ---
    ```

``answer`` is the right value, written as data (numbers, text, lists, true/false): the
student edition holds only its salted digest. ``value`` is an expression the answer
cell's code leaves behind: the instructor edition checks it against ``answer`` on every
build, so the answer stays true for this build's torch. ``tolerance`` (default 1e-4) is
how far a student's number may lie from the answer's and still pass (each number has a
digest of its own, on a grid of :data:`coursebook.self_check.FINE` steps per tolerance, so
the bound holds to a fortieth of the tolerance, with no rounding grid's edge inside it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import nbformat

from coursebook.model.cell_notes import source_line
from coursebook.model.faults import BookError
from coursebook.model.notebooks import first_line, is_answer

CHECKS_KEY = "checks"
_FIELDS = {"name": str, "ask": str, "value": str, "hint": str}
DEFAULT_TOLERANCE = 1e-4


class AnswerCheckError(BookError):
    """A ``checks`` entry the book cannot use; ``line``: its cell's line."""


@dataclass(frozen=True)
class AnswerCheck:
    name: str
    ask: str
    value: str
    answer: object
    hint: str
    tolerance: float
    cell: str  # the answer cell's first line, to locate it


def _entry(raw, cell) -> AnswerCheck:
    where = f"answer cell `{first_line(cell)}`: field '{CHECKS_KEY}'"
    if not isinstance(raw, dict):
        raise AnswerCheckError(f"{where}: each check is a table of name, ask, value, answer, hint",
                               line=source_line(cell))
    missing = [name for name in (*_FIELDS, "answer") if name not in raw]
    wrong = [name for name, kind in _FIELDS.items() if name in raw and not isinstance(raw[name], kind)]
    unknown = sorted(set(raw) - {*_FIELDS, "answer", "tolerance"})
    problems = "".join(f"{label} {', '.join(names)}; " for label, names in
                       (("missing", missing), ("not text:", wrong), ("unknown:", unknown)) if names)
    if problems:
        raise AnswerCheckError(f"{where}: {problems}each check has name, ask, value, answer and "
                               "hint (text) and may have a tolerance", line=source_line(cell))
    tolerance = raw.get("tolerance", DEFAULT_TOLERANCE)
    if not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or not (
            0 < tolerance < math.inf):  # not nan either
        raise AnswerCheckError(f"{where}: check '{raw['name']}': tolerance must be a positive "
                               "finite number", line=source_line(cell))
    return AnswerCheck(raw["name"], raw["ask"], raw["value"], raw["answer"], raw["hint"],
                       float(tolerance), first_line(cell))


def cell_checks(cell) -> list[AnswerCheck]:
    """The checks a cell states; only an answer code cell may state any."""
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
    checks: list[AnswerCheck] = []
    for cell in notebook.cells:
        for check in cell_checks(cell):
            if any(check.name == earlier.name for earlier in checks):
                raise AnswerCheckError(f"answer cell `{check.cell}`: check name '{check.name}' "
                                       "is used twice in this chapter", line=source_line(cell))
            checks.append(check)
    return checks
