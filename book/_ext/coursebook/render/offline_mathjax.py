"""MathJax served with the book (sphinx-mathjax-offline), copied only where it changed.

sphinx-mathjax-offline (0.0.2) sets ``mathjax_path`` and, when a build has finished,
copies its MathJax (24 MB, a hundred files) into the output through Sphinx's
``copy_asset``, which reads every file and its copy whole to compare them: about 15 ms
of a rebuild that changes nothing, on every build of any format. Its copy is replaced by
one for HTML builds that copies a file only when its size or modification time differ
from the copy's (kept by the copy), as make and rsync decide.

It keeps nothing per page, so parallel reading and writing are safe; it does not say
so, and Sphinx would then read every page in one process (``-j`` ignored).
"""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config

EXTENSION = "sphinx-mathjax-offline"


def copy_changed_files(source: Path, target: Path) -> list[Path]:
    """Copy each file under ``source`` to ``target`` unless a copy of the same size and
    modification time is there; the files copied."""
    copied = []
    for path in sorted(source.rglob("*")):
        if not path.is_file():
            continue
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


def _copy_mathjax(source: Path, app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        copy_changed_files(source, Path(app.outdir, "_static", "mathjax"))


def adopt_offline_mathjax(app: Sphinx, config: Config) -> None:
    """``config-inited``, once every extension is loaded: sphinx-mathjax-offline declared
    safe for parallel builds, its copy replaced by :func:`copy_changed_files`."""
    extension = app.extensions.get(EXTENSION)
    if extension is None:
        return
    extension.parallel_read_safe = extension.parallel_write_safe = True
    for listener in list(app.events.listeners["build-finished"]):
        if getattr(listener.handler, "__module__", None) == extension.module.__name__:
            app.disconnect(listener.id)
    source = Path(extension.module.__file__).parent / "static" / "mathjax"
    app.connect("build-finished", partial(_copy_mathjax, source))
