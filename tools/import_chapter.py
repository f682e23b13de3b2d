"""A lesson written elsewhere, in the book's form: a notebook (.ipynb), a sphinx-gallery or
jupytext percent script (.py), or a MyST or Markdown lecture (.md), read with jupytext.

What changes, each said in the report `make chapter FROM=…` prints:

- the top matter is the book's (MyST notebook, the book's ``python3`` kernel); a file beside
  the lesson that its cells name (``open('names.txt')``) is copied into the book at that path,
  and the top matter lists it (``coursebook: {reads: [...]}``: an edit runs them again);
- the hidden first cell that keeps errors short comes first (as in the skeleton);
- outputs are dropped (the build makes them) and so is cell metadata other than tags and
  myst-nb's own (``mystnb``: a figure's caption and name);
- an install line (``!pip``, ``%pip``, ``!apt``, ``!conda``) is taken out: a cell does not
  install during a build; the packages it named are listed for the author to declare;
- sphinx-gallery's reStructuredText becomes Markdown (sphinx-gallery's own ``rst2md``, its
  heading levels counted over the whole script), its roles (``:func:`x` ``) MyST roles, its
  section labels and references to them MyST's, its notes and warnings admonitions;
- index entries (``{index}``) are taken out: the book has no index; so are Colab's and
  Kaggle's badges (they open the lesson's own notebook; the book's pages open this edition's);
- a file beside the lesson that it includes (```{include} _admonition/gpu.md```) is written
  in: copied beside the chapter, a Markdown file would be a page of the book;
- d2l-book's marks (d2l's notebooks) become MyST's: labels (``:label:`x` ``), references,
  citations; its slides' marks (``[**…**]``) are taken out as d2l's pages take them out, and
  its Colab notebooks' note above their ``!pip`` cell with the install line; its source
  (d2l-en's ``.md``, four frameworks in tabs) comes in as its PyTorch tab;
- the title (the first heading, where it is a ``# …`` one: else the chapter's name) gets a
  label named after the chapter; a lesson's further ``# …`` headings (all of them, when a
  title is asked for) become sections, the levels under them one deeper; a heading more than
  one level under its section (``###`` under the title), which MyST refuses, one level under it;
- an image shown in HTML (``<img src=…>``, alone or only placed by ``<p>``, ``<div>``) is
  a Markdown image, which the book's pages, PDFs and downloads show (raw HTML reaches none
  of them from the book's files);
- the images the lesson shows from its own files (``![X-OR](res/x-or.png)`` beside it, a
  MyST ``{figure}`` from the lesson's folder, an image pasted into a cell as an attachment)
  are copied into a folder named after the chapter, beside it, and shown from there;
- a cell whose saved output is an error is tagged ``raises-exception`` (its error was the
  lesson, or must be fixed: said in the report), and ``raises: NAME`` holds it to that error.
  So is a cell that raises at its top level (an exercise's ``raise NotImplementedError``),
  or is no Python (a blank the student fills in, ``x = # TODO``: a ``SyntaxError``);
- a solution Neuromatch's tools leave out of its student notebooks (a cell opening with
  ``# to_remove solution`` or ``# to_remove explanation``) is tagged ``answer``.
- a solution a grader marks (nbgrader's ``### BEGIN SOLUTION`` regions and ``solution`` cells,
  otter-grader's ``# BEGIN SOLUTION`` blocks and ``# SOLUTION`` lines, code in CS231n's blank)
  is an ``answer`` cell after its cell, which students get as the grader gives it (nbgrader's
  ``# YOUR CODE HERE`` stub, otter's ``...`` and prompt, CS231n's ``pass``); hidden tests and
  mark schemes are answers, the other tests ``needs-answers``; otter's raw cells and
  ``# IGNORE`` lines go.

A lesson whose kernel runs another language than Python (an R notebook) is refused.

Left to the author, and listed: the packages to declare (those the install lines named, and the
modules the cells import that the book's environment lacks), the lesson's own modules the cells
import, a cell that reads a name only a later cell defines (a lesson saved after running its
cells out of order), the cells that draw random numbers before any seed, the cells that run an
exercise's blank (a ``TODO``) or need an answer, to tag ``needs-answers``, a cell showing a
time taken (``%timeit``): it differs between runs, a path out of the folder the cells run in
(``"../saved_models"``: what the cells write there stays), a module
that shows widgets (``tqdm.notebook``: never compared), where students get the files the cells
read, the errors tagged to check (a GPU's, ``cuda:0``, which the CPU build does not raise), a
``google.colab`` import, each image the lesson shows that is not beside it, sits inside other
HTML, is on the web (a handout is typeset without the network) or of a kind no PDF shows (an
SVG, a GIF), each video or page it embeds (``<iframe>``), each raw cell (left out), each
collapsed block titled as a solution (``{dropdown} Solution``: students open it), each link to
a page or reference to a section of the lesson's own site (``intro.html``, ``{doc}`intro```),
each term it looks up in a glossary that book/glossary.md lacks (``{term}`Tracer```), each work
it cites that book/references.bib lacks, each fenced block of Python in its prose (d2l's
```{.python .input}: shown, never run), a cell holding only a string (a script's docstring: its
output is the string), each cell that waits for someone at the keyboard (``%debug``,
``input()``: never held to the error it saved), the figures a d2l lesson labels, then accepting
the outputs. Each is named where the lesson holds it: an ``.ipynb``'s cell (first 1) and line
in it, a script's or lecture's own line (``_place``).
"""

from __future__ import annotations

import ast
import base64
import builtins
import collections
import copy
import importlib.util
import itertools
import mimetypes
import os
import re
import shlex
import textwrap
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import cache
from html.parser import HTMLParser
from importlib.metadata import packages_distributions
from pathlib import Path
from urllib.parse import unquote

import jupytext
import nbformat
from IPython.core.extensions import BUILTINS_EXTS
from jupytext.formats import guess_format, read_format_from_metadata
from markdown_it import MarkdownIt
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from coursebook.model.cell_notes import cell_line, note, note_added_lines, noted, source_line
from coursebook.model.notebooks import (
    ANSWER_TAG,
    BOOK_ONLY_TAG,
    COMPLETES_EXERCISE_TAG,
    D2L_CELL,
    NEEDS_ANSWERS_TAG,
    RAISES_TAG,
    cell_tags,
    code_cell,
    first_line,
    is_chapter_source,
    markdown_cell,
    note_script_lines,
    notebook_to_myst,
    parsed_cell,
    read_chapter,
)
from coursebook.model.solutions import (GRADER_MARK, OWN_CODE, STUB, markdown_parser,
                                        solutions_as_answers)
from coursebook.prepare.chapter_packages import missing_commands

TOP_MATTER = {
    "jupytext": {"text_representation": {"extension": ".md", "format_name": "myst"}},
    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
}
# The skeleton's first cell (tools/chapter-template.md): errors as `Type: message`.
FIRST_CELL = ("# An error shows as its type and message, without a traceback or colour codes.\n"
              "%xmode Minimal\n%colors nocolor")
# Lines that install something: `!pip install x`, `%pip install -q x`, `!apt-get install y`.
_INSTALL = re.compile(r"^\s*[!%](?:(?P<pip>pip3?|python3? -m pip|conda|mamba)|apt(?:-get)?)"
                      r"\s+install\b(?P<arguments>.*)$")
# pip's options that take a value (`-r requirements.txt`): the value is no package.
_VALUED = frozenset({"-r", "--requirement", "-c", "--constraint", "-i", "--index-url",
                     "--extra-index-url", "-f", "--find-links", "-t", "--target"})
# A clock read: shown, it is how long something took (d2l's `f'{time.time() - tic:.2f} sec'`).
# A clock's reading, or a time torch's Timer (or timeit's) measured
_CLOCK = re.compile(r"\b(?:time|perf_counter|monotonic|process_time)(?:_ns)?\(\)"
                    r"|\.(?:timeit|blocked_autorange|adaptive_autorange)\(")
_NOW = re.compile(r"\b(?:now|today|utcnow|ctime)\(\)")  # nbdev's `datetime.datetime.now()`
# A path out of the folder the cells run in: `../data`, `~/datasets` (UvA's labs' checkpoints),
# `/tmp/my-checkpoints/` (Flax's).
_OUTSIDE = re.compile(r"(?:\.\.|~|/tmp)(?:[/\\]|$)")
# A module whose displays are widgets: myst-nb draws them with scripts from the web, and the
# build compares none (coursebook.verify.expectations.shown_text).
_WIDGETS = re.compile(r"ipywidgets|tqdm\.(?:notebook|auto|tqdm_notebook)")  # autonotebook too
# An exercise's mark, where the student writes (Neuromatch's, CS231n's: a raise to replace)
_TODO = re.compile(r"\bTODO\b|\braise NotImplementedError\b")
_BLANK = re.compile(r"^[ \t]*(\w+)[ \t]*=(?!=)", re.M)  # a name a blank assigns (`x = # TODO`)
# A TODO comment after working code: the author's note (autodidax's `return
# raise_to_shaped(aval)  # TODO handle integers?`), no blank; after a placeholder (`return 0.0`,
# `self.fc = None`, `out = []`) or code holding a TODO (MIT's `f('''TODO''')  # TODO`), one.
_NOTE = re.compile(r"^(?![ \t]*(?:[\w.\[\]'\"]+[ \t]*=|return)?[ \t]*(?:None|-?[\d.]+|\.\.\.|"
                   r"pass|\[\]|\{\}|\(\)|''|\"\")?[ \t]*#)(?:(?!" + _TODO.pattern + r")[^#\n])+"
                   r"#.*\bTODO\b")
# nbdev's and Quarto's directives at a cell's top (`#|hide`, `#| echo: false`, nbdev 1's
# `#hide_output`) that hide or fold a cell, or its code or output: the book's tag for each.
_DIRECTIVE_TAGS = {"hide": "remove-cell", "include: false": "remove-cell",
                   "hide_input": "remove-input", "echo: false": "remove-input",
                   "hide_output": "remove-output", "output: false": "remove-output",
                   "code-fold: true": "hide-input", "code-fold: show": "hide-input"}
_CELL_DIRECTIVE = re.compile(r"#\|? ?(" + "|".join(map(re.escape, _DIRECTIVE_TAGS)) + r")\s*")
_NOT_RUN = re.compile(r"#\|\s*eval:\s*false\s*", re.I)  # a cell they never run (the book: none)
# Neuromatch's mark of a cell its tools (nmaci) leave out of the student notebook
_TO_REMOVE = re.compile(r"\A# to_remove (?:solution|explanation)[ \t]*(?:\n|\Z)")
# Calls that fetch from the web into a cache of their own: tiktoken's encodings, Hugging
# Face's models and datasets, torch.hub's, scipy's sample data (through pooch).
_FETCHES = re.compile(r"(?:^|\.)(?:get_encoding|encoding_for_model|from_pretrained|load_dataset|"
                      r"hf_hub_download|snapshot_download|load_state_dict_from_url|hub\.load"
                      r"|datasets\.(?:face|ascent|electrocardiogram))$")


def _pretrained(call: ast.Call) -> bool:
    """A model built with trained weights, which a hub fetches: transformers' `pipeline` of a
    task, torchvision's `weights=` an enum or its name (`DEFAULT`), timm's `pretrained=True`;
    not a lesson's own `pipeline(steps)`, k-NN's `weights="distance"`, `weights=[1, 2]`."""
    task = call.args[:1] or [k.value for k in call.keywords if k.arg == "task"]
    return (ast.unparse(call.func).split(".")[-1] == "pipeline"
            and isinstance(getattr(task[0] if task else None, "value", None), str)) or any(
        k.arg == "pretrained" and getattr(k.value, "value", None) is True
        or k.arg == "weights" and (re.fullmatch(r"[A-Z0-9_]+", str(getattr(k.value, "value", "")))
                                   is not None or "_Weights." in ast.unparse(k.value))
        for k in call.keywords)
# An address on the web, and the calls that show one rather than read it.
_URL = re.compile(r"https?://")
_SHOWS_ADDRESS = ("print", "IFrame", "YouTubeVideo", "Markdown", "HTML", "Image")
_ADDRESS_KEYWORDS = ("url", "path", "filepath_or_buffer")  # requests', pandas' names of it
COLAB = "google.colab"  # only Colab has it: said apart, never a package to declare
_ROLE = re.compile(r":(?:py:)?(\w+):`([^`]+)`")
# A reST directive or substitution rst2md leaves as it is (`.. literalinclude::`,
# `.. |pi| replace::`; one in a block quote too), or a reference to a section's title
# (`Backprop`_): text on the page.
_DIRECTIVE = re.compile(r"^[ \t>]*(\.\. (?:\|[^|\n]+\| )?[\w:-]+::)"
                        r"|(?<!\w)(`[^`\n]+`__?)(?![\w(])", re.M)
# A reST figure (one in a block quote too): its line and option lines, then its caption (and
# legend), indented under it.
_FIGURE = re.compile(r"^(?P<in>[ \t]*)\.\. figure::(?P<head>.*\n(?:(?P=in)[ \t]+:.*\n)*)"
                     r"(?P<caption>(?:[ \t]*\n|(?P=in)[ \t]+\S.*\n)*)", re.M)


# The images a PDF shows: those of Sphinx's LaTeX builder (render/handouts.py refuses others).
_PDF_IMAGES = ("application/pdf", "image/png", "image/jpeg")


def _pdf_kind(path: str) -> str:
    """`` as a PNG or PDF`` for an image of a kind no PDF shows (an SVG, a GIF), else ``""``."""
    kind = mimetypes.MimeTypes(filenames=()).guess_type(path)[0]  # as handouts.py guesses it
    return "" if kind in _PDF_IMAGES else " as a PNG or PDF"


class NotALesson(Exception):
    """The file is no lesson jupytext reads: one line says why."""


@dataclass
class Imported:
    """The chapter's notebook, its title, and what was changed or is left to do."""

    notebook: nbformat.NotebookNode
    title: str
    source_format: str
    changed: list[str] = field(default_factory=list)
    to_do: list[str] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)  # Python packages (pip, conda)
    system_packages: list[str] = field(default_factory=list)  # apt's
    files: dict[str, bytes] = field(default_factory=dict)  # images, by path in the book
    relative_links: dict[str, str] = field(default_factory=dict)  # each one's place: its href


