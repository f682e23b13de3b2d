"""Claims: a sentence about a library, held to a hidden check or to a source. Each module is
named by the stage it belongs to (docs/architecture.md): ``model`` (a chapter's and an
exhibit's claims; no Sphinx), ``verify`` (each claim held on this build's torch, as
accepted)."""

from __future__ import annotations


def setup(app) -> None:
    # Imported here: importing the package (the recorder's ``model``) needs no Sphinx.
    from coursebook.claims.verify import log_claim_counts

    app.connect("write-started", log_claim_counts, priority=450)  # after the outputs' summary
