"""Problems a person fixes: each knows where it is, and a build reports it once.

The book's promise is one clear message per fault: what happened, where (a source
file and line, or a TOML file and field) and the command that fixes it, never a
traceback. :class:`BookError` carries the place; :func:`report_once` logs it as one
Sphinx error however many chapters or build phases run into it.
"""

from __future__ import annotations

import sys
from pathlib import Path

CLEAN_CACHE_COMMAND = "make clean-cache"


def shown_path(path: Path | str) -> Path:
    """A path as messages show it: relative to the working folder when it lies under it."""
    path = Path(path)
    try:
        return path.relative_to(Path.cwd()) if path.is_absolute() else path
    except ValueError:
        return path


class BookError(Exception):
    """A fault in the book's sources or data; ``path`` and ``line`` say where (0: unknown)."""

    def __init__(self, message: str, path: Path | str | None = None, line: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.path = None if path is None else Path(path)
        self.line = line

    @property
    def location(self) -> str | None:
        """``file:line`` for Sphinx (a location with a colon is printed as it is), or None."""
        return f"{shown_path(self.path)}:{self.line}" if self.path and self.line else None

    def __str__(self) -> str:
        if self.path is None:
            return self.message
        return f"{self.location or shown_path(self.path)}: {self.message}"

    def report(self, app, subtype: str, fallback_location=None) -> bool:
        """Log as one build error, at its own place or else at ``fallback_location``."""
        if self.location:
            return report_once(app, self.message, self.location, subtype)
        return report_once(app, str(self), None if self.path else fallback_location, subtype)


def report_once(app, message: str, location, subtype: str) -> bool:
    """Log ``message`` as a build error unless this build logged it already; True if logged."""
    from sphinx.util import logging

    reported: set = app.__dict__.setdefault("_coursebook_reported", set())
    if (message, str(location)) in reported:
        return False
    reported.add((message, str(location)))
    logging.getLogger(__name__).error("%s", message, location=location, type="coursebook",
                                      subtype=subtype)
    return True


def stop_build(subtype: str, *errors: tuple[str, str | None]) -> None:
    """End the build now with these (message, location) errors: a build that cannot go on
    raises no exception, as Sphinx gives any exception a crash report."""
    from sphinx.util import logging

    for message, location in errors:
        logging.getLogger(__name__).error("%s", message, location=location, type="coursebook",
                                          subtype=subtype)
    sys.exit(2)
