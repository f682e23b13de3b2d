"""The build log: errors, each logged once at its place however many chapters, phases or
readers meet it (a filter on the main process's handlers); warnings counted; no configuration
dumps; a notebook's cell and line named in what Sphinx and MyST say.
"""

from __future__ import annotations

import io
import logging as std_logging
import re
import sys
from weakref import WeakKeyDictionary

from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.logging import NAMESPACE, WarningStreamHandler, is_suppressed_warning

from coursebook.model.faults import BookError
from coursebook.model.notebooks import NOTEBOOK_SUFFIX, notebook_place

logger = logging.getLogger(__name__)


def report(message: str, location, subtype: str) -> None:
    """A build error, once per build at each place (:class:`_OncePerPlace`): the message is
    the record's whole text (no arguments, no %-formatting)."""
    logger.error(message, location=location, type="coursebook", subtype=subtype)


def report_book_error(error: BookError, subtype: str, fallback_location=None) -> None:
    report(error.message if error.location else str(error),
           error.location or (None if error.path else fallback_location), subtype)


# The commands this build's errors asked for, for the preview to name: asked once the pages
# are read (Sphinx clears a page's temp_data when its read ends).
_FIX_COMMANDS = "coursebook_fix_commands"


def ask_for(env, command: str) -> None:  # an error just logged is fixed by ``command``
    env.temp_data.setdefault(_FIX_COMMANDS, {})[command] = None  # a dict: each once, in order


def asked_for(env) -> list[str]:
    return list(env.temp_data.get(_FIX_COMMANDS, {}))


def stop_build(subtype: str, *errors: tuple[str, str | None]) -> None:
    """End the build with these (message, location) errors, raising nothing: Sphinx gives
    any exception a crash report."""
    for message, location in errors:
        logger.error("%s", message, location=location, type="coursebook", subtype=subtype)
    sys.exit(2)


class _WarningCount(WarningStreamHandler):
    """Counts the warnings and errors ``suppress_warnings`` lets through, as Sphinx's own
    warning stream gets them (as a stream handler, each held warning once)."""

    def __init__(self, app: Sphinx) -> None:
        super().__init__(io.StringIO())
        self.setLevel(std_logging.WARNING)
        self.app, self.count = app, 0

    def emit(self, record: std_logging.LogRecord) -> None:
        suppressed = getattr(self.app.config, "suppress_warnings", ())
        if not is_suppressed_warning(getattr(record, "type", ""), getattr(record, "subtype", ""),
                                     suppressed):
            self.count += 1


_COUNTS: WeakKeyDictionary[Sphinx, _WarningCount] = WeakKeyDictionary()


def count_warnings(app: Sphinx) -> None:
    """At setup, once Sphinx's logging is: this build's warnings counted from here on."""
    _COUNTS[app] = _WarningCount(app)
    std_logging.getLogger(NAMESPACE).addHandler(_COUNTS[app])


def warnings_logged(app: Sphinx) -> int:  # so far; those Sphinx's -W makes fatal
    return _COUNTS[app].count if app in _COUNTS else 0


# myst-parser's and myst-nb's configuration dumps, two lines of some thousand characters on
# every build, are dropped; their other records pass. Sphinx's loggers are Python loggers
# under "sphinx.", named after their modules.
_CONFIG_LOGGERS = ("sphinx.myst_parser.sphinx_ext.main", "sphinx.myst_nb.sphinx_ext")
_CONFIG_CLASSES = frozenset({"MdParserConfig", "NbParserConfig"})


def _drop_config_dumps(record: std_logging.LogRecord) -> bool:
    return not (record.levelno == std_logging.INFO and any(
        type(arg).__name__ in _CONFIG_CLASSES for arg in record.args or ()))


def quiet_config_dumps() -> None:  # a filter added twice is kept once
    for name in _CONFIG_LOGGERS:
        std_logging.getLogger(name).addFilter(_drop_config_dumps)


# myst-nb numbers a notebook page's lines as the cell's number times 10000 plus the line in
# the cell; a filter on Sphinx's handlers, after theirs wrote the place as ``path:line``,
# names the author's cell (``lesson.ipynb:4``) and the line in it, as the book's messages do.
_NOTEBOOK_PLACE = re.compile(rf"(?P<path>.*{re.escape(NOTEBOOK_SUFFIX)}):(?P<line>\d+)")


def _name_the_cell(record: std_logging.LogRecord) -> bool:
    found = _NOTEBOOK_PLACE.fullmatch(str(getattr(record, "location", None) or ""))
    place = notebook_place(int(found["line"])) if found else None
    if place is not None:
        cell, line = place
        record.location = f"{found['path']}:{cell}"
        record.msg = f"cell {cell}, line {line}: {record.msg}"
    return True


class _OncePerPlace(std_logging.Filter):
    """Each of the book's errors once at each place, however many phases or readers meet it:
    Sphinx's ``once`` keys on the text alone (the same fault on a second page went unnamed)."""

    def __init__(self) -> None:
        super().__init__()
        self.said: set[tuple[str, str]] = set()

    def filter(self, record: std_logging.LogRecord) -> bool:
        if getattr(record, "type", None) != "coursebook":
            return True
        said = (record.getMessage(), str(getattr(record, "location", None)))
        first = said not in self.said
        self.said.add(said)
        return first


def name_notebook_cells() -> None:
    """At setup, when Sphinx's handlers are this build's: after their filters, which name the
    place (:class:`_OncePerPlace` reads it)."""
    for handler in std_logging.getLogger(NAMESPACE).handlers:
        handler.addFilter(_name_the_cell)
        handler.addFilter(_OncePerPlace())
