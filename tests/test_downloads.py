"""The student downloads: plain Jupyter notebooks that run top to bottom where students run them.

Two checks, each also seen failing on a planted case:
- *Run all*: a notebook executed in a fresh kernel with its tags stripped and
  ``allow_errors=False``, as Colab's "Run all" does (it ignores tags, stops at the first error);
- *render*: every markdown cell rendered by a CommonMark renderer (markdown-it-py, tables on,
  as Jupyter renders them), with no MyST-only construct left in what a reader sees.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from markdown_it import MarkdownIt
from myst_parser.config.main import MdParserConfig
from nbclient.exceptions import CellExecutionError

from conftest import BOOK, ROOT, TORCH_VERSION, book_machine_kinds, book_museum, sphinx_build
from coursebook.model.machine_kinds import stand_in_kind
from coursebook.model.notebooks import first_line, is_chapter_source, is_claim
from coursebook.model.outputs import normalise
from coursebook.model.recordings import recording_name
from coursebook.model.solutions import markdown_parser
from coursebook.museum.prepare import ERROR_SUMMARY, REVEAL
from coursebook.prepare.chapters import edition_chapter
from coursebook.prepare.editions import Edition
from coursebook.render.downloads import (
    CAUGHT,
    CHECKS_CODE,
    GOES_ON,
    GOES_ON_FOLDED,
    SET_ASIDE_HEADING,
    catching,
    download_document,
    download_notebook,
    block_numbers,
)
from coursebook.render.plain_markdown import PlainMarkdown, Target
from coursebook.verify.chapter_checks import raised_on_purpose
from coursebook.verify.expectations import expectations_path, keyed_cells, read_expectations


def is_caught(cell: nbformat.NotebookNode) -> bool:
    """Whether a download's cell is one :func:`catching` wrapped."""
    return cell.cell_type == "code" and cell.source.startswith(CAUGHT)


def goes_on(raised: tuple[str, ...]) -> dict:
    """The names a caught cell needs, as the download's first cell defines them."""
    namespace: dict = {}
    exec(GOES_ON.format(raised), namespace)
    return namespace


# --- The two checks ---------------------------------------------------------------------

# What a MyST construct leaves in CommonMark's HTML when nothing converted it.
_LEFTOVERS = {
    "a role": re.compile(r"\{[\w:-]+\}<code>"),
    "a directive": re.compile(r'<code class="language-\{'),
    "a colon fence": re.compile(r"^:::", re.M),
    "a target": re.compile(r"^<p>\([\w:.-]+\)=", re.M),
    "a directive option": re.compile(r"^<p>:[\w-]+:", re.M),
    "a block break": re.compile(r"^<p>\+\+\+", re.M),
}


def myst_leftovers(markdown: str) -> list[str]:
    """The MyST constructs a CommonMark reader would see as raw text in ``markdown``."""
    html = MarkdownIt("commonmark").enable("table").render(markdown)
    return [f"{name}: {found.group(0)!r}" for name, pattern in _LEFTOVERS.items()
            for found in pattern.finditer(html)]


_COLAB = re.compile(r"https://colab\.research\.google\.com/github/[^/]+/[^/]+/blob/[^/]+/"
                    r"([^\"'<> ]+)")


def colab_links(html: Path) -> dict[str, list[str]]:
    """Each page's Colab links, as paths inside the published tree."""
    return {page.name: _COLAB.findall(page.read_text(encoding="utf8"))
            for page in sorted(html.glob("*.html"))}


def missing_colab_targets(html: Path) -> list[str]:
    """Colab links whose notebook the deployed tree (``html``, as pushed to gh-pages) lacks."""
    return [link for links in colab_links(html).values() for link in links
            if not (html / link).is_file()]


def printed(cell) -> str:
    return "".join(output.get("text", "") for output in cell.get("outputs", []))


# --- The downloads, derived from the chapters without a build (fast) ---------------------

# The MyST settings of conf.py, which the book's pages are parsed with.
MD_CONFIG = markdown_parser().options["myst_config"]


def _resolve(role: str, target: str) -> Target:
    return Target(f"Title of {target}", f"https://book.example/{target}.html")


def _read_chapters() -> dict[str, nbformat.NotebookNode]:
    """Each chapter read and prepared for the student edition (a new read each call)."""
    chapters = {}
    for path in sorted(BOOK.glob("*.md")):
        text = path.read_text(encoding="utf8")
        if is_chapter_source(text):
            chapters[path.stem] = edition_chapter(text, str(path), Edition.STUDENT,
                                                  book_museum(), TORCH_VERSION,
                                                  machine_kinds=book_machine_kinds()).notebook
    return chapters


_one_read = functools.cache(_read_chapters)


def _chapters() -> dict[str, nbformat.NotebookNode]:
    """A copy of one read of the chapters, for a test to change (a read: ~0.5 s of CPU)."""
    return copy.deepcopy(_one_read())


def _raised(name: str, chapter: nbformat.NotebookNode) -> tuple[str, ...]:
    """The error types a chapter's cells raise on purpose, as a build keeps them
    (:func:`raised_on_purpose`): from its stand-in's recording, or from the error lines of
    its expected outputs for this torch."""
    if recording_name(chapter):
        return raised_on_purpose(_stand_in_recording(recording_name(chapter)).notebook)
    expected = read_expectations(expectations_path(BOOK / "expected", TORCH_VERSION, name))
    return tuple(sorted({re.search(r"(?m)^(\w+Error): ",
                                   expected.by_edition["student"][key]).group(1)
                         for key, cell in keyed_cells(chapter)
                         if "raises-exception" in cell.metadata.get("tags", [])}))


def _download(name: str, chapter: nbformat.NotebookNode,
              markdown: PlainMarkdown | None = None) -> nbformat.NotebookNode:
    return download_notebook(chapter, markdown or PlainMarkdown(_resolve, md_config=MD_CONFIG),
                             _raised(name, chapter))


@pytest.fixture(scope="module")
def downloads() -> dict[str, nbformat.NotebookNode]:
    return {name: _download(name, notebook,
                            PlainMarkdown(_resolve, "https://book.example/p.html", MD_CONFIG))
            for name, notebook in _chapters().items()}


def test_only_the_instructor_download_holds_the_exactness_check(downloads):
    """``self_check.exact`` asserts the instructor's answers are exact: a student download's
    table cell lacks it and still checks; an instructor download's check cells call it."""
    tables = [cell.source for download in downloads.values() for cell in download.cells
              if "def passes(" in cell.source]
    assert tables and not [table for table in tables if "def exact(" in table]
    namespace: dict = {}
    exec(tables[0], namespace)
    assert namespace["CHECKS"] and "passes" in namespace
    text = (BOOK / "pt01.md").read_text(encoding="utf8")
    chapter = edition_chapter(text, "pt01.md", Edition.INSTRUCTOR, book_museum(),
                              TORCH_VERSION,
                              machine_kinds=book_machine_kinds()).notebook
    sources = [cell.source for cell in download_notebook(chapter, PlainMarkdown(_resolve),
                                                         instructor=True).cells]
    assert any("def exact(" in source for source in sources)
    assert any("\nexact(" in source for source in sources)


def needs_the_book(notebook: nbformat.NotebookNode) -> list[str]:
    """First lines of the cells that import the book's own package."""
    return [cell.source.splitlines()[0] for cell in notebook.cells
            if cell.cell_type == "code" and re.search(r"^\s*(from|import) coursebook\b",
                                                       cell.source, re.M)]


def test_no_download_cell_needs_the_books_package(downloads):
    for name, notebook in downloads.items():
        assert needs_the_book(notebook) == [], name


def test_the_package_check_sees_a_planted_import():
    museum = _chapters()["museum-pytorch"]
    assert needs_the_book(museum)  # the book's own checks import it
    for cell in museum.cells:  # planted: the checks no longer marked book-only
        cell.metadata["tags"] = [t for t in cell.metadata.get("tags", []) if t != "book-only"]
    assert needs_the_book(download_notebook(museum, PlainMarkdown(_resolve, md_config=MD_CONFIG)))


