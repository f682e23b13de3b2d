"""The environment keeps the configuration as conf.py gave it, not as the extensions left it.

The next build compares the pickled configuration with its own before any extension's
``builder-inited``, where the theme and extensions add to seven values: every build said
"The configuration has changed", one with nothing to do included.
"""

from __future__ import annotations

import pickle
import weakref

from sphinx.application import Sphinx
from sphinx.config import Config

_GIVEN: weakref.WeakKeyDictionary[Config, Config] = weakref.WeakKeyDictionary()


def keep_config_as_given(app: Sphinx, config: Config) -> None:
    """``config-inited``, last: a copy as Sphinx would pickle it."""
    _GIVEN[config] = pickle.loads(pickle.dumps(config, pickle.HIGHEST_PROTOCOL))


def pickle_config_as_given(app: Sphinx, env) -> list[str]:
    """``env-get-updated``, last, before Sphinx pickles the environment."""
    given = _GIVEN.get(app.config)
    if given is not None:
        env.config = given
    return []


def restore_config(app: Sphinx, *_) -> None:
    """``env-check-consistency`` (after the pickling) or ``write-started`` (a build that read
    nothing pickles nothing)."""
    app.env.config = app.config
