"""Torch versions: where each chapter is verified, and what changed between versions, each
module named by its stage (docs/architecture.md says what each holds)."""

from __future__ import annotations


def setup(app) -> None:
    # Imported here, as in the other features: importing the package imports none of its stages.
    from coursebook.prepare.chapters import edition_of
    from coursebook.torch_versions.verify import CellHeadings, TorchVersionChanges

    app.add_directive("torch-version-changes", TorchVersionChanges.of_edition(edition_of(app)))
    app.add_post_transform(CellHeadings)
