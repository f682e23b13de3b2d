"""The students' answer checks, verified: each asks only what was taught before it, and
trials run after a student download (``make verify-runtime``: docs/authoring.md)."""

from __future__ import annotations

from dataclasses import dataclass

import nbformat
from sphinx.application import Sphinx

from coursebook.answer_checks.model import (
    AnswerCheck,
    cell_checks,
    notebook_checks,
    untaught_checks,
)
from coursebook.answer_checks.prepare import shown_hint
from coursebook.page_state import chapters_in_reading_order, page_states
from coursebook.reporting import report_book_error


def check_what_checks_ask(app: Sphinx, env) -> None:
    """``env-updated``: one error per section a check names that does not come before it."""
    states = page_states(env)
    chapters = [states[docname].teaching for docname in chapters_in_reading_order(env)]
    for error in untaught_checks([chapter for chapter in chapters if chapter is not None]):
        report_book_error(error, "answer-check")
        app.statuscode = 1  # also without -W: a check asking the untaught is never a warning


@dataclass(frozen=True)
class Trial:
    check: AnswerCheck
    cell: int  # index, among the trial cells, of the cell whose output is the verdicts
    expected: str  # the verdicts on its value, its accept entries, then its refuse entries


def trial_cells(source: nbformat.NotebookNode) -> tuple[list, list[Trial]]:
    """Cells to append to a chapter's student download, and what each trial must print."""
    cells: list = []
    trials = []
    named = {check.name: check for check in notebook_checks(source)}  # with what they revisit
    for cell in source.cells:
        checks = [named[check.name] for check in cell_checks(cell)]
        if not checks:
            continue
        cells.append(nbformat.v4.new_code_cell(cell.source))  # the answer's own code
        for check in checks:
            verdicts = [f"{check.name}: correct"] * (1 + len(check.accept)) + [
                f"{check.name}: not yet. Hint: {shown_hint(check)}"] * len(check.refuse)
            trials.append(Trial(check, len(cells), "\n".join(verdicts)))
            cells.append(nbformat.v4.new_code_cell("\n".join(
                f'check("{check.name}", {value})'
                for value in (check.value, *check.accept, *check.refuse))))
    return cells, trials


def _verdicts(output) -> str:
    """check()'s printout (stdout), or the error that cut it short; not a warning (stderr)."""
    if output.get("output_type") == "error":
        return f"{output.get('ename')}: {output.get('evalue')}"
    return output.get("text", "") if output.get("name") == "stdout" else ""


def failed_trials(ran_cells: list, trials: list[Trial]) -> list[str]:
    """What each trial printed that it should not have."""
    failures = []
    for trial in trials:
        cell = ran_cells[trial.cell]
        # A hint written as a YAML block ends with a newline: a blank line in the printout.
        printed = "\n".join(line for line in "".join(
            map(_verdicts, cell.get("outputs", []))).strip().splitlines() if line.strip())
        if printed != trial.expected:
            failures.append(f"check '{trial.check.name}': expected {trial.expected!r}, "
                            f"printed {printed!r}")
    return failures
