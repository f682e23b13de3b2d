"""Checkable answers in each edition: the student's ``check("name", ...)`` calls after a
table cell of :mod:`coursebook.self_check`, the instructor's with each answer's value
(docs/authoring.md, "Student edition", "Instructor edition")."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from coursebook import self_check
from coursebook.answer_checks.model import (CHECK_TAG, AnswerCheck, AnswerCheckError, cell_checks,
                                             literal)
from coursebook.model.notebooks import code_cell, markdown_cell

SETUP_TAG = "self-check-setup"  # the table cell: kept out of pages, in the downloads
NOTE_TAG = "self-check-note"  # what the check cells are, and where they run
# The student edition's words before its first check: on the page the check cells show
# but their table does not, so copied elsewhere they raise NameError.
NOTE = ("**Checking your answers.** Each `check(...)` cell compares the value you put in "
        "place of `...` with the right answer, without showing it, and says whether yours is "
        "correct. These cells run only in this chapter's notebook (on the book's page, the "
        "download button at the top gives it), where the cell just before the "
        "first check defines `check`: run the notebook from the top. Copied on their own "
        "into another Python session, they stop with a `NameError`.")
_SOURCE = Path(self_check.__file__).read_text(encoding="utf8")
_TABLE_LINE = "CHECKS: dict[str, dict] = {}"


def shown_hint(check: AnswerCheck) -> str:
    """What a wrong try shows: the hint, then the sections of the chapter that teach it."""
    return check.hint.strip() + (" Revisit: " + ", ".join(
        f"“{title}”" for title in check.revisit) + "." if check.revisit else "")


def check_table(checks: list[AnswerCheck]) -> dict[str, dict]:
    """What the student's notebook holds of each answer: its digest, its hint scrambled."""
    return {check.name: {"digest": self_check.digest(check.name, check.answer, check.tolerance),
                         "numbers": self_check.number_digests(check.name, check.answer,
                                                              check.tolerance),
                         "tolerance": check.tolerance,
                         "hint": self_check.scramble(check.name, shown_hint(check)),
                         "ask": check.ask,
                         **({"inputs": check.inputs} if check.inputs else {})}
            for check in checks}


def setup_source(checks: list[AnswerCheck]) -> str:  # the table cell's
    table = json.dumps(check_table(checks), indent=1, ensure_ascii=False)
    assert _TABLE_LINE in _SOURCE  # the line this fills in
    code = _SOURCE[_SOURCE.index('"""', 3) + 3:].lstrip("\n")  # the module's docstring is ours
    body = code.replace(_TABLE_LINE, f"CHECKS: dict[str, dict] = {table}", 1)
    return ("# Checks for your answers: each compares your value with the answer's digest,\n"
            "# so nothing here gives an answer away. Run this cell once.\n" + body.rstrip())


def without_exact(setup: str) -> str:
    """A table cell as a student's download holds it: ``self_check.exact`` is for the
    instructor's check cells only (the executed notebook keeps it: its key, the recordings)."""
    exact = next(node for node in ast.parse(setup).body
                 if isinstance(node, ast.FunctionDef) and node.name == "exact")
    lines = setup.splitlines(keepends=True)
    return "".join(lines[:exact.lineno - 1] + lines[exact.end_lineno + 2:])


def mistried(checks: list[AnswerCheck]) -> list[AnswerCheckError]:
    """Each answer a check gets wrong, tried with the table cell's own code."""
    namespace: dict = {}
    exec(setup_source(checks), namespace)  # defines passes() and the filled-in table
    errors = []
    for check in checks:
        if check.inputs:  # a function's: tried in the kernel (cells_after)
            continue
        tries = [("its answer", check.answer, True),
                 *((f"accept entry {entry}", literal(entry), True) for entry in check.accept),
                 *((f"refuse entry {entry}", literal(entry), False) for entry in check.refuse)]
        for what, value, right in tries:
            try:
                accepted = namespace["passes"](check.name, value)
            except TypeError:  # check() says "not yet" to a value it cannot compare
                accepted = False
            if accepted == right:
                continue
            verdict = ("is refused by the students' check: if it is right, widen the check "
                       "(its tolerance) or drop the entry; if it is wrong, move it to refuse"
                       if right else
                       "is accepted by the students' check: if it is wrong, tighten the check "
                       "(a smaller tolerance); if it is right, move it to accept")
            errors.append(AnswerCheckError(
                f"check '{check.name}' (answer cell `{check.cell}`): {what} {verdict}",
                line=check.line))
    return errors


def _function_tries(check: AnswerCheck) -> list[str]:
    """A function check's lists, asserted in the instructor's kernel."""
    return [f'\nassert {"" if right else "not "}passes("{check.name}", {entry}), ' + repr(
                f"check {check.name}: {field} entry {entry} is "
                f"{'refused' if right else 'accepted'} by the students' check: if the entry "
                f"is {'wrong, move it to refuse' if right else 'right, move it to accept'}; "
                "else correct the check's answer or inputs")
            for field, right in (("accept", True), ("refuse", False)) if check.inputs
            for entry in getattr(check, field)]


def cells_after(cell, checks: list[AnswerCheck], instructor: bool) -> list:
    """The cells an edition adds after an answer cell with checks: the note and the table
    before the chapter's first, its check calls."""
    own = cell_checks(cell)
    if not own:
        return []
    if instructor:
        calls = ["# The answers above, through the students' checks."] + [
            f'check("{check.name}", {check.value})\n'
            f'assert passes("{check.name}", {check.value}), '
            f'"the answer of check {check.name} does not pass its own check"'
            + f'\nexact("{check.name}", {check.value})' + "".join(_function_tries(check))
            for check in own]
    else:
        calls = ["# Check your answers: put each value in place of ... and run the cell."] + [
            f'check("{check.name}", ...)  # {" ".join(check.ask.split())}' for check in own]
    first = own[0].name == checks[0].name
    note = [markdown_cell(NOTE, NOTE_TAG)] if first and not instructor else []
    table = [code_cell(setup_source(checks), "remove-cell", SETUP_TAG)] if first else []
    return note + table + [code_cell("\n".join(calls), CHECK_TAG)]
