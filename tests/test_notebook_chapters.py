"""Notebooks as chapters: an `.ipynb` in the book is a chapter like a MyST one (editions,
answers, expected outputs, downloads, messages at its cells); `make chapter FROM=…` brings a
notebook, a sphinx-gallery or jupytext script, or a MyST lecture in as a MyST chapter."""

from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
import pytest

from conftest import TINY_BOOK, Build, load_tool, sphinx_build, tool_in_process


def _notebook(*cells) -> str:
    return nbformat.writes(nbformat.v4.new_notebook(cells=list(cells), metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}))


def html_text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page))


ANSWER = "print('the tiny lesson says seventeen', 17)"


def _lesson(*cells) -> str:
    """A lesson as Jupyter (Colab) saves it: an answer cell, and outputs and widget state (an
    Output widget's) saved from the author's run."""
    saved = nbformat.v4.new_output("stream", name="stdout", text="saved by the author\n")
    code = nbformat.v4.new_code_cell("print(6 * 7)", execution_count=3, outputs=[saved])
    answer = nbformat.v4.new_code_cell(ANSWER, metadata={"tags": ["answer"]})
    notebook = nbformat.reads(_notebook(
        nbformat.v4.new_markdown_cell("# A lesson\n\nSome text."), code,
        nbformat.v4.new_markdown_cell("Print the number."), answer, *cells), as_version=4)
    notebook.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {"f0e1": {"model_name": "OutputModel", "state": {"outputs": [saved]}}},
        "version_major": 2, "version_minor": 0}}
    return nbformat.writes(notebook)


def _with_faulty_markup(text: str) -> str:
    """The lesson with lines in its third cell that MyST (an unknown directive, the cell's
    line 3; an unknown role, its line 8) and Sphinx after reading (a reference to no label)
    warn about."""
    notebook = nbformat.reads(text, as_version=4)
    notebook.cells[2].source += ("\n\n```{no-such-directive}\n```\n\nSee {ref}`no-such-label`."
                                 "\n\nAnd {no-such-role}`here`.")
    return nbformat.writes(notebook)


def test_a_notebook_is_read_as_a_chapter_each_cell_at_its_number():
    """An `.ipynb` is a chapter: its cells noted at their numbers (how messages name them,
    anywhere in a cell), its saved outputs left out, its answer an answer; the page myst-nb
    reads is the notebook again, without the book's notes, each cell mapped to its number."""
    from coursebook.model.cell_notes import line_within, source_line
    from coursebook.model.notebooks import (author_line, is_answer, is_chapter_source,
                                            page_text, read_chapter)
    from coursebook.prepare.chapter_packages import chapter_package_errors
    from coursebook.prepare.editions import Edition, edition_notebook

    text = _lesson(nbformat.v4.new_code_cell("x = 1\n!pip install -q einops"),
                   nbformat.v4.new_markdown_cell(
                       "Double it.\n\n:::{solution} ex-double\nIt is 84, of course.\n:::"))
    assert is_chapter_source(text) and not is_chapter_source('{"a": 1}')
    chapter = read_chapter(text, strict=True)
    # A sphinx-exercise solution is cut out as an answer cell of its own, at its cell.
    assert [source_line(cell) for cell in chapter.cells] == [1, 2, 3, 4, 5, 6, 6]
    assert chapter.cells[1].outputs == [] and chapter.cells[1].execution_count is None
    assert [is_answer(cell) for cell in chapter.cells] == [False] * 3 + [True] + [False] * 2 + [
        True]
    assert line_within(chapter.cells[4], chapter.cells[4].source.index("!pip")) == 5
    assert line_within(chapter.cells[6], chapter.cells[6].source.index("84")) == 6
    [error] = chapter_package_errors(Path("book/lesson.ipynb"), text)
    assert str(error).startswith("book/lesson.ipynb:5: a cell installs packages") \
        and 'in its metadata: `"coursebook": {"packages": ["NAME"]}` and run' in str(error)
    student = edition_notebook(chapter, Edition.STUDENT)
    page = page_text(student, "book/lesson.ipynb")
    assert ANSWER not in page and "coursebook" not in page
    read = nbformat.reads(page, as_version=4)
    assert [cell.source for cell in read.cells] == [cell.source for cell in student.cells]
    # myst-nb names cell k's line j (counted from 0) at source_map[k] + 1 + j.
    assert [line + 1 for line in read.metadata["source_map"]] == [10000, 20000, 30000, 50000,
                                                                  60000]
    assert author_line(student, "book/lesson.ipynb")(50000 + 1) == 5


