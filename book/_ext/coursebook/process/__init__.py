"""The build process: Ctrl-C, the preview, what the next build finds, the garbage collector."""

import gc


def freeze_long_lived_objects(app) -> None:
    """``builder-inited``, last: what a build keeps for its whole run (the extensions, the
    environment) frozen, as the ``gc`` module advises for a process that forks without exec:
    the collector walked it again and again (a tenth of a warm rebuild)."""
    gc.freeze()
    gc.enable()