def test_every_download_renders_without_myst(downloads):
    converted = 0
    chapters = _chapters()
    for name, notebook in downloads.items():
        written = {c.source.strip() for c in chapters[name].cells if c.cell_type == "markdown"}
        for cell in notebook.cells:
            if cell.cell_type == "markdown":
                assert myst_leftovers(cell.source) == [], (name, cell.source[:200])
                converted += cell.source.strip() not in written
    # each chapter whose prose has MyST had some of it converted (a chapter may have none)
    with_myst = sum(any(myst_leftovers(cell.source) for cell in chapter.cells
                        if cell.cell_type == "markdown") for chapter in _chapters().values())
    assert converted >= with_myst


def test_a_download_cell_carries_no_metadata_of_the_build(downloads):
    """A student's notebook is the subject's: no tag, no cache key, no note of how the build
    made the cell (a caught cell tells itself by its first line: :func:`is_caught`); the cell
    that defines a caught cell's wrapper is shown folded (Colab's and Jupyter's own keys)."""
    for name, notebook in downloads.items():
        assert [dict(c.metadata) for c in notebook.cells
                if c.metadata and c.metadata != GOES_ON_FOLDED] == [], name
        assert set(notebook.metadata) == {"kernelspec", "language_info"}, name
    assert any(is_caught(c) for notebook in downloads.values() for c in notebook.cells)


def test_a_downloads_metadata_holds_no_text_of_the_chapters_top_matter(tmp_path):
    """A chapter's top matter is the build's: the answer an answer cell shows through a
    substitution (`{{ ans }}`), and the page's description, were in the student download."""
    chapter = tmp_path / "chapter.md"
    text = ("---\njupytext:\n  text_representation:\n    format_name: myst\nmyst:\n"
            "  enable_extensions: [colon_fence, dollarmath, amsmath, deflist, "
            "substitution]\n  substitutions:\n"
            "    ans: The answer is a stack along dimension one.\n  html_meta:\n"
            "    description: Why a stack along dimension one.\ntitle: Stacking\n"
            "kernelspec:\n  name: python3\n  display_name: Python 3\n---\n\n# Stacking\n\n"
            "```{code-cell} ipython3\nprint(1)\n```\n\n+++ {\"tags\": [\"answer\"]}\n\n"
            "{{ ans }}\n")
    prepared = edition_chapter(text, str(chapter), Edition.STUDENT, {}, TORCH_VERSION).notebook
    download = download_notebook(prepared, PlainMarkdown(_resolve, md_config=MD_CONFIG))
    assert "dimension one" not in nbformat.writes(download)
    assert set(download.metadata) == {"kernelspec", "language_info"}


def test_a_chapters_download_is_the_same_file_from_every_read_of_it(downloads):
    """nbformat draws a cell's id at random when a chapter is read: a download's ids are the
    book's own, valid for Jupyter and Colab (nbformat's schema, unique), and a code cell's
    is the key of its expected output."""
    for name, chapter in _read_chapters().items():  # read again
        again = _download(name, chapter, PlainMarkdown(_resolve, "https://book.example/p.html",
                                                       MD_CONFIG))
        assert nbformat.writes(again) == nbformat.writes(downloads[name]), name
        nbformat.validate(again)
        ids = [cell.id for cell in again.cells]
        assert len(set(ids)) == len(ids), name
        assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", id_) for id_ in ids), name
        code = [cell.id for cell in again.cells  # the wrapper's cells: the download's own
                if cell.cell_type == "code" and cell.metadata != GOES_ON_FOLDED]
        assert code[len(code) - len(keyed_cells(chapter, downloaded=True)):] == [
            key.replace(".", "-") for key, _ in keyed_cells(chapter, downloaded=True)], name


def test_the_render_check_sees_planted_myst(downloads):
    planted = ("(pt01-x)=\n## A\n\n:::{seealso}\nSee {ref}`pt01`.\n:::\n\n"
               "```{note}\n:class: x\nA note.\n```")
    assert len(myst_leftovers(planted)) >= 4
    raw = [cell.source for chapter in _chapters().values() for cell in chapter.cells
           if cell.cell_type == "markdown"
           and re.search(r"(?<![\w\\])\{[a-z][\w:-]*\}", cell.source)]
    if not raw:
        pytest.skip("no chapter's prose has MyST markup for the check to see")
    assert any(myst_leftovers(source) for source in raw)  # the book's own MyST is seen


def test_cells_that_raise_on_purpose_are_caught_in_downloads_only():
    """With every predict-first cell (``hide-output``), failing or not: the wrapper must not
    tell the reader which of them raise before they run it."""
    chapters = _chapters()
    for name, notebook in chapters.items():
        kept = [c for c in notebook.cells  # a claim's check may raise: it is never downloaded
                if not is_claim(c) and "book-only" not in c.metadata.get("tags", [])]
        wrapped = [c for c in kept
                   if {"raises-exception", "hide-output"} & set(c.metadata.get("tags", []))]
        caught = [c for c in _download(name, notebook).cells if is_caught(c)]
        assert len(caught) == len(wrapped), name
        assert all("raises-exception" not in c.metadata.get("tags", []) for c in caught)
    pt01 = chapters["pt01"].cells
    predict_first = [c for c in pt01 if "hide-output" in c.metadata.get("tags", [])]
    # Both kinds are there to tell apart: cells that raise and cells that do not.
    assert {"raises-exception" in c.metadata.tags for c in predict_first} == {True, False}


def test_a_caught_cell_names_no_error_before_it_runs(downloads):
    """The museum asks "What goes wrong, and why?" over each exhibit's code, and the
    download's wrapper answered half of it before the student ran the cell (`# So that Run
    all goes on to the next cell, a RuntimeError here is printed, not raised.`, `except
    RuntimeError as caught:`; hw3's walk). A caught cell now adds one line that names no
    error; the chapter's types are in the cell that defines it, at the top, which Colab
    (`#@title`, `cellView: form`) and Jupyter (`source_hidden`) show folded."""
    for name, notebook in downloads.items():
        caught = [c.source for c in notebook.cells if is_caught(c)]
        assert caught and not [source for source in caught if "Error" in source], name
        raised = _raised(name, _chapters()[name])
        first = next(c for c in notebook.cells if c.cell_type == "code" and "%pip" not in c.source)
        assert first.source == GOES_ON.format(raised) and first.metadata == GOES_ON_FOLDED, name


def test_a_caught_cell_run_after_a_restart_says_which_cell_to_rerun(downloads):
    """A restart (exhibit 07's fix asks for one) forgets the wrapper, so a caught cell run
    alone stops at a NameError on its first line (hr3's H22): that line, which Python's
    traceback shows, says which cell brings the wrapper back."""
    for name, notebook in downloads.items():
        cell = next(c for c in notebook.cells if is_caught(c))
        with pytest.raises(NameError):
            exec(compile(cell.source, "<cell>", "exec"), {})
        first = cell.source.splitlines()[0]
        assert "restart" in first and "rerun" in first, (name, first)


def test_the_museum_download_states_each_expected_error(downloads):
    cells = downloads["museum-pytorch"].cells
    caught = [i for i, c in enumerate(cells) if is_caught(c)]
    assert caught
    for index in caught:
        note = cells[index + 1]
        assert note.cell_type == "markdown" and "**Expected error.**" not in note.source
        # Collapsed until the student opens it: the error is not read before the prediction.
        assert note.source.startswith(f"<details>\n<summary>{ERROR_SUMMARY}</summary>")
        assert note.source.rstrip().endswith("</details>") and "Error: " in note.source
        # The note says what the cell above does in a download: it prints, it never raises.
        assert "its cell prints it:" in note.source and "cell above raises" not in note.source
        assert "tags" not in note.metadata  # remove-cell hides it in the book only


