"""`pytest book` (coursebook.pytest_plugin) executes a chapter as the build would: what it
leaves out, the errors it allows, and one line for a package conf.py names but lacks."""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_shards import ALLOWED, _draft_that_fails_to_prepare

from conftest import book_conf_with, run_in_python

CRASH_SIGNS = ("Traceback", "PackageNotFoundError", "importlib")


@dataclass
class Session:
    returncode: int
    stdout: str  # what it printed, its errors included


def pytest_session(*args: str, cwd: Path | None = None) -> Session:
    """pytest run with ``args`` in this process (in ``cwd``: items are named from there), as
    a session of its own (a Python of its own imported pytest, Sphinx and myst-nb again:
    about 3 s of CPU each)."""
    printed = io.StringIO()
    with contextlib.chdir(cwd or Path.cwd()), contextlib.redirect_stdout(printed), \
            contextlib.redirect_stderr(printed):
        code = pytest.main(["-p", "no:cacheprovider", "-q", *args])
    return Session(int(code), printed.getvalue())


def _pytest_book(book: Path, *conf_lines: str, collect_only: bool = False,
                 target: Path | None = None) -> Session:
    """pytest run on a copy of a book (or ``target`` in it), with the book's conf.py and
    these lines."""
    root = book.parent
    conf = book_conf_with(root / "conf", *conf_lines)
    (root / "pytest.ini").write_text(f"[pytest]\ncoursebook_book = {book.name}\n"
                                     f"coursebook_conf = {conf}\n")
    return pytest_session("-c", str(root / "pytest.ini"), "--rootdir", str(root),
                          str(target or book), *(["--collect-only"] if collect_only else []),
                          cwd=root)


def _top_matter(chapter: Path, lines: str) -> None:
    chapter.write_text(chapter.read_text().replace("---\n", "---\n" + lines, 1))


def test_pytest_book_has_items_only_where_the_build_executes(tiny_book):
    """One collection: the chapter has items; a copy myst-nb's patterns keep from executing
    (myst-nb's deciding), a copy conf.py leaves out (Sphinx's) and a draft left out that
    would fail to prepare have none (test_shards tries every case on the same code)."""
    text = (tiny_book / "chapter.md").read_text()
    (tiny_book / "off.md").write_text(text)
    (tiny_book / "left_out.md").write_text(text)
    _draft_that_fails_to_prepare(tiny_book)
    collected = _pytest_book(tiny_book, "exclude_patterns.extend(['left_out.md', 'draft.md'])",
                             "nb_execution_excludepatterns = ['off.md']", collect_only=True)
    assert collected.returncode == 0, collected.stdout
    assert "chapter.md::student::" in collected.stdout, collected.stdout
    assert "chapter.md::instructor::" in collected.stdout, collected.stdout
    for page in ("off.md", "left_out.md", "draft.md"):
        assert page not in collected.stdout, collected.stdout


def test_a_percent_scripts_items_are_its_cells_at_its_lines_and_it_is_no_module(tiny_book):
    """`pytest book/lesson.py`: an item per verified cell and edition, named by the script's
    line; pytest's own collector does not import the script (which ran every cell in
    pytest's process: here an error a cell raises on purpose stopped the collection)."""
    from test_notebook_chapters import SCRIPT, SCRIPT_LINES

    script = tiny_book / "lesson.py"
    script.write_text(SCRIPT + '\n# %% tags=["raises-exception"]\n'
                      'raise ValueError("the lesson\'s error")\n')
    (tiny_book / "index.md").write_text((tiny_book / "index.md").read_text().replace(
        "chapter\n", "chapter\nlesson\n"))
    collected = _pytest_book(tiny_book, collect_only=True, target=script)
    shown = collected.stdout
    assert collected.returncode == 0 and "ERROR collecting" not in shown, shown
    named = f"lesson.py::instructor::L{SCRIPT_LINES[3]} print('the script says seventeen', 17)"
    assert f"lesson.py::student::L{SCRIPT_LINES[1]} # the answer, computed" in shown \
        and named in shown and "::L25 raise ValueError(" in shown, shown


