"""Chapter notebooks and the book's cell tags. A MyST notebook, an ``.ipynb`` or a percent
script reads into the same notebook (:func:`read_chapter`); only the page myst-nb reads differs."""

from __future__ import annotations

import ast
import bisect
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import yaml
from myst_nb.core.read import is_myst_markdown_notebook, read_myst_markdown_notebook
from myst_parser.config.main import read_topmatter

from coursebook.model.cell_notes import (CELL_NOTE, cell_key, cell_line, line_within, note,
                                         place_at, source_line, without_notes)
from coursebook.model.solutions import (SolutionError, graders_mark, heading_in_only,
                                        markdown_parser, reading_changed, solutions_as_answers)
from coursebook.model.toml_files import TomlFile, typed

# --- The book's tags (myst-nb's own, such as remove-cell, keep their meaning) ----------
ANSWER_TAG = "answer"  # instructor material, dropped from the student edition
RAISES_TAG = "raises-exception"  # the cell's error is its lesson (nbclient's tag)
BOOK_ONLY_TAG = "book-only"  # runs in the book (a figure, say), left out of downloads
DOWNLOAD_ONLY_TAG = "download-only"  # shown only in downloads (with remove-cell)
# A recorded chapter's cells (coursebook.model.recordings): which machine kinds run them.
ACCELERATOR_ONLY_TAG = "accelerator-only"  # needs a real accelerator: not the stand-in
STAND_IN_ONLY_TAG = "stand-in-only"  # a CPU reproduction: only the stand-in runs it
# Runs its code in a new Python: a recording's kernel holds no device, so the new one can.
FRESH_PYTHON_TAG = "fresh-python"
# A check of a sentence above it (coursebook.claims.model): runs on every build, never shown.
CLAIM_TAG = "claim"
# Where a new runtime starts on a machine with the device (prepare/runtime_setup.py).
RESTART_TAG = "runtime-restart"
# Runs on what the student writes (an exercise's test): the student edition, which has no
# answers, shows it without running it (myst-nb's skip-execution), its output not verified.
NEEDS_ANSWERS_TAG = "needs-answers"
COMPLETES_EXERCISE_TAG = "completes-exercise"  # an answer completing the stub above it
# Cell metadata that exempts a cell from verification; its value is the reason.
UNVERIFIED_KEY = "unverified"


def cell_tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def is_answer(cell) -> bool:
    return ANSWER_TAG in cell_tags(cell)


def answer_names(notebook: nbformat.NotebookNode) -> dict[str, int]:
    """Each name an answer code cell binds, or a cell that needs the answers, at its line: the
    student edition runs neither, so a cell it runs cannot read one."""
    names: dict[str, int] = {}
    for cell in (cell for cell in notebook.cells if cell.cell_type == "code" and (
            is_answer(cell) or NEEDS_ANSWERS_TAG in cell_tags(cell))):
        for name, line in _bound(parsed_cell(cell.source) or ast.Module([], [])):  # a magic too
            names.setdefault(name, cell_line(cell, line - 1))
    return names


# A file a cell names: a quoted string (``plt.savefig("fit.png")``), or ``%%writefile``'s.
_NAMED = re.compile(r"""(["'])([^"'\n]+)\1|^%%writefile(?:[ \t]+-a)?[ \t]+(\S+)""", re.M)


def answer_strings(notebook: nbformat.NotebookNode) -> dict[str, int]:
    """Each file an answer code cell names and no other code cell does, at its line."""
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    others = "\n".join(cell.source for cell in code if not is_answer(cell))
    return {found[2] or found[3]: cell_line(cell, cell.source.count("\n", 0, found.start()))
            for cell in reversed(code) if is_answer(cell)  # the first answer's line wins
            for found in reversed(list(_NAMED.finditer(cell.source)))
            if (found[2] or found[3]) not in others}


