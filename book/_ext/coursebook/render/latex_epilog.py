"""The LaTeX build's last words: where its files are, not a `make latexpdf` the book lacks.

Sphinx's LaTeX builder ends by advising `make latexpdf`, a target of Sphinx's own
Makefile. The book typesets and checks its LaTeX with `make pdf` and `make handouts`
(tools/build_pdf.py), which run this build first: its log says only where the files are.
"""

from __future__ import annotations

from sphinx.application import Sphinx

EPILOG = "The LaTeX files are in %(outdir)s."


def name_only_the_latex_folder(app: Sphinx) -> None:
    """``builder-inited``: the LaTeX builder's closing message, for this build."""
    if app.builder.name == "latex":
        app.builder.epilog = EPILOG