# A jupytext percent script, as an author writes one: a header, a markdown cell, a code cell
# whose first line is a comment, an answer; below, what SCRIPT_LINES says each cell's line is.
SCRIPT = """\
# ---
# jupyter:
#   kernelspec:
#     name: python3
#     display_name: Python 3
#     language: python
# ---

# %% [markdown]
# # A script lesson
#
# Some text, and here a word.

# %%
# the answer, computed
print(6 * 7)

# %% [markdown]
# Print the number.

# %% tags=["answer"]
print('the script says seventeen', 17)
"""
SCRIPT_LINES = [10, 15, 19, 22]


def test_a_notebooks_saved_widget_state_is_not_read():
    """Widget state saved from the author's run (an Output widget holding what an answer
    printed, a progress bar's text) is, as its saved outputs are, not the build's: its page
    embedded it and its download held it, in the student edition too."""
    from coursebook.model.notebooks import read_chapter

    assert "widgets" in nbformat.reads(_lesson(), as_version=4).metadata
    assert "widgets" not in read_chapter(_lesson(), strict=True).metadata
    # A MyST chapter's top matter may hold it too (jupytext keeps what it is told to).
    chapter = (TINY_BOOK / "chapter.md").read_text().replace("kernelspec:", (
        "widgets:\n  application/vnd.jupyter.widget-state+json:\n    state: {f0e1: {model_name: "
        "OutputModel}}\nkernelspec:"))
    assert "widgets:" in chapter
    assert "widgets" not in read_chapter(chapter, strict=True).metadata


def test_a_script_with_cells_the_book_cannot_read_is_named_not_dropped(tmp_path, monkeypatch):
    """A percent script teaching a SyntaxError (a cell tagged raises-exception holding
    `print("hi"`), or whose header names `format_name: percent` without `extension: .py`
    (jupytext then reads it as its 'light' format), was left out as a helper module: the
    chapter vanished, and the build said only that index.md's toctree names a document that
    does not exist. Now each is named at its line, with why (its cells marked `#%%` too); a
    helper module stays silent."""
    from types import SimpleNamespace

    from coursebook.prepare import chapters

    cells = "# %% [markdown]\n# # Errors\n\n# %%\nx = 1\n\n# %% tags=[\"raises-exception\"]\n"
    (tmp_path / "syntax.py").write_text(cells + 'print("hi"\n')
    (tmp_path / "light.py").write_text(
        "# ---\n# jupyter:\n#   jupytext:\n#     text_representation:\n"
        "#       format_name: percent\n# ---\n\n" + cells + "print(1)\n")
    (tmp_path / "helper.py").write_text('"""A helper."""\n\n# %%timeit\nVALUE = 1\n')
    (tmp_path / "vscode.py").write_text('#%%\nx = 1\n\n#%%\nprint("hi"\n')  # VS Code's, Spyder's
    said = []
    monkeypatch.setattr(chapters, "report", lambda message, location, subtype: said.append(
        (location, message)))
    config = SimpleNamespace(include_patterns=["**"], exclude_patterns=[], templates_path=[])
    chapters.leave_out_plain_scripts(SimpleNamespace(srcdir=str(tmp_path)), config)
    assert sorted(config.exclude_patterns) == ["helper.py", "light.py", "syntax.py", "vscode.py"]
    assert [location for location, _ in sorted(said)] == [f"{tmp_path / 'light.py'}:1",
                                                         f"{tmp_path / 'syntax.py'}:8",
                                                         f"{tmp_path / 'vscode.py'}:5"]
    [light, syntax, vscode] = [message for _, message in sorted(said)]
    assert "does not compile ('(' was never closed)" in vscode, vscode
    assert "jupytext reads it as its 'light' format" in light and "extension: .py" in light
    assert "does not compile ('(' was never closed)" in syntax, syntax
    assert "exec(" in syntax and "make chapter FROM=" in syntax, syntax


