"""MathJax served with the book, so that math renders offline; copied only where it changed.

The MathJax files (24 MB, a hundred files) are those the sphinx-mathjax-offline package
ships; that package is not loaded as an extension: its copy, at the end of every build of
any format, reads every file and its copy whole to compare them (about 15 ms of a rebuild
that changes nothing), and it does not declare itself safe for parallel builds (Sphinx
would then read every page in one process). Here, on Sphinx's public seams: when
``conf.py``'s ``mathjax_path`` names the copy (:data:`MATHJAX_PATH`), an HTML build that
has finished copies a file only when its size or modification time differ from the
copy's (kept by the copy), as make and rsync decide.
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
    """The folder of MathJax files the package ships."""
    spec = importlib.util.find_spec(PACKAGE)
    return Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax"


def copy_changed_files(source: Path, target: Path) -> list[Path]:
    """Copy each file under ``source`` to ``target`` unless a copy of the same size and
    modification time is there; the files copied."""
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
    """``build-finished``: an HTML build's copy of MathJax, where it changed."""
    if exception is None and app.builder.format == "html" \
            and app.config.mathjax_path == MATHJAX_PATH:
        copy_changed_files(mathjax_files(), Path(app.outdir, "_static", SERVED))
