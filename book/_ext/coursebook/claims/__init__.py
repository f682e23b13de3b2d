"""Claims: a sentence about a library, held to a hidden check or to a source, each module
named by its stage (docs/architecture.md says what each holds)."""

from __future__ import annotations


def setup(app) -> None:
    # Imported here: importing the package (the recorder's ``model``) needs no Sphinx.
    from coursebook.claims.verify import log_claim_counts

    app.connect("write-started", log_claim_counts, priority=450)  # after the outputs' summary