def test_a_percent_cell_marker_is_one_where_jupytext_reads_one():
    """The book found percent cells by two patterns, each differing from jupytext at an edge
    (`#  %%`, a commented magic `# %%time`): a cell's line was noted off, or a helper module
    named as a broken chapter. One pattern now, jupytext's reader's."""
    import jupytext

    from coursebook.model.notebooks import CELL_MARKER

    for line in ("# %%", "#%%", "#  %%", "#\t%%", "  # %%", "# %% [markdown]", "#%% title",
                 "# %%% x", "# In[3]:", "# In[ ]", "# <codecell>", "# %%x", "# %%time", "# %%%",
                 "## %%", "%%", "# %"):
        cells = jupytext.reads(f"# %%\nx = 1\n{line}\ny = 2\n", fmt="py:percent").cells
        assert bool(CELL_MARKER.match(line)) == (len(cells) == 2), line


def test_a_percent_script_is_read_as_a_chapter_each_cell_at_its_line():
    """A jupytext percent `.py` is a chapter: read by jupytext, each cell noted at the line
    of the script where its text starts, its tags kept; its page is a notebook's JSON whose
    lines (myst-nb's source_map) are the script's. A Markdown page that shows `# %%` lines
    is no script, nor is a helper module."""
    from coursebook.model.cell_notes import source_line
    from coursebook.model.notebooks import (author_line, is_answer, is_chapter_source,
                                            page_text, read_chapter)
    from coursebook.prepare.chapter_packages import chapter_package_errors

    assert is_chapter_source(SCRIPT)
    assert not is_chapter_source("# A page\n\n```python\n# %%\nx = 1\n```\n")
    assert not is_chapter_source('"""A helper."""\n\ndef f():\n    return 1\n')
    chapter = read_chapter(SCRIPT)
    assert [source_line(cell) for cell in chapter.cells] == SCRIPT_LINES
    assert [is_answer(cell) for cell in chapter.cells] == [False] * 3 + [True]
    assert chapter.cells[1].source == "# the answer, computed\nprint(6 * 7)"
    page = nbformat.reads(page_text(chapter, "book/lesson.py"), as_version=4)
    assert [cell.source for cell in page.cells] == [cell.source for cell in chapter.cells]
    # myst-nb names cell k's line j (from 1) at source_map[k] + 1 + j: the script's line.
    assert [start + 2 for start in page.metadata["source_map"]] == SCRIPT_LINES
    assert author_line(chapter, "book/lesson.py")(16) == 16
    # A magic, commented as jupytext writes it, is the cell's first line all the same.
    installing = SCRIPT.replace("# the answer, computed", "# !pip install -q einops")
    [error] = chapter_package_errors(Path("book/lesson.py"), installing)
    assert str(error).startswith(f"book/lesson.py:{SCRIPT_LINES[1]}: a cell installs packages "
                                 "(`!pip install -q einops`)") and \
        "in its jupytext header: `jupyter: {coursebook: {packages: [NAME]}}`" in str(error)


