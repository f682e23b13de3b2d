"""The build process itself: Ctrl-C, the preview, what the next build finds, and the
garbage collector.

What a build keeps for its whole run is set aside from the collector: the extensions and
the environment, loaded before the builder starts, live until the build ends, and the
collector walked them again and again (a tenth of a warm rebuild). As the ``gc`` module
advises for a process that forks without exec, they are frozen.
"""

from __future__ import annotations

import gc


def hold_collector() -> None:
    """At setup: no collection while the extensions load."""
    gc.disable()


def resume_collector() -> None:
    """Collection as before, nothing frozen (a process that goes on after the build)."""
    gc.enable()


def freeze_long_lived_objects(app) -> None:
    """``builder-inited``, last: the extensions and the environment are loaded."""
    gc.freeze()
    gc.enable()
