"""The HTML theme's templates, compiled once and kept between builds.

Compiling them took a tenth of a warm rebuild. Jinja's bytecode cache checks each
against its source; it lives in the Python environment, as the compiled modules do (the
templates are its theme's and Sphinx's), where a clean output folder still finds it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from jinja2 import FileSystemBytecodeCache
from sphinx.application import Sphinx

FOLDER = "compiled-templates"  # in the environment's folder (sys.prefix)


def keep_compiled_templates(app: Sphinx) -> None:
    """``builder-inited``."""
    environment = getattr(getattr(app.builder, "templates", None), "environment", None)
    if environment is None:
        return
    folder = Path(sys.prefix, FOLDER)
    try:
        folder.mkdir(exist_ok=True)
    except OSError:
        return  # a read-only environment: templates are compiled on each build
    environment.bytecode_cache = FileSystemBytecodeCache(str(folder))
