"""The book's source files are UTF-8; one that is not is named at its first bad byte,
before any page is read (Sphinx would answer it with a crash report).
"""

from __future__ import annotations

from pathlib import Path

from coursebook.model.faults import BookError
from coursebook.reporting import stop_build


def encoding_error(path: Path) -> BookError | None:
    """Why a source file is not UTF-8 (located at its first bad byte), or None."""
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        return BookError(f"the file is not valid UTF-8: byte 0x{data[error.start]:02x} in "
                         f"column {column} (byte offset {error.start}) cannot be decoded. "
                         "Save the file as UTF-8 (in most editors: save with encoding, "
                         "UTF-8) and check the text at that place.", path, line)
    return None


def check_source_encodings(app, env, docnames: list[str]) -> None:
    """``env-before-read-docs``: every page about to be read decodes, or the build stops."""
    errors = [error for error in (encoding_error(Path(env.doc2path(docname)))
                                  for docname in docnames) if error is not None]
    if errors:
        stop_build("source", *((error.message, error.location) for error in errors))
