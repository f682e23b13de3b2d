"""The build log: each error once at each place, warnings counted, no configuration dumps,
a notebook's cell and line named in what Sphinx and MyST say."""

from __future__ import annotations

import logging as std_logging
import re
import sys
from weakref import WeakKeyDictionary

from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.logging import NAMESPACE, WarningStreamHandler

from coursebook.model.faults import BookError
from coursebook.model.notebooks import NOTEBOOK_SUFFIX, notebook_place

logger = logging.getLogger(__name__)


def report(message: str, location, subtype: str) -> None:
    """A build error, once per build at each place (:class:`_OncePerPlace`); the message is
    the record's whole text (no %-formatting)."""
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
        report(message, location, subtype)
    sys.exit(2)


class _Count(std_logging.Filter):
    count = 0

    def filter(self, record: std_logging.LogRecord) -> bool:
        self.count += 1
        return True


_COUNTS: WeakKeyDictionary[Sphinx, _Count] = WeakKeyDictionary()


def warnings_logged(app: Sphinx) -> int:  # so far; those Sphinx's -W makes fatal
    return _COUNTS[app].count


# myst-parser's and myst-nb's configuration dumps, two lines of some thousand characters on
# every build, are dropped; their other records pass.
_CONFIG_LOGGERS = ("sphinx.myst_parser.sphinx_ext.main", "sphinx.myst_nb.sphinx_ext")
_CONFIG_CLASSES = frozenset({"MdParserConfig", "NbParserConfig"})


def _drop_config_dumps(record: std_logging.LogRecord) -> bool:
    return not (record.levelno == std_logging.INFO and any(
        type(arg).__name__ in _CONFIG_CLASSES for arg in record.args or ()))


# myst-nb numbers a notebook page's lines as the cell's number times 10000 plus the line in
# the cell: named as the book's messages name them (``lesson.ipynb:4``, the line in it).
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


def filter_the_log(app: Sphinx) -> None:
    """At setup, on this build's handlers, after Sphinx's filters (which write the place and
    drop suppressed warnings): a notebook's cells named, each of the book's errors once at
    each place, the warnings shown counted (the preview stops a build that warned); and the
    configuration dumps dropped."""
    _COUNTS[app] = _Count()
    for handler in std_logging.getLogger(NAMESPACE).handlers:
        handler.addFilter(_name_the_cell)
        handler.addFilter(_OncePerPlace())
        if isinstance(handler, WarningStreamHandler):
            handler.addFilter(_COUNTS[app])
    for name in _CONFIG_LOGGERS:  # a filter added twice is kept once
        std_logging.getLogger(name).addFilter(_drop_config_dumps)
