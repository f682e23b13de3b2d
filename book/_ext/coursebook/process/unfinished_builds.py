"""A build stopped before its end: the next one writes every page again.

Sphinx saves its environment once the pages are read, then writes the pages, then the
book-wide ones (index, search page, search index, ``.buildinfo``). A build stopped in
between (Ctrl-C, SIGTERM, SIGKILL, a failed preview build) leaves an environment holding
every page as read while some pages, or the search index, are an earlier build's; the
next build would write only the pages whose sources are newer than their HTML, into a
search index that is missing or stale. So a build marks its output folder unfinished as
it starts and clears the mark once it ends without an exception. A build that finds the
mark, or an environment beside an HTML folder without its search index or
``.buildinfo``, writes every page (``env-get-updated``): nothing is read or executed again.
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
    """The book-wide files an HTML build leaves that are missing beside a saved environment."""
    builder = app.builder
    if not isinstance(builder, StandaloneHTMLBuilder) or not app.env.all_docs:
        return []
    names = [".buildinfo", *([builder.searchindex_filename] if builder.search else [])]
    return [name for name in names if not Path(app.outdir, name).is_file()]


def mark_unfinished(app: Sphinx) -> None:
    """``builder-inited``: the output folder is unfinished until this build ends; what an
    earlier build left unfinished is written again."""
    marker = _marker(app)
    missing = _book_wide_files_missing(app)
    if marker.is_file() or missing:
        _write_every_page.add(app)
        why = (f"{' and '.join(missing)} missing" if missing
               else "the last build here stopped before its end")
        logger.info("%s: %s: every page is written again", app.outdir, why)
    marker.write_text("A build writes here, or one stopped before its end.\n")


def pages_to_write(app: Sphinx, env) -> list[str]:
    """``env-get-updated``: every page, when an earlier build left this folder unfinished."""
    return sorted(env.found_docs) if app in _write_every_page else []


def mark_finished(app: Sphinx, exception: Exception | None) -> None:
    """``build-finished``, last: the pages and book-wide files are this build's."""
    if exception is None:
        _marker(app).unlink(missing_ok=True)
