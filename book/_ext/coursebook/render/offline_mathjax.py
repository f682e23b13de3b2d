"""MathJax served with the book, so that math renders offline; copied only where it changed.

The files are sphinx-mathjax-offline's, not loaded as an extension: it compares every
file whole on every build (15 ms of a no-op rebuild) and is not declared parallel-safe.
Here a file is copied when its size or modification time differ, as make and rsync decide.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from sphinx.application import Sphinx

PACKAGE = "sphinx-mathjax-offline"  # the distribution whose files are served
SERVED = "mathjax"  # under the pages' _static/
MATHJAX_PATH = f"{SERVED}/tex-chtml.js"  # Sphinx's mathjax_path, relative to _static/


def mathjax_files() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    return Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax"


def copy_changed_files(source: Path, target: Path) -> list[Path]:
    """The files under ``source`` whose copy under ``target`` was missing or differed, copied."""
    copied = []
    for path in sorted(path for path in source.rglob("*") if path.is_file()):
        copy = target / path.relative_to(source)
        if _signature(copy) != _signature(path):
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, copy)
            copied.append(copy)
    return copied


def _signature(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_size, stat.st_mtime_ns


def copy_mathjax(app: Sphinx, exception: Exception | None) -> None:
    """``build-finished``, when conf.py's ``mathjax_path`` names the copy."""
    if exception is None and app.builder.format == "html" \
            and app.config.mathjax_path == MATHJAX_PATH:
        copy_changed_files(mathjax_files(), Path(app.outdir, "_static", SERVED))
