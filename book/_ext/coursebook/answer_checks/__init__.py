"""Answer checks: a student's ``check(...)`` of an answer, one feature from its data to its
audit. Each module is named by the stage it belongs to (docs/architecture.md): ``model``
(the checks an answer lists, what each chapter teaches; no Sphinx), ``prepare`` (each
edition's check cells and the digest table), ``verify`` (each check asks only what was
taught before it; the trials of a student download), ``audit`` (no answer in a built
table)."""

from __future__ import annotations


def setup(app) -> None:
    # Imported here: importing the package (a kernel's or the recorder's ``model``) needs
    # no Sphinx.
    from coursebook.answer_checks.verify import check_what_checks_ask

    app.connect("env-updated", check_what_checks_ask)