def test_what_follows_an_exhibits_error_waits_in_its_reveal():
    """Predict, then reveal: in a download as on the page, the answer to an exhibit's "why?"
    (its cause, its fix's note; a captured exhibit's reruns and CPU reproduction too) is in
    the collapsed *The cause and the fix*, and not in view before it."""
    chapters, markdown = _chapters(), PlainMarkdown(_resolve, md_config=MD_CONFIG)
    shown, folded = {}, {}
    for name in ("museum-pytorch", "bridges"):
        sources = [cell.source for cell in _download(name, chapters[name]).cells]
        # The reveal ends its cell (the page folds the rest of the exhibit into it).
        cut = [source.partition(f"<details>\n<summary>{REVEAL}</summary>") for source in sources]
        shown[name] = "\n".join(before for before, _, _ in cut)
        folded[name] = "\n".join(inside for _, _, inside in cut)
    for exhibit in book_museum()["pytorch"].exhibits:
        name = "museum-pytorch" if exhibit.runs_in_every_build else "bridges"
        answers = [exhibit.lesson, exhibit.fix_note, exhibit.museum_rerun
                   and exhibit.museum_rerun.note, exhibit.cpu and exhibit.cpu.note]
        for answer in filter(None, answers):
            start = markdown.convert(answer).splitlines()[0][:60]
            assert start in folded[name] and start not in shown[name], (exhibit.key, start)
    # The .md, read as text, has no cell to run: a running exhibit's fix is kept there too.
    text, _, kept = download_document(chapters["museum-pytorch"], PlainMarkdown(
        _resolve, md_config=MD_CONFIG)).partition(f"\n## {SET_ASIDE_HEADING}\n")
    fixes = [e.fix_code.strip() for e in book_museum()["pytorch"].exhibits
             if e.runs_in_every_build]
    assert fixes and all(fix in kept and fix not in text for fix in fixes)


def test_a_running_exhibits_fix_is_kept_in_its_reveal_whatever_its_place_says(monkeypatch):
    """The .md found the reveal to keep a running exhibit's fix code in by reading again the
    words its place was given (`*The cause and the fix: note 3, at the end of this file.*`):
    reworded, the fix stood in view again, right under the error to predict."""
    from coursebook.render.plain_markdown import PlainMarkdown

    kept_for_the_end = PlainMarkdown.kept_for_the_end
    monkeypatch.setattr(PlainMarkdown, "kept_for_the_end", lambda self, summary, content: (
        kept_for_the_end(self, summary, content).replace("at the end", "after the last cell")))
    text, _, kept = download_document(_chapters()["museum-pytorch"], PlainMarkdown(
        _resolve, md_config=MD_CONFIG)).partition(f"\n## {SET_ASIDE_HEADING}\n")
    fixes = [e.fix_code.strip() for e in book_museum()["pytorch"].exhibits
             if e.runs_in_every_build]
    assert "after the last cell" in text and all(fix in kept and fix not in text
                                                 for fix in fixes)


def test_the_museum_download_tells_how_its_own_layout_shows_the_error(downloads):
    """The page's toggle (*Show the error*) is not in the notebook: its instructions name
    what the notebook has, the cell that prints and the collapsed block's summary."""
    cells = downloads["museum-pytorch"].cells
    before = " ".join(c.source
                      for c in cells[:next(i for i, c in enumerate(cells) if is_caught(c))])
    before = re.sub(r"\s+", " ", before)
    assert "Show the error" not in before and ERROR_SUMMARY in before


@pytest.mark.parametrize("name", ["pt01", "museum-pytorch", "bridges"])
def test_a_md_download_is_a_document_that_keeps_each_collapsed_block_for_the_end(name):
    """Read as text, a `<details>` block is open: the .md download (issue 44, R3's read) sets
    each one aside after the last cell, where it says; no notebook top matter or directive."""
    chapter = _chapters()[name]
    markdown = PlainMarkdown(_resolve, "https://book.example/p.html", MD_CONFIG)
    document = download_document(chapter, markdown)
    assert "<details" not in document and "</details>" not in document
    assert not re.search(r"(?m)^(---$|jupytext:|\+\+\+)|\{code-cell\}", document)
    text, _, kept = document.partition(f"\n## {SET_ASIDE_HEADING}\n")
    # The notebook's collapsed blocks, and its table of checks (a code cell there): each
    # named, in its order, by what the document's text holds in its place; a block inside
    # one (an error note in an exhibit's reveal) is read there, in place.
    depth, summaries, inside = 0, [], []
    for found in re.finditer(r"<(/?)details>|<summary>(.*?)</summary>|^CHECKS: dict", "".join(
            c.source for c in download_notebook(chapter, markdown).cells), re.M):
        depth += {"": 1, "/": -1}.get(found[1], 0)
        if found[1] is None:
            (summaries if depth <= 1 else inside).append(found[2] or CHECKS_CODE)
    assert summaries and len(re.findall(r"(?m)^### Note \d+: ", kept)) == len(summaries)
    assert all(f"*{summary}:*" in kept for summary in inside)
    assert (name == "bridges") == bool(inside)  # its captured exhibits: notes in the reveal
    for number, summary in enumerate(summaries, 1):
        assert f"*{summary}: note {number}, at the end of this file.*" in text
    # The table's hundreds of lines of digests stopped the text where the checks start
    # (pt01: 314 lines between the note on checks and the first check).
    assert "CHECKS: dict" not in text and ("CHECKS: dict" in kept) == (CHECKS_CODE in summaries)
    assert name == "museum-pytorch" or CHECKS_CODE in summaries
    if name == "museum-pytorch":  # each error to predict is in the kept notes, not the text
        for error in re.findall(r"```text\n(\w+Error: [^\n]+)", kept):
            assert error not in text, error


def test_the_answer_audit_finds_no_answer_in_the_downloads(downloads, tmp_path):
    """The downloads as `make audit` reads them: no answer passage, the wrappers' words
    included (they once read 'except RuntimeError as error: print(', the idiom of a PT01
    answer, and the audit found a leak in PT01's and the museum's downloads)."""
    from coursebook.audit.answer_leaks import audit_build, chapter_fingerprints

    for name, notebook in downloads.items():
        nbformat.write(notebook, tmp_path / f"{name}.ipynb")
    assert any(is_caught(c) for notebook in downloads.values() for c in notebook.cells)
    assert audit_build(tmp_path, chapter_fingerprints(BOOK, ROOT / "exhibits")) == []


def test_a_caught_cell_prints_the_error_and_keeps_multiline_strings(capsys):
    source = 'text = """\nfirst\n  second"""\nraise ValueError(text.splitlines()[2])\n'
    exec(compile(catching(source), "<cell>", "exec"), goes_on(("ValueError",)))
    assert capsys.readouterr().out == "ValueError:   second\n"


def test_a_blank_that_is_no_python_is_downloaded_as_it_is():
    """A lab's blank, `x = # TODO` (MIT's lab 1), comes in tagged `raises-exception` (a
    SyntaxError): the download wrapped it in try/except under the note that Run all goes on,
    yet a wrapped cell that does not compile stops Run all there all the same, the student's
    blank buried in the try. It is left as it is; a cell with IPython's syntax is still caught."""
    from IPython.core.inputtransformer2 import TransformerManager

    tags = {"tags": ["raises-exception"]}
    chapter = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("t = [1, 2]\nx = # TODO: the mean of t", metadata=tags),
        nbformat.v4.new_code_cell("%time y = 1\nraise ValueError(y)", metadata=tags)])
    cells = download_notebook(chapter, PlainMarkdown(_resolve, md_config=MD_CONFIG),
                              ("SyntaxError", "ValueError")).cells[1:]  # after the wrapper's
    assert cells[0].source == chapter.cells[0].source, cells[0].source
    assert is_caught(cells[1]), cells[1].source
    compile(TransformerManager().transform_cell(cells[1].source), "<cell>", "exec")


def test_a_students_failing_assert_in_a_caught_cell_reaches_them(capsys):
    """PT01's section 3 asks the student to fix the cell and assert that each example's
    probabilities sum to one; the download wraps that predict-first cell. A failing assert
    the student adds there is raised, with its message (the wrapper once printed it as one
    more line, and Run all went on); the cell as given still prints and goes on."""
    import torch

    cells = _download("pt01", _chapters()["pt01"]).cells
    cell = next(c for c in cells if is_caught(c) and "scores.softmax(dim=0)" in c.source)
    scope = {"torch": torch, **goes_on(("RuntimeError",))}
    exec(compile(cell.source, "<cell>", "exec"), {**scope})
    assert "Predicted classes:" in capsys.readouterr().out
    mine = ("    assert torch.allclose(suspect_probabilities.sum(dim=1), torch.ones(3)), "
            "'each example sums to one'\n")
    planted = cell.source.replace("\n\n# ", "\n" + mine + "\n# ", 1)  # last in the block
    assert planted != cell.source
    with pytest.raises(AssertionError, match="each example sums to one"):
        exec(compile(planted, "<cell>", "exec"), {**scope})
    capsys.readouterr()
    # An error the cell as given raises on purpose is printed, as before.
    raising = catching("import torch\ntorch.ones(2) @ torch.ones(3)")
    exec(compile(raising, "<cell>", "exec"), {**scope})
    assert capsys.readouterr().out.startswith("RuntimeError: ")


