"""The build process: Ctrl-C, the preview, what the next build finds, the garbage collector.
What a build keeps for its whole run (extensions, environment) is frozen, as the ``gc``
module advises for a process that forks without exec: the collector walked it again and
again (a tenth of a warm rebuild)."""

from __future__ import annotations

import gc


def freeze_long_lived_objects(app) -> None:
    """``builder-inited``, last: the extensions and the environment are loaded."""
    gc.freeze()
    gc.enable()
