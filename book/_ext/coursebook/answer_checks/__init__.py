"""Answer checks: a student's ``check(...)`` of an answer, one feature from its data to its
audit, each module named by its stage (docs/architecture.md says what each holds)."""

from __future__ import annotations


def setup(app) -> None:
    # Imported here: importing the package (a kernel's or the recorder's ``model``) needs
    # no Sphinx.
    from coursebook.answer_checks.verify import check_what_checks_ask

    app.connect("env-updated", check_what_checks_ask)