@pytest.mark.parametrize("name, cell_text", [("pt01", "scores.softmax(dim=0)"),
                                              ("museum-pytorch", "x += 1")])
@pytest.mark.parametrize("mine, error", [
    ("print(suspect_probabilitys)", NameError),  # a typo
    ("print(torch.ones(2).sum(dim='one'))", TypeError),
])
def test_an_error_of_the_students_own_in_a_caught_cell_reaches_them_whole(
        name, cell_text, mine, error):
    """A caught cell prints only the error types its chapter's cells raise on purpose (the
    wrapper once printed any error as one line, and Run all went on): an error of another
    type the student causes there, a typo's NameError or a TypeError of theirs, is raised
    whole, with its traceback, and Run all stops at it, as anywhere else."""
    import torch

    chapter = _chapters()[name]
    cell = next(c for c in _download(name, chapter).cells
                if is_caught(c) and cell_text in c.source)
    planted = cell.source.replace(CAUGHT, f"{CAUGHT}    {mine}\n", 1)  # before the book's error
    assert planted != cell.source
    with pytest.raises(error):
        exec(compile(planted, "<cell>", "exec"),
             {"torch": torch, **goes_on(_raised(name, chapter))})


def test_a_student_writes_under_a_caught_cells_last_comment_at_the_left_margin(capsys):
    """PT01's challenges and detective cases end in a comment that says where the student's
    code goes (`# Write the corrected errors and MSE, then add your assertions.`). The
    download's wrapper once indented that comment into its try, so code typed under it at the
    left margin, as anywhere else, made the cell a SyntaxError ('expected 'except' or
    'finally' block'). The closing comments now follow the wrapper; the code above it is
    caught as before."""
    import torch

    cells = [c for c in _download("pt01", _chapters()["pt01"]).cells if is_caught(c)]
    cell = next(c for c in cells if "suspect_errors = predictions - targets" in c.source)
    mine = "errors = predictions.squeeze(-1) - targets\nprint('mine:', errors.tolist())\n"
    note = "# Write the corrected errors and MSE, then add your assertions."
    typed = cell.source.replace(note, f"{note}\n{mine}", 1)  # right under it, as in Colab
    assert typed != cell.source
    exec(compile(typed, "<cell>", "exec"), {"torch": torch, **goes_on(("RuntimeError",))})
    assert "mine: [1.0, 0.0, -1.0]" in capsys.readouterr().out
    # Each of the seven such cells ends in its comment, at the left margin.
    placed = [c for c in cells if c.source.rstrip().splitlines()[-1].startswith("# ")]
    assert len(placed) == 7, [c.source for c in cells]
    # A cell of comments alone has nothing to catch: it stays as it is.
    assert catching("# only a note\n") == "# only a note\n"
    # A closing comment inside a block (a loop's, a def's) stays in its block, in the try:
    # the student's line under it, indented as it is, runs in the loop (hr3's H3).
    note = "    # Your version here: add x squared to total"
    loop = catching(f"total = 0\nfor x in [1, 2]:\n    total += x\n\n{note}\n")
    scope = goes_on(("RuntimeError",))
    shown = next(line for line in loop.splitlines() if line.strip() == note.strip())
    typed = loop.replace(shown, f"{shown}\n{shown[:shown.index('#')]}total += x * x", 1)
    exec(compile(typed, "<cell>", "exec"), scope)
    assert scope["total"] == 8, loop


def test_a_build_keeps_the_error_types_a_chapters_cells_raise_on_purpose():
    """What the downloads catch: the errors of ``raises-exception`` cells, each type once."""
    def cell(ename: str, *tags: str):
        return nbformat.v4.new_code_cell("x", metadata={"tags": list(tags)}, outputs=[
            nbformat.v4.new_output("error", ename=ename, evalue="m", traceback=[])])

    notebook = nbformat.v4.new_notebook(cells=[
        cell("TypeError", "raises-exception"),
        cell("RuntimeError", "hide-output", "raises-exception"),
        cell("TypeError", "raises-exception"), cell("ValueError", "hide-output")])
    assert raised_on_purpose(notebook) == ("RuntimeError", "TypeError")
    assert raised_on_purpose(nbformat.v4.new_notebook()) == ()


def test_cross_references_become_links_or_titles():
    def resolve(role, target):
        return Target("Updating the parameters", "") if target == "pt01-update" else None

    plain = PlainMarkdown(resolve, md_config=MD_CONFIG).convert(
        "(x)=\n# T\n\nSee {ref}`pt01-update` and {ref}`gone`.")
    assert plain == "# T\n\nSee Updating the parameters and gone."
    linked = PlainMarkdown(_resolve, md_config=MD_CONFIG).convert(
        "See {ref}`the update <pt01-update>`.")
    assert linked == "See [the update](https://book.example/pt01-update.html)."
    # A role named with Sphinx's default domain is the role (HR's F16: {std:doc} was left bare),
    # as the downloads' resolve tells a page ("doc") from sphinx-proof's "prf:ref".
    intro = PlainMarkdown(lambda role, target: Target("Intro", "u") if role == "doc" else None,
                          md_config=MD_CONFIG).convert("{doc}`intro`, {std:doc}`intro`.")
    assert intro == "[Intro](u), [Intro](u)."


@pytest.mark.slow
def test_an_equation_and_a_download_read_as_the_page_shows_them(tmp_path):
    """A chapter's {eq} came out as its label (`Equation eq-sym`, the page: `(1)`) and its
    {download} of a data file as bare text, the file the download's cells read nowhere (HL3)."""
    from sphinx.application import Sphinx

    from coursebook.render.downloads import markdown_for

    # A source_suffix of its own: myst-parser adds `.md` to Sphinx's default dict in place, so
    # every later Sphinx of this process (a pytest worker's book reads) lacked its parser.
    (tmp_path / "conf.py").write_text('extensions = ["myst_parser"]\nnumfig = True\n'
                                      'source_suffix = {".md": "markdown"}\n'
                                      'html_baseurl = "https://book.example/"\n')
    (tmp_path / "data.csv").write_text("1,2\n")
    (tmp_path / "index.md").write_text("# T\n\n```{math}\n:label: e-one\nx = 1\n```\n\n"
                                       "Read {download}`data.csv`.\n")
    app = Sphinx(tmp_path, tmp_path, tmp_path / "_build", tmp_path / "_doctrees", "html",
                 status=None, warning=None, freshenv=True)
    app.build()
    plain = markdown_for(app, "index").convert("By {eq}`e-one`, {download}`the data <data.csv>`.")
    assert re.fullmatch(r"By \[\(1\)\]\(https://book\.example/index\.html#equation-e-one\), \[the "
                        r"data\]\(https://book\.example/_downloads/\w+/data\.csv\)\.", plain), plain


def test_the_books_other_pages_download_as_plain_markdown():
    """A page that is no chapter (the glossary, the contents) downloads as plain Markdown,
    as the chapters do: no role, directive or label of MyST; a glossary keeps each term and
    its definition."""
    convert = PlainMarkdown(_resolve, "https://book.example/p.html", MD_CONFIG).convert
    glossary = convert((BOOK / "glossary.md").read_text())
    assert "**broadcasting**\n\nHow PyTorch combines two tensors" in glossary
    assert "[Title of pt01-batched](https://book.example/pt01-batched.html)" in glossary
    for page in (glossary, convert((BOOK / "index.md").read_text())):
        assert not re.search(r"\{[a-z-]+\}|^\(\S+\)=|^(```|:::)", page, re.M), page[:300]
    assert convert("```{glossary}\nterm one\n  Its {term}`other`.\n\nterm two\n  Two.\n```") \
        == ("**term one**\n\nIts [Title of other](https://book.example/other.html).\n\n"
            "**term two**\n\nTwo.")


