"""Answer checks: a student's ``check(...)`` of an answer, one feature from its data to its
audit, each module named by its stage (docs/architecture.md says what each holds)."""

from __future__ import annotations


def setup(app) -> None:
    app.connect("env-updated", check_what_checks_ask)


def check_what_checks_ask(app, env) -> None:
    """``env-updated``: one error per section a check names that does not come before it."""
    # Imported here: importing the package (a kernel's or the recorder's ``model``) needs
    # no Sphinx.
    from coursebook.answer_checks.model import untaught_checks
    from coursebook.page_state import chapters_in_reading_order, page_states
    from coursebook.reporting import report_book_error

    states = page_states(env)
    chapters = [states[docname].teaching for docname in chapters_in_reading_order(env)]
    for error in untaught_checks([chapter for chapter in chapters if chapter is not None]):
        report_book_error(error, "answer-check")
        app.statuscode = 1  # also without -W: a check asking the untaught is never a warning
