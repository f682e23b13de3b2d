"""Build errors, each logged once however many chapters, phases or readers meet it.

Sphinx's logger drops a repeated message logged with ``once=True`` (its filter sits on
the main process's handler, so it also drops a message that several parallel readers
send back). A repeated fault is one message: an exhibit every chapter loads, say.
"""

from __future__ import annotations

import sys

from sphinx.util import logging

from coursebook.model.faults import BookError

logger = logging.getLogger(__name__)


def report(message: str, location, subtype: str) -> None:
    """Log ``message`` as a build error at ``location``, once per build."""
    # The message is the record's whole text (no arguments, so no %-formatting): the
    # filter keys on it.
    logger.error(message, location=location, type="coursebook", subtype=subtype, once=True)


def report_book_error(error: BookError, subtype: str, fallback_location=None) -> None:
    """Log a fault at its own place, or else at ``fallback_location``."""
    if error.location:
        report(error.message, error.location, subtype)
    else:
        report(str(error), None if error.path else fallback_location, subtype)


# The commands this build's errors asked for, for the preview to name: asked once the pages
# are read (Sphinx clears a page's temp_data when its read ends).
_FIX_COMMANDS = "coursebook_fix_commands"


def ask_for(env, command: str) -> None:
    """Note that an error just logged is fixed by running ``command``."""
    asked = env.temp_data.setdefault(_FIX_COMMANDS, [])
    if command not in asked:
        asked.append(command)


def asked_for(env) -> list[str]:
    """The commands this build's errors asked for, in the order first asked."""
    return list(env.temp_data.get(_FIX_COMMANDS, []))


def stop_build(subtype: str, *errors: tuple[str, str | None]) -> None:
    """End the build now with these (message, location) errors: a build that cannot go
    on raises no exception, as Sphinx gives any exception a crash report."""
    for message, location in errors:
        logger.error("%s", message, location=location, type="coursebook", subtype=subtype)
    sys.exit(2)
