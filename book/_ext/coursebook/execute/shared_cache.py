"""One jupyter-cache shared by builds that run at once, and its key (docs/authoring.md, "What
re-executes"). A lock per key (``locks/``, dropped by the OS when a build dies), held from
lookup until cached, makes a second build wait for the first's run ("hashkey already exists")."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from sphinx.application import Sphinx

from coursebook.config import book_config
from coursebook.model.cell_notes import CELL_NOTE, without_notes
from coursebook.model.notebooks import chapter_settings, short_digest
from coursebook.prepare.chapter_packages import installed

if TYPE_CHECKING:
    from filelock import FileLock

# The first code cell's metadata key for the execution versions; it keeps its first name,
# being part of every cached notebook's hash.
VERSIONS_KEY = "execution_environment"
# In a cache record's data: a failed run, cached only while its page is read.
FAILED = "coursebook_failed"
READS, PACKAGE = "reads ", "package "  # a read file's hash, a declared package's version
# What a run caches, numbered in every key: raised when that changes, so that no record an
# earlier book cached is taken (2: no widget state a chapter saved from its author's run).
RUNS = 2
_HELD = "coursebook_cache_lock"  # the page's held lock (Sphinx's per-page data)
_PACKAGE = Path(__file__).resolve().parents[1]  # kernels import its top-level modules
_BOOK_IMPORT = re.compile(rf"^\s*(?:from|import)\s+{_PACKAGE.name}\.([\w.]+)", re.M)
_RELATIVE_IMPORT = re.compile(r"^\s*from\s+(\.+)([\w.]+)\s+import", re.M)


def book_code_digest(notebook: nbformat.NotebookNode) -> str | None:
    """A hash of the book's modules the cells import, with what those import."""
    pending = [name for cell in notebook.cells if cell.cell_type == "code"
               for name in _BOOK_IMPORT.findall(cell.source)]
    seen: dict[str, str] = {}
    while pending:
        name = pending.pop()  # dotted, from the package root: model.outputs
        path = _PACKAGE.joinpath(*name.split(".")).with_suffix(".py")
        if name in seen or not path.is_file():
            continue
        seen[name] = path.read_text(encoding="utf8")
        package = name.split(".")[:-1]
        pending += [".".join([*package[:len(package) + 1 - len(dots)], module])
                    for dots, module in _RELATIVE_IMPORT.findall(seen[name])]
    return short_digest("".join(seen[name] for name in sorted(seen)), 16) if seen else None


def key_execution_versions(notebook: nbformat.NotebookNode, versions: dict[str, str],
                           reads: dict[str, Path] | None = None) -> None:
    """Put into the first code cell's metadata (the cache key) the execution versions, the
    declared packages' versions, and a hash of each file its cells read, by name."""
    digest = book_code_digest(notebook)
    versions = {**versions, "runs": RUNS, **{
        PACKAGE + wanted.name: version for wanted, version in map(
            installed, chapter_settings(notebook.metadata).packages)},
        **{READS + name: short_digest(path.read_bytes()) for name, path in (reads or {}).items()}}
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.metadata[VERSIONS_KEY] = {**versions, **({"book_code": digest} if digest else {})}
            return


def in_key(notebook: nbformat.NotebookNode | None, kind: str) -> dict[str, str]:
    """What its key holds of one kind (READS, PACKAGE), by name."""
    versions = next((cell.metadata.get(VERSIONS_KEY, {}) for cell in notebook.cells
                     if cell.cell_type == "code"), {}) if notebook is not None else {}
    return {key.removeprefix(kind): value for key, value in versions.items()
            if key.startswith(kind)}


def edited_since(notebook: nbformat.NotebookNode, accepted: dict[str, str]) -> tuple[str, ...]:
    """The files its cells read whose hashes are not those ``accepted``."""
    now = in_key(notebook, READS)
    return tuple(sorted(name for name in {*now, *accepted} if now.get(name) != accepted.get(name)))


