"""Torch versions: where each chapter is verified, what changed between versions."""

from __future__ import annotations


def setup(app) -> None:
    # Imported here, as in the other features: importing the package imports none of its stages.
    from coursebook.prepare.chapters import edition_of
    from coursebook.torch_versions.verify import CellHeadings, TorchVersionChanges

    # A directive sees no Sphinx application: the build's edition is its subclass's.
    edition = {"edition": edition_of(app)}
    app.add_directive("torch-version-changes",
                      type(TorchVersionChanges.__name__, (TorchVersionChanges,), edition))
    app.add_post_transform(CellHeadings)
