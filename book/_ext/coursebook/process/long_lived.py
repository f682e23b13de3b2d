"""What a build keeps for its whole run, set aside from Python's garbage collector.

A build imports every extension and loads its environment before its builder starts:
hundreds of thousands of objects that live until it ends. Python's cyclic collector
would walk them again and again while they are made (about a tenth of a warm rebuild)
and on each full collection after. This follows the ``gc`` module's advice for a process
that forks without exec (Sphinx's readers): the collector is held from this extension's
setup (loaded first; held before the package imports its own modules, which import
myst-nb, and the theme after them), everything made so
far is frozen (``gc.freeze``) once the builder is ready, and the collector runs again for
what the build makes from then on.
"""

from __future__ import annotations

import gc

from sphinx.application import Sphinx


def hold_collector() -> None:
    """At setup: no collection while the extensions load."""
    gc.disable()


def freeze_long_lived_objects(app: Sphinx) -> None:
    """``builder-inited``, after every other handler: the extensions and the environment
    are loaded; freeze them, and collect again from here on."""
    gc.freeze()
    gc.enable()