def _bound(node: ast.AST) -> Iterator[tuple[str, int]]:
    """The names a cell binds at its top level, each at its line: a def's own names are its."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name, node.lineno
    elif isinstance(node, ast.alias):
        yield node.asname or node.name.split(".")[0], node.lineno
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        yield node.id, node.lineno
    elif not isinstance(node, (ast.Lambda, ast.comprehension)):
        for child in ast.iter_child_nodes(node):
            yield from _bound(child)


def is_claim(cell) -> bool:
    return cell.get("cell_type") == "code" and CLAIM_TAG in cell_tags(cell)


def code_cell(source: str, *tags: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(source, metadata={"tags": list(tags)} if tags else {})


def markdown_cell(source: str, *tags: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(source, metadata={"tags": list(tags)} if tags else {})


def first_line(cell: nbformat.NotebookNode | str) -> str:
    """How messages name a cell (or an output): its first line of code or text."""
    return ((cell if isinstance(cell, str) else cell.source).strip().splitlines() or [""])[0]


def parsed_cell(source: str) -> ast.Module | None:
    """A code cell as the kernel reads it (a magic: a call), or None: no Python (a blank);
    the blank lines that open it, which IPython drops, counted back (not an escape it joins
    with the next line, `!pip install \\`: the lines after one are told a line high)."""
    from IPython.core.inputtransformer2 import TransformerManager  # 0.1 s: loaded where used
    try:
        tree = ast.parse(TransformerManager().transform_cell(source))
    except SyntaxError:
        return None
    lines = source.splitlines()
    return ast.increment_lineno(tree, next((n for n, line in enumerate(lines) if line.strip()), 0))


# --- Each cell's identity (coursebook.model.cell_notes) --------------------------------

def expects_output(cell) -> bool:
    """A code cell but a claim's check (its assert is the check: no file goes stale)."""
    return cell.get("cell_type") == "code" and not is_claim(cell)


def note_output_keys(notebook: nbformat.NotebookNode) -> None:
    """Key each code cell whose outputs are expected; place each added cell at a line."""
    cells = [cell for cell in notebook.cells if expects_output(cell)]
    for cell, key in zip(cells, content_keys((cell.source.strip() for cell in cells), ".")):
        note(cell, key=key)
    placed = next((cell for cell in notebook.cells if source_line(cell)), None)
    for cell in notebook.cells:
        place_at(cell, source_line(placed) if placed is not None else 0, placed)
        placed = cell if source_line(cell) else placed