@pytest.mark.slow
def test_a_notebook_brought_in_with_make_chapter_is_a_verified_chapter(tiny_book, tmp_path,
                                                                     capsys, cache_copy):
    """`make chapter FROM=` the notebook, delete it, as the tool says; then the MyST chapter is
    accepted, verified, and a changed output stops the build at its line."""
    lesson = tiny_book / "lesson.ipynb"
    lesson.write_text(_notebook(
        nbformat.v4.new_markdown_cell("# A lesson"),
        nbformat.v4.new_code_cell("!pip install -q nothing-needed\nprint(6 * 7)")))
    (tiny_book / "index.md").write_text((tiny_book / "index.md").read_text().replace(
        "chapter\n", "chapter\nlesson\n"))
    assert load_tool("new_chapter").main(["--from", str(lesson), "--book", str(tiny_book)]) == 0
    assert f"delete {lesson}" in capsys.readouterr().out
    lesson.unlink()
    cache = cache_copy  # the tiny chapter's run: only the lesson executes
    # One reader: a cold cache read by two once failed here under load, jupyter-cache's
    # record of the other chapter without its notebook file yet (a race, not this test's).
    accepted = sphinx_build(tiny_book, tmp_path / "accept", cache,
                            settings={"coursebook_accept_outputs": "1"}, jobs=None)
    assert accepted.returncode == 0, accepted.log[-3000:]
    build = sphinx_build(tiny_book, tmp_path / "out", cache)
    assert build.returncode == 0 and "lesson.md (student): 2 of 2 code cells verified" in build.log
    chapter = tiny_book / "lesson.md"
    chapter.write_text(chapter.read_text().replace("print(6 * 7)", "print(6 * 8)"))
    changed = sphinx_build(tiny_book, tmp_path / "out", cache)
    line = chapter.read_text().splitlines().index("print(6 * 8)") + 1
    assert changed.returncode != 0 and f"lesson.md:{line}: ERROR: code cell 2" in changed.log
    assert "-42" in changed.log and "+48" in changed.log


