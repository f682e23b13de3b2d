"""The LaTeX build's last words: where its files are, not Sphinx's advice to run a `make
latexpdf` the book lacks (`make pdf` and `make handouts` run this build, then typeset)."""

from __future__ import annotations

from sphinx.application import Sphinx

EPILOG = "The LaTeX files are in %(outdir)s."


def name_only_the_latex_folder(app: Sphinx) -> None:
    """``builder-inited``."""
    if app.builder.name == "latex":
        app.builder.epilog = EPILOG