def test_directives_become_markdown_a_reader_sees():
    convert = PlainMarkdown(_resolve, "https://book.example/p.html", MD_CONFIG).convert
    assert convert(":::{seealso}\nIn the museum.\n:::") == "> **See also**\n>\n> In the museum."
    assert convert("```{admonition} Careful\n:class: tip\nText.\n```") \
        == "> **Careful**\n>\n> Text."
    assert convert("```{only} latex\nprint\n```\n\n```{only} html\nscreen\n```") == "screen"
    assert convert("```{only} not latex\nscreen\n```") == "screen"
    assert convert("```{only} builder_html and format_html\nscreen\n```") == "screen"  # Sphinx's
    assert convert("::::{grid} 2\n:::{grid-item-card} 01/02\n:link: a\n:link-type: ref\n\n"
                   "First\n:::\n::::") \
        == "**[01/02](https://book.example/a.html)** · First"
    assert convert("````{dropdown} The error\n```text\nE: m\n```\n````") \
        == "<details>\n<summary>The error</summary>\n\n```text\nE: m\n```\n\n</details>"
    assert convert(":::{dropdown} A <b>\n:open:\nText.\n:::") \
        == "<details open>\n<summary>A &lt;b&gt;</summary>\n\nText.\n\n</details>"
    # sphinx-design's tabs (a Jupyter Book lesson's PyTorch / JAX): each label was dropped,
    # leaving two bodies with nothing to tell them apart; a rubric lost its whole text.
    assert convert("::::{tab-set}\n:::{tab-item} PyTorch\nTensors.\n:::\n:::{tab-item} JAX\n"
                   ":sync: jax\nArrays.\n:::\n::::") \
        == "**PyTorch**\n\nTensors.\n\n**JAX**\n\nArrays."
    assert convert("```{rubric} Further reading\n```") == "**Further reading**"
    assert convert("::::{grid} 1 2 2 2\n:::{grid-item}\nA cell.\n:::\n::::") == "A cell."
    assert convert("```{mermaid}\ngraph\n```") == "*[Shown on the book's page](https://book.example/p.html).*"
    assert convert("Math $x^2$ and {math}`y`.\n\n$$\na\n$$") == "Math $x^2$ and $y$.\n\n$$\na\n$$"


def test_exercises_index_entries_and_labels_download_as_the_page_shows_them():
    """A lecture's sphinx-exercise blocks (QuantEcon's): each exercise numbered in page order, as
    the page numbers it (a gated one's end, index entries and a notebook-only raw block show
    nothing there); `[text](label)` links the label, as MyST does."""
    def resolve(role, target):
        return _resolve(role, target) if target == "ex-a" else None

    convert = PlainMarkdown(resolve, "https://book.example/p.html", MD_CONFIG).convert
    assert convert("```{exercise}\n:label: ex-a\nSquare it.\n```") == "**Exercise 1**\n\nSquare it."
    assert convert("```{exercise-start} Cubes\n:label: b\n```\n\nCube it.\n\n"
                   "```{exercise-end}\n```") == "**Exercise 2 (Cubes)**\n\nCube it."
    assert convert("```{exercise}\n:nonumber:\nOne.\n```") == "**Exercise**\n\nOne."
    assert convert("```{solution-start} ex-a\n:class: dropdown\n```\n\nIt.\n\n"
                   "```{solution-end}\n```") == "**Solution**\n\nIt."
    assert convert("```{raw} jupyter\n<div>Logo</div>\n```\n\n# T\n\n"
                   "```{index} single: Python; def\n```") == "# T"
    assert convert("```{raw} html\n<div>Logo</div>\n```") == "<div>Logo</div>"
    assert convert("See [Exercise 1](ex-a), [the data](data.csv).") \
        == "See [Exercise 1](https://book.example/ex-a.html), [the data](data.csv)."
    # In a book, the numbers are the page's (HR's F21): numfig counts on across the pages in
    # reading order, so a second chapter's first exercise is not Exercise 1.
    env = SimpleNamespace(toc_fignumbers={"b": {"exercise": {"b1": (4,), "b-exercise-1": (3,)},
                                                "figure": {"f": (9,)}}})
    assert block_numbers(env, "b") == {"exercise": ["3", "4"], "figure": ["9"]}
    assert block_numbers(env, "a") == {}
    convert = PlainMarkdown(resolve, "", MD_CONFIG, numbers={"exercise": iter(["3", "4"])}).convert
    assert [convert(f"```{{exercise}}\n{options}\nIt.\n```") for options in (
        "", ":nonumber:", ":label: b1")] == ["**Exercise 3**\n\nIt.", "**Exercise**\n\nIt.",
                                             "**Exercise 4**\n\nIt."]


def test_theorems_and_proofs_download_as_the_page_shows_them():
    """sphinx-proof's blocks (NTNU's, QuantEcon's lectures) were 'Shown on the book's page'
    links in a download, and a `{prf:ref}` its label (`thm-chain`): now each block numbered by
    its kind, as the page numbers it, its proof as sphinx-proof writes one, a reference its
    title and link."""
    def resolve(role, target):
        return Target("Theorem 2", "https://book.example/p.html#thm") if role == "prf:ref" \
            and target == "thm" else None

    convert = PlainMarkdown(resolve, "", MD_CONFIG, numbers={"theorem": iter(["2"]),
                                                             "definition": iter(["5"])}).convert
    assert convert(":::{prf:theorem} Chain rule\n:label: thm\nIt holds.\n:::\n\n"
                   ":::{prf:proof}\nBy $x$.\n:::\n\n```{prf:definition}\nA word.\n```\n\n"
                   ":::{prf:remark}\n:nonumber:\nAside.\n:::\n\nAs {prf:ref}`thm` says.") == (
        "**Theorem 2 (Chain rule)**\n\nIt holds.\n\n*Proof.* By $x$.\n\n**Definition 5**\n\n"
        "A word.\n\n**Remark**\n\nAside.\n\nAs [Theorem 2](https://book.example/p.html#thm) says.")


# Each syntax extension myst-parser offers (a chapter's top matter may turn any on), but
# linkify, which needs a package the book does not install.
EVERY_EXTENSION = {"alert", "amsmath", "attrs_block", "attrs_inline", "colon_fence", "deflist",
                   "dollarmath", "fieldlist", "gfm_autolink", "html_admonition", "html_image",
                   "replacements", "section_ref", "smartquotes", "strikethrough", "substitution",
                   "tasklist"}
_SECOND_PARAGRAPH_FOOTNOTE = "Said.[^a] Again.[^a]\n\n[^a]: A *note*.\n\n    Its second paragraph."


@pytest.mark.parametrize("source, plain", [
    (_SECOND_PARAGRAPH_FOOTNOTE, _SECOND_PARAGRAPH_FOOTNOTE),  # once a KeyError: 'footnote_ref'
    ("Term\n: Its definition.", "**Term**\n\nIts definition."),
    ("| l | r | c | n |\n|:--|--:|:-:|---|\n| 1 | 2 | 3 | 4 |",
     "| l | r | c | n |\n| :-- | --: | :-: | --- |\n| 1 | 2 | 3 | 4 |"),
    ("- [ ] to do\n- [x] done", "- [ ] to do\n- [x] done"),
    ("Both {math}`x^2` and $y$.", "Both $x^2$ and $y$."),
    ("<div>\n\nIn *HTML*.\n\n</div>", "<div>\n\nIn *HTML*.\n\n</div>"),
    ("[](#pt01-update), [it](#pt01-update), [](glossary.md), [a heading](#a-heading)",
     ("[Title of pt01-update](https://book.example/pt01-update.html), "
      "[it](https://book.example/pt01-update.html), "
      "[Title of glossary.md](https://book.example/glossary.md.html), [a heading](#a-heading)")),
])
def test_ordinary_markup_downloads_as_the_page_shows_it(source, plain):
    def resolve(role, target):  # a heading's own anchor is no label: Jupyter follows it
        return None if target == "a-heading" else _resolve(role, target)

    for config in (MD_CONFIG, MdParserConfig(enable_extensions=EVERY_EXTENSION)):
        assert PlainMarkdown(resolve, md_config=config).convert(source) == plain


