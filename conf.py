"""Sphinx configuration for the course book (both editions).

`sphinx-build -c . book OUT` builds the student edition; add `-t instructor` for the
instructor edition. The Makefile holds the exact commands and output folders.
"""

import gc
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from coursebook.model import provenance, solutions, versions  # noqa: E402

# The collector waits from here, while Sphinx loads its own extensions, then conf.py's
# (about 0.07 s of a warm rebuild: coursebook/process/__init__.py).
gc.disable()

INSTRUCTOR = tags.has("instructor")  # noqa: F821 (Sphinx provides `tags`)
EDITION = "Instructor edition" if INSTRUCTOR else "Student edition"
TORCH_VERSION = versions.installed_version("torch")

project = "Deep Learning Labs"
author = "The course team"
copyright = f"{provenance.today()[:4]}, {author}"
# The LaTeX builder prints the release in each page's running header ("executed with torch
# ..."): how the book was built, which only the instructor's PDF says.
release = f"torch {TORCH_VERSION}" if INSTRUCTOR else ""

extensions = [
    # First: on a cold cache its kernel server imports torch while the others load
    # (coursebook/execute/kernel_pool.py).
    "coursebook",
    "myst_nb",
    "sphinx_copybutton",
    "sphinx_design",
    # Exercises and solutions; a solution is an answer (coursebook/model/solutions.py).
    "sphinx_exercise",
    "sphinxcontrib.bibtex",
    # The HTML theme's directives ({margin}) in the PDF too, which loads no HTML theme.
    "sphinx_book_theme",
    # "coursebook" also loads sphinx_proof (theorems, proofs: coursebook/prepare/proofs.py).
]
# {cite} in a chapter, whose {bibliography} lists what it cites (docs/authoring.md): one
# bibliography for the book (sphinxcontrib-bibtex reads it relative to this folder).
bibtex_bibfiles = ["book/references.bib"]
# Numbered figures, tables and exercises; {numref} names them by number.
numfig = True
# No "Proof Index" page (sphinx-proof's): it lists theorems by their labels (thm-chain).
html_domain_indices = latex_domain_indices = False
# MathJax served with the book, so that math renders offline too: the files the
# sphinx-mathjax-offline package ships, copied by coursebook/render/html_pages.py.
mathjax_path = "mathjax/tex-chtml.js"

root_doc = "index"
# _ext: the extension; recordings and expected: data the extension reads, not pages.
exclude_patterns = ["_build", "_ext", "recordings", "expected", "**.ipynb_checkpoints"]
# How the outputs are checked is the course team's business: the versions page is an
# appendix of the instructor edition (orphan, linked from each chapter's line under its
# title), left out of the student edition.
if not INSTRUCTOR:
    exclude_patterns.append("torch-versions.md")
suppress_warnings = [
    # A failed notebook is reported once, cell by cell, by coursebook.verify.chapter_checks.
    "mystnb.exec",
    # Pygments retries an error text it cannot lex (a backtick, say); harmless.
    "misc.highlighting_failure",
]

# --- Execution: myst-nb's cache mode, one jupyter-cache for both editions -----------
nb_execution_mode = "cache"
nb_execution_cache_path = str(ROOT / "_build" / ".jupyter_cache")
nb_execution_timeout = 300
nb_execution_raise_on_error = False  # coursebook.verify.chapter_checks names the cell instead
nb_execution_show_tb = False
nb_merge_streams = True
# A widget (a tqdm.notebook bar) in LaTeX: its view, which LaTeX cannot print, not its
# text/plain: that is the widget as made (a bar at 0%) where the page shows its last state.
nb_mime_priority_overrides = [("latex", "application/vnd.jupyter.widget-view+json", 10)]
# Expected outputs, one file per chapter and torch version (`make accept-outputs`), in
# this folder of the book's sources: a copy of the book carries its expectations.
coursebook_expected_dir = "expected"
# Part of the cache key, so that a change of version re-executes the chapters.
coursebook_execution_packages = ["torch", "jaxtyping", "numpy", "ipykernel", "matplotlib"]
# `make preview` keeps a kernel waiting with these imported into its process (never into the
# namespace a chapter runs in): torch; torch.distributed.tensor (with sympy) and
# torch._dynamo, which torch imports at the first torch.testing.assert_close and the first
# optimizer (about 0.45 s of PT01's run); matplotlib for the figures. `make bench`: a code
# edit of PT01 reaches the served page in 3.9 s with such a kernel, 7.3 s without.
# tests/test_config.py fails when one of them no longer imports.
coursebook_preview_kernel_imports = ["torch", "torch.distributed.tensor", "torch._dynamo",
                                     "matplotlib.pyplot"]