def short_digest(data: str | bytes, length: int = 8) -> str:
    """The book's one content digest: ``length`` hex digits of sha256 (8 key a cell)."""
    raw = data.encode("utf8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()[:length]


def content_keys(texts: Iterable[str], separator: str) -> list[str]:
    """A short hash of each text, numbered (``separator`` 2, 3, …) when a text recurs: the
    same texts get the same keys on every run, and an edit changes only its own key."""
    seen: Counter[str] = Counter()
    keys = []
    for text in texts:
        digest = short_digest(text)
        seen[digest] += 1
        keys.append(digest if seen[digest] == 1 else f"{digest}{separator}{seen[digest]}")
    return keys


def with_stable_ids(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Ids the same from every read (nbformat draws them at random), so that a notebook
    written again diffs only where it changed (``.`` is no id character)."""
    unkeyed = [cell for cell in notebook.cells if not cell_key(cell)]
    texts = iter(content_keys((f"{cell.cell_type}\n{cell.source}" for cell in unkeyed), "-"))
    for cell in notebook.cells:
        cell.id = cell_key(cell).replace(".", "-") or next(texts)
    return notebook


# --- Reading and writing --------------------------------------------------------------

NOTEBOOK_SUFFIX = ".ipynb"  # a Jupyter notebook's file
SCRIPT_SUFFIX = ".py"  # a jupytext percent script's (conf.py's nb_custom_formats)
CHAPTER_SUFFIXES = (".md", NOTEBOOK_SUFFIX, SCRIPT_SUFFIX)  # the files a chapter may be
PROVENANCE_KEY = "coursebook_recording"  # a recording's metadata (coursebook.model.recordings)
# Where a chapter of each kind keeps its top matter (a MyST page: its top matter).
TOP_MATTER_PLACES = {NOTEBOOK_SUFFIX: "metadata", SCRIPT_SUFFIX: "jupytext header"}


def notebook_json(text: str) -> dict | None:
    """A Jupyter notebook's JSON (an ``.ipynb`` file's), parsed; None for any other text."""
    try:
        data = json.loads(text) if text.lstrip().startswith("{") else None
    except ValueError:
        return None
    return data if isinstance(data, dict) and "nbformat" in data \
        and isinstance(data.get("cells"), list) else None


def top_matter(text: str) -> dict | None:
    """A chapter's top matter (a notebook's metadata; a percent script's: {}); None for any
    text but a MyST notebook (myst-nb's rule), a Jupyter notebook or a percent script."""
    data = notebook_json(text)
    if data is not None:
        return data.get("metadata", {})
    if is_myst_markdown_notebook(text):
        return read_topmatter(text)
    return {} if cell_script_fault(text) is None else None


def top_matter_setting(chapter: str, setting: str) -> str:
    """A top matter setting (`mystnb: {execution_timeout: 600}`) where and as a chapter of
    its kind writes it."""
    if chapter.endswith(NOTEBOOK_SUFFIX):
        setting = json.dumps(yaml.safe_load("{" + setting + "}"))[1:-1]
    elif chapter.endswith(SCRIPT_SUFFIX):
        setting = f"jupyter: {{{setting}}}"
    return f"in its {TOP_MATTER_PLACES.get(Path(chapter).suffix, 'top matter')}: `{setting}`"


def top_matter_line(text: str, *keys: str) -> int:
    """The line of a key (``coursebook``, ``packages``) in a chapter's top matter or a percent
    script's header (under ``jupyter``), as YAML places it; if not there its table's, else 1."""
    lines = text.split("\n")
    mark = "# ---" if lines[0].rstrip() == "# ---" else "---"
    end = next((n for n, line in enumerate(lines[1:], 1) if line.rstrip() == mark), 0) \
        if lines[0].rstrip() == mark else 0  # else a notebook's JSON: no line
    node, at = yaml.compose("\n".join(line[len(mark) - 3:] for line in lines[1:end])), 1
    for key in ("jupyter", *keys) if mark == "# ---" else keys:
        pairs = node.value if isinstance(node, yaml.MappingNode) else []
        name, node = next(((k, v) for k, v in pairs if k.value == key), (None, None))
        at = at if name is None else name.start_mark.line + 2  # after the mark, from 1
    return at


@dataclass(frozen=True)
class ChapterSettings:
    """A chapter's top matter `coursebook:` (docs/authoring.md), its keys."""
    packages: tuple[str, ...] = ()  # pip requirements (prepare.chapter_packages)
    reads: tuple[str, ...] = ()  # files beside it that its cells read: they key its run
    recording: str | None = None  # recorded on machine_kinds (model.recordings)
    machine_kinds: tuple[str, ...] = ()


def chapter_settings(metadata: dict, path: Path | str = "", text: str = "") -> ChapterSettings:
    """Its `coursebook:` typed, or a BookError as a TOML file's, at the key's line in ``text``."""
    found = metadata.get("coursebook") or {}
    lines = {"coursebook": top_matter_line(text, "coursebook")}
    # `machine_kinds:` alone is none given (the recording's own check names the kinds); a
    # number as a key (`2024:`) is named as any unknown key is
    if isinstance(found, dict):
        found = {str(key): value for key, value in found.items() if value is not None}
        lines |= {f"coursebook.{key}": top_matter_line(text, "coursebook", key) for key in found}
    return typed(TomlFile(Path(path) if path else None, lines), "coursebook", found,
                 ChapterSettings)


# A page another tool runs as a notebook, which myst-nb shows as text: jupytext's Markdown
# (a `jupyter:` header key, jupytext's rule: Flax's guides), d2l-book's (make chapter FROM=).
_JUPYTEXT_HEADER = re.compile(r"\A---[ \t]*\n(?:(?!---|\.\.\.).*\n)*?jupyter:")
D2L_CELL = r"^```\{\.python \.input[^}\n]*\}"


def other_notebook_format(text: str) -> tuple[int, str] | None:
    """The line and name of a Markdown page's notebook format that the book does not run."""
    if _JUPYTEXT_HEADER.match(text):
        return 1, "jupytext's Markdown format (a `jupyter:` header)"
    cell = re.search(D2L_CELL, text, re.M)
    return cell and (text.count("\n", 0, cell.start()) + 1,
                     "d2l-book's format (```{.python .input} cells)")


def cell_script_fault(text: str) -> tuple[int, str] | None:
    """Why a text is no percent script (``# %%`` cells, magics commented as jupytext writes
    them, Python that compiles: no Markdown page holding such lines is one), at its line."""
    # jupytext (with tornado) is imported only where a page is read: a warm build reads none.
    from jupytext.formats import guess_format

    if (found := guess_format(text, SCRIPT_SUFFIX)[0]) != "percent":
        return 1, (f"jupytext reads it as its {found!r} format, not as percent cells (a "
                   "header's `text_representation` names `extension: .py` with `format_name: "
                   "percent`, or none)")
    try:
        ast.parse(text)
    except (SyntaxError, ValueError) as error:
        return getattr(error, "lineno", None) or 1, (
            f"it does not compile ({getattr(error, 'msg', error)}): a cell that teaches a "
            "SyntaxError runs its code as text (`exec('print(\"hi\"')`), or make the chapter "
            "MyST (`make chapter FROM=` the script)")
    return None


def is_chapter_source(text: str) -> bool:
    """:func:`top_matter` is not None, faster: this runs as each page is read."""
    return is_myst_markdown_notebook(text) or notebook_json(text) is not None \
        or cell_script_fault(text) is None


def chapter_files(folder: Path) -> list[tuple[Path, str]]:
    paths = sorted(path for suffix in CHAPTER_SUFFIXES for path in folder.rglob(f"*{suffix}")
                   if not {"_build", "_ext", ".ipynb_checkpoints"} & set(path.parts))
    texts = [(path, path.read_text(encoding="utf8")) for path in paths]
    return [(path, text) for path, text in texts  # recordings are no chapters
            if (matter := top_matter(text)) is not None and PROVENANCE_KEY not in matter]


HEADING_IN_ONLY = (
    "a heading inside an `{only}` block: MyST places its section outside the block, so every "
    "edition shows it and the text after it: put the heading outside the block (an instructor's "
    f"notes: in an `{ANSWER_TAG}` cell, which may begin with one heading line)")


def read_chapter(text: str, strict: bool = False) -> nbformat.NotebookNode:
    """The chapter as written, cells noted at their lines, saved outputs left out; ``strict``
    (a build): a solution that cannot be cut out raises, else (the audits) is all answer."""
    if notebook_json(text) is not None:
        notebook = nbformat.reads(text, as_version=4)
        for number, cell in enumerate(notebook.cells, 1):
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
            note(cell, line=number, numbered=True)
    elif not is_myst_markdown_notebook(text) and cell_script_fault(text) is None:
        import jupytext

        notebook = jupytext.reads(text, fmt="py:percent")
        note_script_lines(notebook, text.splitlines())
    else:
        notebook = read_myst_markdown_notebook(
            text, markdown_parser().options["myst_config"], add_source_map=True)
        _note_lines(notebook, text.splitlines())
    notebook.metadata.pop("widgets", None)  # myst-nb embeds it in the page
    if strict and (changed := reading_changed(notebook.metadata)):
        raise SolutionError(changed[1], line=top_matter_line(text, "myst", changed[0]))
    mystnb = (notebook.metadata.get("mystnb") or {}) if strict else {}
    if mystnb.get("execution_mode", "cache") != "cache":  # `off`: nothing run nor verified,
        raise SolutionError("top matter `mystnb: execution_mode` would have this chapter run "
                            "otherwise than the book runs and verifies every chapter (its "
                            "cache, each output compared): remove it",  # and the build passed
                            line=top_matter_line(text, "mystnb", "execution_mode"))
    notebook = solutions_as_answers(notebook, ANSWER_TAG, strict)
    for cell in (cell for cell in notebook.cells if strict and not is_answer(cell)):
        if marked := graders_mark(cell):
            raise SolutionError(
                f"{marked[1]}, a grader's mark of a solution, in a cell the student edition "
                "shows: bring the lesson in with `make chapter FROM=`, which makes each marked "
                f"solution an `{ANSWER_TAG}` cell after the students' stub", line=line_within(
                    cell, marked[0]))
        if (heading := heading_in_only(cell.source)) is not None:
            raise SolutionError(HEADING_IN_ONLY, line=cell_line(cell, heading))
    return notebook


def _note_lines(notebook: nbformat.NotebookNode, lines: list[str]) -> None:
    """Note each cell at the line its text starts: from where myst-nb's ``source_map`` began
    it, past a code cell's options or the blank lines myst-nb strips from a markdown cell."""
    starts = notebook.metadata.pop("source_map")
    for cell, start, end in zip(notebook.cells, starts, [*starts[1:], len(lines)]):
        body = cell.source.splitlines()
        skip = next((k for k in range(end - start + 1)
                     if lines[start + k:start + k + len(body)] == body), 0)
        blank = next((k for k, line in enumerate(body) if line.strip()), 0)
        note(cell, line=start + skip + blank + 1)


# A percent cell's marker as jupytext's reader takes one (but in a string too): ``# %%`` and
# its type and metadata, ``#%%``, ``#  %%``, nbconvert's ``# In[3]:``; no magic (``# %%time``).
CELL_MARKER = re.compile(r"\s*#\s*(?:%%+\s|(?:%%|<codecell>|In\[[0-9 ]*\]:?)\s*$)")


def note_script_lines(notebook: nbformat.NotebookNode, lines: list[str]) -> None:
    """Note each cell of a percent script at its first line, as written or behind a ``#``."""
    markers = [number for number, line in enumerate(lines) if CELL_MARKER.match(line)]
    starts = markers if len(markers) == len(notebook.cells) else [0, *markers]
    for cell, start, end in zip(notebook.cells, starts, [*starts[1:], len(lines)]):
        first = next((line for line in cell.source.splitlines() if line.strip()), None)
        # A markdown line, and a code cell's magic (``!pip``), are written behind a ``#``.
        written = [f"# {first}", f"#{first}", *([first] if cell.cell_type == "code" else [])]
        at = next((k for k in range(start, end) if lines[k] in written), start)
        note(cell, line=at + 1)


def notebook_to_myst(notebook: nbformat.NotebookNode) -> str:
    """The notebook as MyST, without notes, each cell at its line where there is room."""
    return "\n".join(_layout(notebook)[0]) + "\n"


_OPTION_NAME = re.compile(r"[A-Za-z_][\w-]*")
# myst-nb's lines in a Jupyter notebook's page: a cell's line k is (its number) * this + k,
# counted from the page's ``source_map`` where it has one (myst_nb/core/nb_to_tokens.py).
_CELL_LINES = 10000


def reads_as_json(source_path: str) -> bool:
    """Whether myst-nb reads the page as a notebook's JSON (a script's: nb_custom_formats)."""
    return source_path.endswith((NOTEBOOK_SUFFIX, SCRIPT_SUFFIX))


def page_text(notebook: nbformat.NotebookNode, source_path: str) -> str:
    """The page's text myst-nb reads for a chapter, without the book's notes."""
    if not reads_as_json(source_path):
        return notebook_to_myst(notebook)
    page = without_notes(notebook)
    # myst-nb names a cell's line j (from 1) at its source_map entry plus 1 plus j.
    page.metadata["source_map"] = [
        source_line(cell) * _CELL_LINES - 1 if source_path.endswith(NOTEBOOK_SUFFIX)
        else source_line(cell) - 2 for cell in notebook.cells]
    return nbformat.writes(page)


def notebook_place(page_line: int) -> tuple[int, int] | None:
    """The cell number and line in it of a line of a Jupyter notebook's page (None: none)."""
    cell, line = divmod(page_line, _CELL_LINES)
    return (cell, line) if cell else None


def author_line(notebook: nbformat.NotebookNode,
                source_path: str = "") -> Callable[[int], int]:
    """For a line of :func:`page_text`'s text, the author's (a Jupyter notebook's: the cell)."""
    if source_path.endswith(NOTEBOOK_SUFFIX):
        return lambda page_line: page_line // _CELL_LINES or page_line
    if source_path.endswith(SCRIPT_SUFFIX):
        return lambda page_line: page_line  # the page's lines are the script's
    starts = [(named, source_line(cell))
              for named, cell in zip(_layout(notebook)[1], notebook.cells) if source_line(cell)]
    firsts = [named for named, _ in starts]

    def line(page_line: int) -> int:
        at = bisect.bisect_right(firsts, page_line) - 1
        return page_line if at < 0 else starts[at][1] + page_line - starts[at][0]

    return line


def _layout(notebook: nbformat.NotebookNode) -> tuple[list[str], list[int]]:
    """:func:`notebook_to_myst`'s lines, and the line myst-nb names each cell at."""
    # NotebookNodes as plain dicts and lists, which YAML can write.
    metadata = json.loads(json.dumps({key: value for key, value in notebook.metadata.items()
                                      if key != "source_map"}))
    named: list[int] = []
    # Lists of plain values on one line, as authors write them (and as many lines).
    out = ["---", *yaml.safe_dump(metadata, sort_keys=False, default_flow_style=None,
                                  width=1000).splitlines(), "---"]
    after = "front matter"
    for cell in notebook.cells:
        metadata = {key: value for key, value in cell.metadata.items() if key != CELL_NOTE}
        line = source_line(cell)
        # The cell's text starts on the line after what is written here.
        blank = cell.source.count("\n", 0, len(cell.source) - len(cell.source.lstrip()))
        if cell.cell_type == "markdown":
            # myst-nb strips the blank lines before a markdown cell's text but counts its
            # lines from the line after the cell before it: exactly one blank line between.
            if after == "markdown" or metadata or line - blank > len(out) + 2:
                out += [""] * max(0, line - blank - len(out) - 3)
                out.append("+++" + (f" {json.dumps(metadata)}" if metadata else ""))
            named.append(len(out) + 2)
            out += ["", *cell.source.split("\n")]
            after = "markdown"
            continue
        directive = "{code-cell} ipython3" if cell.cell_type == "code" else "{raw-cell}"
        # Longer than any backtick run in the code, so that none closes it.
        fence = "`" * (max((len(run) for run in re.findall("`{3,}", cell.source)), default=2) + 1)
        # Its metadata as myst-nb's options, in JSON; one mapping where a key is no name.
        options = [f":{name}: {json.dumps(value, ensure_ascii=False)}"
                   for name, value in metadata.items()]
        if not all(map(_OPTION_NAME.fullmatch, metadata)):
            options = [":" + json.dumps(metadata, ensure_ascii=False)]
        # The reader drops a first blank line (the one after any options), and one at the
        # end of the code after options: each is written twice, so that it reads back.
        code = cell.source.split("\n")
        if metadata and len(code) > 1 and not code[-1]:
            code.append("")
        if not code[0].strip() or (options and code[0].lstrip().startswith(":")):
            options.append("")
        # myst-nb names a code cell at the second line after its fence: its first line of
        # code, where it has no options. Text right above a fence is ended by it, but for
        # an HTML block, which only a blank line ends (any markup in the last block counts).
        html = after == "markdown" and "<" in "\n".join(out).rsplit("\n\n", 1)[-1]
        out += [""] * max(int(html), line - len(out) - 3)
        named.append(len(out) + 3)
        out += [fence + directive, *options, *code, fence]
        after = cell.cell_type
    return out, named


def replace_markers(notebook: nbformat.NotebookNode, marker: re.Pattern,
                    cells_for: Callable[[re.Match], list[nbformat.NotebookNode]]) -> None:
    """Replace each ``marker`` in a markdown cell by the cells ``cells_for`` makes of it."""
    cells = []
    for cell in notebook.cells:
        if cell.cell_type != "markdown" or not marker.search(cell.source):
            cells.append(cell)
            continue

        def piece(start: int, end: int, cell=cell) -> None:
            text = cell.source[start:end]
            if text.strip():
                at = start + len(text) - len(text.lstrip())  # its first character
                cells.append(place_at(nbformat.v4.new_markdown_cell(text.strip()),
                                      line_within(cell, at), cell))

        position = 0
        for found in marker.finditer(cell.source):
            piece(position, found.start())
            cells += [place_at(added, line_within(cell, found.start()), cell)
                      for added in cells_for(found)]
            position = found.end()
        piece(position, len(cell.source))
    notebook.cells = cells


# --- Sections a label names --------------------------------------------------------------

# MyST's label on the line above a heading, ``(pt01-update)=``: how the book names a section
# (the museum's ``taught_in``, the checks' ``taught_in``, ``{ref}`` links).
SECTION_LABEL = re.compile(r"^\((?P<label>[^()\s]+)\)=\n#+ +(?P<title>.*)$", re.M)


@dataclass(frozen=True)
class Section:
    label: str
    title: str  # its heading's text, as written
    line: int  # its heading's line in the author's file (0: none known)


def labelled_sections(notebook: nbformat.NotebookNode) -> list[Section]:
    return [Section(found["label"], found["title"].strip(), line_within(cell, found.start("title")))
            for cell in notebook.cells if cell.cell_type == "markdown"
            for found in SECTION_LABEL.finditer(cell.source)]