def test_the_syntax_of_myst_extensions_downloads_as_the_page_shows_it():
    convert = PlainMarkdown(_resolve, md_config=MdParserConfig(
        enable_extensions=EVERY_EXTENSION, substitutions={"name": "Ada", "list": "- one"})).convert
    assert convert("Hi {{ name }}, {{ name | upper }}, {{ gone }}.\n\n{{ list }}") \
        == "Hi Ada, ADA, {{gone}}.\n\n- one"  # myst-parser warns at an unknown name
    assert convert("~~wrong~~ [right]{.cls}") == "~~wrong~~ right"
    assert convert(":name: value") == "**name**\n\nvalue"
    # a target or comment inside a definition leaves no empty block, as at the top level
    assert convert("Term\n: First.\n\n  (a-label)=\n\n  % a note\n\n  Second.") \
        == "**Term**\n\nFirst.\n\nSecond."
    assert convert("> [!WARNING]\n> Careful.") == "> **Warning**\n>\n> Careful."


@pytest.mark.slow
def test_a_chapters_footnote_and_top_matter_syntax_reach_its_download(tiny_book, tmp_path):
    """A footnote once stopped the build with a traceback (the download's converter had no
    renderer); syntax the chapter's top matter turns on is read by the download too."""
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text().replace(
        "kernelspec:", "myst:\n  enable_extensions: [colon_fence, dollarmath, amsmath, deflist, "
        "substitution]\n  substitutions: {name: Ada}\nkernelspec:", 1).replace(
        "A worked example.", "An example by {{ name }}.[^a]\n\n[^a]: A note."))
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert build.returncode == 0 and "Traceback" not in build.log, build.log[-3000:]
    download = nbformat.read(tmp_path / "out" / "html" / "_sources" / "chapter.ipynb", as_version=4)
    assert "An example by Ada.[^a]\n\n[^a]: A note." in [cell.source for cell in download.cells]


@pytest.mark.slow  # Run all in two kernels
def test_run_all_stops_at_a_planted_error_and_passes_once_caught(tmp_path):
    from verify_runtime import run_all

    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1\nx += 'a'", metadata={"tags": ["raises-exception"]}),
        nbformat.v4.new_code_cell("print('last cell')")])
    with pytest.raises(CellExecutionError):
        run_all(notebook, tmp_path)  # the tag does not help: Run all ignores it
    notebook.cells[0].source = catching(notebook.cells[0].source)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(GOES_ON.format(("TypeError",))))
    ran = run_all(notebook, tmp_path)
    assert printed(ran.cells[1]).startswith("TypeError: unsupported operand")
    assert printed(ran.cells[2]) == "last cell\n"


def test_the_colab_check_sees_a_link_to_a_missing_notebook(tmp_path):
    (tmp_path / "_sources").mkdir()
    (tmp_path / "_sources" / "a.ipynb").write_text("{}")
    link = "https://colab.research.google.com/github/org/labs/blob/gh-pages/_sources/{}.ipynb"
    (tmp_path / "a.html").write_text(f'<a href="{link.format("a")}">Colab</a>')
    assert missing_colab_targets(tmp_path) == []
    (tmp_path / "b.html").write_text(f'<a href="{link.format("b")}">Colab</a>')
    assert missing_colab_targets(tmp_path) == ["_sources/b.ipynb"]


# --- A recorded chapter's download, in its stand-in's environment (make test-recording) ----

# Set by `make test-recording`, once the recording check has made the stand-in's environment.
STAND_IN = os.environ.get("COURSEBOOK_STAND_IN") == "1"


def _stand_in_kernel(python: Path, tmp_path: Path, monkeypatch) -> str:
    """A kernel of that Python with none of the stand-in's variables: a bare runtime's."""
    spec = tmp_path / "jupyter" / "kernels" / "stand-in"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "stand-in", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    for name in ("PJRT_DEVICE", "JAX_PLATFORMS", "PJRT_SELECT_DEFAULT_DEVICE"):
        monkeypatch.delenv(name, raising=False)
    return "stand-in"


def _recorded_downloads(downloads) -> dict[str, nbformat.NotebookNode]:
    """Each recorded chapter's download, by its recording's name."""
    return {recording_name(chapter): downloads[name] for name, chapter in _chapters().items()
            if recording_name(chapter)}


def test_a_recorded_download_is_cut_before_each_restart_cell(downloads):
    """As a runtime with the device runs it: each restart cell begins a part of its own."""
    from verify_runtime import after_restarts

    from coursebook.model.notebooks import RESTART_TAG

    for chapter in (c for c in _chapters().values() if recording_name(c)):
        download = _recorded_downloads(downloads)[recording_name(chapter)]
        restarts = [c for _, c in keyed_cells(chapter) if RESTART_TAG in c.metadata.get("tags", [])]
        parts = after_restarts(download, chapter)
        assert restarts and len(parts) == len(restarts) + 1
        assert [next(c for c in part.cells if c.cell_type == "code").source
                for part in parts[1:]] == [c.source for c in restarts]
        assert [c for part in parts for c in part.cells] == download.cells
        # A part runs in a new process: it defines the caught cells' wrapper again, first.
        for part in parts:
            caught = [i for i, c in enumerate(part.cells) if is_caught(c)]
            assert not caught or any(c.source.startswith(GOES_ON.partition("\n")[0])
                                     for c in part.cells[:caught[0]])
        assert any(is_caught(c) for c in parts[-1].cells)


def _stand_in_recording(name: str):
    from coursebook.model.recordings import load_recording, recording_path

    stand_in = stand_in_kind(book_machine_kinds().values())
    return load_recording(recording_path(BOOK / "recordings", name, stand_in.name), stand_in)


def test_the_recording_comparison_names_each_cell_that_differs():
    """Fed the recording's own outputs, nothing differs; one recorded output changed, and
    the comparison names that cell; a cell missing, and it says the download is stale."""
    from verify_runtime import recording_differences

    for chapter in (c for c in _chapters().values() if recording_name(c)):
        recording = _stand_in_recording(recording_name(chapter))
        outputs = recording.outputs_by_source()
        kept = keyed_cells(chapter, downloaded=True)  # a download cell's id is its cell's key
        ran = [nbformat.v4.new_code_cell(outputs=outputs[c.source], id=key.replace(".", "-"))
               for key, c in kept]
        assert recording_differences(chapter, ran, recording) == []
        assert recording_differences(chapter, ran[::-1], recording) == []  # by id, not place
        changed = copy.deepcopy(recording.notebook)
        printing = next(c.source for _, c in kept if outputs[c.source])
        cell = next(c for c in changed.cells if c.cell_type == "code" and c.source == printing)
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="planted\n")]
        found = recording_differences(chapter, ran, type(recording)(recording.machine,
                                                                    recording.path, changed))
        assert len(found) == 1 and found[0].startswith(f"`{cell.source.splitlines()[0]}` printed")
        assert "rebuild it" in recording_differences(chapter, ran[:-1], recording)[0]
        removed = nbformat.v4.new_code_cell("print('a cell the chapter no longer has')", id="0ld")
        [stale] = recording_differences(chapter, [*ran, removed], recording)
        assert "no longer has: `print('a cell" in stale and "rebuild it" in stale, stale


def test_a_stale_recorded_download_is_one_line_before_anything_runs(tmp_path):
    """A recorded chapter's download that lacks one of its cells, checked against its
    recording (`make verify-runtime`, `make test-recording`): one line saying to rebuild it,
    before any kernel runs (its cells cannot be paired to cut it at the restarts)."""
    from verify_runtime import check_recorded_download

    name, chapter = next((n, c) for n, c in _chapters().items() if recording_name(c))
    cells = [nbformat.v4.new_code_cell(c.source, id=key.replace(".", "-"))
             for key, c in keyed_cells(chapter, downloaded=True)]
    stale = nbformat.v4.new_notebook(cells=cells[:-1])
    found = check_recorded_download(name, chapter, stale,
                                    _stand_in_recording(recording_name(chapter)),
                                    "no-kernel-runs", tmp_path)
    assert len(found) == 1 and found[0].startswith(f"{name}.ipynb: the download lacks the code "
                                                   f"cell `{first_line(cells[-1])}`"), found
    assert "rebuild it (`make html`)" in found[0], found


@pytest.mark.slow
@pytest.mark.skipif(not STAND_IN, reason="run by `make test-recording`, in the stand-in's "
                    "environment (COURSEBOOK_STAND_IN=1)")
