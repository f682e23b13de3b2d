"""A build stopped before its end: the next one writes every page again.

Sphinx saves its environment before it writes the pages and the search index, so a
stopped build left pages and index an earlier build's, and the next one wrote only the
pages whose sources are newer. A build marks its output folder unfinished until it ends;
one that finds the mark, or no search index or ``.buildinfo``, writes every page.
"""

from __future__ import annotations

import weakref
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.builders.html import StandaloneHTMLBuilder
from sphinx.util import logging

logger = logging.getLogger(__name__)

MARKER = ".coursebook-unfinished"  # in the output folder while a build runs
# The builds (Sphinx applications) that write every page.
_write_every_page: weakref.WeakSet[Sphinx] = weakref.WeakSet()


def _marker(app: Sphinx) -> Path:
    return Path(app.outdir, MARKER)


def _book_wide_files_missing(app: Sphinx) -> list[str]:
    """The book-wide files of an HTML build missing beside a saved environment."""
    builder = app.builder
    if not isinstance(builder, StandaloneHTMLBuilder) or not app.env.all_docs:
        return []
    names = [".buildinfo", *([builder.searchindex_filename] if builder.search else [])]
    return [name for name in names if not Path(app.outdir, name).is_file()]


def mark_unfinished(app: Sphinx) -> None:
    """``builder-inited``."""
    marker = _marker(app)
    missing = _book_wide_files_missing(app)
    if marker.is_file() or missing:
        _write_every_page.add(app)
        why = (f"{' and '.join(missing)} missing" if missing
               else "the last build here stopped before its end")
        logger.info("%s: %s: every page is written again", app.outdir, why)
    marker.write_text("A build writes here, or one stopped before its end.\n")


def pages_to_write(app: Sphinx, env) -> list[str]:
    """``env-get-updated``."""
    return sorted(env.found_docs) if app in _write_every_page else []


def mark_finished(app: Sphinx, exception: Exception | None) -> None:
    """``build-finished``, last."""
    if exception is None:
        _marker(app).unlink(missing_ok=True)
