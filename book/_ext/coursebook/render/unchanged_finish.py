"""A build that writes no page does not write the book-wide pages again.

Sphinx ends every HTML build with ``finish()``: the general index, the search page, the
search index and the object inventory, written afresh even when no page was read or
written (Sphinx 8.2 dropped the early stop of a build with nothing to do, so that static
files are copied: sphinx#1810; they still are, before pages are written). Rendering the
search page's navigation is most of a no-op build's writing, about 0.1 s. (Sphinx 9.0's
search index written by a no-op build also lacks the index entries of pages it did not
write: the glossary's terms were not found by the search page after one.)

What ``finish()`` writes depends on the environment (the pages read), the configuration
and tags, the templates, and the versions of Sphinx and of the extensions. After a clean
build, :func:`note_finished` keeps those inputs in a stamp beside the doctrees; the
builder skips ``finish()`` when it wrote no page and the stamp names the same inputs
(the environment by its pickle, which Sphinx writes again whenever a page was read). A
build that stops or warns leaves no stamp, so the next one finishes in full.
"""

from __future__ import annotations

import json
from pathlib import Path

import sphinx
from sphinx.application import Sphinx
from sphinx.builders.html import StandaloneHTMLBuilder
from sphinx.util import logging

logger = logging.getLogger(__name__)

STAMP = "coursebook-finished.json"  # in the doctree folder: not published with the pages


def finish_inputs(app: Sphinx) -> dict:
    """What the book-wide pages are made from, as it stands now."""
    builder = app.builder
    pickle = Path(builder.doctreedir, "environment.pickle").stat()
    return {
        "sphinx": sphinx.__version__,
        "extensions": {name: [str(ext.version), str(ext.metadata.get("env_version", ""))]
                       for name, ext in sorted(app.extensions.items())},
        "config": builder.build_info.config_hash,
        "tags": builder.build_info.tags_hash,
        "templates": builder.templates.newest_template_mtime() if builder.templates else 0,
        "environment": [pickle.st_mtime_ns, pickle.st_size],
    }


def _stamp(app: Sphinx) -> Path:
    return Path(app.builder.doctreedir, STAMP)


class HTMLBuilderSkippingUnchangedFinish(StandaloneHTMLBuilder):
    """Sphinx's HTML builder, whose ``finish()`` is skipped when it has nothing new to do."""

    pages_written = False

    def write_documents(self, docnames) -> None:
        self.pages_written = True
        super().write_documents(docnames)

    def finish(self) -> None:
        stamp = _stamp(self._app)
        # Pages an extension adds (html-collect-pages) may come from anything: always made.
        unchanged = (not self.pages_written and stamp.is_file()
                     and not self.events.listeners.get("html-collect-pages")
                     and json.loads(stamp.read_text()) == finish_inputs(self._app))
        if unchanged:
            logger.info("no page written: the index, search and inventory pages are kept "
                        "from the last build")
            return
        stamp.unlink(missing_ok=True)  # until this build ends cleanly
        super().finish()


def note_finished(app: Sphinx, exception: Exception | None) -> None:
    """``build-finished``: after a clean HTML build, the inputs its book-wide pages had."""
    if not isinstance(app.builder, HTMLBuilderSkippingUnchangedFinish):
        return
    if exception is None and app.statuscode == 0 and app._warncount == 0:
        _stamp(app).write_text(json.dumps(finish_inputs(app)))
    else:
        _stamp(app).unlink(missing_ok=True)