def test_a_recorded_chapters_download_prints_its_stand_in_recording_cell_by_cell(
        downloads, tmp_path, monkeypatch):
    """As Colab's Run all on a runtime without the device (its first cell sets the bridges to
    the CPU), and as a runtime with the device runs it after each restart (every part in a
    new kernel): every cell prints what the stand-in's recording holds. The part after a
    restart never holds the module it restarts for."""
    from verify_runtime import after_restarts, check_recorded_download, run_all, stand_in_python

    kinds = book_machine_kinds()
    chapters = {recording_name(c): c for c in _chapters().values() if recording_name(c)}
    recorded = _recorded_downloads(downloads)
    assert recorded
    for name, notebook in recorded.items():
        kernel = _stand_in_kernel(stand_in_python(name, kinds), tmp_path, monkeypatch)
        recording = _stand_in_recording(name)
        parts = after_restarts(notebook, chapters[name])
        assert len(parts) > 1, name  # the chapter restarts before its second bridge
        assert check_recorded_download(name, chapters[name], notebook, recording, kernel,
                                       tmp_path) == [], name
        # The last part alone, in a new kernel, as after the restart: then what it holds.
        last = copy.deepcopy(parts[-1])
        last.cells.append(nbformat.v4.new_code_cell(
            "import sys\nprint(sorted(m for m in ('torchax', 'jax') if m in sys.modules))"))
        assert printed(run_all(last, tmp_path, kernel).cells[-1]) == "[]\n", name


# --- The downloads of a real student build (slow) ----------------------------------------

def _student_downloads(built) -> dict[str, Path]:
    sources = built["student"].outdir / "html" / "_sources"
    return {path.name.removesuffix(".ipynb"): path for path in sorted(sources.glob("*.ipynb"))}


@pytest.mark.slow
def test_every_student_download_runs_all_and_shows_each_lesson(built, tmp_path):
    """Run all reaches the last cell; each caught cell prints the error the book shows."""
    from verify_runtime import run_all

    downloads = _student_downloads(built)
    chapters = {p.stem: p for p in BOOK.glob("*.md") if is_chapter_source(p.read_text())}
    assert set(downloads) == set(chapters)
    pt01 = ""  # what pt01 printed
    for name, path in downloads.items():
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        chapter = edition_chapter(chapters[name].read_text(), str(chapters[name]),
                                  Edition.STUDENT, book_museum(), TORCH_VERSION,
                                  machine_kinds=book_machine_kinds()).notebook
        if recording_name(chapter):
            # Recorded: `make test-recording` runs it, in the stand-in's environment; here it
            # must hold the chapter's code.
            code = [c for c in notebook.cells  # the caught cells' wrapper: the download's own
                    if c.cell_type == "code" and c.metadata != GOES_ON_FOLDED]
            assert len(code) == len(keyed_cells(chapter, downloaded=True)) > 0, name
            continue
        # What the book shows for each cell that raises on purpose: its verified output.
        expected = read_expectations(expectations_path(BOOK / "expected", TORCH_VERSION, name))
        raising = [(key, cell) for key, cell in keyed_cells(chapter)
                   if "raises-exception" in cell.metadata.get("tags", [])]
        shown = [expected.by_edition["student"][key] for key, _ in raising]
        ran = run_all(notebook, tmp_path)
        # A predict-first cell that does not raise is caught too: its output is no error.
        caught_sources = {catching(cell.source) for _, cell in raising}
        caught = [c for c in ran.cells if is_caught(c) and c.source in caught_sources]
        assert shown and [normalise(printed(c)).strip() for c in caught] == shown, name
        if name == "pt01":
            pt01 = "".join(map(printed, ran.cells))
    # Its exercise's check, run without the answer the student writes.
    assert "Write sum_diagonals first." in pt01


@pytest.mark.slow
def test_every_student_download_renders_without_myst(built):
    for name, path in _student_downloads(built).items():
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                assert myst_leftovers(cell.source) == [], (name, cell.source[:200])


@pytest.mark.slow
def test_colab_links_point_into_the_deployed_tree(built):
    """With the repository configured, each Colab link opens a file of _build/student/html."""
    root = built["student"].outdir.parent
    # From the student build's doctrees: both settings are `html` ones, so the pages are
    # written again, not read again (a whole read of the book: about 3 s of CPU).
    shutil.copytree(built["student"].outdir / "doctrees", root / "published" / "doctrees")
    build = sphinx_build(BOOK, root / "published", root / "cache", settings={
        "coursebook_repository_url": "https://github.com/org/labs",
        "html_baseurl": "https://org.github.io/labs"})
    assert build.returncode == 0, build.log[-3000:]
    html = build.outdir / "html"
    linked = {page for page, links in colab_links(html).items() if links}
    assert linked == {f"{name}.html" for name in _student_downloads(built)}
    assert missing_colab_targets(html) == []
    pt01 = nbformat.read(html / "_sources" / "pt01.ipynb", as_version=4)
    assert ("](https://org.github.io/labs/museum-pytorch.html#"
            in "".join(c.source for c in pt01.cells))


@pytest.mark.slow
def test_only_the_instructor_footer_stamps_torch_commit_and_date(built):
    """The student's footer says nothing of the build (no stamp, no "Last updated"); the
    torch, the recording, the commit and the date are the instructor edition's."""
    html = built["student"].outdir / "html"
    for page in ("pt01.html", "bridges.html", "index.html"):
        text = (html / page).read_text(encoding="utf8")
        assert 'class="build-stamp"' not in text and "Last updated" not in text, page
    recorded = (built["instructor"].outdir / "html" / "bridges.html").read_text(encoding="utf8")
    assert 'class="build-stamp">Outputs recorded with torch' in recorded
    instructor = (built["instructor"].outdir / "html" / "pt01.html").read_text(encoding="utf8")
    assert re.search(rf'class="build-stamp">Executed with torch {re.escape(TORCH_VERSION)}; '
                     r"built from (commit \w+|a copy outside git)[^<]* on \d{4}-\d\d-\d\d\.<",
                     instructor)


# A chapter that glues (myst-nb's glue): a value, a formatted one, a word kept out of the
# cell's output, an equation and a figure, each pasted into the prose; glue imported by a
# book-only cell, and the module by the cell.
GLUE_IMPORTS = """```{code-cell} ipython3
:tags: [book-only]
from myst_nb import glue
```"""
GLUE_CELL = """import myst_nb
import matplotlib.pyplot as plt
from IPython.display import Math
glue("tiny_mean", (weights * 0.375).mean().item())
myst_nb.glue("tiny_word", "tripled", display=False)
glue("tiny_equation", Math(r"y = 3 w"), display=False)
fig, ax = plt.subplots(figsize=(1, 1))
ax.plot([0, 1])
glue("tiny_figure", fig, display=False)
plt.close(fig)"""
GLUE_PROSE = """The mean is {glue:}`tiny_mean`, about {glue:text}`tiny_mean:.2f`;
weights are {glue}`tiny_word`.

```{glue:} tiny_mean
```

```{glue:math} tiny_equation
```

```{glue:figure} tiny_figure
A tiny line.
```
"""


def colab_has_no(module: str) -> nbformat.NotebookNode:
    """A first cell after which importing ``module`` fails, as in Colab, which lacks it."""
    return nbformat.v4.new_code_cell(
        "import importlib.abc, sys\nclass Lacks(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.partition('.')[0] == {module!r}:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, Lacks())")


@pytest.mark.slow
def test_a_glued_chapters_download_runs_without_myst_nb_and_shows_the_values(tiny_book, tmp_path):
    """myst-nb's glue: the page pastes the build's values into the prose; the download
    (Colab has no myst-nb) shows the same values and runs all without myst-nb."""
    from verify_runtime import run_all

    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text() + f"\n{GLUE_IMPORTS}\n\n```{{code-cell}} ipython3\n"
                       f"{GLUE_CELL}\n```\n\n{GLUE_PROSE}")
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache",  # its new cell's
                         settings={"coursebook_accept_outputs": "1"})  # output accepted
    assert build.returncode == 0 and "Traceback" not in build.log, build.log[-3000:]
    page = re.sub(r"<[^>]+>", "", (tmp_path / "out" / "html" / "chapter.html").read_text())
    assert "The mean is 0.375, about 0.38;\nweights are ‘tripled’." in page  # as pasted
    download = nbformat.read(tmp_path / "out" / "html" / "_sources" / "chapter.ipynb",
                             as_version=4)
    prose = "\n".join(cell.source for cell in download.cells if cell.cell_type == "markdown")
    assert "The mean is 0.375, about 0.38;\nweights are 'tripled'." in prose, prose
    assert "```\n0.375\n```" in prose and "$$\n\\displaystyle y = 3 w\n$$" in prose
    assert re.search(r"!\[A tiny line\.\]\(data:image/png;base64,[\w+/=]+\)\n\n\*A tiny line\.\*",
                     prose), prose
    assert myst_leftovers(prose) == []
    document = (tmp_path / "out" / "html" / "_sources" / "chapter.md").read_text()
    assert "![A tiny line.][glued-1]" in document
    assert re.search(r"\n\[glued-1\]: data:image/png;base64,[\w+/=]+\n$", document)
    download.cells.insert(0, colab_has_no("myst_nb"))
    run_all(download, tmp_path)  # stopped by a cell that imports myst_nb, or glues unimported


