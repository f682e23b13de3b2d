"""Problems a person fixes: each knows where it is.

The book's promise is one clear message per fault: what happened, where (a source
file and line, or a TOML file and field) and the command that fixes it, never a
traceback. :class:`BookError` carries the place; a build logs it once
(:mod:`coursebook.reporting`), a tool prints it as one line.
"""

from __future__ import annotations

import re
from pathlib import Path

CLEAN_CACHE_COMMAND = "make clean-cache"


def shown_path(path: Path | str) -> Path:
    """A path as messages show it: relative to the working folder when it lies under it."""
    path = Path(path)
    try:
        return path.relative_to(Path.cwd()) if path.is_absolute() else path
    except ValueError:
        return path


def field_line(path: Path, name: str, record: int | None = None, table: str = "",
               array: str = "records") -> int:
    """The line of ``path`` where field ``name`` is set (in ``[[records]]``, or another
    ``array`` of tables, number ``record``, or in ``[table]``); else the line opening that
    table; 1 when neither is found."""
    try:
        lines = path.read_text(encoding="utf8").splitlines()
    except OSError:
        return 0
    start = 0
    header = f"[[{array}]]" if record is not None else (f"[{table}]" if table else "")
    if header:
        openings = [i for i, line in enumerate(lines) if line.strip() == header]
        index = record if record is not None else 0
        if index >= len(openings):
            return 1
        start = openings[index]
    end = next((i for i in range(start + 1 if header else 0, len(lines))
                if lines[i].lstrip().startswith("[")), len(lines))
    setting = re.compile(rf"^\s*{re.escape(name)}\s*=")
    found = next((i for i in range(start, end) if setting.match(lines[i])), None)
    return (found if found is not None else start) + 1


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