# A cold build starts each chapter's kernel as it starts, with what every chapter imports:
# matplotlib too, which PT01's figures import (about 1 s of CPU in each of its two editions'
# kernels, once in the server instead: docs/performance.md).
coursebook_kernel_imports = ["torch", "torch._dynamo", "matplotlib.pyplot"]

# A jupytext percent script (`# %%` cells) is a chapter: the book reads it with jupytext and
# hands myst-nb the prepared chapter as a notebook's JSON, each cell mapped to its line in
# the script (coursebook/model/notebooks.py); any other .py under book/ is no page.
nb_custom_formats = {".py": ["nbformat.reads", {"as_version": 4}]}

# The book's MyST syntax: edit it in coursebook/model/solutions.py, where the tools that run
# no build read it too.
myst_enable_extensions = list(solutions.MYST_EXTENSIONS)  # a copy: Sphinx may change it
myst_heading_anchors = 3

# --- HTML --------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = f"Deep Learning Labs · {EDITION}"
html_static_path = [str(ROOT / "book" / "_static")]
# build-stamp.html: the instructor's footer line saying which torch, commit and date built the
# page; a student's footer says nothing of the build.
templates_path = [str(ROOT / "book" / "_templates")]
html_css_files = ["coursebook.css"]
html_favicon = str(ROOT / "book" / "_static" / "favicon.svg")
# pydata-sphinx-theme logs a console error on a first visit unless a mode is given.
html_context = {"default_mode": "light"}
html_theme_options = {
    "use_download_button": True,
    "show_toc_level": 2,
    "announcement": "Instructor edition: answers are shown in marked boxes." if INSTRUCTOR else "",
    "footer_content_items": ["author", "copyright"]
                            + (["last-updated", "build-stamp"] if INSTRUCTOR else []),
}
html_last_updated_fmt = "%Y-%m-%d" if INSTRUCTOR else None
# The chapters have no index entries: Sphinx would write an empty Index page (and link
# it) on every build, a fifth of a warm rebuild.
html_use_index = False
# One setting turns on "Open in Colab": the GitHub repository whose branch
# coursebook_published_branch (default gh-pages) serves the student HTML.
coursebook_repository_url = os.environ.get("BOOK_REPOSITORY_URL", "")
# The address the student HTML is published at (https://...): printed handouts and
# downloaded notebooks link back to a chapter's page there.
html_baseurl = os.environ.get("BOOK_URL", "")

copybutton_exclude = ".linenos, .gp, .go"
copybutton_selector = "div.cell_input pre, div.highlight-python pre, div.highlight-default pre"

# --- The error museum: exhibits are data, placed into chapters by coursebook.museum.model --
coursebook_exhibits_dir = str(ROOT / "exhibits")
# Recorded chapters (run on a machine kind of tools/machine-kinds.toml): their committed recordings.
coursebook_recordings_dir = str(ROOT / "book" / "recordings")
# The machines a recorded chapter runs on (make recording KIND=...).
coursebook_machine_kinds_file = str(ROOT / "tools" / "machine-kinds.toml")
coursebook_runtimes_file = str(ROOT / "tools" / "runtimes.toml")
nb_render_markdown_format = "myst"  # exhibit checks report in MyST (notes, code)

# --- LaTeX: the printed handout (make pdf, make pdf-instructor) ----------------------
from coursebook.render import pdf_fonts  # noqa: E402

BUILD_DATE = provenance.today()  # UTC, as every date the book prints
# lualatex: its font loader falls back on other fonts for a character the text font lacks.
latex_engine = pdf_fonts.ENGINE
latex_use_xindy = False
latex_documents = [(root_doc, "deep-learning-labs.tex", f"Deep Learning Labs: {EDITION}", author,
                    "manual")]
