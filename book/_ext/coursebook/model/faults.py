"""Problems a person fixes: each knows where it is (a source file and line, or a TOML file
and field), so that a build logs it once (:mod:`coursebook.reporting`) as one line."""

from __future__ import annotations

from pathlib import Path

CLEAN_CACHE_COMMAND = "make clean-cache"


def shown_path(path: Path | str) -> Path:
    """A path as messages show it: relative to the working folder when it lies under it."""
    path, here = Path(path), Path.cwd()
    return path.relative_to(here) if path.is_relative_to(here) else path


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
