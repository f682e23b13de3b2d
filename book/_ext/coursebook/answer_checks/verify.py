"""The students' answer checks, verified: each asks only what was taught before it (the
trials of a student download are tools/verify_runtime.py's)."""

from __future__ import annotations

from sphinx.application import Sphinx

from coursebook.answer_checks.model import untaught_checks
from coursebook.page_state import chapters_in_reading_order, page_states
from coursebook.reporting import report_book_error


def check_what_checks_ask(app: Sphinx, env) -> None:
    """``env-updated``: one error per section a check names that does not come before it."""
    states = page_states(env)
    chapters = [states[docname].teaching for docname in chapters_in_reading_order(env)]
    for error in untaught_checks([chapter for chapter in chapters if chapter is not None]):
        report_book_error(error, "answer-check")
        app.statuscode = 1  # also without -W: a check asking the untaught is never a warning