def extension_version() -> int:
    """Sphinx's ``env_version``: an edit of this extension makes Sphinx read every page."""
    code = sorted(p for p in _PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
    return int(short_digest(b"".join(p.read_bytes() for p in code), 12), 16)


def open_cache(cache_path: str | Path):
    from jupyter_cache import get_cache

    return get_cache(str(cache_path))


def cache_lock(cache_path: str | Path, name: str) -> FileLock:
    from filelock import FileLock  # imported by builds that lock: a warm build takes none

    folder = Path(cache_path) / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    return FileLock(folder / f"{name}.lock")


def cache_key(cache_path: str | Path, notebook: nbformat.NotebookNode) -> str:
    """jupyter-cache's key of a notebook, without the book's notes (opens no database)."""
    return open_cache(cache_path).create_hashed_notebook(without_notes(notebook))[1]


def created(cache_path: str | Path) -> bool:
    """Whether jupyter-cache finished creating the cache (it writes __version__.txt last)."""
    return Path(cache_path, "__version__.txt").is_file()


def create_cache(cache_path: str | Path) -> None:
    """Create the cache and its tables, once, however many builds start together; again
    after a creation stopped at an empty file (jupyter-cache would never finish it; a copied
    database without __version__.txt holds runs: kept)."""
    with cache_lock(cache_path, "create"):
        database = Path(cache_path, "global.db")
        if not created(cache_path) and database.is_file() and not database.stat().st_size:
            database.unlink()
        open_cache(cache_path).db  # the tables are made on first use of the database


def notebook_lock(cache_path: str | Path, notebook: nbformat.NotebookNode) -> FileLock:
    """The notebook's key's lock, held while looking it up, executing and caching it."""
    return cache_lock(cache_path, cache_key(cache_path, notebook))


def hold_notebook_lock(app: Sphinx, notebook: nbformat.NotebookNode) -> None:
    """Until :func:`release_notebook_lock`; a reader holds one at a time: no deadlock."""
    if book_config(app.config).cache_locks:
        lock = notebook_lock(app.env.mystnb_config.execution_cache_path, notebook)
        lock.acquire()
        app.env.temp_data[_HELD] = lock


def release_notebook_lock(app: Sphinx, *_args) -> None:
    """``doctree-read``: cached; let the other build go on (a failed read drops the page's
    data, lock included: filelock releases it then)."""
    lock = app.env.temp_data.pop(_HELD, None)
    if lock is not None:
        lock.release()


def with_notes(notebook: nbformat.NotebookNode, noted: nbformat.NotebookNode
               ) -> nbformat.NotebookNode:
    """``notebook`` (``noted``'s cells, read again or cached), given their notes."""
    if len(notebook.cells) != len(noted.cells):  # the writer's promise, checked
        raise ValueError(f"MyST written for {len(noted.cells)} cells reads as "
                         f"{len(notebook.cells)}")
    for cell, source in zip(notebook.cells, noted.cells):
        if CELL_NOTE in source.metadata:
            cell.metadata[CELL_NOTE] = nbformat.from_dict(dict(source.metadata[CELL_NOTE]))
    return notebook


def cached_record(cache_path: str | Path, notebook: nbformat.NotebookNode):
    """jupyter-cache's record of the notebook (its ``pk`` and ``data``), or None."""
    try:
        return open_cache(cache_path).match_cache_notebook(without_notes(notebook))
    except KeyError:
        return None


def cache_run(cache_path: str | Path, notebook: nbformat.NotebookNode, source_path: str,
              data: dict) -> int:
    """Cache an executed notebook with ``data``, replacing one of its key: its ``pk``. The
    ``write`` lock: jupyter-cache trims the cache after each insert in two queries, which
    deleted a record another build inserted between them."""
    from jupyter_cache.base import CacheBundleIn

    with cache_lock(cache_path, "write"):
        return open_cache(cache_path).cache_notebook_bundle(
            CacheBundleIn(without_notes(notebook), source_path, data=data),
            check_validity=False, overwrite=True).pk