def read_lesson(path: Path) -> tuple[nbformat.NotebookNode, str]:
    """The lesson as a notebook, each cell noted where the lesson holds it (as the book's
    reader notes a chapter's: an .ipynb's cell at its number), and the format it was read in."""
    suffix = path.suffix
    if suffix == ".ipynb":
        notebook = _in_python(jupytext.read(path), path)
        for number, cell in enumerate(notebook.cells, 1):
            note(cell, line=number, numbered=True)
        return notebook, "notebook (.ipynb)"
    text = path.read_text(encoding="utf8")
    if suffix == ".md":
        if is_chapter_source(text):  # read as the build reads a chapter
            return _in_python(read_chapter(text), path), "MyST lecture (.md)"
        if tabbed := "%load_ext d2lbook.tab" in text:
            text = _D2L_PROSE.sub(_d2l_tab, _D2L_INPUT.sub(_d2l_tab, text))
        notebook = jupytext.reads(text, fmt="md:markdown")  # a `:::` line: pandoc's, it guesses
        _note_written_lines(notebook, text.splitlines())
        if tabbed:  # the lines of other frameworks' tabs, blank: no cell of their own
            notebook.cells = [cell for cell in notebook.cells if cell.source.strip()]
            for cell in notebook.cells:
                cell.source = cell.source.strip("\n")
                if cell.cell_type == "code" and "tab.selected" in cell.source:
                    _d2l_branches(cell)
        return notebook, "Markdown lecture (.md)"
    if suffix == ".py":
        fmt, docstring = _script_format(text)
        if fmt == "sphinx":  # sphinx-gallery's blocks split at 20 `#` or `# %%`; jupytext's at
            # the first only, and its prose starts at a bare `"""` (not `r"""`)
            if docstring:  # its value, as sphinx-gallery reads it (`\\frac` is `\frac`)
                end = text.find('"""', docstring.end())
                body = text[docstring.end():end] if docstring[2].lower() == "r" else re.sub(
                    r"\\([\\'\"])", r"\1", text[docstring.end():end])  # lines kept
                text = text[:docstring.start(2)] + '"""' + body + text[end:]
            text = _inline_targets(re.sub(r"(?m)^# ?%%.*", "#" * 79, text))
            notebook = jupytext.reads(text, fmt={"extension": ".py", "format_name": "sphinx"})
            # jupytext's own `%matplotlib inline` (after the header cell of a script opening
            # with `# ---` metadata), not the script's
            notebook.cells = [piece for cell in notebook.cells
                              if cell.source != "%matplotlib inline"
                              for piece in _gallery_pieces(cell)]
            _note_written_lines(notebook, text.splitlines(), _GALLERY_PROSE)
            return _gallery_markdown(notebook), "sphinx-gallery script (.py)"
        if fmt in ("percent", "hydrogen"):  # hydrogen's: `# %%` cells, magics not commented
            notebook = jupytext.reads(text, fmt=f"py:{fmt}")
            note_script_lines(notebook, text.splitlines())
            return notebook, "jupytext percent script (.py)"
        raise NotALesson(f"{path}: a Python file with neither `# %%` cells (jupytext percent) "
                         "nor a docstring first (sphinx-gallery): nothing to bring in")
    raise NotALesson(f"{path}: not a lesson make chapter reads (.ipynb, .py or .md)")


_GALLERY_IGNORE = re.compile(r"^[ \t]*#\s*sphinx_gallery_(?:start|end)_ignore[ \t]*(?:\n|$)", re.M)


def _gallery_pieces(cell) -> list[nbformat.NotebookNode]:
    """A gallery code cell apart at its `# sphinx_gallery_start_ignore` ... `end_ignore`
    blocks, which sphinx-gallery runs and leaves out of its page and downloads (set-up for its
    own build): each a cell tagged so; its config comments (`# sphinx_gallery_thumbnail_number
    = 2`), the gallery's, out."""
    if cell.cell_type != "code":
        return [cell]
    from sphinx_gallery.py_source_parser import INFILE_CONFIG_PATTERN

    return [code_cell(piece, *(["remove-cell", BOOK_ONLY_TAG] if at % 2 else []))
            for at, written in enumerate(_GALLERY_IGNORE.split(cell.source))
            if (piece := INFILE_CONFIG_PATTERN.sub("", written).strip("\n")).strip()]


# d2l-book's source (d2l-en's .md files): a block it runs (```{.python .input}) is one
# framework's (`%%tab pytorch`, `#@tab all`; unmarked, its config's default tab: d2l-en's is
# pytorch), prose between `:begin_tab:` and `:end_tab:` lines too.
_D2L_INPUT = re.compile(D2L_CELL + r"[ \t]*\n(?:(?:%%tab|#[ \t]*@tab)[ \t]+"
                        r"(?P<tabs>[\w, ]+)\n)?(?P<body>(?:.*\n)*?)```[ \t]*$", re.M)
_D2L_PROSE = re.compile(r"^:begin_tab:`(?P<tabs>[^`]*)`[ \t]*\n(?P<body>(?:.*\n)*?)"
                        r":end_tab:[ \t]*$", re.M)


def _d2l_tab(found: re.Match) -> str:
    """A block or a passage of d2l-book's source in its PyTorch tab, as d2l-book writes that
    tab's notebook (d2lbook/notebook.py, get_tab_notebook): a block a ```python code cell, a
    passage its text, without their marks; another tab's, or the block loading d2l-book's
    tabs, blank lines (each line keeps its number)."""
    tabs = {tab.strip() for tab in (found["tabs"] or "pytorch").split(",")}
    if not tabs & {"pytorch", "all"} or "%load_ext d2lbook.tab" in found["body"]:
        return "\n" * found[0].count("\n")
    if found.re is _D2L_PROSE:
        return "\n" + found["body"]
    return ("\n```python\n" if found["tabs"] else "```python\n") + found["body"] + "```"


def _d2l_branches(cell) -> None:
    """A cell's ``if tab.selected('pytorch'):`` branches as their bodies, the other tabs'
    taken out, as d2l-book writes a tab's notebook (d2lbook/notebook.py, _clean_if_branches);
    each line kept noted at its line in the lesson."""
    kept, branch, indent = [], None, 0
    for at, line in enumerate(cell.source.split("\n"), source_line(cell)):
        depth = len(line) - len(line.lstrip())
        if "tab.selected" in line and line.lstrip().startswith("if "):
            branch, indent = bool(re.search(r"[\"']pytorch[\"']", line)), depth
            continue
        if branch is not None and line.strip() and depth <= indent:
            branch = None
        if branch is not False:
            kept.append((line[4:] if branch else line, at))
    cell.source = "\n".join(line for line, _ in kept)
    note(cell, lines=[[[at, ""]] for _, at in kept])


def with_answers(notebook: nbformat.NotebookNode, lab: Path,
                 solutions: Path) -> tuple[nbformat.NotebookNode, str, list[str]]:
    """The lab with each code cell of its solutions notebook that differs from the lab's as an
    `answer` cell right after it, tagged as completing it (the lab's stays: the students'
    exercise, which shows what the two share); what was added, and
    the exercises (a ``TODO``) whose solution is the same cell, and the solutions' prose the lab
    lacks (left out: a title, or a written answer). Cells pair by
    Colab's cell ids where both notebooks hold the same ones, else in order."""
    solved = read_lesson(solutions)[0]
    for cell in solved.cells:
        note(cell, file=solutions.name)
    code = [[cell for cell in book.cells if cell.cell_type == "code"]
            for book in (notebook, solved)]
    ids = [[cell.metadata.get("id") or cell.get("id") for cell in cells] for cells in code]
    if None not in ids[0] and sorted(ids[0]) == sorted(ids[1]):
        pairs = [(cell, code[1][ids[1].index(key)]) for cell, key in zip(code[0], ids[0])]
    elif len(code[0]) == len(code[1]):
        pairs = list(zip(*code))
    else:
        raise NotALesson(f"{solutions} does not pair with {lab}: {len(code[1])} code cells and "
                         f"{len(code[0])}, and not the same cell ids: give the lab's own "
                         "solutions, or paste each after its exercise as a code cell tagged "
                         f"`{ANSWER_TAG}` and `{COMPLETES_EXERCISE_TAG}` (only the instructor "
                         "edition shows it; a chapter of its own would show students all)")
    answers = {id(cell): answer for cell, answer in pairs
               if answer.source.strip() != cell.source.strip()}
    for answer in answers.values():
        answer.metadata["tags"] = [*cell_tags(answer), ANSWER_TAG, COMPLETES_EXERCISE_TAG]
    notebook.cells = [kept for cell in notebook.cells
                      for kept in (cell, answers.get(id(cell))) if kept is not None]
    stubs = [_place(cell) for cell, _ in pairs if id(cell) not in answers and (
        _TODO.search(cell.source))]
    prose = {cell.source.strip() for cell in notebook.cells if cell.cell_type != "code"}
    more = [_place(cell) for cell in solved.cells
            if cell.cell_type != "code" and cell.source.strip() not in prose]
    return notebook, (f"{len(answers)} code cells of {solutions} that differ from the lab's are "
                      "`answer` cells, each after the lab's (the instructor edition shows them)"), [
        f"{place}: an exercise (a TODO) whose cell in {solutions} is the same: "
        "no answer; write one (a code cell tagged `answer` after it)" for place in stubs] + [
        f"{', '.join(more)}: prose the lab does not hold, left out (only code cells come in): "
        "copy any answer it gives into a markdown cell tagged `answer`"][:bool(more)]


# otter-grader's raw cells opening and closing its blocks (`# BEGIN SOLUTION`), its config's
_OTTER_BLOCK = re.compile(r"^\s*#\s*(?:(BEGIN|END) (QUESTION|SOLUTION|TESTS|PROMPT)\b|ASSIGNMENT "
                          r"CONFIG)", re.M)
_PROMPT = re.compile(r"# (BEGIN|END) PROMPT[ \t]*$")  # otter's, in a string the solution skips
_TEST_CONFIG = re.compile(r'^\s*""" # BEGIN TEST CONFIG\n(?s:.*?)""" # END TEST CONFIG[ \t]*\n?')
_IGNORED = re.compile(r"^[ \t]*# BEGIN IGNORE\n(?s:.*?)# END IGNORE[ \t]*(?:\n|$)|^.*# IGNORE[ \t]*"
                      r"(?:\n|$)", re.M)  # otter's lines of the instructor's notebook alone


def _graded(source: str, markdown: bool, solution: bool, nbgrader: bool) -> tuple[str, str]:
    """A cell's students' form as its grader makes it (nbgrader's stub, otter's `...` or
    prompt, CS231n's `pass`) and its solution's, the marks out (the same: none was marked);
    ``solution``: nbgrader's metadata says the cell is one."""
    stub = ["YOUR ANSWER HERE"] if markdown else ["# YOUR CODE HERE", "raise NotImplementedError()"]
    student, answer, inside, prompt = [], [], None, False
    for line in source.split("\n"):
        found = GRADER_MARK.search(line)
        if _PROMPT.search(line):  # its text is the students' alone
            prompt = _PROMPT.search(line)[1] == "BEGIN"
        elif prompt:
            student.append(line)
        elif found and found[2]:  # a region's start or end
            inside = found[3] if found[2] == "BEGIN" else None
            if inside == "SOLUTION" and "NO PROMPT" not in line:
                student += [found[1] + text for text in (
                    stub if nbgrader or markdown or "###" in line else ["..."])]
        elif found:  # otter's `x = 2 # SOLUTION`: `x = ...`
            answer.append(line[:found.start()])
            assigned = re.match(r"([ \t]*[\w.\[\]'\", ]+=)(?!=)", line)
            student += [] if "NO PROMPT" in found[0] else [
                f"{assigned[1]} ..." if assigned else re.match(r"[ \t]*", line)[0] + "..."]
        else:
            answer.append(line)
            student += [line] if inside is None else []
    student = "\n".join(student) if student != answer or not solution else "\n".join(stub)
    for found in reversed(list(OWN_CODE.finditer(student))):  # CS231n's: its stub, a `pass`
        if not STUB.fullmatch(found[2]):
            student = f"{student[:found.start(2)]}{found[1]}pass\n{student[found.end(2):]}"
    return student, "\n".join(answer)


def _reads_a_blank(student: str) -> str | None:
    """The first statement of a students' form that reads a name the form leaves `...`
    (otter's `y = ...`, then `z = y + 1`): run on the placeholder, it may raise."""
    blank: set[str] = set()
    for statement in _python(student).body:
        bound, read = set(), {}
        _names(ast.Module([statement], []), bound, read)
        if blank & read.keys():
            return ast.unparse(statement).split("\n")[0]
        stub = isinstance(statement, ast.Assign) and getattr(statement.value, "value", 0) is ...
        blank = blank | bound if stub else blank - bound
    return None


def graded_as_answers(notebook: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, list[str],
                                                                 list[str]]:
    """The assignment with each solution its grader marks as an `answer` cell right after the
    students' form of its cell (:func:`_graded`), tagged as completing it; nbgrader's tests and
    otter's are cells needing the answers, their hidden tests answers; otter's raw cells
    that open and close its blocks, and the lines it keeps to the instructor's notebook
    (`# IGNORE`) out. The cells changed (their places), and what to do about a students' form
    that computes with its `...`."""
    cells, block, changed, told = [], None, [], []
    for cell in notebook.cells:
        grading, before = cell.metadata.get("nbgrader") or {}, cell_tags(cell)
        tags = list(before)
        if cell.cell_type == "raw" and (found := _OTTER_BLOCK.search(cell.source)):
            block = found[2] if found[1] == "BEGIN" else None
            continue
        source = cell.source if cell.cell_type != "code" else _IGNORED.sub(
            "", cell.source) if block != "TESTS" else re.sub(  # a test's call: kept
                r"[ \t]*# IGNORE[ \t]*$", "", cell.source, flags=re.M)
        if block == "TESTS" and cell.cell_type == "code":
            hidden = re.search(r"^hidden: *true|\A# HIDDEN\b", source, re.M)
            cell.source, answer, tags = _TEST_CONFIG.sub("", source), None, [
                *tags, ANSWER_TAG if hidden else NEEDS_ANSWERS_TAG]
        elif block == "SOLUTION" and cell.cell_type == "markdown" and "otter_include" not in tags:
            cell.source, tags, answer = source, [*tags, ANSWER_TAG], None
        else:
            solution = bool(grading.get("solution"))
            cell.source, answer = _graded(source, cell.cell_type == "markdown", solution,
                                          "nbgrader" in cell.metadata)
            tags += [NEEDS_ANSWERS_TAG] * bool(grading.get("grade") and not solution)
        cell.metadata["tags"] = tags
        changed += [_place(cell)] * (answer not in (None, cell.source) or tags != before)
        cells.append(cell)
        if answer not in (None, cell.source):
            solved = copy.deepcopy(cell)
            solved.source = answer
            solved.metadata["tags"] = [ANSWER_TAG] + [COMPLETES_EXERCISE_TAG] * (
                cell.cell_type == "code")
            cells.append(solved)
            told += [f"{_place(cell)}: `{line}` reads what the students' form leaves `...` "
                     "(otter's `x = ...`): both editions run that form, and it may raise there: "
                     f"if the build says so, tag the cell `{RAISES_TAG}`" for line in [
                         cell.cell_type == "code" and _reads_a_blank(cell.source)] if line]
    notebook.cells = cells
    return notebook, changed, told


