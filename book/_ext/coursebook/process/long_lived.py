"""What a build keeps for its whole run, set aside from Python's garbage collector.

A build imports every extension and loads its environment before its builder starts:
hundreds of thousands of objects that live until it ends, which the cyclic collector
would walk again and again (about a tenth of a warm rebuild). As the ``gc`` module
advises for a process that forks without exec (Sphinx's readers), the collector is held
from this extension's setup (loaded first, before myst-nb and the theme), everything made
so far is frozen (``gc.freeze``) once the builder is ready, and collection resumes.
"""

from __future__ import annotations

import gc

from sphinx.application import Sphinx


def hold_collector() -> None:
    """At setup: no collection while the extensions load."""
    gc.disable()


def resume_collector() -> None:
    """Collection as before :func:`hold_collector`, nothing frozen (a process that goes
    on after the build)."""
    gc.enable()


def freeze_long_lived_objects(app: Sphinx) -> None:
    """``builder-inited``, after every other handler: the extensions and the environment
    are loaded; freeze them, and collect again from here on."""
    gc.freeze()
    gc.enable()
