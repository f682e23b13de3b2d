"""The environment keeps the configuration as conf.py gave it, not as the extensions left it.

Sphinx pickles its configuration with the environment, and the next build compares it with
its own before any extension's ``builder-inited``. The theme and extensions add to some
values there (``templates_path``, ``html_static_path``, ``html_css_files``,
``html_theme_options``, the permalink icon, the source link suffix, MathJax's settings):
every build said "The configuration has changed (7 options: ...)", a build with nothing to
do included. So the environment is pickled with the configuration as it stood when
``config-inited`` ended, the state the next build compares with; the build uses the full one.
"""

from __future__ import annotations

import pickle
import weakref

from sphinx.application import Sphinx
from sphinx.config import Config

_GIVEN: weakref.WeakKeyDictionary[Config, Config] = weakref.WeakKeyDictionary()


def keep_config_as_given(app: Sphinx, config: Config) -> None:
    """``config-inited``, after every other handler: a copy as Sphinx would pickle it."""
    _GIVEN[config] = pickle.loads(pickle.dumps(config, pickle.HIGHEST_PROTOCOL))


def pickle_config_as_given(app: Sphinx, env) -> list[str]:
    """``env-get-updated``, last, just before Sphinx pickles the environment: the copy
    stands in for the configuration until :func:`restore_config`."""
    given = _GIVEN.get(app.config)
    if given is not None:
        env.config = given
    return []


def restore_config(app: Sphinx, *_) -> None:
    """``env-check-consistency`` (after the pickling) or ``write-started`` (a build that read
    nothing pickles nothing): the build goes on with its full configuration."""
    app.env.config = app.config