def _in_python(notebook: nbformat.NotebookNode, path: Path) -> nbformat.NotebookNode:
    """The notebook, if its kernel runs Python (the book's chapters run in ``python3``: an R
    lesson's `x <- 5` would run there as `x < -5`)."""
    kernel = notebook.metadata.get("kernelspec") or {}
    language = kernel.get("language") or (notebook.metadata.get("language_info") or {}).get("name")
    if language and not language.lower().startswith(("python", "ipython")):
        raise NotALesson(f"{path}: a lesson in {language} (its kernel: {kernel.get('name', '?')}); "
                         "the book's chapters run Python: nothing to bring in")
    return notebook


# A module's docstring, after comments that are no `# %%` (a coding line, a `# ---` header).
_DOCSTRING = re.compile(r'\s*(#(?! ?%%)[^\n]*\n\s*)*([rRuU]?)"""')
# jupytext's typed cells (`# %% [markdown]`): sphinx-gallery's blocks have no type (its prose
# is the comment lines after any `# %%`).
_TYPED_CELL = re.compile(r"^# ?%%.*\[(?:markdown|md|raw)\]", re.M)
# A reST section title, which a sphinx-gallery docstring must define: a line, then one
# punctuation mark repeated under it.
_REST_TITLE = re.compile(r"^\S.*\n([!-/:-@[-`{-~])\1{2,}[ \t]*$", re.M)


def _script_format(text: str) -> tuple[str | None, re.Match | None]:
    """jupytext's name of a script's format (``sphinx``: sphinx-gallery's) and its docstring's
    opening: a jupytext header names it; else `# %%` cells are jupytext's (percent, hydrogen)
    where one is typed or no docstring with a reST title comes first, as sphinx-gallery's must
    (both split blocks at `# %%`); else a docstring first is sphinx-gallery's."""
    docstring = _DOCSTRING.match(text)
    named = read_format_from_metadata(text, ".py")
    if named:
        return named, docstring
    guessed = guess_format(text, ".py")[0]
    body = text[docstring.end():text.find('"""', docstring.end())] if docstring else ""
    if guessed in ("percent", "hydrogen") and (
            _TYPED_CELL.search(text) or not _REST_TITLE.search(body)):
        return guessed, docstring
    return ("sphinx" if docstring else None), docstring


# reStructuredText's named link and its target apart (`Name`_ ... .. _Name: URL), in a
# docstring or a comment block, which rst2md leaves as they are.
_TARGET = re.compile(r"^[ \t]*#?[ \t]*\.\. _(?P<name>[^:\n]+):[ \t]*\n?[ \t]*#?[ \t]*"
                     r"(?P<url>https?://\S+)[ \t]*\n", re.M)


def _inline_targets(text: str) -> str:
    """Each named link with its target in place (`Name <URL>`_), which rst2md writes as a
    Markdown link; the targets' lines left blank (each line below keeps its number)."""
    targets = {found["name"].strip(): found["url"] for found in _TARGET.finditer(text)}
    text = _TARGET.sub(lambda found: re.sub(r"(?m)^([ \t]*#?).*", r"\1", found[0]), text)
    for name, url in targets.items():
        text = re.sub(rf"`{re.escape(name)}`_(?!_)", f"`{name} <{url}>`_", text)
    return text


_GALLERY_PROSE = re.compile(r"^#( |)#{19,}\s*$|^(\"\"\"|\'\'\')")  # jupytext's: 20 #, a docstring


def _note_written_lines(notebook, lines: list[str], prose: re.Pattern | None = None) -> None:
    """Note each cell jupytext read at the first line after the previous cell's (prose: after
    a line ``prose`` matches) that is its first line, bare or behind ``#``; else at that line
    (a docstring's first, after its quotes)."""
    at = 0
    for cell in notebook.cells:
        first = next((line for line in cell.source.splitlines() if line.strip()), "")
        if prose and cell.cell_type == "markdown":
            at = next((k for k in range(at, len(lines)) if prose.match(lines[k])), at)
        found = next((k for k in range(at, len(lines))
                      if lines[k].rstrip() in (first, f"# {first}", f"#{first}")), None)
        note(cell, line=(at if found is None else found) + 1)
        at = at if found is None else found + 1


def _words(line: str) -> str:
    """What rst2md keeps of a line (``[text](URL)`` of ```text <URL>`_``): its words."""
    return re.sub(r"[\W_]+", "", line)


# A section's label (`.. _bridge-to-np:` alone on its line), a reference to one, an
# anonymous link's second underscore (`text <URL>`__), which rst2md leaves after the link.
_LABEL = re.compile(r"^\.\. _(?P<name>[\w.-]+):[ \t]*$", re.M)
# A label may hold dots (sphinx-gallery's: sphx_glr_beginner_basics_intro.py).
_REF = re.compile(r":ref:`(?:(?P<text>[^`<]*?)\s*<(?P<name>[^<>`]+)>|(?P<bare>[^<>`\s]+))`")
_ANONYMOUS = re.compile(r"(<[^`<>]+>`_)_")
# A MyST label (a section's, an equation's: `$$ ... $$ (name)`, a directive's `:label:` or
# `:name:`, quoted or not), and a reference to one.
_MYST_LABEL = re.compile(r"^\((?P<name>[^()\s]+)\)=$|\$\$[ \t]*\((?P<equation>[^()\s]+)\)$"
                         r"|^:(?:label|name):[ \t]*"
                         r"(?P<quote>[\"']?)(?P<option>[^\s\"']+)(?P=quote)", re.M)
_MYST_REF = re.compile(r"\{(?:ref|numref|eq|doc|prf:ref)\}`(?:[^`<]*<)?(?P<name>[^<>`\s]+)>?`")
# A file's text MyST puts in (```{include} _admonition/gpu.md```, no options), and the path
# of an image its text shows relative to its folder (a Markdown image's, a figure's).
_INCLUDE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{include\}[ \t]+(?P<path>\S+)[ \t]*\n"
                      r"(?P=fence)[ \t]*$", re.M)
_RELATIVE_IMAGE = re.compile(r"(?:!\[[^\]]*\]\(|^(?:`{3,}|:{3,})\{(?:figure|image)\}[ \t]+)"
                             r"(?!\w+:|/|#)(?P<path>[^)\s]+)", re.M)
# A collapsed block titled as a solution (sphinx-design's dropdown, HTML's details): a click
# away on the student's page, and whole in its downloads and search index.
_REVEALED = re.compile(r"^[ \t]*(?:`{3,}|:{3,})\{dropdown\}.*\b(?:solution|answer)|<summary>[^<]*"
                       r"\b(?:solution|answer)", re.I | re.M)
# Colab's badge, linked to the lesson's notebook there (in HTML, or Markdown), or Kaggle's
# (JAX's lessons show both).
_COLAB_BADGE = re.compile(r"<a [^>]*href=\"https://colab\.research\.google\.com/[^\"]*\"[^>]*>\s*"
                          r"<img [^>]*colab-badge\.svg[^>]*>\s*</a>|\[!\[[^\]]*\]\(https://(?:colab"
                          r"\.research\.google\.com/assets/colab-badge|kaggle\.com/static/images/"
                          r"open-in-kaggle)\.svg\)\]\([^)]*\)")
# A download of a page: MyST-NB's lessons offer themselves (`{nb-download}`glue.ipynb``,
# `{download}`glue.md``); in book/, a notebook or Markdown file is a page.
_PAGE_DOWNLOAD = re.compile(r"\{nb-download\}`[^`]*`|\{download\}`[^`]*\.(?:md|ipynb)>?`")
# A glossary's term looked up (`{term}`jit``, `{term}`traced <Tracer>``), and a glossary: its
# terms are its lines flush left (`term : classifier`).
_TERM = re.compile(r"\{term\}`(?:[^`<]*<)?(?P<name>[^<>`]+?)>?`")
_GLOSSARY = re.compile(r"^(?P<fence>`{3,}|:{3,})\{glossary\}.*\n(?P<body>(?:.*\n)*?)(?P=fence)",
                       re.M)
# An index entry, block or role (`{index}`NumPy <single: NumPy>``: its text stays).
_INDEX = re.compile(r"^(?P<fence>`{3,}|:{3,})\{index\}.*\n(?:.*\n)*?(?P=fence)[ \t]*"
                    r"(\n[ \t]*$\n?|$)|\{index\}`(?P<text>[^`<]*?)\s*(?:<[^`]*>)?`", re.M)
_CITE = re.compile(r"\{cite(?::\w+)?\}`(?P<keys>[^`]+)`")  # sphinxcontrib-bibtex's
# sphinx-togglebutton's block (Jupyter Book's), which the book does not load; `:show:` opens it.
_TOGGLE = re.compile(r"^(?P<fence>[ \t>]*(?:`{3,}|:{3,}))\{toggle\}(?P<rest>.*)"
                     r"(?P<show>\n[ \t>]*:show:)?", re.M)
# The other admonitions MyST knows, which rst2md leaves as reST.
_ADMONITION = re.compile(r"^\.\. (?P<kind>attention|caution|danger|error|hint|important|seealso|"
                         r"tip)::(?P<first>.*)(?P<rest>(?:\n+^[ \t]+\S.*)*)", re.M)
# rst2md's note and warning (HTML, which no PDF or download shows), as MyST admonitions.
_ALERT = re.compile(r'<div class="alert alert-(?:info|danger)"><h4>(?P<kind>Note|Warning)</h4>'
                    r"\n\n(?P<body>.*?)\n\n</div>", re.S)


# d2l-book's marks (d2lbook/common.py's md_mark_pattern): a label under a section's heading,
# an equation (`:eqlabel:`) or a figure, references to them, citations, an image's size.
_D2L_MARK = re.compile(r":(?P<key>label|eqlabel|numref|ref|eqref|cite|citet|width|height):"
                       r"`(?P<value>[^`]+)`")
# d2l-book's own marks, which no other Markdown writes: they tell a d2l lesson.
_D2L_OWN = re.compile(r":(?:label|eqlabel|numref|eqref|citet):`")
# d2l-book's Colab notebooks open with this note (d2lbook/colab.py) above their `!pip` cell
_D2L_COLAB = re.compile(r"The following additional libraries are needed to run this\s+notebook\.")
# d2l-book's slide marks: `[**text**]`, `(**text**)` keep their text, `[~~text~~]`,
# `(~~text~~)` are the slides' own (d2lbook/slides.py, remove_slide_marks); each opening mark
# pairs with the next closing one, and `[**x**](url)` is a link.
_SLIDE = re.compile(r"\[(\*\*|~~)((?:(?!\1\]|\[\1).)*?)\1\](?!\()"
                    r"|\((\*\*|~~)((?:(?!\3\)|\(\3).)*?)\3\)", re.S)


def _d2l_markdown(source: str, unlabelled: dict[str, None]) -> str:
    """A markdown cell's d2l-book marks as MyST (each line at its number): a section's label
    a MyST one, an equation's `$$ (name)`; a figure's or table's label (added to
    ``unlabelled``: a Markdown image holds none) and an image's size left out; references
    ``{ref}``, ``{eq}``; citations ``{cite:p}``, ``{cite:t}``; slide marks as d2l-book's
    notebooks have them."""
    source = _SLIDE.sub(lambda mark: "" if "~~" in (mark[1] or mark[3]) else mark[2] or mark[4],
                        source)
    source = re.sub(r"^(#{1,6}[ \t].*)\n:label:`([^`]+)`[ \t]*$", r"(\2)=\n\1", source, flags=re.M)
    source = re.sub(r"\$\$[ \t]*\n:eqlabel:`([^`]+)`[ \t]*$", r"$$ (\1)\n", source, flags=re.M)
    unlabelled.update(dict.fromkeys(re.findall(r"^[ \t]*:label:`([^`]*)`[ \t]*$", source, re.M)))
    source = re.sub(r"^[ \t]*:(?:label|width|height):`[^`]*`[ \t]*$", "", source, flags=re.M)

    role = {"numref": "ref", "eqref": "eq", "cite": "cite:p", "citet": "cite:t"}
    return _D2L_MARK.sub(lambda mark: f"{{{role.get(mark['key'], mark['key'])}}}`{mark['value']}`",
                         source)