@pytest.mark.slow
def test_a_notebook_and_a_percent_script_are_verified_chapters_their_messages_at_their_cells(
        tiny_book, tmp_path, cache_copy):
    """An `.ipynb` and a percent `.py` in the contents (one book holds both) go the way of a
    MyST chapter: their outputs accepted and compared in both editions, their answers out of
    the student's page and downloads (the notebook and the .md document) and in the
    instructor's; `pytest book` has an item for each cell, at its number or line; a changed
    expected output, a changed output (in the build and in `pytest book`) and MyST's message
    name the cell, the script's line. A helper module beside the script is no page."""
    lesson, script = tiny_book / "lesson.ipynb", tiny_book / "script.py"
    lesson.write_text(_lesson())
    script.write_text(SCRIPT)
    (tiny_book / "helper.py").write_text('"""Not a page: no cells."""\n\nVALUE = 1\n')
    (tiny_book / "index.md").write_text((tiny_book / "index.md").read_text().replace(
        "chapter\n", "chapter\nlesson\nscript\n"))
    cache = cache_copy  # the tiny chapter's student run: the lesson and the script execute
    # As `make accept-outputs` does: both editions accepted, then run again to compare.
    code, log = tool_in_process("accept_outputs", ["--book", str(tiny_book), "--out",
                                                   str(tmp_path), "--cache", str(cache)])
    assert code == 0, log[-3000:]
    # Its second builds are the book's builds, verifying (tmp_path/EDITION, as sphinx_build's).
    again = log[log.index("a second time"):]
    builds = {edition: Build(code, again, tmp_path / edition) for edition in ("student",
                                                                              "instructor")}
    # `pytest book` has an item for each of the notebook's cells, at its number, and they pass.
    from test_pytest_book import _pytest_book
    collected = _pytest_book(tiny_book, collect_only=True)
    assert "lesson.ipynb::student::L2 print(6 * 7)" in collected.stdout \
        and "lesson.ipynb::instructor::L4 print('the tiny" in collected.stdout, collected.stdout
    (tmp_path / "conf").rename(tmp_path / "conf-collected")  # each run makes its own
    done = _pytest_book(tiny_book)
    assert done.returncode == 0, done.stdout[-3000:]
    (tmp_path / "conf").rename(tmp_path / "conf-passed")
    expected = {path.stem: path for path in (tiny_book / "expected").rglob("*.txt")}
    assert "of lesson.ipynb for" in expected["lesson"].read_text()
    assert all("    42\n" in expected[name].read_text() for name in ("lesson", "script"))
    answers = {"lesson": "the tiny lesson says", "script": "the script says seventeen"}
    for edition, build in builds.items():
        assert build.returncode == 0, build.log[-3000:]
        assert f"lesson.ipynb ({edition}): " in build.log and "Traceback" not in build.log
        html = build.outdir / "html"
        assert not (html / "helper.html").exists()
        for name, answer in answers.items():
            # The downloads: the notebook, and as a MyST chapter's, the .md document (not
            # the file on disk, which the theme would offer).
            page = (html / f"{name}.html").read_text()
            assert f"_sources/{name}.ipynb" in page and f"_sources/{name}.md" in page
            shown = [html_text(page), (html / "_sources" / f"{name}.ipynb").read_text(),
                     (html / "_sources" / f"{name}.md").read_text()]
            assert nbformat.reads(shown[1], as_version=4).cells  # a notebook, as the theme offers
            assert all("print(6 * 7)" in text for text in shown)
            assert all((answer in text) == (edition == "instructor") for text in shown), \
                (edition, name)
            if name == "lesson":
                assert "# A lesson\n\nSome text." in shown[2] \
                    and "```python\nprint(6 * 7)" in shown[2]
                assert all("saved by the author" not in text for text in shown)
    for name in ("lesson.ipynb", "script.py"):
        assert f"{name} (student): 1 of 1 code cells verified" in builds["student"].log
        assert f"{name} (instructor): 2 of 2 code cells verified" in builds["instructor"].log
    assert "seventeen 17" in html_text((builds["instructor"].outdir / "html" / "lesson.html"
                                        ).read_text())
    changed = SCRIPT.replace("print(6 * 7)", "print(6 * 8)")
    script.write_text(changed)
    # `pytest book`: the changed output fails its item, named and reported at the script's line.
    done = _pytest_book(tiny_book, f"nb_execution_cache_path = {str(cache)!r}")
    # each edition's item shows the diff against the entry the edited cell replaced (counted
    # above pytest's summary, which under CI=true repeats each message in full)
    failures = done.stdout.split("short test summary info")[0]
    assert failures.count("(its code changed); against the entry of the code it replaced") == 2 \
        and done.returncode == 1 and "2 failed" in done.stdout \
        and f"FAILED src/script.py::student::L{SCRIPT_LINES[1]} # the answer" in done.stdout \
        and f"script.py:{SCRIPT_LINES[1]}: code cell has no expected output" in done.stdout \
        and "-42" in done.stdout and "+48" in done.stdout, done.stdout[-3000:]
    # One build: the script's changed output and MyST's message at its lines, and the
    # notebook's changed expected output at its cell (each diff's lines its own).
    script.write_text(changed.replace("here a word", "{no-such-role}`here`"))
    accepted = expected["lesson"].read_text()
    expected["lesson"].write_text(accepted.replace("    42\n", "    43\n"))
    build = sphinx_build(tiny_book, tmp_path / "student", cache)
    assert build.returncode != 0 and "lesson.ipynb:2: ERROR: code cell 1 `print(6 * 7)`" \
        in build.log and "-43" in build.log and "+42" in build.log, build.log[-3000:]
    assert f"script.py:{SCRIPT_LINES[1]}: ERROR: code cell 1 `# the answer, computed`" \
        in build.log and "-42" in build.log and "+48" in build.log, build.log[-3000:]
    assert 'script.py:12: WARNING: Unknown interpreted text role "no-such-role"' in build.log
    # The notebook's cell changed (the script as accepted): the build stops at the cell.
    script.write_text(SCRIPT)
    expected["lesson"].write_text(accepted)
    notebook = nbformat.reads(lesson.read_text(), as_version=4)
    notebook.cells[1].source = "print(6 * 9)"
    nbformat.write(notebook, lesson)
    build = sphinx_build(tiny_book, tmp_path / "student", cache)
    assert build.returncode != 0 and "lesson.ipynb:2: ERROR: code cell 1 `print(6 * 9)`" \
        in build.log and "-42" in build.log and "+54" in build.log, build.log[-3000:]