latex_show_urls = "no"
latex_elements = {
    "papersize": "a4paper",
    # With `release`, each page's header: "Deep Learning Labs: ..., executed with torch X".
    "releasename": "executed with" if INSTRUCTOR else "",
    "pointsize": "10pt",
    "extraclassoptions": "openany,oneside",
    # The chapters number their own sections ("5. Classification uses the same steps"), as
    # the HTML shows them; LaTeX must not add a second number in front ("1.5 5. ...").
    "secnumdepth": r"\setcounter{secnumdepth}{-1}",
    "fontpkg": pdf_fonts.fontpkg(),  # Free* for text, DejaVu Sans Mono for code; fallbacks
    "sphinxsetup": "verbatimforcewraps=true, verbatimmaxunderfull=0, "
                   "hmargin={2cm,2cm}, vmargin={2.2cm,2.2cm}",
    "preamble": r"""
% A line may break after an underscore, so long names in inline code do not overflow
% (robust, so it survives section titles; bookmarks get a plain underscore).
\DeclareRobustCommand{\_}{\textunderscore\allowbreak}
\pdfstringdefDisableCommands{\def\_{\textunderscore}}
% Sphinx writes a printed ✓ as amssymb's \checkmark (sphinx/util/texescape.py), a math
% glyph the PDF's text does not hold (pdftotext reads "X"): the character itself instead.
\renewcommand{\checkmark}{\text{\char"2713}}
% Each page's footer repeats its section's title: on one line, cut short, never into the
% margins (a question written as a heading of 40 words, mrdbourke's exercises).
% (truncate first sets the whole title on one line, telling an overflow wider than \vsize.)
\usepackage{truncate}
\newcommand{\footersection}[1]{{\vsize=\maxdimen\truncate{.8\textwidth}{#1}}}
\renewcommand{\sectionmark}[1]{\markright{\protect\footersection{#1}}}
""",
    # The torch and the date that built the book are the instructor's: a student's title page
    # names the book and its edition only.
    "maketitle": rf"""
\begin{{titlepage}}
  \centering\sffamily
  \vspace*{{5cm}}
  {{\Huge Deep Learning Labs\par}}
  \vspace{{1.2cm}}
  {{\LARGE {EDITION}\par}}
""" + (rf"""  \vspace{{2cm}}
  {{\large Executed with torch {TORCH_VERSION}\par}}
  \vspace{{0.4cm}}
  {{\large Built on {BUILD_DATE}\par}}
""" if INSTRUCTOR else "") + r"""\end{titlepage}
""",
}

# --- Lab handouts: one PDF per chapter (make handouts) -------------------------------
# `-t handout` (tools/build_pdf.py EDITION --handouts): coursebook.render.handouts writes one
# LaTeX document per chapter, each opening with its cover (<chapter>-cover.tex); the
# student handout gets a ruled answer box where each answer was (coursebook.prepare.answer_space).
coursebook_build_date = BUILD_DATE
if tags.has("handout"):  # noqa: F821
    coursebook_handouts = True
    coursebook_answer_space = True  # the instructor edition keeps its boxed answers
    # Printed in black and white: Pygments' "bw" marks tokens by weight and slant only.
    pygments_style = "bw"
    latex_elements = {
        **latex_elements,
        "maketitle": r"\input{\jobname-cover}",
        "tableofcontents": "",
        "printindex": "",
        "preamble": latex_elements["preamble"] + r"""
% In black and white, code and output differ by shape, not colour: code on grey in a
% frame, output on white behind a bar (myst-nb's cell_output container class).
\newenvironment{sphinxclasscell_output}{\sphinxsetup{pre_border-width=0pt,
  pre_border-left-width=2pt, pre_border-radius=0pt,
  pre_background-TeXcolor={rgb}{1,1,1}}}{}
% The chapters number their own sections ("1. Tensors").
\setcounter{secnumdepth}{0}
% A heading is never the last line of a page: it moves on with what follows it.
\usepackage{etoolbox}
\pretocmd{\section}{\needspace{8\baselineskip}}{}{}
\pretocmd{\subsection}{\needspace{7\baselineskip}}{}{}
\pretocmd{\subsubsection}{\needspace{6\baselineskip}}{}{}
""",
    }