def _gallery_markdown(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Its markdown cells' reStructuredText as Markdown by sphinx-gallery's ``rst2md``, the
    heading levels counted over the whole script, as sphinx-gallery counts them (jupytext's
    rst2md counts per cell: every cell's first heading became a chapter title); the script's
    section labels and the references to them as MyST's, notes and warnings as admonitions.
    Each Markdown line is noted with the lines of the script (and their words) it may be
    written from: the one with its words, else those with words between two such lines (a
    heading, a directive: ``_place`` picks by what it names)."""
    from sphinx_gallery.notebook import rst2md

    counter = itertools.count(1)
    levels = collections.defaultdict(lambda: next(counter))
    for cell in notebook.cells:
        if cell.cell_type != "markdown":
            continue
        rst = cell.source
        source = _ANONYMOUS.sub(r"\1", cell.source)
        source = _REF.sub(lambda ref: "{ref}`" + (
            f"{ref['text']} <{ref['name']}>`" if ref["text"] else f"{ref['name'] or ref['bare']}`"),
            source)
        source = _LABEL.sub(r"(\g<name>)=", source)
        # reST's directive names ignore case (`.. Note::`), `code` and `sourcecode` are a
        # `code-block`: rst2md knows none of them
        source = re.sub(r"^([ \t]*\.\. )(\w+)(?=::)", lambda found: found[1] + re.sub(
            r"^(?:source)?code$", "code-block", found[2].lower()), source, flags=re.M)
        # directives end at a newline, which the last line of a block lacks
        source = _rest_blocks(_FIGURE.sub(_as_image, source + "\n"))
        source = rst2md(source, {"notebook_images": False}, "", levels).rstrip("\n")
        source = re.sub(r"^> $", ">", source, flags=re.M)  # the quotes' blanks, as written
        source = re.sub(r"^(\([\w.-]+\)=)\n\n(?=#)", r"\1\n", source, flags=re.M)
        code = _code_lines(source)  # reST's escaped space (``forward(input)``\ that) is no text
        source = "\n".join(text if at in code else re.sub(r"(?<!\\)\\ ", "", text)
                           for at, text in enumerate(source.split("\n")))
        source = _ADMONITION.sub(lambda found: found[0] if found.string.count(
            "\n", 0, found.start()) in _code_lines(found.string)
            else f":::{{{found['kind']}}}\n" + (
            found["first"].strip() + textwrap.dedent(found["rest"])).strip() + "\n:::", source)
        cell.source = _ALERT.sub(lambda alert: f":::{{{alert['kind'].lower()}}}\n"
                                 f"{alert['body']}\n:::", source)
        base = source_line(cell) - rst.count("\n", 0, len(rst) - len(rst.lstrip()))
        lines, spans = [[base + at, _words(line)] for at, line in enumerate(rst.splitlines())], []
        for tag, i1, i2, j1, j2 in SequenceMatcher(  # a blank line only extends what matched
                lambda words: not words, [*map(_words, cell.source.splitlines())],
                [words for _, words in lines], autojunk=False).get_opcodes():
            worded = [at for at in lines[j1:j2] if at[1]] or lines[max(j1 - 1, 0):j1 + 1]
            spans += [[lines[j1 + k]] if tag == "equal" else worded for k in range(i2 - i1)]
        note(cell, lines=spans)
    return notebook


def _rest_blocks(rst: str) -> str:
    """The indented blocks rst2md leaves, which Markdown reads otherwise: a literal block (a
    paragraph ending ``::``, the blitz's graph of a loss: the ``::`` stayed on the page) as a
    code block, and a block quote four spaces in (a code block in Markdown, showing its
    ````weight````'s backticks) as a quote. An indented block under a directive, a list item
    or an indented line is the reST construct's own, left as it is."""
    lines, out = rst.split("\n"), []
    for at, line in enumerate(lines):
        before = next((text for text in reversed(out) if text.strip()), "")
        if (line[:1] in " \t" and line.strip() and out and not out[-1].strip()
                and before[:1].strip() and not re.match(r"\.\. |[-*+] |\d+[.)] ", before)):
            block = list(itertools.takewhile(lambda text: not text[:1].strip(), lines[at:]))
            block = "\n".join(block).rstrip().split("\n")
            if before.endswith("::"):  # `text::` reads `text:`; ` ::` and `::` alone, nothing
                spot = len(out) - 1 - out[::-1].index(before)
                out[spot] = before[:-1] if before[-3:-2].strip() else before[:-2].rstrip()
                out.insert(spot + 1, "\n.. code-block::" if out[spot] else ".. code-block::")
            elif min(len(text) - len(text.lstrip()) for text in block if text.strip()) >= 4:
                quoted = textwrap.dedent("\n".join(block)).split("\n")
                lines[at:at + len(block)] = [  # a blank "> ": rst2md reads ">" as an underline
                    f"> {text}".rstrip() if text.strip() else "> " for text in quoted]
                line = lines[at]
        out.append(line)
    return "\n".join(out)


def _as_image(figure: re.Match) -> str:
    """A reST figure as an image (rst2md writes no figure: its file is then found or named),
    its caption the paragraph under it; flush left (rst2md reads no other: one in a block
    quote ends it)."""
    caption = textwrap.dedent(figure["caption"]).strip()
    return f".. image::{figure['head']}\n" + (f"{caption}\n\n" if caption else "")


def _packages(arguments: str) -> list[str]:
    """What an install line names: its packages, and a requirements file as `-r FILE`."""
    words, named = shlex.split(arguments, comments=True), []
    for before, word in zip([""] + words, words):
        if before in ("-r", "--requirement"):
            named.append(f"-r {word}")
        elif not word.startswith("-") and before not in _VALUED:
            named.append(word)
    return named


_ATTACHMENT = "attachment:"


def _inline_lines(token) -> list[tuple[object, int]]:
    """An inline token's children, each with the line (from 0) of the cell it is on (raw
    HTML may span lines: ``<img`` and its attributes on the next)."""
    line, placed = token.map[0], []
    for child in token.children or []:
        line += child.type in ("softbreak", "hardbreak")
        placed.append((child, line))
        line += child.content.count("\n") if child.type == "html_inline" else 0
    return placed


class _HtmlImages(HTMLParser):
    """The ``<img>`` tags of a piece of HTML, each with its line in it (from 0), and whether
    it holds anything but them and the tags that only place them (``<p align="center">``,
    ``<div>``, ``<br>``); also the lines of what it embeds (a video's ``<iframe>``)."""

    PLACING = frozenset({"p", "div", "center", "br"})
    EMBEDDING = frozenset({"iframe", "video", "audio", "embed", "object"})

    def __init__(self, text: str) -> None:
        super().__init__()
        self.images: list[tuple[dict[str, str], int]] = []
        self.embedded: list[tuple[str, int]] = []  # the tag, its line
        self.only_images = True
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        if tag in self.EMBEDDING:
            self.embedded.append((tag, self.getpos()[0] - 1))
        if tag == "img":
            self.images.append(({key: value or "" for key, value in attrs}, self.getpos()[0] - 1))
        elif tag not in self.PLACING:
            self.only_images = False

    def handle_endtag(self, tag):
        self.only_images &= tag == "img" or tag in self.PLACING  # `<img/>` ends too

    def handle_data(self, data):
        self.only_images &= not data.strip()


def _destination(address: str) -> str:
    """An address as a Markdown link holds it: in ``<…>`` where it has a space or a bracket
    (``![](my pic.png)`` is no image)."""
    return f"<{address}>" if re.search(r"[\s()<>]", address) else address


def _markdown_image(attributes: dict[str, str]) -> str:
    alt = re.sub(r"([\\\[\]])", r"\\\1", attributes.get("alt", ""))
    return f"![{alt}]({_destination(attributes['src'])})"


def _place(cell, line: int | None = None, named: str = "") -> str:
    """Where the lesson holds the cell, or ``named`` on its text's ``line`` (from 1): an .ipynb's
    cell (and line), a file's line (of a gallery block's Markdown line: the line it was written
    from that holds the words named, else the lines it was written from)."""
    if noted(cell, "numbered"):  # an answer from a solutions notebook: named
        return (f"{noted(cell, 'file')} " if noted(cell, "file") else "") + (
            f"cell {source_line(cell)}" + (f", line {line}" if line else ""))
    if line is None:
        return f"line {source_line(cell)}"
    if noted(cell, "lines"):
        written = noted(cell, "lines")[line - 1]
        held = [at for at, words in written if named and _words(named) in words]
        lines = held if len(held) == 1 else [at for at, _ in written]
        return f"line {lines[0]}" if len(lines) == 1 else f"lines {lines[0]}-{lines[-1]}"
    return f"line {cell_line(cell, line - 1)}"


# A MyST directive whose body is Markdown (```{note}), not shown as written (```{code-block}).
_HOLDS_MARKDOWN = re.compile(r"\{(?!code|sourcecode|literalinclude|math|raw|eval)[\w:-]+\}")


# Quarto's callout (nbdev's pages), which MyST reads as a box of no kind: its admonition.
_CALLOUT = re.compile(r"\s*\{\.callout-(note|tip|warning|caution|important)\b[^}]*\}")


def _own_blocks(source: str, above: int) -> tuple[str, int, list[int], int]:
    """The cell's text with each colon-fenced block (``:::``) closed in it: one left open is
    closed at its end, and a bare ``:::`` opening it (the end of one opened above) taken out.
    Quarto reads a notebook as one document, so a block may hold the code cells between; a
    chapter's may not (myst-nb refuses one nested). The ends of the ``above`` blocks cells above
    left open go first (else one would open a block over the next). Also the callouts made
    admonitions, the lines (from 1) of the blocks closed, and how many are open after it."""
    lines, closed, callouts = source.split("\n"), [], 0
    for at, line in enumerate(lines):  # up to the first block the cell opens
        if not above or re.match(r"\s*:{3,}\s*\S", line):
            break
        if re.fullmatch(r"\s*:{3,}\s*", line):
            lines[at], above = "", above - 1
    for token in reversed([t for t in markdown_parser().parse("\n".join(lines))
                           if t.type == "colon_fence"]):
        start, end = token.map
        lines[start], found = _CALLOUT.subn(r"{\1}", lines[start])
        callouts += found
        if end - 1 > start and re.fullmatch(rf"\s*{token.markup}:*\s*", lines[end - 1]):
            continue  # closed in the cell
        if token.info.strip():
            lines.append(token.markup)  # where it ends: its cell's end
            closed.insert(0, start + 1)
        else:
            lines[start] = ""  # a blank: the lines after it keep their numbers
    return "\n".join(lines), callouts, closed, above + len(closed)


def _markdown_tokens(text: str, offset: int = 0):
    """markdown-it's tokens of a cell's text, their lines moved by ``offset``, and those of the
    bodies of the MyST directives that hold Markdown (```{note}: commonmark reads a code block)."""
    for token in MarkdownIt("commonmark").parse(text):
        token.map = token.map and [line + offset for line in token.map]
        yield token
        if token.type == "fence" and _HOLDS_MARKDOWN.match(token.info):
            yield from _markdown_tokens(token.content, token.map[0] + 1)


def _shown_images(source: str, cell, imported: Imported) -> tuple[str, dict[str, int], int]:
    """The cell's text with each piece of HTML that only shows images (``<img src=…>``) as
    Markdown images, which the book's pages, PDFs and downloads show (raw HTML reaches none
    of them from the book's files); an ``<img>`` among other HTML is left and said (at its
    place) in ``imported.to_do``. Also the address of each image the cell shows and the line
    (from 1) it is first on in the lesson's cell, read before any HTML is rewritten (a
    multi-line ``<img>`` written on one line moves the lines after it), and the number of
    images written."""
    shown: dict[str, int] = {}
    written = 0
    for token in _markdown_tokens(source):
        if token.type == "fence" and re.match(r"\{(?:figure|image)\}\s+\S", token.info):
            shown.setdefault(token.info.split()[1], token.map[0] + 1)  # MyST's figure, image
        pieces = [(token, token.map[0])] if token.type == "html_block" else (
            _inline_lines(token) if token.type == "inline" else [])
        for piece, line in pieces:
            if piece.type == "image":
                shown.setdefault(piece.attrGet("src"), line + 1)
            href = piece.attrGet("href") if piece.type == "link_open" else None
            if href and not re.match(r"(?:https?|mailto|ftp):|#", href):  # MyST's URLs (the
                # default myst_url_schemes): any other link, `[t](explain:migration)`, is a label
                imported.relative_links[f"{_place(cell, line + 1, href)} (`{href}`)"] = href
            found = _HtmlImages(piece.content) if piece.type.startswith("html") else None
            imported.to_do += [
                f"{_place(cell, line + within + 1, tag)}: an embedded page or video "
                f"(`<{tag}>`), which no PDF or download shows: link to it instead, "
                "`[what it shows](address)`" for tag, within in (found.embedded if found else [])]
            if found is None or not found.images:
                continue
            if found.only_images and all(image.get("src") for image, _ in found.images):
                # side by side, as the HTML showed them
                images = " ".join(_markdown_image(image) for image, _ in found.images)
                source = source.replace(piece.content.rstrip("\n"), images)
                written += len(found.images)
                for image, within in found.images:
                    shown.setdefault(image["src"], line + within + 1)
            else:
                imported.to_do.append(
                    f"{_place(cell, line + 1, piece.content)}: an image inside other HTML "
                    f"(`{' '.join(piece.content.split())[:80]}`), left as it is: no PDF shows "
                    "it, a page or download only from an address on the web; write it as a "
                    "Markdown image, `![what it shows](file or address)`, or take it out")
    return source, shown, written


def _with_images(source: str, shown: dict[str, int], cell, name: str, folder: Path | None,
                 imported: Imported, known: frozenset[str]) -> str:
    """The cell's text showing each image the lesson holds (``shown``: a file beside the
    lesson, an attachment of the cell: pasted ones are all `image.png`) from its copy in
    ``name/``, kept in ``imported.files``; an image found nowhere, or on the web (a handout is
    typeset without the network), is named in ``imported.to_do``."""
    for src, line in shown.items():
        path = unquote(src)  # as markdown-it gives a Markdown image's: percent-encoded
        # rst2md writes a sphinx-gallery `.. image::` as `file://` and its path, less a first /:
        # an address markdown-it refuses, so the page showed the image's markup as text
        if path.startswith("file://"):
            path = path.removeprefix("file://")
            source = source.replace(f"]({src}", f"]({path}")
        if path.startswith(_ATTACHMENT):
            data = next(iter((cell.get("attachments") or {}).get(path[len(_ATTACHMENT):], {})
                              .values()), None)
            relative = f"cell-{source_line(cell)}-{path[len(_ATTACHMENT):]}"  # an .ipynb's
            content = base64.b64decode("".join(data)) if data else None
        elif "://" in path:
            imported.to_do.append(
                f"{_place(cell, line, path)}: {path}: an image on the web, which no PDF (a lab's "
                "handout) shows: it is typeset without the network (the build stops at it): "
                f"save it{_pdf_kind(path)} in {name}/, beside the chapter, and change its link, "
                "or take it out")
            continue
        elif path.startswith(("#", "data:")) or path in known and not (
                folder is not None and (folder / path[1:]).is_file()):
            continue  # the book's own (an absolute path from book/, its root), not the lesson's
        else:
            relative = Path(os.path.normpath(path.lstrip("/"))).as_posix()
            relative = relative if not relative.startswith("../") else Path(path).name
            found = folder / path.lstrip("/") if folder is not None else None
            content = found.read_bytes() if found is not None and found.is_file() else None
        if content is None:
            imported.to_do.append(f"{_place(cell, line, path)}: {path}: an image the lesson shows "
                                  f"but does not hold (the build stops at it): put it in {name}/, "
                                  "beside the chapter, and change its link")
            continue
        # Sphinx looks an image up by its address as markdown-it gives it, percent-encoded
        copy = f"{name}/" + re.sub(r"[^\w./-]+", "-", relative)
        imported.files[copy] = content
        if as_kind := _pdf_kind(path):
            imported.to_do.append(f"{_place(cell, line, path)}: {copy}: an image of a kind no PDF "
                                  "(a lab's handout) shows (the build of one stops at it): save "
                                  f"it{as_kind} beside the chapter and change its link")
        for written in dict.fromkeys((f"<{path}>", src, path)):  # as the lesson may write it
            source = source.replace(f"]({written}", f"]({copy}").replace(f"}} {written}\n",
                                                                          f"}} {copy}\n")
    return source


def _with_includes(source: str, cell, folder: Path | None, imported: Imported,
                   included: list[str]) -> str:
    """The cell's text with each file beside the lesson that an ``{include}`` puts in written
    in (noted in ``included``; its images' paths made the lesson's, for the image pass; its
    lines noted as added, at the directive's); one it lacks named in ``imported.to_do``."""
    start = 0
    while found := _INCLUDE.search(source, start):
        line = source.count("\n", 0, found.start())
        at, path = _place(cell, line + 1, found[0]), folder / found["path"] if folder else None
        if path is None or not path.is_file():
            imported.to_do.append(f"{at}: `{{include}} {found['path']}`: a file the lesson does "
                                  "not hold beside it (the build stops at it): write its text in "
                                  "the chapter, or take it out")
            start = found.end()
            continue
        text = _RELATIVE_IMAGE.sub(lambda image: image[0].removesuffix(image["path"]) + (
            Path(found["path"]).parent / image["path"]).as_posix(),
            path.read_text(encoding="utf8").rstrip("\n"))
        included.append(f"{found['path']} at {at}")
        added = text.count("\n") - found[0].count("\n")  # a one-line file: -1, after its line
        note_added_lines(cell, line + (added < 0), added)
        source = source[:found.start()] + text + source[found.end():]
        start = found.start() + len(text)
    return source


def _fences(source: str) -> list[tuple[int, str, bool]]:
    """The line (from 1), language and whether Python (```python, d2l's ```{.python .input})
    of each fenced block of a markdown cell: shown, never run."""
    return [(token.map[0] + 1, token.info,
             re.sub(r"^[{.\s]+", "", token.info).split(" ")[0].split("}")[0].lower()
             in ("python", "py", "python3", "ipython", "ipython3"))
            for token in MarkdownIt("commonmark").parse(source) if token.type == "fence"]


def _headings(cells) -> list[tuple[nbformat.NotebookNode, list[int], int, str]]:
    """The Markdown cells' headings as the book's MyST reads them (a code block's `#` line is
    none, nor a quote's or a list item's, nor a `=` line of display math, `$$` or `:::{math}`):
    each one's cell, lines (from 0, end excluded), level and text (on one line)."""
    return [(cell, token.map, int(token.tag[1]), " ".join(inline.content.split()))
            for cell in cells if cell.cell_type == "markdown"
            for token, inline in itertools.pairwise(markdown_parser().parse(cell.source))
            if token.type == "heading_open" and token.level == 0]


def _code_lines(markdown: str) -> set[int]:
    """The lines (from 0) of Markdown's code blocks: reST there is shown as code, as meant."""
    return {line for token in MarkdownIt("commonmark").parse(markdown)
            if token.type in ("fence", "code_block") for line in range(*token.map)}


def _python(source: str) -> ast.Module:
    """A code cell's IPython syntax read as Python (no statement: it is none)."""
    return parsed_cell(source) or ast.Module([], [])


def _imported_modules(source: str) -> list[str]:
    """The modules a code cell imports, `%load_ext NAME`'s too (IPython's own are its)."""
    return [name for node in ast.walk(_python(source))
            for name in ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                         else [node.module] if isinstance(node, ast.ImportFrom)
                         and node.level == 0 and node.module else [
                             f"IPython.extensions.{name}" if name in BUILTINS_EXTS else name
                             for magic, argument in [_magic(node)]
                             for name in [argument.partition("#")[0].strip()]
                             if magic in ("load_ext", "reload_ext") and name])]


def _magic(node: ast.AST) -> tuple[str, str]:
    """The name and argument of an IPython magic a call runs (``%load_ext autoreload``:
    ``run_line_magic("load_ext", "autoreload")``; IPython passes on the whole line, a comment
    too), or ("", "")."""
    if not isinstance(node, ast.Call) or getattr(node.func, "attr", "") not in (
            "run_line_magic", "run_cell_magic"):
        return "", ""
    said = [argument.value for argument in node.args if isinstance(argument, ast.Constant)]
    if not said:
        return "", ""
    return said[0], (said[1].strip() if len(said) > 1 else "")


def _waits(source: str) -> tuple[int, str] | None:
    """The line (from 1) and name of a code cell's first call that waits for someone at the
    keyboard: input(), getpass, breakpoint(), a debugger's set_trace(), IPython's `%debug`,
    `%%debug`, `%pdb` (not off); not one in a function's body, which the cell only defines
    (JAX's custom-derivative lesson's `pdb.set_trace()` in a backward pass its prose runs)."""
    tree = _python(source)
    defined = {id(node) for function in ast.walk(tree) if isinstance(function, (
        ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) for statement in (
        function.body if isinstance(function.body, list) else [function.body])
        for node in ast.walk(statement)}
    for call in sorted((node for node in ast.walk(tree) if isinstance(node, ast.Call)
                        and id(node) not in defined),
                       key=lambda node: (node.lineno, node.col_offset)):
        named = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(
            call.func, "id", "")
        magic, argument = _magic(call)
        if magic == "debug" or magic == "pdb" and argument.lower() in ("", "on", "1"):
            return call.lineno, f"%{magic}"
        if named in ("getpass", "set_trace") or named in ("input", "breakpoint") and isinstance(
                call.func, ast.Name):
            return call.lineno, f"{named}("
    return None


# Calls that write the file a string names (torch.save, savefig, np.save, to_csv, %%writefile),
# and the keywords naming it (open's and np.save's, savefig's, torch.save's, pandas', PIL's).
_WRITES = {"save", "savefig", "savez", "to_csv", "to_json", "to_pickle", "write_text",
           "write_bytes", "writefile"}
_FILE_WORDS = {"file", "fname", "f", "path", "path_or_buf", "fp"}


def _written_file(call: ast.Call, named: str, bound: dict) -> tuple[str, list] | None:
    """The file a writing call (``named``) writes, and the strings that name it, as written or
    through a name bound to one: ``Path('x').write_text``'s (``.open('w')``'s), `%%writefile`'s,
    else its first argument that is one (np.save's; torch.save's second; open's mode is none)
    or its file keyword; joined (``os.path.join('/content', 'm.pt')``, ``Path('a', 'b')``,
    ``out / 'b'``)."""
    given = [getattr(call.func, "value", None)] if named in (
        "write_text", "write_bytes", "Path.open") \
        else call.args[1:2] if named == "writefile" else [
            *call.args[:1 if named == "open" else 2],
            *(word.value for word in call.keywords if word.arg in _FILE_WORDS)]
    for node in given:
        parts = _path_parts(node, bound)
        names = [part.value if isinstance(getattr(part, "value", None), str) else None
                 for part in parts]
        # in a folder not known here (`os.path.join(root, 'm.pt')`): the strings after it; under
        # an absolute one (`'/content', run, 'm.pt'`), told as outside: `/content/…/m.pt`
        tail = names[len(names) - names[::-1].index(None):] if None in names else names
        if tail:
            head = [*names[:names.index(None)], "…"] if None in names and str(
                names[0]).startswith("/") else []
            return "/".join(head + tail), parts[len(parts) - len(tail):]
    return None


def _path_parts(node: ast.expr, bound: dict) -> list:
    """The parts a path is joined from (``os.path.join(a, 'b')``, ``Path(a, 'b')``,
    ``Path('/content') / b``, nested), a name bound to a string as that string."""
    if isinstance(node, ast.Call) and getattr(
            node.func, "attr", getattr(node.func, "id", "")) in ("join", "Path"):
        return [part for argument in node.args for part in _path_parts(argument, bound)]
    if isinstance(getattr(node, "op", None), ast.Div):
        return [*_path_parts(node.left, bound), *_path_parts(node.right, bound)]
    return [bound.get(getattr(node, "id", None), node)]


def _files_named(source: str, folder: Path | None, written: dict[str, int]) -> dict[str, int]:
    """The files beside the lesson (under ``folder``) a code cell names in a string
    (``open('names.txt')``), each with the line (from 1) it is first named on; not one an
    earlier cell writes (kept in ``written``, at its line), or it does, before (one read, then
    written back, even in the writing call, is data): the lesson's own."""
    tree = _python(source)
    writes: dict[str, tuple[int, int, int]] = {}  # each file the cell writes: where, its line
    naming: set[int] = set()  # the strings that name them
    # A path the cell names first (PyTorch's CIFAR-10 tutorial: `PATH = './cifar_net.pth'`).
    bound = {node.targets[0].id: node.value for node in ast.walk(tree) if isinstance(
        node, ast.Assign) and isinstance(node.targets[0], ast.Name) and isinstance(
        node.value, ast.Constant)}
    for call in (node for node in ast.walk(tree) if isinstance(node, ast.Call)):
        named = _magic(call)[0] or getattr(call.func, "attr", getattr(call.func, "id", ""))
        receiver = getattr(call.func, "value", None)  # a path's (`Path('x').open('w')`): its file
        if named == "open" and receiver and _path_parts(receiver, {}) != [receiver]:
            named = "Path.open"
        modes = [*call.args[named == "open":][:1],
                 *(word.value for word in call.keywords if word.arg == "mode")]
        if (named in _WRITES or named in ("open", "Path.open") and any(set(str(getattr(
                mode, "value", ""))) & set("wax") for mode in modes)) and (
                file := _written_file(call, named, bound)):
            naming.update(map(id, file[1]))  # written when the call ends, its arguments read
            at = (call.end_lineno, call.end_col_offset, call.lineno)
            writes[file[0]] = min(at, writes.get(file[0], at))
    found: dict[str, int] = {}
    for node in ast.walk(tree) if folder is not None else ():
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(
                r"[^\n/\\][^\n]{0,200}", node.value) and ".." not in Path(node.value).parts \
                and node.value not in written and (folder / node.value).is_file() and id(
                    node) not in naming and (node.lineno, node.col_offset) < writes.get(
                    node.value, (1 << 30, 0))[:2]:
            found.setdefault(Path(node.value).as_posix(), node.lineno)
    for name, (*_, line) in writes.items():
        written.setdefault(name, line)
    return found


# The magics that run their argument as Python (`%time p = f()`, `%%time` over the cell's
# lines): whether its names stay bound after it (%timeit runs it in a function of its own).
_RUNS_PYTHON = {"time": True, "capture": True, "prun": True, "timeit": False}
_TIMEIT_OPTIONS = re.compile(r"^(?:\s*-(?:[nrp]\s*\d+|[tcqo]))*")


def _shows_id(expression: ast.Expr) -> bool:
    """Whether it holds an `id(x)`, not only compares one (`id(Y) == before` shows a bool);
    shown where the cell's value or a print is (micrograd's `dot.edge(str(id(n)))` in a
    function shows none: its drawing is an SVG, never compared)."""
    compared = {id(side) for node in ast.walk(expression) if isinstance(node, ast.Compare)
                for side in (node.left, *node.comparators)}
    return any(isinstance(node, ast.Call) and getattr(node.func, "id", "") == "id"
               and id(node) not in compared for node in ast.walk(expression))


def _on_the_web(node: ast.expr, urls: set[str]) -> bool:
    """Whether the expression is an address on the web (`'https://…'`), a name in ``urls``,
    or one made from it (`f'https://…/{x}'`, `base + 'b.csv'`, `'…{}'.format(x)`): its first
    part is."""
    match node:
        case ast.BinOp(left=first) | ast.JoinedStr(values=[first, *_]) | ast.FormattedValue(
                value=first) | ast.Call(func=ast.Attribute(value=first)):
            return _on_the_web(first, urls)
        case ast.Constant(value=str(text)):
            return bool(_URL.match(text))
    return isinstance(node, ast.Name) and node.id in urls


def _names(tree: ast.AST, bound: set[str], used: dict[str, int]) -> None:
    """The names a cell binds (into ``bound``) and those it reads when it runs, each at its
    first line (into ``used``): a function's body reads its names when called."""
    for node in ast.iter_child_nodes(tree):
        if (magic := _magic(node))[0] in _RUNS_PYTHON:
            cell = node.func.attr == "run_cell_magic"  # its lines follow the magic's
            code = node.args[2].value if cell else _TIMEIT_OPTIONS.sub("", magic[1])
            own, read = set(), {}
            _names(ast.increment_lineno(_python(code), node.lineno - (not cell)), own, read)
            bound |= own if _RUNS_PYTHON[magic[0]] else set()
            for name, line in read.items():  # what %timeit's function binds, it reads as its own
                if _RUNS_PYTHON[magic[0]] or name not in own:
                    used.setdefault(name, line)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            used.setdefault(node.id, node.lineno)
        elif isinstance(node, ast.Name):
            bound.add(node.id)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            _names(node, bound, used)


def _out_of_order(cells) -> list[str]:
    """Each code cell that reads a name no cell above it defines but a later one does (the
    lesson's cells ran out of order): the build stops there with a NameError."""
    read = []
    for cell in (cell for cell in cells if cell.cell_type == "code"):
        bound, used = set(), {}
        _names(_python(cell.source), bound, used)
        read.append((cell, bound, used))
    told, above = [], set()
    for at, (cell, bound, used) in enumerate(read):
        above |= bound
        for name, line in used.items():
            later = next((other for other, binds, _ in read[at + 1:] if name in binds), None)
            if later is not None and name not in above and not hasattr(builtins, name):
                told.append(f"{_place(cell, line)}: `{name}` is read before any cell above "
                            f"defines it ({_place(later)} does: the lesson's cells ran out of "
                            "order): move the cell below that one, or the build stops at it "
                            "with a NameError")
                break
    return told


def _needing_answers(notebook: nbformat.NotebookNode) -> list[str]:
    """Each code cell students run that reads a name only an answer above it defines (a
    solution's, Neuromatch's), or a cell that needs one: the student edition, which runs
    neither, stops there; or a name an exercise leaves blank (`_blanks`: udlbook's
    `def compute_loss(...): # TODO ... return 0`): that edition runs it on the blank. A def
    whose body reads such a name is one too. A lesson with exercises and no answer: said."""
    answered, visible, told = set(), set(dir(builtins)), []
    blanks: dict[str, str] = {}  # a name an exercise binds: where
    cells = solutions_as_answers(copy.deepcopy(notebook), ANSWER_TAG).cells
    overridden = {(base.id, method.name) for cell in cells if cell.cell_type == "code"
                  for node in ast.walk(_python(cell.source)) if isinstance(node, ast.ClassDef)
                  for base in node.bases if isinstance(base, ast.Name) for method in node.body
                  if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for cell in (cell for cell in cells if cell.cell_type == "code"):
        bound, used = set(), {}
        for statement in _python(cell.source).body:  # a name bound above in the cell is its own
            own, read = set(), {}
            _names(ast.Module([statement], []), own, read)
            used |= {name: line for name, line in read.items() if name not in bound | set(used)}
            bound |= own
            inside = sorted(blanks.keys() & {node.id for node in ast.walk(statement) if isinstance(
                node, ast.Name)} - {node.arg for node in ast.walk(statement)  # not a parameter
                                    if isinstance(node, ast.arg)})
            if inside and isinstance(statement, (ast.FunctionDef, ast.ClassDef)):  # calls one
                blanks[statement.name] = blanks[inside[0]]
        skipped = bool({ANSWER_TAG, NEEDS_ANSWERS_TAG} & set(cell_tags(cell))
                       or _TO_REMOVE.match(cell.source))  # the student edition runs neither
        tell = [] if skipped else [
            f"{_place(cell, line)}: `{name}` is defined only by an answer above, or a cell that "
            "needs one, which the student edition does not run (it stops here): tag the cell "
            f"`{NEEDS_ANSWERS_TAG}` (that edition shows it without running it), or define the "
            "name in a cell students run" for name, line in used.items()
            if name in answered - visible][:1] or [
            f"{_place(cell, line)}: `{name}` is, or calls, what the student writes at "
            f"{blanks[name]} (an exercise), which the student edition runs blank (the page would "
            f"show the blank's output, or the build stop here): tag the cell `{NEEDS_ANSWERS_TAG}`"
            " (that edition shows it without running it)"
            for name, line in used.items() if name in blanks][:1]
        told += tell
        (answered if skipped or tell else visible).update(bound)  # a told cell: tagged, not run
        if not skipped:
            blanks.update(dict.fromkeys(_blanks(cell.source, overridden), _place(cell)))
    exercises = dict.fromkeys(blanks.values())
    if exercises and not any(ANSWER_TAG in cell_tags(cell) or _TO_REMOVE.match(cell.source)
                             for cell in cells):
        told.append(f"the lesson leaves exercises to the student (a `TODO` or `raise "
                    f"NotImplementedError`: {', '.join(exercises)}) and gives no answer: after "
                    f"each, write its answer as a code cell tagged `{ANSWER_TAG}` and "
                    f"`{COMPLETES_EXERCISE_TAG}` (the instructor edition runs it and what needs "
                    "it), or bring in the lesson's solutions (SOLUTIONS=)")
    return told


def _blanks(source: str, overridden: set[tuple[str, str]]) -> set[str]:
    """What an exercise's cell leaves to the student: the names the statement holding a `TODO`
    or `raise NotImplementedError` (or headed by a `# TODO` line) binds; not an import, nor a
    method that a subclass overrides (d2l's `Module.forward` raises it for each model's own)."""
    if (tree := parsed_cell(source)) is None:  # `x = # TODO`, no Python: what it names
        return set(_BLANK.findall(source)) if _TODO.search(source) else set()
    blank = set()
    branched = {node.lineno for branch in ast.walk(tree) if isinstance(branch, (  # the author's
        ast.If, ast.Try)) for node in ast.walk(branch) if isinstance(node, ast.Raise)}  # case
    for line, text in enumerate(source.splitlines(), 1):  # the lines `tree` numbers
        if not _TODO.search(text) or _NOTE.match(text) or line in branched:
            continue
        statement = next((s for s in tree.body if s.end_lineno >= line), None)
        methods = statement.body if isinstance(statement, ast.ClassDef) else []
        method = next((m.name for m in methods if isinstance(m, (
            ast.FunctionDef, ast.AsyncFunctionDef)) and m.lineno <= line <= m.end_lineno), None)
        if not isinstance(statement, (ast.Import, ast.ImportFrom, type(None))) and (
                getattr(statement, "name", ""), method) not in overridden:
            _names(ast.Module([statement], []), blank, {})
    return blank


# nn.init's draws and a tensor's own (`w.uniform_(-1, 1)`, whatever names the tensor)
_IN_PLACE_DRAWS = frozenset({"normal_", "uniform_", "trunc_normal_", "kaiming_normal_",
                             "kaiming_uniform_", "xavier_normal_", "xavier_uniform_",
                             "orthogonal_", "sparse_", "random_", "bernoulli_", "exponential_",
                             "geometric_", "cauchy_", "log_normal_"})
# The call that seeds each module's random numbers, and torch's calls that draw them.
SEEDS = {"numpy.random": "np.random.seed(0)", "random": "random.seed(0)",
         "torch": "torch.manual_seed(0)"}
_TORCH_DRAWS = frozenset({"rand", "randn", "randint", "randperm", "rand_like", "randn_like",
                          "randint_like", "normal", "bernoulli", "multinomial", "poisson",
                          # a layer draws its weights when made (the blitz's LeNet, `Net()`)
                          "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
                          "ConvTranspose2d", "ConvTranspose3d", "Embedding", "EmbeddingBag",
                          "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell",
                          "MultiheadAttention", "Transformer", "TransformerEncoderLayer",
                          "TransformerDecoderLayer", *_IN_PLACE_DRAWS})


def unseeded_draws(cells) -> list[tuple[str, nbformat.NotebookNode, int, str]]:
    """The first call in each code cell that draws a random number (``np.random.randn()``,
    ``from random import uniform``'s ``uniform()``, ``torch.randn(2, generator=None)``, not
    ``torch.randn(2, generator=g)`` of a ``torch.Generator()``, whose seed is fixed unless
    ``g.seed()`` drew one; a function or class whose body draws, where it is called) before
    any cell seeds its module: (the module, the cell, the call's line in it, the call). What
    such a cell prints differs between runs, and two runs that draw alike by chance make
    accept-outputs take a draw as expected (tools/accept_outputs.py refuses it)."""
    names: dict[str, str] = {}  # a name the cells import or alias: what it stands for
    seeded, told = {}, []  # a module is unseeded till seeded; a generator seeded till `.seed()`
    effects: dict[str, list[tuple]] = {}  # a function or class: the seeds and draws calling it
    for cell in (cell for cell in cells if cell.cell_type == "code"):
        tree = _python(cell.source)
        inside = {}  # a node of a function's body: the name that runs it when called
        made = {}  # a call whose value a name is bound to: that name
        for node in ast.walk(tree):
            for body in node.body if isinstance(node, ast.ClassDef) else [node]:
                if isinstance(body, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    # Its statements run when it is called; its defaults ran when defined.
                    inside.update({id(sub): node.name for statement in body.body
                                   for sub in ast.walk(statement)
                                   if id(sub) not in inside})  # the outermost name
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
                names.update({alias.asname or alias.name.partition(".")[0]: (
                    f"{node.module}.{alias.name}" if isinstance(node, ast.ImportFrom)
                    else alias.name if alias.asname else alias.name.partition(".")[0])
                    for alias in node.names})
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                names.pop(node.targets[0].id, None)  # `g = torch.default_generator`: an alias
                if isinstance(node.value, (ast.Name, ast.Attribute)):
                    names[node.targets[0].id] = _resolved(node.value, names)
                made[id(node.value)] = node.targets[0].id
        for call in sorted((node for node in ast.walk(tree) if isinstance(node, ast.Call)),
                           key=lambda node: (node.lineno, node.col_offset)):
            seeded.pop(made.get(id(call)), None)  # `g = torch.Generator()` again: a fixed seed
            run = [effect] if (effect := _random_call(call, names)) else effects.get(
                ast.unparse(call.func), [])
            if id(call) in inside:  # SelfAttention's `torch.rand` draws when it is made
                effects.setdefault(inside[id(call)], []).extend(run)
                continue
            for effect in run:  # in order: `set_seed()` seeds random, numpy and torch
                if effect[0] == "seed":
                    seeded[effect[1]] = effect[2]
                elif not seeded.get(effect[2], effect[2] not in SEEDS):
                    told.append((effect[1], cell, call.lineno, ast.unparse(call)))
                    break
            else:
                continue
            break  # a cell's first draw
    return told


def _random_call(call: ast.Call, names: dict[str, str]) -> tuple | None:
    """("seed", what it seeds, whether with a value) or ("draw", the module, the generator
    it draws from) for a call that seeds or draws random numbers."""
    called = _resolved(call.func, names)
    module = next((m for m in SEEDS if called.startswith(f"{m}.")  # not a generator's
                   and "(" not in called), "")  # method: `default_rng(0).normal`
    function = called.rpartition(".")[2]
    module = module or ("torch" if function in _IN_PLACE_DRAWS else "")
    generator = next((_resolved(k.value, names) for k in call.keywords
                      if k.arg == "generator"), "None")
    if function in ("seed", "manual_seed"):  # `seed()` with no value draws a seed
        return "seed", module or called.rpartition(".")[0], bool(call.args or call.keywords)
    if module and (module != "torch" or function in _TORCH_DRAWS) and not (
            function in ("default_rng", "RandomState", "Random") and call.args):
        return "draw", module, generator if module == "torch" and generator not in (
            "None", "torch.default_generator") else module
    return None


def _resolved(node: ast.expr, names: dict[str, str]) -> str:
    """An expression's text, its first name as what the cells bound it to (`np.random` ->
    `numpy.random`)."""
    head, _, rest = ast.unparse(node).partition(".")
    return f"{names.get(head, head)}.{rest}".rstrip(".")


def _unseeded_draws(cells) -> list[str]:
    if not (told := unseeded_draws(cells)):
        return []
    return ["seed the random numbers before the first draw ("
            + ", ".join(dict.fromkeys(f"`{SEEDS[module]}`" for module, *_ in told))
            + ("; not as a cell's last line, whose value, the generator, the page would show"
               if "torch" in {module for module, *_ in told} else "")  # d2l's ndarray page did
            + "): the cells draw without a seed, so what they print differs between runs, and "
            "two runs that draw alike by chance make accept-outputs take a draw as expected: "
            + ", ".join(f"{_place(cell, line)} (`{call}`)" for _, cell, line, call in told)]


def _only_a_string(source: str) -> bool:
    """Whether a code cell is one string and nothing else (a percent script's docstring)."""
    body = _python(source).body
    return (len(body) == 1 and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str))


@cache  # it reads every installed distribution's file list (0.1 s): once a process
def _shared_top_levels() -> frozenset[str]:
    shared = {top for top, names in packages_distributions().items() if len(set(names)) > 1}
    return frozenset({*shared, COLAB.split(".")[0]})


# Modules that lessons import whose package installs them under another name (pip's
# `sklearn` refuses to install: "use scikit-learn"); the first is the one to name.
_INSTALLED_AS = {"sklearn": ("scikit-learn",), "skimage": ("scikit-image",), "PIL": ("pillow",),
                 "yaml": ("pyyaml",), "bs4": ("beautifulsoup4",), "cv2": (
                     "opencv-python", "opencv-python-headless", "opencv-contrib-python",
                     "opencv-contrib-python-headless")}


def _unimportable(modules: dict, packages: list[str], folder: Path | None) -> tuple[list, list]:
    """Of the modules the cells import, those this (the book's) environment lacks, apart from
    the packages the install lines named: those to install, each named by the package that
    installs it (`scikit-learn (for sklearn)`), and the lesson's own (their top level beside
    it). A package installs a top level, or a
    second level under a namespace several packages share: one that several installed
    distributions provide (importlib.metadata tells: sphinxcontrib), or Colab's own package's
    (google.colab's google, where google.cloud goes too). An absent top level is no sign of a
    namespace: ``torchviz.dot`` is torchviz's."""
    named = set()
    for package in packages:
        try:
            named.add(canonicalize_name(Requirement(package).name))
        except InvalidRequirement:  # `-r FILE`, an address
            pass
    shared = _shared_top_levels()
    lacking, own = {}, {}
    for name in modules:
        top = name.split(".")[0]
        level = ".".join(name.split(".")[:2]) if top in shared else top
        packages = _INSTALLED_AS.get(level, (level,))
        if importlib.util.find_spec(top) is None and folder is not None and (
                (folder / top).is_dir() or (folder / f"{top}.py").is_file()):
            own[top] = None
        elif not named & set(map(canonicalize_name, packages)) and any(  # the parent first
                importlib.util.find_spec(part) is None for part in dict.fromkeys((top, level))):
            lacking[packages[0] if packages[0] == level else f"{packages[0]} (for {level})"] = None
    return list(lacking), list(own)


def book_names(book: Path) -> frozenset[str]:
    """What a chapter's references may name in the book: its pages, their MyST labels, the
    keys of its works (book/references.bib) and its files, by MyST's absolute path (`/x.png`)."""
    names = {f"/{path.relative_to(book).as_posix()}" for path in book.rglob("*") if path.is_file()}
    for page in book.glob("*.md"):
        names |= {page.stem, *(found["name"] or found["equation"] or found["option"]
                               for found in _MYST_LABEL.finditer(page.read_text(encoding="utf8")))}
    bib = book / "references.bib"
    names |= set(re.findall(r"^@\w+\{\s*([^,\s]+),", bib.read_text(encoding="utf8"), re.M)
                 if bib.is_file() else [])
    return frozenset(names | _terms("\n".join(page.read_text(encoding="utf8")
                                               for page in book.glob("*.md"))))


def _terms(text: str) -> set[str]:
    """The terms the glossaries in ``text`` define, as ``term NAME`` in lower case: Sphinx
    looks a term up so."""
    return {f"term {' '.join(line.split(' : ')[0].split()).lower()}"
            for found in _GLOSSARY.finditer(text)
            for line in found["body"].splitlines() if line.strip() and line[0] not in " \t:"}


def book_form(notebook: nbformat.NotebookNode, name: str, source_format: str,
              title: str | None = None, folder: Path | None = None,
              known: frozenset[str] = frozenset()) -> Imported:
    """The lesson as a chapter named ``name``: see the module's description. ``folder`` is
    the lesson's, where the images it shows are found; ``known``, the names the book holds
    (:func:`book_names`)."""
    notebook, graded, blanks_read = graded_as_answers(notebook)
    cells = []
    imported = Imported(notebook, "", source_format)
    dropped_outputs = removed_installs = html_images = indexed = badges = callouts = toggles = 0
    blocks: list[str] = []  # blocks (`:::`) a later markdown cell closes, closed in theirs
    open_blocks = 0  # how many of them are open after the cells so far
    directives: list[str] = []  # cells nbdev's or Quarto's directives hide: their tags
    urls: set[str] = set()  # the names the cells bind to an address on the web
    timed: set[str] = set()  # the names they bind to a time taken (`t = timer.timeit(9)`)
    made: set[str] = set()  # the modules the cells write (`%%file mathfoo.py`)
    raised: list[str] = []  # cells whose saved output is an error, tagged raises-exception
    exercises: list[str] = []  # cells that raise at their top level (`raise NotImplementedError`)
    answers: list[str] = []  # Neuromatch's solutions (`# to_remove solution`), tagged answer
    widgets: list[str] = []  # where the cells import a module that shows widgets, and which
    python_blocks: list[str] = []  # Python in markdown cells' fences, which nothing runs
    pasted, after_python = [], False  # the bare fences after one: its output, as pasted
    references: list[tuple[str, str]] = []  # each label or page a markdown cell names: where
    terms: list[tuple[str, str]] = []  # each glossary term a markdown cell looks up: where
    included: list[str] = []  # each file beside the lesson it includes, written in: where
    modules: dict[str, None] = {}  # the modules the code cells import, Colab's left out
    unlabelled: dict[str, None] = {}  # its figures' and tables' labels
    data: dict[str, str] = {}  # the files beside the lesson its cells name: where first
    writes: dict[str, int] = {}  # the names of the files its cells write
    imported.to_do += (blanks_read + _out_of_order(notebook.cells) + _unseeded_draws(notebook.cells)
                       + _needing_answers(notebook))
    d2l = "required_libs" in notebook.metadata or any(  # d2l-book's notebooks' metadata
        _D2L_OWN.search(cell.source) for cell in notebook.cells if cell.cell_type == "markdown")
    for cell in notebook.cells:
        tags = cell_tags(cell)
        source = cell.source
        if cell.cell_type == "code":
            dropped_outputs += bool(cell.get("outputs"))
            after_python = False
            kept = []
            for line in source.splitlines():
                found = _INSTALL.match(line)
                if found:
                    removed_installs += 1
                    named = imported.packages if found["pip"] else imported.system_packages
                    named += [p for p in _packages(found["arguments"]) if p not in named]
                else:
                    kept.append(line)
            source = "\n".join(kept).strip("\n")
            options = list(itertools.takewhile(lambda line: line.startswith("#"),
                                               source.splitlines()))
            hidden = [_DIRECTIVE_TAGS[found[1]] for line in options
                      if (found := _CELL_DIRECTIVE.fullmatch(line))]
            if hidden:
                source = "\n".join(line for line in source.splitlines() if line not in options
                                    or not _CELL_DIRECTIVE.fullmatch(line)).strip("\n")
                tags += [tag for tag in dict.fromkeys(hidden) if tag not in tags]
                directives.append(f"{_place(cell)} (`{'`, `'.join(dict.fromkeys(hidden))}`)")
            imported.to_do += [
                f"{_place(cell)}: `{line}`: nbdev and Quarto never run the cell; the book runs "
                "every cell (a download, a long training, a GPU's or a key's code stops or stalls"
                " its build): make it run in a build, or take it out"
                for line in options if _NOT_RUN.fullmatch(line)][:1]
            if _TO_REMOVE.match(source):  # the marker is Neuromatch's tools' talk: not shown
                source = _TO_REMOVE.sub("", source).strip("\n")
                tags.append(ANSWER_TAG)
                answers.append(_place(cell))
            if not source.strip() or source.strip() == "%matplotlib inline":
                continue
            asks = _waits(cell.source)
            if asks:  # not held to the error it saved: the build shows the kernel's refusal
                imported.to_do.append(
                    f"{_place(cell, asks[0])}: `{asks[1]}` waits for someone at the keyboard (a "
                    "debugger, an input), whom no build has: the build stops at the cell (its "
                    "kernel cannot be asked); take it out, or show it in the prose")
            imported.to_do += [
                f"{_place(cell, line)}: `%tensorboard` starts a TensorBoard server and shows it in "
                "a frame of the reader's own machine (localhost), which no page or download has: "
                "take it out; show a screenshot in the prose"
                for line in sorted(node.lineno for node in ast.walk(_python(cell.source))
                                   if _magic(node)[0] == "tensorboard")]
            tree = _python(cell.source)
            lines = cell.source.splitlines()
            dated = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
                     and _NOW.search(ast.unparse(node.value)) for target in node.targets
                     if isinstance(target, ast.Name)}  # `stamp = datetime.now()`, shown below
            timed.update(target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
                         and _CLOCK.search(ast.unparse(node.value)) for target in node.targets
                         if isinstance(target, ast.Name))
            # A time (%timeit -q prints none) differs between runs.
            shown = [(node.lineno, "how long a statement took") for node in ast.walk(tree)
                for magic, argument in [_magic(node)] if magic in ("time", "timeit")
                and "-q" not in _TIMEIT_OPTIONS.match(argument)[0].split()] + [
                (node.lineno, "how long a statement took") for node in ast.walk(tree)
                if isinstance(node, ast.Expr) and (_CLOCK.search(ast.unparse(node)) or timed & {
                    name.id for name in ast.walk(node) if isinstance(name, ast.Name)})] + [
                (node.lineno, "the date and time it ran") for node in ast.walk(tree)
                if isinstance(node, ast.Expr) and (_NOW.search(ast.unparse(node)) or dated & {
                    name.id for name in ast.walk(node) if isinstance(name, ast.Name)})] + [
                (node.lineno, "an object's id() (where it lies in memory)")
                for node in ast.walk(tree) if isinstance(node, ast.Expr) and _shows_id(node)
                and (node is tree.body[-1] or getattr(getattr(node.value, "func", None), "id",
                                                      "") in ("print", "display"))]
            imported.to_do += [
                f"{_place(cell, line)}: `{lines[line - 1].strip()}` shows {what}, which differs "
                "between runs and machines (the build refuses it as an output that varies): take "
                "it out, or mark its expected output `(varies)` as the build then says"
                for line, what in sorted(shown)]
            imported.to_do += [  # beside a temporary folder, or beside book/: kept, and shared
                f"{_place(cell, node.lineno)}: `{node.value}` names a folder outside the one the "
                "cells run in: what they write there (a dataset, a checkpoint) would stay on the "
                "machine that builds the book for the next build to find, which a build refuses "
                "(but in the home): name one inside it"
                + (f" (`{inside}`)" if inside else "")
                for node in ast.walk(tree) if isinstance(node, ast.Constant)
                and isinstance(node.value, str) and _OUTSIDE.match(node.value)
                for inside in [re.sub(r"^(?:(?:\.\.|~|/tmp)[/\\]?)+", "", node.value)]]
            imported.to_do += [  # torchvision's datasets; d2l's save under its own root
                f"{_place(cell, node.lineno)}: `{lines[node.lineno - 1].strip()}` downloads from "
                "the web as it runs: a build without the network (CI's) stops at it. Keep "
                "`download=True` (torchvision's datasets fetch nothing where their files are "
                "already; a student's Colab fetches them), put the files it fetches in book/ at "
                "the path its root names (not outside it, as d2l's `../data`), list them in the "
                "top matter (`coursebook: {reads: [...]}`), or take the cell out"
                for node in ast.walk(tree) if isinstance(node, ast.Call) and any(
                    k.arg == "download" and getattr(k.value, "value", 0) is True
                    for k in node.keywords)]
            imported.to_do += [
                f"{_place(cell, node.lineno)}: `{lines[node.lineno - 1].strip()}` fetches from "
                "the web as it runs, into a cache outside the folder the cells run in: a build "
                "without the network (CI's) stops at it: have what it fetches in that cache on "
                "each machine that builds, or take the cell out"
                for node in ast.walk(tree) if isinstance(node, ast.Call)
                and (_FETCHES.search(ast.unparse(node.func)) or _pretrained(node))
                and not (node.args and isinstance(node.args[0], ast.Constant)  # saved beside it
                    and str(node.args[0].value).startswith(("./", "../", "/")))]
            for node in tree.body:  # `url = 'https:…'`, `base = url + '/'`
                if isinstance(node, ast.Assign) and _on_the_web(node.value, urls):
                    urls.update(name.id for name in node.targets if isinstance(name, ast.Name))
            imported.to_do += [  # QuantEcon's pandas lecture: `pd.read_csv('https://…')`
                f"{_place(cell, node.lineno)}: `{shown[:80]}{'…' * (len(shown) > 80)}` reads from "
                "the web as it runs: a build without the network (CI's) stops at it: put what it "
                "reads in book/, read it from there (listed in the top matter, `coursebook: "
                "{reads: [...]}`), or take the cell out"
                for node in ast.walk(tree) if isinstance(node, ast.Call)
                and not ast.unparse(node.func).endswith(_SHOWS_ADDRESS) and any(
                    _on_the_web(argument, urls) for argument in node.args[:1] + [
                        named.value for named in node.keywords if named.arg in _ADDRESS_KEYWORDS])
                for shown in [lines[node.lineno - 1].strip()]]
            imported.to_do += [  # these fail on a comment (%pdb: "Incorrect argument")
                f"{_place(cell, node.lineno)}: `%{magic} {argument}`: IPython passes the comment "
                "on to the magic as part of its argument, which the magic refuses: put the "
                "comment on a line of its own"
                for node in ast.walk(_python(cell.source)) for magic, argument in [_magic(node)]
                if magic in ("load_ext", "reload_ext", "matplotlib", "pdb") and "#" in argument]
            errors = [o.get("ename", "") for o in cell.get("outputs", [])
                      if o.get("output_type") == "error" and not asks]
            if errors and RAISES_TAG not in tags:
                tags.append(RAISES_TAG)
                raised.append(f"{_place(cell)} (`{source.splitlines()[0]}`: {errors[0]})")
            imported.to_do += [  # mrdbourke's `tensor_on_gpu.numpy()`, saved on Colab's GPU
                f"{_place(cell)}: its saved error is a GPU's (`{o['ename']}: "
                f"{o['evalue'].split('. ')[0]}`), which the book's builds lack (the CPU build of "
                "torch): there the cell does not raise it; make it raise on a CPU, or take it "
                "out (a GPU's chapter is recorded: docs/recorded-chapters.md)"
                for o in cell.get("outputs", []) if o.get("output_type") == "error" and not asks
                and re.search(r"\bcuda:\d|CUDA out of memory", o.get("evalue", ""))][:1]
            # the class's own name, which its traceback prints after any module path
            raising = [getattr(exc, "attr", getattr(exc, "id", ast.unparse(exc)))
                       for node in _python(source).body if isinstance(node, ast.Raise) and node.exc
                       for exc in [getattr(node.exc, "func", node.exc)]]
            if not (raising or errors or asks or RAISES_TAG in tags or parsed_cell(source)):
                raising = ["SyntaxError"]  # a blank the student fills in (MIT's `x = # TODO`)
            if raising and not errors and not asks and RAISES_TAG not in tags:
                tags.append(RAISES_TAG)
                errors = raising[:1] if raising[0][:1].isupper() else []  # else a variable's
                exercises.append(f"{_place(cell)} (`{raising[0]}`"
                                 + (")" if errors else ": any error)"))
            imports = _imported_modules(source)
            tried = {id(node) for attempt in ast.walk(tree) if isinstance(attempt, ast.Try)
                     and any(handler.type is None or {"ImportError", "ModuleNotFoundError",
                             "Exception"} & {getattr(name, "id", "") for name in ast.walk(
                                 handler.type)} for handler in attempt.handlers)
                     for statement in attempt.body for node in ast.walk(statement)}
            imported.to_do += [  # not Colab's own test, `try: import google.colab`, run anywhere
                f"{_place(cell, node.lineno)}: the cell imports {COLAB} (`"
                f"{lines[node.lineno - 1].strip()}`), which only Colab has: remove it, or the "
                "build fails" for node in ast.walk(tree) if id(node) not in tried
                and isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                    f"{name}.".startswith(f"{COLAB}.") for name in _imported_modules(
                        ast.unparse(node)))]
            modules.update(dict.fromkeys(module for module in imports
                                         if not f"{module}.".startswith(f"{COLAB}.")))
            made.update(Path(argument.split()[-1]).with_suffix("").parts[0]  # pkg/core.py: pkg
                        for node in ast.walk(tree) for magic, argument in [_magic(node)]
                        if magic in ("file", "writefile") and argument.endswith(".py"))
            for node in ast.walk(_python(cell.source)):  # `from tqdm import notebook` too
                names = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                         [f"{node.module}.{alias.name}" for alias in node.names]
                         if isinstance(node, ast.ImportFrom) else [])
                widget = next((name for name in names if _WIDGETS.match(name)), None)
                if widget:
                    widgets.append(f"{_place(cell, node.lineno)} (`{widget}`)")
            if source_format.startswith("jupytext percent") and _only_a_string(source):
                imported.to_do.append(f"{_place(cell)}: a cell holding only a string (a script's "
                                      "docstring), which the page shows as its value, quotes "
                                      "and `\\n` included: make it a markdown cell, or take it out")
            new = code_cell(source, *tags)
            if "mystnb" in cell.metadata:  # myst-nb's options: a figure's caption and name
                new.metadata["mystnb"] = cell.metadata["mystnb"]
            if errors:  # the error the lesson saved: the build holds the cell to it
                new.metadata["raises"] = errors[0]
            imported.to_do += [  # the lesson's cell: its line as the lesson has it
                f"{'cell' if noted(cell, 'numbered') else 'line'} {line}: " + (
                    f"a module it imports draws by running `{command}`, which this machine lacks "
                    f"(the build stops at it): install `{command}` ({how})"
                    if how else f"it runs `{command}`, which this machine lacks (the build "
                    f"stops at it): take the line out, or install `{command}` here")
                for line, command, how in missing_commands(nbformat.NotebookNode(cells=[cell]))]
            writes_before = set(writes)
            for path, line in _files_named(cell.source, folder, writes).items():  # its data
                if path.endswith((".md", ".ipynb", ".rst")):  # in book/, a page of its own
                    imported.to_do.append(f"{_place(cell, line)}: `{path}` beside the lesson, not "
                                          "copied: in book/ it would be a page of its own; put "
                                          "what the cells use of it into the chapter")
                    continue
                imported.files[path] = (folder / path).read_bytes()
                data.setdefault(path, _place(cell, line))
            imported.to_do += [  # the build refuses it (the link its run makes to the file)
                f"{_place(cell, line)}: writes `{path}` back, which its cells read as data "
                "(copied, listed in `coursebook: reads`): the build refuses that, as the chapter's "
                "copy would change and its next run read the changed one: write the result at "
                "another path" for path, line in writes.items()
                if path not in writes_before and Path(path).as_posix() in data]
            imported.to_do += [  # Colab's /content/…: a build, often as root, would write there
                f"{_place(cell, line)}: writes `{path}`, outside the chapter's folder: a build "
                "would write it on the machine that builds the book; name it relative to the "
                f"chapter (`{path.rpartition('/')[2]}`)" for path, line in writes.items()
                if path not in writes_before and str(path).startswith("/")
                and not path.startswith("/dev/")]
        elif cell.cell_type == "markdown":
            source = _with_includes(source, cell, folder, imported, included)
            source, found, closed, open_blocks = _own_blocks(source, open_blocks)
            callouts += found
            blocks += [_place(cell, line) for line in closed]
            if not source.strip():
                continue
            source, found = _COLAB_BADGE.subn("", source)
            badges += found
            if found and not source.strip():
                continue
            if source_format.startswith("sphinx-gallery"):
                source = _ROLE.sub(r"{\1}`\2`", source)
                code = _code_lines(source)
                imported.to_do += [
                    f"{_place(cell, line + 1, found[found.lastindex])}: "
                    + (f"`{found[1]}`" if found[1] else found[2]) + ": reStructuredText that is "
                    "no Markdown (the page shows it as text): write it as MyST (`:::{note}`, "
                    "```` ```python ````, `[text](#label)`) or take it out"
                    for found in _DIRECTIVE.finditer(source)
                    if (line := source.count("\n", 0, found.start())) not in code]
            elif d2l and _D2L_COLAB.match(source):  # about the install line, taken out
                imported.changed.append("took out d2l's note on Colab and the libraries to "
                                        "install, which the page showed above its title")
                continue
            elif d2l:
                source = _d2l_markdown(source, unlabelled)
            for line, info, python in _fences(source):  # rasbt's solutions paste the output
                if python:  # of their ```python under it, in a bare fence
                    python_blocks.append(_place(cell, line, info))
                elif after_python and not info.strip():
                    pasted.append(_place(cell, line))
                after_python = python
            imported.to_do += [
                f"{_place(cell, line, found[0])}: `{source.splitlines()[line - 1].strip()}` "
                "shows a solution to every student (a click opens it; the downloads and search "
                f"index hold it): make it a markdown cell tagged `{ANSWER_TAG}` (the instructor "
                "edition shows it), out of any block around it, or leave it for students to "
                "check themselves"
                for found in _REVEALED.finditer(source)
                for line in [source.count("\n", 0, found.start()) + 1]]
            in_code = {line for token in _markdown_tokens(source)  # an example, shown as text
                       if token.type in ("fence", "code_block")
                       and not _HOLDS_MARKDOWN.match(token.info)
                       for line in range(*token.map)}
            references += [(found["name"], _place(cell, line + 1, found[0]))
                           for found in _MYST_REF.finditer(source)
                           if (line := source.count("\n", 0, found.start())) not in in_code]
            imported.to_do += [
                f"{_place(cell, line + 1, found[0])}: `{found[0]}` downloads a page (in book/, "
                "a notebook or Markdown file is one), which each page of the book offers with "
                "its own buttons, as the student edition has it (a download of a page as "
                "written stops that edition's build): take it out"
                for found in _PAGE_DOWNLOAD.finditer(source)
                if (line := source.count("\n", 0, found.start())) not in in_code]
            terms += [(" ".join(found["name"].split()), _place(  # Sphinx folds its blanks
                cell, source.count("\n", 0, found.start()) + 1, found[0]))
                for found in _TERM.finditer(source)]
            toggled = [found for found in _TOGGLE.finditer(source)  # not one quoted in code
                       if source.count("\n", 0, found.start()) not in in_code]
            for found in reversed(toggled):
                source = (source[:found.start()] + f"{found['fence']}{{dropdown}}{found['rest']}"
                          + (found["show"] or "").replace(":show:", ":open:")
                          + source[found.end():])
            toggles += len(toggled)
            source, shown, written = _shown_images(source, cell, imported)
            html_images += written
            source = _with_images(source, shown, cell, name, folder, imported, known)
            indexed += len(_INDEX.findall(source))
            new = markdown_cell(_INDEX.sub(lambda entry: entry["text"] or "", source), *tags)
        else:  # raw: text for a converter (nbconvert's LaTeX, reST), which no page shows
            if source.strip():
                imported.to_do.append(
                    f"{_place(cell)}: a raw cell (`{first_line(source)[:60]}`), left "
                    "out: no page, PDF or download of the book shows one; write what students "
                    "need of it in a markdown cell")
            continue
        cells.append(new)
    last = MarkdownIt("commonmark").parse(cells[-1].source) if cells and cells[-1].cell_type \
        == "markdown" else []
    if last and last[-1].type == "hr":  # docutils refuses a page that ends in a rule
        cells[-1].source = "\n".join(cells[-1].source.splitlines()[:last[-1].map[0]]).rstrip()
        cells = cells if cells[-1].source.strip() else cells[:-1]
        imported.changed.append("took out the rule (`---`) the lesson ends with (no page may "
                                "end with one)")
    if directives:
        imported.changed.append("wrote as the book's tags the directives of nbdev or Quarto "
                                "(`#|hide`, `#| echo: false`, …) that hide or fold "
                                f"{len(directives)} cell(s), or their code or output: "
                                + ", ".join(directives))
    if blocks:
        imported.changed.append("closed in its own cell each block (`:::`) the lesson opens there "
                                "and closes in a later markdown cell, holding the code cells "
                                "between (Quarto reads a notebook as one document; myst-nb "
                                "refuses a code cell in a block): " + ", ".join(blocks))
    if callouts:
        imported.changed.append(f"wrote the lesson's {callouts} Quarto callout(s) (`::: "
                                "{.callout-note}`) as MyST admonitions (`:::{note}`)")
    if included:
        imported.changed.append("wrote in the text of the files the lesson includes (`{include}`"
                                ": beside the chapter, a Markdown file is a page of the book): "
                                + ", ".join(included))
    if badges:
        imported.changed.append(f"took out the lesson's {badges} badge(s) opening it in Colab or "
                                "Kaggle: each opened the lesson's own notebook, not this "
                                "edition's, which the book's pages open with their own button")
    if toggles:
        imported.changed.append(f"wrote the lesson's {toggles} `{{toggle}}` block(s) "
                                "(sphinx-togglebutton's, which the book does not load) as "
                                "sphinx-design's `{dropdown}` (`:show:` as `:open:`)")
    if indexed:
        imported.changed.append(f"took out the lesson's {indexed} index entries (`{{index}}`): the "
                                "book has no index (conf.py's html_use_index), so none shows")
    if dropped_outputs:
        imported.changed.append(f"dropped the saved outputs of {dropped_outputs} code cells "
                                "(the build makes them)")
    if html_images and not source_format.startswith("sphinx-gallery"):  # not rst2md's
        imported.changed.append(f"wrote the {html_images} image(s) the lesson showed in HTML "
                                "(`<img src=…>`) as Markdown images, which the pages, PDFs and "
                                "downloads show (their width and placing dropped)")
    if len(imported.files) > len(data):
        imported.changed.append("copied the images the lesson shows "
                                f"({len(imported.files) - len(data)}) into {name}/, beside the "
                                "chapter (files beside the lesson, images "
                                "pasted into its cells), and showed them from there")
    if d2l:
        imported.changed.append("wrote d2l-book's marks as MyST: labels, references, "
                                "citations; the slides' marks taken out, as d2l's pages have "
                                "them")
    text = "\n".join(cell.source for cell in cells if cell.cell_type == "markdown")
    cited = dict.fromkeys(key.strip() for found in _CITE.finditer(text)
                          for key in found["keys"].split(",") if key.strip() not in known)
    if cited:
        imported.to_do.append("add the works the lesson cites to book/references.bib and a "
                              "`{bibliography}` to the chapter (docs/authoring.md, "
                              "\"Citations\"), or write them as text: " + ", ".join(cited))
    if unlabelled:
        imported.to_do.append("the figures and tables the lesson labels (d2l's `:label:` under "
                              "them), which a Markdown image cannot hold: make each a `{figure}` "
                              "with that `:name:` (docs/authoring.md, \"Numbered figures\") for "
                              "the references to it, or write those as text: "
                              + ", ".join(f"`{name}`" for name in unlabelled))
    held = {found["name"] or found["equation"] or found["option"]
            for found in _MYST_LABEL.finditer(text)} | {
        ((cell.metadata.get("mystnb") or {}).get("figure") or {}).get("name") for cell in cells}
    elsewhere = [f"{at} (`{name}`)" for name, at in references
                 if name not in held | unlabelled.keys() | known]
    if elsewhere:
        imported.to_do.append("point at a section or page of the book, or write as text, the "
                              "references to sections or pages of the lesson's site, which the "
                              "book does not have (the build stops at each): "
                              + ", ".join(elsewhere))
    glossed = _terms(text) | known
    unglossed = [f"{at} (`{term}`)" for term, at in terms if f"term {term.lower()}" not in glossed]
    if unglossed:
        imported.to_do.append("add to book/glossary.md, or write as text, the terms the lesson "
                              "looks up in its site's glossary, which the book's lacks (the build "
                              "stops at each): " + ", ".join(unglossed))
    if python_blocks:
        imported.to_do.append("the Python in fenced blocks of prose is shown, never run or "
                              "verified: make each block the lesson runs a code cell "
                              "(```{code-cell} ipython3), leave those it only shows: "
                              + "; ".join(python_blocks) + (
                                  "; and the output pasted under such a block (a bare fence), "
                                  "which nothing compares: take it out where its block becomes "
                                  "a code cell: " + "; ".join(pasted) if pasted else ""))
    own_site = [at for at, href in imported.relative_links.items() if href not in held | known]
    if own_site:  # not `[Exercise 1](label)`, a label the page resolves as MyST does
        imported.to_do.append("link to the web, or take out, the links to pages of the lesson's "
                              "own site, which the book does not have (the build stops at each): "
                              + ", ".join(own_site))
    lacking, own = _unimportable({name: None for name in modules if name.split(".")[0]
                                  not in made}, imported.packages, folder)
    if lacking:
        imported.to_do.append("declare the packages that install the modules the cells import "
                              f"that the book's environment lacks: {', '.join(lacking)} "
                              "(docs/authoring.md, \"Packages a chapter needs\", then `make "
                              "chapter-packages`), or take those cells out")
    if own:
        imported.to_do.append("the cells import the lesson's own modules, which the chapter "
                              f"cannot: {', '.join(f'{name} (beside the lesson)' for name in own)}"
                              ": put what the cells use into the chapter, or take it out")
    if raised:
        imported.changed.append(f"tagged `{RAISES_TAG}` the {len(raised)} cell(s) whose saved "
                                f"output is an error: {', '.join(raised)}")
        imported.to_do.append(f"check that each error tagged `{RAISES_TAG}` is the lesson, "
                              "not a missing package or device: fix the cell otherwise")
    if widgets:
        imported.to_do.append("the cells import modules that show widgets (a progress bar, a "
                              "slider), which the page draws with scripts from the web (cdnjs, "
                              "jsdelivr: blank offline) and the build does not compare (their "
                              "text is the widget as made): take them out, or show text (a bar: "
                              "`from tqdm import tqdm`): " + ", ".join(widgets))
    if graded:
        imported.changed.append(
            f"the {len(graded)} cell(s) a grader marks (nbgrader's, otter-grader's, CS231n's) are "
            "as its students get them (its stub: `# YOUR CODE HERE` and `raise NotImplementedError"
            "()`, otter's `...` or prompt), each solution an `answer` cell after its cell; hidden "
            f"tests and mark schemes are answers, the tests students run `{NEEDS_ANSWERS_TAG}`: "
            + ", ".join(graded))
    if answers:
        imported.changed.append(f"tagged `{ANSWER_TAG}` the {len(answers)} cell(s) marked `# "
                                "to_remove solution` or `# to_remove explanation` (Neuromatch's: "
                                "its student notebooks leave them out): " + ", ".join(answers))
    if exercises:
        imported.changed.append(f"tagged `{RAISES_TAG}` the {len(exercises)} cell(s) that raise "
                                "at their top level (an exercise left to the student), each held "
                                f"to the error it names: {', '.join(exercises)}")
    if removed_installs:
        imported.changed.append(f"took out {removed_installs} install line(s): a cell does not "
                                "install during a build")
        if imported.packages:
            imported.to_do.append("declare the Python packages the install lines named, as "
                                  f"docs/authoring.md says: {', '.join(imported.packages)}")
        if imported.system_packages:
            imported.to_do.append("the system packages the install lines named must be on the "
                                  "machines that build the book (name them in the chapter's "
                                  f"prose): {', '.join(imported.system_packages)}")
    # The title: the lesson's first heading, labelled with the name; the hidden first cell
    # after it, before any code. A page has one `#`: a lesson's further ones are sections.
    headings = _headings(cells)
    tops = [at for at, (_, _, level, _) in enumerate(headings) if level == 1]
    if len(tops) > 1:  # all of them sections when a title is asked for, else all but the first
        for cell, (start, end), level, text in reversed(headings[tops[title is None]:]):
            lines = cell.source.split("\n")
            lines[start:end] = [f"{'#' * min(level + 1, 6)} {text}"]  # setext ones too
            cell.source = "\n".join(lines)
        imported.changed.append(f"made the lesson's {'' if title else 'later '}`#` headings "
                                "sections (`##`, the levels under them one deeper): a page "
                                "has one title")
        headings = _headings(cells)
    # MyST refuses a heading more than one level under the section it is in (mrdbourke's
    # exercises: `###` under the `#` title): each is lifted to one level under it.
    above, lifted = [(1, 1)], []  # the sections a heading is in: (the lesson's level, the page's)
    for cell, (start, end), level, text in headings:
        while above and above[-1][0] >= level:
            above.pop()
        above.append((level, min(level, above[-1][1] + 1 if above else 1)))
        if above[-1][1] != level:
            lifted.append((cell, start, end, f"{'#' * above[-1][1]} {text}"))
    for cell, start, end, heading in reversed(lifted):
        lines = cell.source.split("\n")
        cell.source = "\n".join(lines[:start] + [heading] + lines[end:])
    if lifted:
        imported.changed.append(f"lifted {len(lifted)} heading(s) that skipped a level (`###` "
                                "under `#`), which MyST refuses, to one level under their section")
        headings = _headings(cells)
    first, lines, level, text = headings[0] if headings else (None, None, 0, "")
    if level != 1:
        first = None  # a section's (`## The basics`): made a title, it broke the levels below
    if title is None:
        title = text if first else name
        if first is None:
            imported.to_do.append(f"the lesson has no title (its first heading is not `# …`): "
                                  f"the chapter's is its name; write one in its `# {name}` line "
                                  "and in book/index.md's reading order, whose item names it so")
    if first is not None:  # the title asked for replaces the lesson's: one title a page
        if text != title:
            imported.changed.append(f"titled it `# {title}` in place of the lesson's title "
                                    f"`# {text}`")
        source = first.source.split("\n")
        start = lines[0] - (source[lines[0] - 1:lines[0]] == [f"({name})="])  # JAX's labels it
        source[start:lines[1]] = [f"({name})=", f"# {title}"]
        first.source = "\n".join(source)
        at = cells.index(first) + 1
    else:
        cells.insert(0, markdown_cell(f"({name})=\n# {title}"))
        at = 1
    at = min([at] + [n for n, cell in enumerate(cells) if cell.cell_type == "code"])
    coded = any(cell.cell_type == "code" for cell in cells)  # prose alone: no cell to add,
    cells[at:at] = [code_cell(FIRST_CELL, "remove-cell")] * coded  # which would come last
    imported.changed.append("added the book's top matter" + (" and its hidden first cell (%xmode "
                            "Minimal: errors show as `Type: message`)") * coded + (
                                "; copied the files beside the lesson its cells name ("
                                f"{', '.join(f'{p} at {at}' for p, at in data.items())}) beside "
                                "the chapter, in book/, and listed them in `coursebook: {reads: "
                                "[...]}`: an edit of one runs the chapter again") * bool(data))
    if data:
        imported.to_do.append("say in the prose where a student gets the files the cells read "
                              f"({', '.join(data)}): the downloads and Colab do not hold them")
    if source_format.startswith("sphinx-gallery"):
        imported.changed.append("wrote sphinx-gallery's reStructuredText as Markdown "
                                "(sphinx_gallery's rst2md) and its roles as MyST roles")
        ignored = [_place(cell) for cell in notebook.cells if BOOK_ONLY_TAG in cell_tags(cell)]
        imported.changed += [f"made its `sphinx_gallery_start_ignore` blocks, which the "
                             "gallery runs and shows nowhere, cells no page or download shows "
                             f"(`remove-cell`, `{BOOK_ONLY_TAG}`): {', '.join(ignored)}"][:len(
                                 ignored)]
    imported.title = title
    imported.notebook = nbformat.v4.new_notebook(cells=cells, metadata={
        **TOP_MATTER, **({"coursebook": {"reads": list(data)}} if data else {})})
    return imported


def chapter_text(imported: Imported) -> str:
    """The chapter file's text (the book's own MyST writer)."""
    return notebook_to_myst(imported.notebook)