@pytest.mark.slow  # executes a chapter
@pytest.mark.parametrize("top_matter, conf_lines", ALLOWED.values(), ids=ALLOWED)
def test_pytest_book_allows_the_errors_the_build_allows(tiny_book, top_matter, conf_lines):
    """A cell that raises untagged, errors allowed: executed, its error compared with the
    expected output as every other cell's output."""
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text().replace(":tags: [raises-exception]\n", ""))
    _top_matter(chapter, top_matter)
    done = _pytest_book(tiny_book, *conf_lines)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "failed to execute" not in done.stdout


def test_an_execution_package_not_installed_is_one_line(tiny_book):
    done = _pytest_book(tiny_book, "coursebook_execution_packages.append('no-such-package-here')",
                        collect_only=True)
    assert done.returncode != 0
    assert done.stdout.count("coursebook_execution_packages names 'no-such-package-here', "
                             "which this Python does not have: run `make venv`") >= 1, done.stdout
    assert not any(sign in done.stdout for sign in CRASH_SIGNS), done.stdout


def test_a_page_that_does_not_prepare_is_the_builds_one_line(tiny_book):
    _draft_that_fails_to_prepare(tiny_book)
    collected = _pytest_book(tiny_book, collect_only=True)
    shown = collected.stdout
    # As the build logs it: file and line, then the message.
    assert collected.returncode != 0 and re.search(
        r"draft\.md:\d+: ERROR: a `raises-exception` cell", shown), shown
    assert " in collect" not in shown and "BookError" not in shown, shown


def test_a_cell_its_cached_run_lacks_fails_naming_the_fix():
    """An item whose cell is not in its chapter's cached run fails in one line (it was a
    KeyError's traceback)."""
    from types import SimpleNamespace

    from coursebook.prepare.editions import Edition
    from coursebook.pytest_plugin import CellFailed, CellItem

    item = CellItem.__new__(CellItem)  # its chapter's run is all it reads
    item.parent = SimpleNamespace(expectations={}, compared=lambda edition: ({}, {}))
    item.edition, item.key = Edition.STUDENT, "0123abcd"
    with pytest.raises(CellFailed, match=r"cached run \(student\): clear the cache with "
                                         r"`make clean-cache`"):
        item.runtest()


@pytest.mark.parametrize("text, entry, skipped", [
    ("loss 0.5\n[image/png] <Figure size 350x250 with 1 Axes>", "loss 0.5", False),
    ("[image/png] <Figure size 350x250 with 1 Axes>", "", True),
    ("140", "<number>", True)])
def test_an_item_is_skipped_where_the_build_says_not_compared(tmp_path, text, entry, skipped):
    """A figure's repr alone, or an entry of patterns alone (marked); a cell whose text is
    compared beside its figure's repr passes, as the build counts it verified (HR's F3)."""
    from types import SimpleNamespace

    from coursebook.page_state import CellOutput
    from coursebook.prepare.editions import Edition
    from coursebook.pytest_plugin import CellItem
    from coursebook.verify.expectations import read_expectations

    path = tmp_path / "chapter.txt"
    path.write_text(f"=== cell 0123abcd (varies) · plot()\n    {entry}\n")
    output = CellOutput("0123abcd", 1, "plot()", text, line=7)
    item = CellItem.__new__(CellItem)
    item.parent = SimpleNamespace(expectations=read_expectations(path),
                                  compared=lambda edition: ({}, {output.key: output}))
    item.edition, item.key, item.path = Edition.STUDENT, output.key, tmp_path / "chapter.md"
    try:
        item.runtest()
        said = ""
    except pytest.skip.Exception as skip:
        said = str(skip)
    assert said.startswith("chapter.md (student): not compared") if skipped else said == ""


def test_the_plugin_loads_without_a_builds_modules():
    """Every pytest process loads the plugin; Sphinx and myst-nb's execution (about 1 s of
    CPU) wait until `pytest book` collects a chapter."""
    loaded = run_in_python("import json, sys\nimport coursebook.pytest_plugin\n"
                           "print(json.dumps([n for n in ('sphinx', 'myst_nb', 'nbformat')"
                           " if n in sys.modules]))")
    assert loaded == []
