"""Everything that decides whether a chapter executes again.

jupyter-cache keys a notebook by its code cells (source and metadata). Two things are
added here: the *execution versions* (of Python and the packages that decide what the
cells print), put into the first code cell's metadata so that an upgrade re-executes; and
the pages Sphinx must read again although their file did not change (an exhibit, a
recording or the environment changed what the chapter becomes, or the chapter failed).
A page that is not read again is not executed again: its doctree is reused.
"""

from __future__ import annotations

import hashlib
import platform
import re
from importlib import metadata
from pathlib import Path

import nbformat
from sphinx.application import Sphinx

from coursebook.execute.input_digests import digest
from coursebook.config import BookConfig, book_config

# Cell metadata holding the execution versions (part of jupyter-cache's key).
# The metadata key keeps its first name: it is part of every cached notebook's hash.
VERSIONS_KEY = "execution_environment"
# Page metadata: the digest of the text handed to myst-nb, and a failed chapter.
SOURCE_HASH_KEY = "coursebook_source_hash"
FAILED_KEY = "coursebook_failed"


def environment_versions(packages: list[str]) -> dict[str, str]:
    """The versions that decide what the cells print: Python and each package."""
    versions = {"python": platform.python_version()}
    versions.update({name: metadata.version(name) for name in packages})
    return versions


def set_execution_versions(app: Sphinx, config) -> None:
    """``config-inited``: the versions become a config value, so a change re-reads every page."""
    config.coursebook_execution_versions = environment_versions(
        book_config(config).execution_packages)


_PACKAGE = Path(__file__).resolve().parents[1]  # the package root: kernels import its top-level modules
_BOOK_IMPORT = re.compile(rf"^\s*(?:from|import)\s+{_PACKAGE.name}\.(\w+)", re.M)
_RELATIVE_IMPORT = re.compile(r"^\s*from\s+\.(\w+)\s+import", re.M)


def book_code_digest(notebook: nbformat.NotebookNode) -> str | None:
    """A hash of the book's own modules that the cells import, with what they import.

    Their code decides what those cells print (an exhibit check, a figure's data), so an
    edit to them re-executes the chapters that use them, and only those.
    """
    pending = [name for cell in notebook.cells if cell.cell_type == "code"
               for name in _BOOK_IMPORT.findall(cell.source)]
    seen: dict[str, str] = {}
    while pending:
        name = pending.pop()
        path = _PACKAGE / f"{name}.py"
        if name in seen or not path.is_file():
            continue
        seen[name] = path.read_text(encoding="utf8")
        pending += _RELATIVE_IMPORT.findall(seen[name])
    if not seen:
        return None
    return hashlib.sha256("".join(seen[name] for name in sorted(seen)).encode()).hexdigest()[:16]


def key_execution_versions(notebook: nbformat.NotebookNode, versions: dict[str, str]) -> None:
    """Put the execution versions into the first code cell's metadata (the cache key)."""
    key = dict(versions)
    digest = book_code_digest(notebook)
    if digest is not None:
        key["book_code"] = digest
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.metadata[VERSIONS_KEY] = key
            return


def source_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf8")).hexdigest()


def reread_failed_chapters(app: Sphinx, env, added, changed, removed) -> list[str]:
    """``env-get-outdated``: a chapter that failed is read (and fails) again next time."""
    return [doc for doc, meta in env.metadata.items() if meta.get(FAILED_KEY)]


def chapter_inputs_digest(book: BookConfig) -> str:
    """A hash of what, besides its own file and the config, makes a chapter's edition text.

    The exhibits, the recordings, the machine kinds and this extension's code. While it
    stays the same, no chapter needs preparing to learn whether its text changed.
    """
    roots = (Path(book.exhibits_dir), Path(book.recordings_dir), Path(book.machine_kinds_file),
             _PACKAGE)
    parts: list[str | bytes] = []
    for root in roots:
        for path in sorted(root.rglob("*")) if root.is_dir() else [root]:
            if path.is_file() and "__pycache__" not in path.parts:
                parts += [str(path), path.read_bytes()]
    return digest(*parts)


def outdated_chapters(env, current_source) -> list[str]:
    """Chapters whose text for myst-nb changed while their file did not.

    ``current_source(docname)`` gives the text this build would hand to myst-nb, or None
    when it cannot be prepared (reading the page again then reports the problem).
    """
    outdated = []
    for docname in sorted(env.found_docs):
        stored = env.metadata.get(docname, {}).get(SOURCE_HASH_KEY)
        if stored is None:
            continue
        current = current_source(docname)
        if current is None or source_digest(current) != stored:
            outdated.append(docname)
    return outdated