# myst-nb's glue data of a run: each key's mime bundle (a figure's PNG, shortened).
GLUED = {"mean": {"text/plain": "0.375"}, "word": {"text/plain": "'tripled'"},
         "equation": {"text/plain": "<IPython.core.display.Math object>",
                      "text/latex": "$\\displaystyle y = 3 w$"},
         "figure": {"text/plain": "<Figure size 100x100 with 1 Axes>", "image/png": "iVBOR\nw0K"},
         "table": {"text/plain": "   a\n0  1", "text/html": "<table><td>1</td></table>"},
         "note": {"text/plain": "<IPython.core.display.Markdown object>",
                  "text/markdown": "A **bold** {sub}`note`"}}


@pytest.mark.parametrize("source, plain", [
    ("Mean {glue:}`mean`, {glue}`mean`, {glue:any}`word`.", "Mean 0.375, 0.375, 'tripled'."),
    ("About {glue:text}`mean:.2f`, {glue:text}`mean:.0%`, {glue:text}`word`.",
     "About 0.38, 38%, tripled."),
    ("```{glue:} mean\n```", "```\n0.375\n```"),
    ("```{glue} table\n```", "<table><td>1</td></table>"),
    ("```{glue:math} equation\n:label: eq-tiny\n```", "$$\n\\displaystyle y = 3 w\n$$"),
    ("See {glue:}`equation`.", "See $\\displaystyle y = 3 w$."),
    ("```{glue:md} note\n```", "A **bold** note"),
    # its caption, Markdown already, as the alt text: escaped again, the image's description
    # held `\*tiny\*` (MyST-NB's glue lesson: `This is a \*\*caption\*\*`); its :alt:, given
    ("```{glue:figure} figure\n:name: fig-tiny\n\nA *tiny* line.\n```",
     "![A *tiny* line.](data:image/png;base64,iVBORw0K)\n\n*A *tiny* line.*"),
    ('```{glue:figure} figure\n:alt: "A [drawn] line"\n\nA *tiny* line.\n```',
     "![A \\[drawn\\] line](data:image/png;base64,iVBORw0K)\n\n*A *tiny* line.*"),
    ("```{glue:figure} figure\n```", "![figure](data:image/png;base64,iVBORw0K)"),
    ("Gone: {glue:}`other.md::mean`, {glue:text}`word:.2f`.",
     "Gone: *[Shown on the book's page](https://book.example/p.html).*, "
     "*[Shown on the book's page](https://book.example/p.html).*."),
])
def test_glued_values_download_as_the_page_pastes_them(source, plain):
    """myst-nb's glue roles and directives: the value the build's run glued, as the page
    shows it (myst-nb's first kind for HTML; a figure's image itself, as a data address);
    one the build has not (another page's, a format its value has not), the page's link."""
    converted = PlainMarkdown(_resolve, "https://book.example/p.html", MD_CONFIG,
                              glued=GLUED).convert(source)
    assert converted == plain
    assert myst_leftovers(converted) == []


def test_the_md_download_names_a_glued_image_and_defines_it_last():
    """A glued image's data: address is a line of thousands of characters: the .md download's
    text names it (a Markdown reference), defined after the rest, where it shows all the same,
    by a label of its own (the first definition of a label wins: the chapter's own `[image-1]`)."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "Before [image-1].\n\n```{glue:figure} figure\nA line.\n```\n\nAfter {glue:}`figure`."
        "\n\n[image-1]: https://example.org")])
    document = download_document(notebook, PlainMarkdown(_resolve, md_config=MD_CONFIG,
                                                          glued=GLUED))
    assert document == ("Before [image-1].\n\n![A line.][glued-1]\n\n*A line.*\n\n"
                        "After ![figure][glued-2].\n\n[image-1]: https://example.org\n\n"
                        "[glued-1]: data:image/png;base64,iVBORw0K\n"
                        "[glued-2]: data:image/png;base64,iVBORw0K\n")
    html = MarkdownIt().render(document)
    assert '<a href="https://example.org">image-1</a>' in html
    assert re.findall(r'<img src="([^"]+)" alt="([^"]+)"', html) == [
        ("data:image/png;base64,iVBORw0K", "A line."), ("data:image/png;base64,iVBORw0K", "figure")]


def test_a_glue_import_becomes_a_stand_in_that_shows_the_value(capsys, monkeypatch):
    """Colab has no myst-nb: a download's cell defines a glue that shows the value (as
    myst-nb's does, unless ``display=False``) where the chapter imports myst-nb's, or the
    module (``myst_nb.glue``), under its name or another, a comment after it or none."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import math\nfrom myst_nb import glue  # pastes values into the text\nglue('a', 0.375)\n"
        "glue('b', 'kept', display=False)"),
        nbformat.v4.new_code_cell("from myst_nb import glue as paste\npaste('c', [1])"),
        nbformat.v4.new_code_cell("import myst_nb\nmyst_nb.glue('d', 2, display=False)"),
        nbformat.v4.new_code_cell("import myst_nb as mnb\nmnb.glue('e', 'e')")])
    sources = [cell.source for cell in download_notebook(notebook, PlainMarkdown(_resolve)).cells]
    monkeypatch.setitem(sys.modules, "myst_nb", None)  # as in Colab: importing it fails
    for source in sources:
        exec(source, {})
    assert capsys.readouterr().out == "0.375\n[1]\ne\n"


def test_a_book_only_glue_import_goes_to_the_first_kept_cell_that_glues(capsys, monkeypatch):
    """A ``book-only`` cell (left out of downloads) imports glue for the cells kept after it:
    the first of them that glues gets the import, so its stand-in; a name none uses, none."""
    book_only = {"tags": ["book-only"]}
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from myst_nb import glue\nimport myst_nb as mnb\n"
                                  "glue('figure', 1, display=False)", metadata=book_only),
        nbformat.v4.new_code_cell("x = 5"),
        nbformat.v4.new_code_cell("glue('x', x)"),
        nbformat.v4.new_code_cell("glue('y', 6)")])
    sources = [cell.source for cell in download_notebook(notebook, PlainMarkdown(_resolve)).cells]
    assert sources[0] == "x = 5" and "mnb" not in "".join(sources)
    monkeypatch.setitem(sys.modules, "myst_nb", None)  # as in Colab: importing it fails
    namespace = {}
    for source in sources:
        exec(source, namespace)
    assert capsys.readouterr().out == "5\n6\n"


def test_a_kept_cell_that_imports_glue_itself_gets_no_book_only_import(capsys, monkeypatch):
    """A kept cell importing glue itself binds it: the book-only cell's import goes nowhere
    (else the cell, or the next that glues, shows the stand-in's def a second time)."""
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from myst_nb import glue", metadata={"tags": ["book-only"]}),
        nbformat.v4.new_code_cell("from myst_nb import glue\nglue('x', 1)"),
        nbformat.v4.new_code_cell("glue('y', 2)")])
    sources = [cell.source for cell in download_notebook(notebook, PlainMarkdown(_resolve)).cells]
    assert "".join(sources).count("def glue(") == 1 and sources[1] == "glue('y', 2)"
    monkeypatch.setitem(sys.modules, "myst_nb", None)  # as in Colab: importing it fails
    namespace = {}
    for source in sources:
        exec(source, namespace)
    assert capsys.readouterr().out == "1\n2\n"