def test_the_student_audit_knows_a_notebook_chapters_answers(tmp_path):
    """The audit of a student build looks for the answers of every chapter, a notebook's
    too (not a recording's, whose chapter has them)."""
    from coursebook.audit.answer_leaks import audit_build, chapter_fingerprints
    from coursebook.model.recordings import PROVENANCE_KEY

    said = "the gradient of a constant function is zero everywhere on its domain"
    book = tmp_path / "book"
    (book / "recordings").mkdir(parents=True)
    (book / "lesson.ipynb").write_text(_lesson(nbformat.v4.new_markdown_cell(
        f"Because {said}.", metadata={"tags": ["answer"]})))
    recording = nbformat.reads(_lesson(), as_version=4)
    recording.metadata[PROVENANCE_KEY] = {}
    recording.cells[0].source, recording.cells[0].metadata = f"Since {said}, too.", {
        "tags": ["answer"]}
    nbformat.write(recording, book / "recordings" / "lesson-cpu.ipynb")
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / "lesson.html").write_text(f"<p>Note that {said}.</p>")
    found = chapter_fingerprints(book)
    assert [leak for leak in audit_build(tmp_path / "html", found)]
    (book / "lesson.ipynb").unlink()
    assert audit_build(tmp_path / "html", chapter_fingerprints(book)) == []


def test_a_message_at_myst_nbs_line_in_a_notebook_names_the_cell_and_line(tmp_path):
    """Sphinx's handlers, once the book is set up, write a place myst-nb numbered in a
    notebook's page (cell times 10000 plus line) as the cell, and the line in it."""
    import logging

    from test_quiet_log import empty_app

    from coursebook.reporting import filter_the_log

    app = empty_app(tmp_path)
    # The records go through this handler's filters alone (the book's), not Sphinx's.
    handler = logging.Handler()
    logging.getLogger("sphinx").addHandler(handler)
    try:
        filter_the_log(app)
    finally:
        logging.getLogger("sphinx").removeHandler(handler)
    records = [logging.makeLogRecord({"msg": "Unknown role", "location": place})
               for place in ("/b/lesson.ipynb:40003", "/b/lesson.ipynb:4", "/b/pt01.md:40003")]
    assert all(handler.filter(record) for record in records)
    assert [(record.location, record.getMessage()) for record in records] == [
        ("/b/lesson.ipynb:4", "cell 4, line 3: Unknown role"),
        ("/b/lesson.ipynb:4", "Unknown role"), ("/b/pt01.md:40003", "Unknown role")]


@pytest.mark.slow
def test_sphinx_and_myst_name_a_notebook_chapters_cell(tiny_book, tmp_path, cache_copy):
    """What Sphinx says after reading a notebook chapter names the author's cell; what MyST
    says while reading it, the cell and the line in it (myst-nb's line for a notebook, the
    cell's number times 10000 plus the line, put back; the student edition, which dropped a
    cell before it, too)."""
    notebook = nbformat.reads(_with_faulty_markup(_lesson()), as_version=4)
    notebook.cells.insert(1, nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["answer"]}))
    nbformat.write(notebook, tiny_book / "lesson.ipynb")
    (tiny_book / "index.md").write_text((tiny_book / "index.md").read_text().replace(
        "chapter\n", "chapter\nlesson\n"))
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy,
                         settings={"coursebook_accept_outputs": "1"}, jobs=None)
    assert "lesson.ipynb:4: WARNING: cell 4, line 3: Unknown directive type: " \
        "'no-such-directive'" in build.log, build.log[-3000:]
    assert 'lesson.ipynb:4: WARNING: cell 4, line 8: Unknown interpreted text role ' \
        '"no-such-role"' in build.log, build.log[-3000:]
    assert "lesson.ipynb:400" not in build.log
    assert "lesson.ipynb:4: WARNING: undefined label: 'no-such-label'" in build.log


def test_a_notebook_chapter_declares_its_packages_in_its_metadata(tmp_path, monkeypatch, capsys):
    """What `make chapter-packages` installs, and what a build checks is there, a notebook
    chapter declares in its metadata (a MyST chapter, in its top matter)."""
    from coursebook.prepare import chapter_packages

    notebook = nbformat.reads(_lesson(), as_version=4)
    notebook.metadata["coursebook"] = {"packages": ["no-such-package-anywhere"]}
    (tmp_path / "lesson.ipynb").write_text(nbformat.writes(notebook))
    [error] = chapter_packages.chapter_package_errors(tmp_path / "lesson.ipynb",
                                                      nbformat.writes(notebook))
    assert "lesson.ipynb:1: metadata 'coursebook: packages' declares no-such-package-anywhere" \
        in str(error)
    monkeypatch.setattr("sys.argv", ["chapter_packages", str(tmp_path)])
    load_tool("chapter_packages").main()
    assert capsys.readouterr().out == "no-such-package-anywhere\n"
    # a shape the build refuses, `make chapter-packages` refuses as it (it had pip install j, a, x)
    notebook.metadata["coursebook"] = {"packages": "jax"}
    (tmp_path / "lesson.ipynb").write_text(nbformat.writes(notebook))
    assert load_tool("chapter_packages").main() == 1
    assert capsys.readouterr().err == (f"{tmp_path / 'lesson.ipynb'}:1: field coursebook.packages: "
                                       "is 'jax' (make it a list of strings)\n")


