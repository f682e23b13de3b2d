"""The HTML theme's templates, compiled once and kept between builds.

Every HTML build renders at least its search page, and compiling the theme's many
templates for it took a warm rebuild about a tenth of its time. Jinja keeps compiled
templates in a bytecode cache and checks each against its template's source, so an
edited or upgraded template is compiled again.
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import FileSystemBytecodeCache
from sphinx.application import Sphinx


def keep_compiled_templates(app: Sphinx) -> None:
    """``builder-inited``: the builder's template environment keeps its compiled templates
    beside the doctrees (each edition has its own)."""
    environment = getattr(getattr(app.builder, "templates", None), "environment", None)
    if environment is None:
        return
    folder = Path(app.doctreedir, "compiled-templates")
    folder.mkdir(parents=True, exist_ok=True)
    environment.bytecode_cache = FileSystemBytecodeCache(str(folder))
