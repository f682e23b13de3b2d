"""Trying the students' answer checks where students run them.

After a student download has run (in a replica of Colab's runtime, say), each chapter
answer that lists checks is run too, then each check is called with the value the answer
computes and each entry of its ``accept`` list, which must say "correct", and with each
entry of its ``refuse`` list, which must say "not yet" and the check's hint. The trial
cells are appended to the download's copy, so they run in the same kernel, after the
notebook, as a student's own cells would.
"""

from __future__ import annotations

from dataclasses import dataclass

import nbformat

from coursebook.model.answer_checks import AnswerCheck, cell_checks, notebook_checks
from coursebook.prepare.answer_checks import shown_hint

@dataclass(frozen=True)
class Trial:
    check: AnswerCheck
    cell: int  # index, among the trial cells, of the cell whose output is the verdicts

    @property
    def expected(self) -> str:
        name, hint = self.check.name, shown_hint(self.check)
        right = [f"{name}: correct"] * (1 + len(self.check.accept))
        return "\n".join(right + [f"{name}: not yet. Hint: {hint}"] * len(self.check.refuse))


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
            trials.append(Trial(check, len(cells)))
            cells.append(nbformat.v4.new_code_cell("\n".join(
                f'check("{check.name}", {value})'
                for value in (check.value, *check.accept, *check.refuse))))
    return (cells if trials else []), trials


def _verdicts(output) -> str:
    """What an output says of the verdicts: check()'s printout (stdout), or the error that
    cut it short; a warning (stderr) says nothing of them."""
    if output.get("output_type") == "error":
        return f"{output.get('ename')}: {output.get('evalue')}"
    return output.get("text", "") if output.get("name") == "stdout" else ""


def failed_trials(ran_cells: list, trials: list[Trial]) -> list[str]:
    """What each trial printed that it should not have, given the trial cells as run."""
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