def test_the_names_an_answer_binds_are_read_as_the_kernel_reads_it():
    """An answer with a magic (`%matplotlib inline`, MIT's labs) was no Python to ast, so the
    names it binds were not looked for: a cell the student edition runs that reads one was
    told "tag it raises-exception" (which fails the instructor edition), not the answer."""
    from coursebook.model.cell_notes import place_at
    from coursebook.model.notebooks import answer_names

    answer = place_at(nbformat.v4.new_code_cell("%matplotlib inline\ndef plot():\n    pass\n"
                                                "x = 1", metadata={"tags": ["answer"]}), 20)
    blank = place_at(nbformat.v4.new_code_cell("x = # TODO", metadata={"tags": ["answer"]}), 30)
    notebook = nbformat.v4.new_notebook(cells=[answer, blank])
    assert answer_names(notebook) == {"plot": 21, "x": 23}


# Flax's guides (docs_nnx/guides/randomness.md) are jupytext's Markdown format; d2l's
# chapters mark the cells its build runs ```{.python .input}.
JUPYTEXT_MARKDOWN = ("---\njupyter:\n  jupytext:\n    formats: ipynb,md\n    text_representation:\n"
                     "      extension: .md\n      format_name: markdown\n---\n\n# Randomness\n\n"
                     "```python\nprint(2 + 2)\n```\n")
D2L = "# Autograd\n:label:`sec_autograd`\n\nSome text.\n\n```{.python .input  n=1}\n%%tab pytorch" \
      "\nx = torch.arange(4.0)\n```\n"


def test_a_page_that_is_a_notebook_of_another_format_is_named_with_its_line():
    """A lesson in jupytext's Markdown format, or d2l-book's, dropped into book/ was a page:
    its code shown, never run nor verified, the build passing."""
    from coursebook.model.notebooks import other_notebook_format

    assert other_notebook_format(JUPYTEXT_MARKDOWN) == (1, "jupytext's Markdown format (a "
                                                           "`jupyter:` header)")
    # a header that keeps only the kernel (jupytext's metadata filter; the review's H9)
    assert other_notebook_format("---\njupyter:\n  kernelspec:\n    name: python3\n---\n"
                                 "# T\n\n```python\nprint(1)\n```\n")[0] == 1
    assert other_notebook_format(D2L) == (6, "d2l-book's format (```{.python .input} cells)")
    for page in ("# A page\n\n```python\nimport torch\n```\n",  # shown code, a page's
                 "---\norphan: true\n---\n# Versions\n\njupyter:\n"):
        assert other_notebook_format(page) is None


@pytest.mark.slow
def test_a_lesson_of_another_notebook_format_dropped_into_the_book_stops_the_build(
        tiny_book, tmp_path, cache_copy):
    (tiny_book / "randomness.md").write_text(JUPYTEXT_MARKDOWN)
    (tiny_book / "autograd.md").write_text(D2L)
    (tiny_book / "index.md").write_text((tiny_book / "index.md").read_text().replace(
        "chapter\n", "chapter\nrandomness\nautograd\n"))
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    assert build.returncode != 0
    for page, line, kind in (("randomness", 1, "jupytext's Markdown format (a `jupyter:` header)"),
                             ("autograd", 6, "d2l-book's format (```{.python .input} cells)")):
        assert (f"{tiny_book / page}.md:{line}: ERROR: a notebook in {kind}, whose code the "
                "book would show without running or verifying it: move it out of book/, then "
                "bring it in as a chapter: `make chapter FROM=<its new path>`") in build.log, \
            build.log[-3000:]
