"""Everything that decides whether a chapter executes again.

jupyter-cache keys a notebook by its code cells (source and metadata). Added here, in the
first code cell's metadata: the *execution versions* (Python and the packages that decide
what the cells print) and a digest of the book's own modules the cells import.
"""

from __future__ import annotations

import platform
import re
from importlib import metadata
from pathlib import Path

import nbformat
from sphinx.application import Sphinx

from coursebook.config import book_config
from coursebook.model.faults import shown_path
from coursebook.model.notebooks import short_digest
from coursebook.reporting import stop_build

# Cell metadata holding the execution versions (part of jupyter-cache's key).
# The metadata key keeps its first name: it is part of every cached notebook's hash.
VERSIONS_KEY = "execution_environment"


class MissingPackage(Exception):
    """``coursebook_execution_packages`` names a package this Python lacks; one line."""


def environment_versions(packages: list[str], where: str) -> dict[str, str]:
    """The versions that decide what the cells print: Python and each package (``where``
    names them, for the message when one is missing)."""
    versions = {"python": platform.python_version()}
    try:
        versions.update({name: metadata.version(name) for name in packages})
    except metadata.PackageNotFoundError as missing:
        raise MissingPackage(f"{where}: coursebook_execution_packages names {missing.name!r}, "
                             "which this Python does not have: run `make venv` "
                             "(pyproject.toml's dependencies)") from None
    return versions


def set_execution_versions(app: Sphinx, config) -> None:
    """``config-inited``: the versions become a config value, so a change re-reads every page."""
    try:
        config.coursebook_execution_versions = environment_versions(
            book_config(config).execution_packages,
            f"{shown_path(Path(app.confdir, 'conf.py'))} (or -D)")
    except MissingPackage as error:
        stop_build("config", (str(error), None))


_PACKAGE = Path(__file__).resolve().parents[1]  # the package root: kernels import its top-level modules
_BOOK_IMPORT = re.compile(rf"^\s*(?:from|import)\s+{_PACKAGE.name}\.([\w.]+)", re.M)
_RELATIVE_IMPORT = re.compile(r"^\s*from\s+(\.+)([\w.]+)\s+import", re.M)


def book_code_digest(notebook: nbformat.NotebookNode) -> str | None:
    """A hash of the book's own modules that the cells import, with what they import: an
    edit to them re-executes the chapters that use them, and only those."""
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
    if not seen:
        return None
    return short_digest("".join(seen[name] for name in sorted(seen)), 16)


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


def extension_version() -> int:
    """Sphinx's ``env_version``: an edit of this extension makes Sphinx read every page
    again (a notebook whose code cells are unchanged is then taken from the cache)."""
    code = sorted(p for p in _PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
    return int(short_digest(b"".join(p.read_bytes() for p in code), 12), 16)
