"""What the next build finds: the configuration as conf.py gave it, and every page written
again after a stopped build."""

from __future__ import annotations

import pickle
import weakref
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.builders.html import StandaloneHTMLBuilder
from sphinx.config import Config
from sphinx.util import logging

logger = logging.getLogger(__name__)

_GIVEN: weakref.WeakKeyDictionary[Config, Config] = weakref.WeakKeyDictionary()
MARKER = ".coursebook-unfinished"  # in the output folder while a build runs
_write_every_page: weakref.WeakSet[Sphinx] = weakref.WeakSet()


def own_source_suffix(app: Sphinx, config: Config) -> None:
    """``config-inited``, before Sphinx adds the registered suffixes (priority 800): a dict
    of its own, not Sphinx's shared default, which the next build in this process (a test
    worker's) would read, myst-nb's ``.py`` (so ``conf.py``) among them."""
    if isinstance(config.source_suffix, dict):
        config.source_suffix = dict(config.source_suffix)


def keep_config_as_given(app: Sphinx, config: Config) -> None:
    """``config-inited``, last: a copy as Sphinx would pickle it. The next build compares the
    pickled one with its own before ``builder-inited``, where the theme and extensions add to
    seven values: every build said "The configuration has changed"."""
    _GIVEN[config] = pickle.loads(pickle.dumps(config, pickle.HIGHEST_PROTOCOL))


def pickle_config_as_given(app: Sphinx, env) -> list[str]:
    """``env-get-updated``, last, before Sphinx pickles the environment."""
    env.config = _GIVEN[app.config]
    return []


def restore_config(app: Sphinx, *_) -> None:
    """``env-check-consistency`` (after the pickling) or ``write-started`` (a build that read
    nothing pickles nothing)."""
    app.env.config = app.config


def mark_unfinished(app: Sphinx) -> None:
    """``builder-inited``: Sphinx saves its environment before it writes the pages, so after a
    stopped build the next wrote only those with newer sources. A build that finds the mark
    (or no search index or ``.buildinfo``) writes every page."""
    marker, builder, missing = Path(app.outdir, MARKER), app.builder, []
    if isinstance(builder, StandaloneHTMLBuilder) and app.env.all_docs:  # a saved environment
        names = [".buildinfo", *([builder.searchindex_filename] if builder.search else [])]
        missing = [name for name in names if not Path(app.outdir, name).is_file()]
    if marker.is_file() or missing:
        _write_every_page.add(app)
        why = (f"{' and '.join(missing)} missing" if missing
               else "the last build here stopped before its end")
        logger.info("%s: %s: every page is written again", app.outdir, why)
    marker.write_text("A build writes here, or one stopped before its end.\n")


def pages_to_write(app: Sphinx, env) -> list[str]:
    return sorted(env.found_docs) if app in _write_every_page else []


def mark_finished(app: Sphinx, exception: Exception | None) -> None:
    if exception is None:
        Path(app.outdir, MARKER).unlink(missing_ok=True)
