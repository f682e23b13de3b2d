"""Planted faults: each ends the build with one clear message, never a crash report.

Every probe breaks a scratch copy of a book (the tiny fixture book where the fault does
not need the real one) and checks: non-zero exit, the message once (what, where, the
command that fixes it), and no Python traceback or Sphinx crash report. docs/faults.md's
table "When the build stops" lists the same faults.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import (BOOK, EXHIBITS, MACHINE_KINDS_FILE, ROOT, TORCH_VERSION, Build,
                      book_museum, run_sphinx, sphinx_build, sphinx_command)
from coursebook.model.faults import CLEAN_CACHE_COMMAND, BookError
from coursebook.museum.model import ExhibitError, load_exhibit
from coursebook.model.recordings import RECORDING_COMMAND, load_recording
from coursebook.model.machine_kinds import load_machine_kinds
from coursebook.museum.prepare import cell_origins

CRASH_SIGNS = ("Traceback", "Extension error", "Exception occurred", "please report",
               "The full traceback has been saved")


def assert_one_clear_message(build: Build, message: str) -> None:
    """The build failed, said ``message`` exactly once, and crashed nowhere."""
    assert build.returncode != 0, build.log[-3000:]
    assert build.log.count(message) == 1, build.log[-3000:]
    for sign in CRASH_SIGNS:
        assert sign not in build.log, build.log[-3000:]
    assert not build.crash_reports, build.crash_reports


def _broken_exhibits(tmp_path: Path, glob: str, old: str, new: str) -> Path:
    """A copy of exhibits/ with ``old`` replaced by ``new`` in one exhibit; that exhibit."""
    shutil.copytree(EXHIBITS, tmp_path / "exhibits")
    exhibit = next((tmp_path / "exhibits").glob(glob))
    text = exhibit.read_text()
    assert old in text
    exhibit.write_text(text.replace(old, new, 1))
    return exhibit


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# --- Fast: the messages themselves ------------------------------------------------------

@pytest.mark.parametrize("old, new, field, message", [
    ('source = "museum"', 'source = "musem"', 'source = "musem"',
     "field records[0].source: is 'musem' (make it one of 'museum', 'build')"),
    ('title = "', 'title = 3\nx = "', "title = 3", "field title: is 3 (make it a string)"),
    ("number = 3", "number = 3\n[[records]", "[[records]", "not valid TOML"),
])
def test_a_malformed_exhibit_is_located_at_its_field(tmp_path, old, new, field, message):
    exhibit = _broken_exhibits(tmp_path, "pytorch/03-*.toml", old, new)
    with pytest.raises(ExhibitError) as error:
        load_exhibit(exhibit, book_museum()["pytorch"].rooms,
                     load_machine_kinds(MACHINE_KINDS_FILE))
    assert error.value.location == f"{exhibit}:{_line_of(exhibit, field)}"
    assert message in error.value.message


def test_every_exhibit_code_cell_is_traced_to_its_field():
    museum = book_museum()
    origins = cell_origins(museum, TORCH_VERSION)
    for wing in museum.values():
        for exhibit in wing.exhibits:
            if exhibit.runs_on == "cpu":
                fix = origins[exhibit.fix_code]
                assert fix.exhibit is exhibit and fix.field == "fix_code"
                assert fix.line == _line_of(exhibit.path, "fix_code =")


@pytest.mark.parametrize("damage", [lambda text: text[:len(text) // 2], lambda text: ""])
def test_an_unreadable_recording_names_its_file_and_the_command(tmp_path, damage):
    broken = tmp_path / "bridges-cpu.ipynb"
    broken.write_text(damage((BOOK / "recordings" / "bridges-cpu.ipynb").read_text()))
    with pytest.raises(BookError) as error:
        load_recording(broken, load_machine_kinds(MACHINE_KINDS_FILE)["cpu"])
    assert error.value.path == broken and "not a readable notebook" in error.value.message
    assert f"{RECORDING_COMMAND} KIND=cpu" in error.value.message


def test_accept_exhibit_records_names_a_missing_folder():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "accept_exhibit_records.py"),
                           "--exhibits", "/nonexistent"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "/nonexistent: the exhibits folder does not exist" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_a_pdf_that_fails_its_checks_is_not_left_under_its_name(tmp_path, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "tools"))
    spec = importlib.util.spec_from_file_location("build_pdf", ROOT / "tools" / "build_pdf.py")
    build_pdf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_pdf)
    typeset, target = tmp_path / "latex.pdf", tmp_path / "pdf" / "book.pdf"
    typeset.write_bytes(b"%PDF-1.5 typeset")
    target.parent.mkdir()
    target.write_bytes(b"%PDF-1.5 an older one")
    assert not build_pdf.publish(typeset, target, ["page 3: 'word' runs into the margin"])
    assert not target.exists() and typeset.exists()
    assert "is not written" in capsys.readouterr().err
    assert build_pdf.publish(typeset, target, [])
    assert target.read_bytes() == typeset.read_bytes()


# --- Slow: the tiny book, broken ----------------------------------------------------------

@pytest.mark.slow
def test_a_malformed_exhibit_is_reported_once_with_its_file_and_line(tiny_book, tmp_path,
                                                                      cache_copy):
    """Every chapter loads the museum; the error still shows once, in no crash report."""
    shutil.copy(tiny_book / "chapter.md", tiny_book / "second.md")
    (tiny_book / "index.md").write_text("# Fixture\n\n```{toctree}\nchapter\nsecond\n```\n")
    exhibit = _broken_exhibits(tmp_path, "pytorch/03-*.toml", "fix_code = ", "fixcode = ")
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy,
                         settings={"coursebook_exhibits_dir": str(exhibit.parent.parent)})
    assert_one_clear_message(build, f"{exhibit}:{_line_of(exhibit, 'fixcode = ')}: ERROR: field "
                                    "fixcode: is no field of this table")


@pytest.mark.slow
def test_a_missing_cached_notebook_is_dropped_and_runs_again(tiny_book, tmp_path, cache_copy):
    [notebook] = cache_copy.glob("executed/*/base.ipynb")
    notebook.unlink()
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    assert build.returncode == 0, build.log
    assert "its entry is dropped and the chapter executes when its page is next read" in build.log
    assert build.executed == 1
    again = sphinx_build(tiny_book, tmp_path / "out2", cache_copy)
    assert again.returncode == 0 and again.executed == 0


@pytest.mark.slow
@pytest.mark.parametrize("length", [3000, 0])  # 0: no tables, read through jupyter-cache's
def test_a_damaged_cache_database_names_make_clean_cache(tiny_book, tmp_path, cache_copy,
                                                         length):
    database = cache_copy / "global.db"
    database.write_bytes(database.read_bytes()[:length])
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    assert_one_clear_message(build, f"Run `{CLEAN_CACHE_COMMAND}`")
    assert f"{database}" in build.log and "the execution cache is damaged" in build.log


@pytest.mark.slow
def test_a_cache_whose_creation_was_stopped_is_made_again(tiny_book, tmp_path):
    """A build stopped as sqlite made global.db left it empty, without __version__.txt."""
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "global.db").write_bytes(b"")
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert build.returncode == 0 and build.executed == 1, build.log[-3000:]


@pytest.mark.slow
def test_a_failed_run_leaves_nothing_in_the_published_folder(tiny_book, tmp_path, cache_copy):
    chapter = tiny_book / "chapter.md"
    good = chapter.read_text()
    chapter.write_text(good.replace("print((weights * 3).grad_fn)",
                                    "print((weights * 3).grad_fn)\nweights.no_such_method()"))
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    assert_one_clear_message(build, "code cell `import torch` raised an error")
    assert not list((tmp_path / "out" / "html").rglob("*.err.log"))
    report = ROOT / (re.search(r"The whole run's traceback: (\S+)", build.log)[1])
    assert report.is_file() and tmp_path / "out" / "html" not in report.parents
    chapter.write_text(good)
    # The PDF build of the edition (its LaTeX) keeps its own reports: the one named stays.
    latex = run_sphinx(sphinx_command(tiny_book, tmp_path / "out" / "latex",
                                      tmp_path / "out" / "doctrees-latex", builder="latex",
                                      settings={"nb_execution_cache_path": str(cache_copy)}))
    assert latex.returncode == 0 and report.is_file(), latex.stdout + latex.stderr
    fixed = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    assert fixed.returncode == 0, fixed.log
    assert not report.exists()


def _plant_cell(chapter: Path, code: str, top_matter: str = "", first: bool = False) -> int:
    """A code cell added after the tiny chapter's first example (``first``: before it, and
    its import of torch); the line of its code."""
    text = chapter.read_text()
    cell = f"```{{code-cell}} ipython3\n{code}\n```\n"
    anchor = "A worked example.\n" if first else "print((weights * 3).grad_fn)\n```\n"
    assert anchor in text
    text = text.replace(anchor, f"{cell}\n{anchor}" if first else f"{anchor}\n{cell}", 1)
    if top_matter:
        text = text.replace("kernelspec:", f"{top_matter}\nkernelspec:", 1)
    chapter.write_text(text)
    return _line_of(chapter, code.splitlines()[0])


# Kernels that die, by how each ends: its cell's code, the message's ending.
DYING = {"exit": ("import os\nos._exit(3)", "(exit code 3)"),
         "segfault": ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)",
                      "(killed by signal SIGSEGV (11)); the cells after it did not run. A crash "
                      "inside compiled code"),
         "oom-kill": ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)  # as the "
                      "out-of-memory killer", "(killed by signal SIGKILL (9)); the cells after "
                      "it did not run. SIGKILL usually comes from the out-of-memory killer")}


def _dying_chapters(book: Path, names: list[str], first: bool = False) -> list[str]:
    """A copy of the tiny chapter per DYING name, its kernel dying in a planted cell
    (``first``: before it imports torch), in the contents: each one's message."""
    messages = []
    for name in names:
        code, ending = DYING[name]
        chapter = book / f"{name}.md"
        shutil.copy(book / "chapter.md", chapter)
        line = _plant_cell(chapter, code, first=first)
        messages.append(f"{chapter}:{line}: ERROR: code cell `{code.splitlines()[0]}` was "
                        f"running when the kernel died {ending}")
    index = book / "index.md"
    index.write_text(index.read_text().replace("chapter\n", "chapter\n" + "\n".join(names) + "\n"))
    return messages


@pytest.mark.slow
@pytest.mark.own_kernels
def test_a_dead_kernel_names_its_cell_and_how_it_ended(tiny_book, tmp_path, cache_copy):
    """One build of three chapters, each kernel dying its own way (a warm cache: each
    chapter's kernel started as a build starts one)."""
    messages = _dying_chapters(tiny_book, list(DYING), first=True)  # before torch's import
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    for message in messages:
        assert_one_clear_message(build, message)
    assert "did not raise" not in build.log  # the cells after it never ran: none is blamed


@pytest.mark.parametrize("status, advice", [
    (-signal.SIGTERM, "SIGTERM is sent from outside the cell (`kill`, a closed terminal, "),
    (-signal.SIGHUP, "SIGHUP is sent from outside the cell"),
    (-signal.SIGSEGV, "A crash inside compiled code"),
    (-signal.SIGKILL, "SIGKILL usually comes from the out-of-memory killer"),
    (3, "ended the Python process"),
])
def test_a_dead_kernels_advice_follows_how_it_ended(status, advice):
    """The slow tests above see the exit status reach the message; here, each kind of end."""
    from coursebook.execute.notebook_runs import StoppedRun

    assert advice in StoppedRun("DeadKernelError", 0, exit_status=status).what


def test_no_cell_after_where_a_run_stopped_is_blamed():
    """A run stops at its first error no cell is tagged for, or in the cell that timed out:
    no later cell is blamed (it never ran), the stopped cell comes last; a run that went on
    past errors names each one."""
    import nbformat
    from docutils import nodes

    from coursebook.execute.notebook_runs import StoppedRun
    from coursebook.model.cell_notes import place_at
    from coursebook.verify.chapter_checks import cell_problems

    doctree = nodes.container()
    for index in range(3):  # the first cell ran clean, the others raised
        shown = nodes.container(nb_element="cell_code", cell_index=index,
                                cell_metadata={"tags": []})
        if index:
            shown += nodes.literal_block("TypeError: boom", "TypeError: boom",
                                         classes=["traceback"])
        doctree += shown
    cells = [place_at(nbformat.v4.new_code_cell(f"step_{n}()"), 10 * n + 1) for n in range(3)]

    def lines(succeeded: bool, stopped: StoppedRun | None = None) -> list[int]:
        return [p.line for p in cell_problems(doctree, cells, succeeded, None, stopped=stopped)]

    assert lines(True) == [11, 21]
    assert lines(False) == [11]
    timed_out = StoppedRun("CellTimeoutError", 1, timeout=30)
    [stopped] = cell_problems(doctree, cells, False, None, stopped=timed_out)
    assert stopped.line == 11 and stopped.message == f"code cell `step_1()` {timed_out.what}"
    assert lines(False, StoppedRun("CellTimeoutError", 2, timeout=30)) == [11, 21]


def test_a_long_error_message_is_quoted_from_its_name():
    """Flax's key_concepts raised a ValueError of 20 lines (five numbered ways out): the
    build quoted its last 12, which named no error and began mid-advice. A long message is
    quoted from the line naming its error, its rest elided; a short one's traceback ends
    the quote, as before (a SyntaxError's caret above its name)."""
    import nbformat
    from docutils import nodes

    from coursebook.model.cell_notes import place_at
    from coursebook.verify.chapter_checks import cell_problems

    def quoted(error: str) -> str:
        doctree = nodes.container()
        shown = nodes.container(nb_element="cell_code", cell_index=0,
                                cell_metadata={"tags": []})
        shown += nodes.literal_block(error, error, classes=["traceback"])
        doctree += shown
        cell = place_at(nbformat.v4.new_code_cell("MLP(8, 64)"), 9)
        [problem] = cell_problems(doctree, [cell], True, None)
        return problem.message.split(":\n", 1)[1].split("\n    Fix the cell")[0]

    advice = [f"{n}. Way out number {n}." for n in range(1, 21)]
    long = "\n".join(["ValueError: Found data on 'blocks'. Consider one of:", *advice])
    assert quoted(long).splitlines() == [
        "      ValueError: Found data on 'blocks'. Consider one of:",
        *(f"      {line}" for line in advice[:11]), "      …"]
    caret = "  Cell In[3], line 1\n    x = \n        ^\nSyntaxError: invalid syntax"
    assert quoted(caret) == "      " + caret.strip().replace("\n", "\n      ")


def test_a_cell_that_timed_out_at_a_programs_question_says_so():
    """A going-modular lesson's `!python train.py`, whose script asks `input("Press Enter to
    start training")`: the cell waited until the time limit, and the build said only to make
    it faster or raise the limit, which would wait longer. The question it printed last, its
    line left open or ended after a `:` or `?`, is named, with the answer as a fix; a cell
    that runs no program, whose output ends its line otherwise, or whose last line is a
    progress bar (review F17: it was quoted as the question), is told as before."""
    import nbformat

    from coursebook.execute.notebook_runs import StoppedRun, open_line

    def cell(source: str, printed: str) -> nbformat.NotebookNode:
        return nbformat.v4.new_code_cell(source, outputs=[
            nbformat.v4.new_output("stream", name="stdout", text=printed)])

    asked = "epoch 1\nPress Enter to start training"
    for source in ("!python train.py", "run = !python train.py", "%%bash\npython train.py",
                   "subprocess.run([sys.executable, 'train.py'])", "os.system('python t.py')"):
        assert open_line(cell(source, asked)) == "Press Enter to start training", source
    assert open_line(cell("print(1)\ntime.sleep(600)", asked)) == ""
    assert open_line(cell("!python train.py", "epoch 1\n")) == ""
    # A progress bar (tqdm's) rewrites its line in place, never ending it: no question.
    bar = "Epoch 1\n 44%|####4     | 440/1000\r 45%|####5     | 450/1000 [04:59<06:05]"
    assert open_line(cell("!python train.py", bar)) == ""
    assert open_line(cell("!python train.py", "Epoch 1\r\nPress Enter")) == "Press Enter"
    # A question on a line of its own (`print("Enter your name:")`, then `input()`): HR's F17.
    assert open_line(cell("!python ask.py", "Hi\nEnter your name:\n")) == "Enter your name:"
    assert open_line(cell("!python ask.py", "Ready?\r\n")) == "Ready?"
    assert open_line(cell("!python train.py", "loss: 0.1\r 45%|####5 | 450/1000\n")) == ""
    said = StoppedRun("CellTimeoutError", 1, timeout=30, prompt="Press Enter").what
    assert "It printed `Press Enter` last: if a program it runs asks " \
        "there (`input()`), it waits for an answer no build types: take the question out, or " \
        "answer it in the cell (`!echo | python train.py`). Else make it faster, or raise " \
        "the limit for this chapter in its top matter: `mystnb: {execution_timeout: 60}`." \
        in said, said
    assert "the cells after it did not run. Make it faster" in StoppedRun(
        "CellTimeoutError", 1, timeout=30).what


@pytest.mark.parametrize("chapter, setting", [
    ("lab.md", "in its top matter: `mystnb: {execution_timeout: 60}`"),
    ("lab.ipynb", 'in its metadata: `"mystnb": {"execution_timeout": 60}`'),
    ("lab.py", "in its jupytext header: `jupyter: {mystnb: {execution_timeout: 60}}`")])
def test_a_run_that_stopped_names_the_setting_as_its_chapters_kind_writes_it(chapter, setting):
    """A notebook chapter whose cell timed out was told to raise the limit "in its top
    matter: `mystnb: {...}`", which a notebook has not: its metadata holds the setting, as
    JSON (a percent script's jupytext header, under `jupyter:`), as for its packages."""
    from coursebook.execute.notebook_runs import StoppedRun

    said = StoppedRun("CellTimeoutError", 1, timeout=30, chapter=chapter).what
    assert said.endswith(f"raise the limit for this chapter {setting}."), said
    read = StoppedRun("UnlistedRead", 1, file="names.txt", chapter=chapter).what
    assert read.endswith(setting.replace("mystnb", "coursebook").replace(
        "execution_timeout", "reads").replace("60", '["names.txt"]' if ".ipynb" in chapter
                                              else "[names.txt]")), read


@pytest.mark.parametrize("chapter", ["lab.md", "lab.ipynb", "lab.py"])
def test_the_run_report_words_an_unlisted_read_as_the_builds_line(chapter, tmp_path,
                                                                   monkeypatch):
    """The run's traceback, which reports/<doc>.err.log keeps, told a notebook to list a read
    "in its top matter" while the build's line said "in its metadata": the run now words it
    for its chapter's kind (a run faked: a cell read names.txt, beside the chapter)."""
    import nbformat
    from jupyter_cache.executors import utils
    from myst_nb.core.config import NbParserConfig

    from coursebook.execute.fill_cache import Run, run_into_cache
    from coursebook.execute.kernel_forkserver import READ
    from coursebook.execute.notebook_runs import StoppedRun

    def run(notebook, cwd, on_cell_executed, **options):
        on_cell_executed(cell=notebook.cells[0], cell_index=0, execute_reply={"content": {
            "payload": [{"source": READ, "file": "names.txt", "mtime": 0}]}})
        return utils.ExecutionResult(notebook, cwd, 0.0)

    monkeypatch.setattr(utils, "single_nb_execution", run)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("open('names.txt')")])
    result, stopped, _ = run_into_cache(tmp_path / "cache", Run(
        tmp_path / chapter, notebook, NbParserConfig()), keep_failed=False)
    told = StoppedRun("UnlistedRead", 0, file="names.txt", chapter=chapter).what
    assert result.exc_string == stopped.what == told, result.exc_string


FLOOD = 'print("x" * 5_000_000, end="")'
PROGRESS = ('import sys\nfor step in range(30_000):\n'
            '    sys.stderr.write(f"\\r{step:6d} steps " + "#" * (step % 40))\n'
            'sys.stderr.write("\\n")\nprint("\\n".join(f"epoch {n}: loss" for n in range(20_000)))')


@pytest.mark.slow
@pytest.mark.own_kernels
def test_a_cell_past_the_time_limit_is_named_with_the_limit_and_the_setting(tiny_book, tmp_path,
                                                                           cache_copy, request):
    """The cell that hung, not a later `raises-exception` cell that never ran; the remedy
    the message names (the chapter's own limit) works: two builds at once (their waits
    overlap), of two copies of the book. The first runs without the deferral of myst-nb's
    imports (execute/myst_nb_clients.py), which carries only speed: a flood of output is
    still cut and the hung cell still named. Its cold cache forks its chapters' kernels
    from the build's kernel server, their parent: two more chapters, whose kernels die,
    get the advice their exit status gives (as a warm build's started kernels do)."""
    chapter = tiny_book / "chapter.md"
    raised_book = shutil.copytree(tiny_book, tmp_path / "raised-src")
    dead = _dying_chapters(tiny_book, ["exit", "oom-kill"])  # after torch's import
    # A cold cache: the build's kernel server imports torch as it reads, so the cells before
    # the hung one (torch's import, the flood) meet a short limit on a busy machine too.
    _plant_cell(chapter, "import time\ntime.sleep(600)")
    _plant_cell(chapter, FLOOD)  # before the hung cell
    line = _line_of(chapter, "import time")
    # The chapter's own limit holds for its every cell. A sleep past the setting's 2 s, and
    # no longer: it proves the chapter's limit won. Its kernel is forked from the session's
    # kernel server (conftest: torch imported once); the limit, not the kernel, its subject.
    _plant_cell(raised_book / "chapter.md", "import time\ntime.sleep(3)",
                top_matter="mystnb: {execution_timeout: 60}")
    with ThreadPoolExecutor(2) as pool:
        hung = pool.submit(sphinx_build, tiny_book, tmp_path / "out", tmp_path / "cold-cache",
                           settings={"nb_execution_timeout": "8"},
                           env={"COURSEBOOK_DEFER_IMPORTS": "0"})
        raised = pool.submit(sphinx_build, raised_book, tmp_path / "raised",
                             shutil.copytree(cache_copy, tmp_path / "raised-cache"),
                             settings={"nb_execution_timeout": "2"},
                             env=request.getfixturevalue("_kernel_server"))
        build, raised = hung.result(), raised.result()
    assert "chapter kernels forked from one server" in build.log, build.log[-3000:]
    assert_one_clear_message(build, f"{chapter}:{line}: ERROR: code cell `import time` was "
                                    "still running after 8 s, the limit for one cell "
                                    "(nb_execution_timeout)")
    assert "`mystnb: {execution_timeout: 16}`" in build.log and "did not raise" not in build.log
    for message in dead:
        assert_one_clear_message(build, message)
    assert build.log.count(f"code cell `{FLOOD}`: an output is longer") == 1, build.log[-3000:]
    assert "still running after" not in raised.log and raised.executed == 1, raised.log[-3000:]


@pytest.mark.slow
def test_a_flood_of_output_is_cut_on_the_page_and_verified_whole(tiny_book, tmp_path, cache_copy):
    """A 5 MB line and a progress bar redrawn 30,000 times: each build finishes (myst-nb's
    stream merging took hours over such a line), the page shows the start, the end and the
    cut, the build says so once per cell, and the expected output holds a digest of the
    whole, so a change in the cut part still fails the build."""
    from coursebook.execute.notebook_runs import KEEP

    chapter = tiny_book / "chapter.md"
    _plant_cell(chapter, FLOOD)
    _plant_cell(chapter, PROGRESS)
    lines = [_line_of(chapter, FLOOD), _line_of(chapter, "import sys")]
    accepted = sphinx_build(tiny_book, tmp_path / "accept", cache_copy,
                            settings={"coursebook_accept_outputs": "1"})
    assert accepted.returncode == 0, accepted.log[-3000:]
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    assert build.returncode == 0 and build.executed == 0, build.log[-3000:]
    for line, first in zip(lines, (FLOOD, "import sys")):
        assert build.log.count(f"{chapter}:{line}: code cell `{first}`: an output is longer") == 1
    assert "NbParserConfig" not in build.log and "MdParserConfig" not in build.log  # quiet
    page = (tmp_path / "out" / "html" / "chapter.html").read_text()
    assert "… part of one line cut (4,980,000 characters) …" in page
    assert "29999 steps" in page and " 1234 steps" not in page  # the bar as it ended
    assert re.search(r"… [\d,]+ lines cut \([\d,]+ characters\) …", page)
    assert "epoch 0: loss" in page and "epoch 19999: loss" in page and "sha256" not in page
    assert len(page) < 12 * KEEP
    expected = tiny_book / "expected" / "torch-2.13.0" / "chapter.txt"
    text = expected.read_text()
    assert len(re.findall(r"characters, sha256 [0-9a-f]+\) …", text)) == 2
    assert len(text) < 12 * KEEP
    [digest] = re.findall(r"part of one line cut \(4,980,000 characters, sha256 ([0-9a-f]+)", text)
    expected.write_text(text.replace(digest, "0" * len(digest)))
    tampered = sphinx_build(tiny_book, tmp_path / "tampered", cache_copy)
    assert_one_clear_message(tampered, f"{chapter}:{lines[0]}: ERROR: code cell")
    assert f"+… part of one line cut (4,980,000 characters, sha256 {digest}) …" in tampered.log


@pytest.mark.slow
def test_a_chapter_that_is_not_utf8_is_named_at_its_line(tiny_book, tmp_path, cache_copy):
    chapter = tiny_book / "chapter.md"
    line = _line_of(chapter, "A worked example.")
    data = chapter.read_bytes()
    chapter.write_bytes(data.replace(b"A worked example.", b"A worked \xe9xample.", 1))
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    assert_one_clear_message(build, f"{chapter}:{line}: ERROR: the file is not valid UTF-8: "
                                    "byte 0xe9 in column 10")
    assert build.executed == 0


@pytest.mark.slow
@pytest.mark.parametrize("damage", [
    lambda data: data[:500],
    # whole JSON, a byte no UTF-8 holds inside a string: myst-nb's strict read stopped the build
    lambda data: data.replace(b'"id": "', b'"id": "\xff', 1)],
    ids=["cut", "a byte no UTF-8 holds inside a string"])
def test_a_damaged_cached_notebook_is_dropped_and_runs_again(tiny_book, tmp_path, cache_copy,
                                                             damage):
    [notebook] = cache_copy.glob("executed/*/base.ipynb")
    notebook.write_bytes(damage(notebook.read_bytes()))
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    assert build.returncode == 0, build.log[-3000:]
    assert build.log.count("was damaged (not a notebook's JSON); its entry is dropped") == 1
    assert build.executed == 1 and not build.crash_reports
    for sign in CRASH_SIGNS:
        assert sign not in build.log


@pytest.mark.slow
@pytest.mark.own_kernels
def test_a_file_beside_the_chapter_a_cell_reads_unlisted_is_refused_at_its_line(tiny_book,
                                                                                tmp_path):
    """A chapter kept its cached run when a file it read, unlisted in `coursebook: reads`, was
    edited: the page showed the old file's outputs, verified (HL3). The run is refused at the
    reading cell, twice (not cached as good), from a kernel forked from the build's server
    (a cold cache) and from one started (a warm one); a file the run writes before it reads
    it (torch.save, savefig, open(..., 'w')) is its own, left in its temporary folder, not
    beside the chapter. A file there written through its link (one an earlier run left) is
    refused before it is written (review F16), as is one it lists, with its own words (F21)."""
    chapter = tiny_book / "chapter.md"
    (tiny_book / "data.csv").write_text("1,2\n")
    _plant_cell(chapter, "import matplotlib.pyplot as plt\ntorch.save(weights, 'ones.pt')\n"
                "print(torch.load('ones.pt'))\nopen('out.txt', 'w').write('out')\n"
                "print(open('out.txt').read())\nplt.plot([1, 2])\nplt.savefig('fig.png')\n"
                "plt.close()")
    line = _plant_cell(chapter, "print(open('data.csv').read())")
    cold = sphinx_build(tiny_book, tmp_path / "cold", tmp_path / "cache")
    assert "chapter kernels forked from one server" in cold.log, cold.log[-3000:]
    for build in (cold, sphinx_build(tiny_book, tmp_path / "warm", tmp_path / "cache")):
        assert_one_clear_message(build, (
            f"{chapter}:{line}: ERROR: code cell `print(open('data.csv').read())` reads "
            "`data.csv`, beside the chapter, which the top matter's 'coursebook: reads' does not "
            "list, so an edit of it would not run the chapter again: list it in its top "
            "matter: `coursebook: {reads: [data.csv]}`"))
        assert build.executed == 1 and build.log.count("reads `") == 1, build.log[-3000:]
    written = ("ones.pt", "out.txt", "fig.png")
    assert not any((tiny_book / name).exists() for name in written)
    # Listed, it is there also for a chapter that carries `execution_in_temp: true`, as every
    # lesson make chapter FROM= brought in did until 0db1e41 (HR's H4: it ran among no links,
    # and the listed file was missing: FileNotFoundError).
    chapter.write_text(chapter.read_text().replace(
        "kernelspec:", "coursebook: {reads: [data.csv]}\nmystnb: {execution_in_temp: true}\n"
        "kernelspec:", 1))
    (tiny_book / "fig.png").write_text("an earlier run's")  # its write goes through the link
    left = sphinx_build(tiny_book, tmp_path / "left", tmp_path / "cache")
    assert_one_clear_message(left, (
        f"{chapter}:{_line_of(chapter, 'import matplotlib')}: ERROR: code cell `import "
        "matplotlib.pyplot as plt` changes `fig.png` beside the chapter, through the link its "
        "run makes to what is there (the book's sources): refused. Write at another path, which "
        "its run keeps; delete the file if an earlier run left it."))
    assert (tiny_book / "fig.png").read_text() == "an earlier run's"
    (tiny_book / "fig.png").unlink()
    listed = sphinx_build(tiny_book, tmp_path / "listed", tmp_path / "cache",
                          settings={"coursebook_accept_outputs": "1"})
    assert listed.returncode == 0 and listed.executed == 1, listed.log[-3000:]
    assert not any((tiny_book / name).exists() for name in written)
    # Its own data written back is no leftover to delete (review F21).
    back = _plant_cell(chapter, "open('data.csv', 'a').write('3,4')")
    changed = sphinx_build(tiny_book, tmp_path / "changed", tmp_path / "cache")
    assert_one_clear_message(changed, (
        f"{chapter}:{back}: ERROR: code cell `open('data.csv', 'a').write('3,4')` changes "
        "`data.csv`, which the top matter's 'coursebook: reads' lists, through the link its run "
        "makes, which would change the copy its next run reads (refused): write the result at "
        "another path"))
    assert (tiny_book / "data.csv").read_text() == "1,2\n"


@pytest.mark.slow
@pytest.mark.own_kernels
def test_a_chapter_listing_no_reads_leaves_nothing_beside_it(tiny_book, tmp_path):
    """A chapter that lists no `coursebook: reads` ran in book/ and left what it wrote there:
    a second run's `%%writefile` printed "Overwriting" where a fresh clone's prints "Writing",
    and its outputs differed from CI's. Every chapter runs in a temporary folder of its own."""
    chapter = tiny_book / "chapter.md"
    _plant_cell(chapter, "import helper\nprint(helper.X)")
    _plant_cell(chapter, "%%writefile helper.py\nX = 2")  # planted before the cell above
    for run in ("first", "second"):  # each on a cache of its own, as CI's from a fresh clone
        build = sphinx_build(tiny_book, tmp_path / run, tmp_path / f"cache-{run}", settings={
            "coursebook_accept_outputs": "1"} if run == "first" else None)
        assert build.returncode == 0 and build.executed == 1, build.log[-3000:]
        assert not (tiny_book / "helper.py").exists()


@pytest.mark.slow
@pytest.mark.own_kernels
@pytest.mark.parametrize("code, told", [
    ("open('data/out.csv', 'w').write('1')", "changes `data/out.csv` beside the chapter, "),
    ("os.remove('data/old.csv')", "changes `data/old.csv` beside the chapter, "),
    ("os.makedirs(f'{MACHINE}/content/data', exist_ok=True)", "changes `MACHINE/content`, "
     "outside the folder its run makes (the machine a build runs on, as root in CI): refused. "
     "Write in that folder, at a relative path (`content`), which its run keeps."),
    # UvA's tutorials keep checkpoints in `../saved_models`: in the build's temporary folder,
    # where the next build's run found them and printed "Found pretrained model" (varied).
    ("os.makedirs('../saved_models/tutorial4', exist_ok=True)", "changes `../saved_models`, "
     "outside the folder its run makes (the machine a build runs on, as root in CI): refused. "
     "Write in that folder, at a relative path (`saved_models`), which its run keeps.")])
def test_a_write_outside_a_chapters_run_is_refused_before_it_is_made(tiny_book, tmp_path, code,
                                                                     told):
    """A write into a folder beside the chapter (`reads: [data/in.csv]`) landed in book/
    through its run's link to it, and a removal there removed the book's own file; a folder
    made at an absolute path (Colab's /content: MACHINE here, outside the build's temporary
    folder and the home) was made on the machine the build ran on, as root in CI; one made
    out of the run's folder by a relative path (`..`) in the temporary folder, for the next
    build's run to find. Each is refused at its cell, before it changes anything."""
    machine = tmp_path / "machine"
    machine.mkdir()
    (tiny_book / "data").mkdir()
    for name in ("in.csv", "old.csv"):
        (tiny_book / "data" / name).write_text("0\n")
    chapter = tiny_book / "chapter.md"
    line = _plant_cell(chapter, f"import os\nMACHINE = {str(machine)!r}\n{code}",
                       "coursebook: {reads: [data/in.csv]}")
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    if told.endswith("beside the chapter, "):
        told += ("through the link its run makes to what is there (the book's sources): "
                 "refused. Write at another path, which its run keeps; delete the file if an "
                 "earlier run left it.")
    assert_one_clear_message(build, f"{chapter}:{line}: ERROR: code cell `import os` "
                             + told.replace("MACHINE", str(machine)))
    assert sorted(path.name for path in (tiny_book / "data").iterdir()) == ["in.csv", "old.csv"]
    assert not list(machine.iterdir())
    assert not list((tmp_path / "out" / "tmp").rglob("saved_models"))


@pytest.mark.slow
def test_a_scratch_folder_a_cell_moves_into_is_its_own(tmp_path):
    """A cell that moves into a temporary folder it made and writes there by a relative name
    (as lessons do to unpack a download) was refused after faaa047, which took every relative
    name out of the run's folder for the lesson's layout (hr3's H13): it runs, as a write
    there by an absolute name does; `../x.txt` from the run's own folder stays refused."""
    import nbformat

    from coursebook.execute.notebook_runs import run_notebook

    code = ("import os, tempfile\nhere = os.getcwd()\nwith tempfile.TemporaryDirectory() as d:\n"
            "    os.chdir(d)\n    open('a.txt', 'w').write('x')\n    os.chdir(here)\nprint('ok')")
    for source, refused in ((code, None), ("open('../x.txt', 'w').write('x')", "../x.txt")):
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)], metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
        run = tmp_path / f"run{bool(refused)}"
        run.mkdir()
        _, stopped = run_notebook(notebook, cwd=str(run), timeout=60, allow_errors=True)
        assert getattr(stopped, "file", None) == refused, stopped


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["started", "forked", "waiting"])
def test_a_run_keeps_what_it_changes_in_a_temporary_folder_of_its_own(tmp_path, monkeypatch,
                                                                     kernel):
    """A checkpoint a lesson writes under /tmp (Flax's `/tmp/d9-flax-ckpt`) outlived its run,
    as the machine's temporary folder was the run's: the next build's run printed "Found
    pretrained model", not "Training...". It is refused at its cell; what a cell makes through
    tempfile is in its run's temporary folder (TMPDIR too), gone after the run, for a kernel
    started for the run, forked for it, or kept waiting and taken."""
    import uuid

    import nbformat

    from coursebook.execute.kernel_pool import (make_pool, offer_waiting_kernels,
                                                start_kernel_forkserver, stop_kernel_forkserver)
    from coursebook.execute.notebook_runs import run_notebook

    checkpoint = f"/tmp/d9-flax-ckpt-{uuid.uuid4().hex}"
    # A library's cache in the temporary folder, named in the environment as it is imported
    # (torch._dynamo's TORCHINDUCTOR_CACHE_DIR): imported by the kernel server too.
    cache = ("import os, tempfile\ncache = os.environ.setdefault('A_CACHE_DIR', "
             "os.path.join(tempfile.gettempdir(), 'a_cache'))\n")
    made = (cache + "os.makedirs(cache, exist_ok=True)\n"
            "open(os.path.join(cache, 'c.txt'), 'w').write('x')\n"
            "with tempfile.TemporaryDirectory() as d:\n"
            "    open(os.path.join(d, 'a.txt'), 'w').write('x')\n"
            "handle, name = tempfile.mkstemp()\nos.close(handle)\nleft = tempfile.mkdtemp()\n"
            "open(os.path.join(left, 'b.txt'), 'w').write('x')\n"
            "print(cache, name, left, tempfile.gettempdir(), os.environ.get('TMPDIR'), sep='\\n')")
    written = f"os.makedirs(os.path.join('/tmp', {os.path.basename(checkpoint)!r}, 'ckpt'))"
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(made), nbformat.v4.new_code_cell(written)], metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    run = tmp_path / "run"
    run.mkdir()
    pool = tmp_path / "pool"
    server = None
    if kernel != "started":
        make_pool(pool)
        (pool / "a_cache.py").write_text(cache)  # the server's folder: on its import path
        for name in ("JUPYTER_PATH", "COURSEBOOK_KERNEL_POOL"):  # restored after the test
            monkeypatch.setenv(name, os.environ.get(name, ""))
        offer_waiting_kernels(pool)
        server = start_kernel_forkserver(pool, ["a_cache"],
                                         keep=tmp_path if kernel == "waiting" else None)
    try:
        while kernel == "waiting" and not list((pool / "ready").glob("*.json")):
            time.sleep(0.05)
        _, stopped = run_notebook(notebook, cwd=str(run), timeout=60, allow_errors=True)
    finally:
        if server is not None:
            stop_kernel_forkserver(pool, server)
        shutil.rmtree(checkpoint, ignore_errors=True)
    assert getattr(stopped, "file", None) == checkpoint, stopped
    assert stopped.cell_index == 1 and not os.path.lexists(checkpoint)
    *made, temporary, variable = notebook.cells[0].outputs[0]["text"].split()
    assert variable == temporary != tempfile.gettempdir(), (temporary, variable)
    assert all(path.startswith(temporary + os.sep) for path in made), made
    assert not any(os.path.lexists(path) for path in (*made, temporary))  # gone with its run


def test_a_home_at_the_root_keeps_nothing_outside_a_run(monkeypatch):
    """Where HOME is / (a container run under another uid, some CI images), the home among
    the folders a run may change was `/`, under which every path lies: a write or a removal
    at Colab's /content/... was made, and the refusal could never fire."""
    from coursebook.execute.kernel_forkserver import kept_outside

    monkeypatch.setenv("HOME", "/")
    assert not "/content/data/x.csv".startswith(kept_outside())
    monkeypatch.setenv("HOME", "/home/student")  # a home of its own stays kept: its caches
    assert "/home/student/.cache/torch/x.pt".startswith(kept_outside())


def test_the_notebooks_folder_in_html_is_text_not_a_tag():
    """A DataFrame of paths shows `<notebook folder>` in its HTML: written raw, a browser took
    it for an unknown tag and showed `/data.csv` alone."""
    import nbformat

    from coursebook.execute.notebook_runs import NOTEBOOK_FOLDER, name_the_folder

    cell = nbformat.v4.new_code_cell("frame", outputs=[nbformat.v4.new_output(
        "execute_result", {"text/html": "<td>/tmp/tmpab12cd34/data.csv</td>",
                           "text/plain": "/tmp/tmpab12cd34/data.csv"})])
    name_the_folder(nbformat.v4.new_notebook(cells=[cell]), "/tmp/tmpab12cd34")
    assert cell.outputs[0].data == {"text/html": "<td>&lt;notebook folder&gt;/data.csv</td>",
                                    "text/plain": f"{NOTEBOOK_FOLDER}/data.csv"}


@pytest.mark.slow
def test_the_folder_the_cells_run_in_is_shown_as_the_notebooks_folder(tmp_path):
    """QuantEcon's python_essentials shows `%pwd`: the page showed the build's folder (a new
    /tmp one on each run of a chapter that lists its reads, else the builder's checkout), an
    output that varied, or differed from machine to machine, and meant nothing to a student."""
    import nbformat

    from coursebook.execute.notebook_runs import NOTEBOOK_FOLDER, run_notebook

    folder, chapter = tmp_path / "tmpa1b2c3d4", tmp_path / "book" / "chapter.md"
    folder.mkdir()
    chapter.parent.mkdir()
    (chapter.parent / "data.csv").write_text("1\n")  # a listed read: its run links it
    (folder / "data.csv").symlink_to(chapter.parent / "data.csv")
    cells = ["%pwd", "import os\nprint(os.getcwd())", "!pwd",
             "from pathlib import Path\nPath('data.csv').resolve()", repr(f"{folder}-old")]
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(code) for code in cells], metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    run_notebook(notebook, str(chapter), cwd=str(folder), timeout=60, allow_errors=False)
    shown = [(output.get("text") or output["data"]["text/plain"]).rstrip()
             for cell in notebook.cells for output in cell.outputs]
    assert shown == [f"'{NOTEBOOK_FOLDER}'", NOTEBOOK_FOLDER, NOTEBOOK_FOLDER,
                     f"PosixPath('{NOTEBOOK_FOLDER}/data.csv')", repr(f"{folder}-old")], shown


@pytest.mark.slow
def test_a_helper_module_beside_the_chapter_is_a_file_it_reads_the_books_own_code_is_not(
        tmp_path):
    """An import reads its module (io.open_code), compiled or not: a helper beside the
    chapter is read; the book's modules key the run already (shared_cache.book_code_digest)."""
    import py_compile

    import nbformat

    from coursebook.execute.notebook_runs import run_notebook

    (tmp_path / "helpers.py").write_text("X = 3\n")
    for folder, code, read in ((tmp_path, "import helpers", "helpers.py"),
                               (tmp_path, "import helpers", "helpers.py"),
                               (BOOK, "import coursebook.figures", None)):
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)], metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
        _, stopped = run_notebook(notebook, cwd=str(folder), timeout=60, allow_errors=False)
        assert (stopped and stopped.file) == read, stopped
        py_compile.compile(str(tmp_path / "helpers.py"))  # the next run's import reads it


# --- Slow: the real book, broken (a scratch copy, the warm cache copied) --------------------

@pytest.fixture
def book_copy(tmp_path) -> Path:
    shutil.copytree(BOOK, tmp_path / "book")
    return tmp_path / "book"


@pytest.fixture
def warm_cache(built, tmp_path) -> Path:
    """A copy of the cache the session's real-book builds filled: nothing runs again."""
    shutil.copytree(built["student"].outdir.parent / "cache", tmp_path / "cache")
    return tmp_path / "cache"


def _damage_recording(book: Path, change) -> Path:
    recording = book / "recordings" / "bridges-cpu.ipynb"
    recording.write_text(change(recording.read_text()))
    return recording


def _without_provenance(text: str) -> str:
    notebook = json.loads(text)
    del notebook["metadata"]["coursebook_recording"]
    return json.dumps(notebook)


@pytest.mark.slow
@pytest.mark.parametrize("change, message", [
    (lambda text: text[:len(text) // 2], "not a readable notebook"),
    (_without_provenance, "metadata 'coursebook_recording' needs"),
])
def test_a_damaged_recording_gives_one_message(book_copy, warm_cache, tmp_path, change,
                                               message):
    recording = _damage_recording(book_copy, change)
    build = sphinx_build(book_copy, tmp_path / "out", warm_cache,
                         settings={"coursebook_recordings_dir": str(recording.parent)})
    assert_one_clear_message(build, message)
    assert f"{recording}: {message}" in build.log and RECORDING_COMMAND in build.log


@pytest.mark.slow
def test_a_recording_labelled_tpu_that_ran_on_cpu_gives_one_message(book_copy, warm_cache,
                                                                      tmp_path):
    recordings = book_copy / "recordings"
    shutil.copy(recordings / "bridges-cpu.ipynb", recordings / "bridges-tpu.ipynb")
    build = sphinx_build(book_copy, tmp_path / "out", warm_cache,
                         settings={"coursebook_recordings_dir": str(recordings)})
    assert_one_clear_message(build, "a CPU run can never be a TPU recording")



@pytest.mark.parametrize("tool", sorted(p.name for p in (ROOT / "tools").glob("*.py")
                                        if p.read_text().startswith("#!")))
def test_a_tool_started_by_its_shebang_runs_in_the_book_environment(tool):
    """``tools/NAME.py --help`` as the docs show it: the system Python starts it."""
    import os

    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)
    environment = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    done = subprocess.run([str(ROOT / "tools" / tool), "--help"], capture_output=True, text=True,
                          env=dict(environment, PATH=path))
    assert done.returncode == 0 and done.stdout.startswith("usage:"), done.stderr


@pytest.mark.slow
@pytest.mark.own_kernels
def test_ctrl_c_while_a_chapter_executes_ends_in_one_line(tiny_book, tmp_path, request):
    """Ctrl-C reaches the whole process group, as from a terminal; the next build recovers."""
    import os
    import signal
    import time

    from coursebook.process.interrupt import MESSAGE

    chapter = tiny_book / "chapter.md"
    good = chapter.read_text()
    # The cell writes `sleeping` in its run's folder (in the build's TMPDIR) as it starts to
    # sleep: a run keeps what it changes there.
    chapter.write_text(good.replace("print((weights * 3).grad_fn)", (
        "print((weights * 3).grad_fn)\nimport pathlib, time\n"
        "pathlib.Path('sleeping').touch(); time.sleep(30)")))
    (tmp_path / "tmp").mkdir()

    def sleeping() -> bool:
        return any((tmp_path / "tmp").glob("*/sleeping"))

    command = sphinx_command(tiny_book, tmp_path / "out" / "html", tmp_path / "out" / "doctrees",
                             settings={"nb_execution_cache_path": str(tmp_path / "cache")},
                             jobs=None)
    log = tmp_path / "log"
    with log.open("w") as out:
        build = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                 start_new_session=True,
                                 env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
        deadline = time.monotonic() + 180  # a build that hangs before the cell fails the test
        while not sleeping() and build.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if not sleeping() and build.poll() is None:  # hung before the cell
            os.killpg(build.pid, signal.SIGKILL)
            build.wait()
        assert sleeping(), log.read_text()[-3000:]
        os.killpg(build.pid, signal.SIGINT)  # the kernel is in the sleeping cell
        returncode = build.wait(timeout=60)
    text = log.read_text()
    assert returncode == 130 and text.count(MESSAGE) == 1, text[-3000:]
    for sign in CRASH_SIGNS + ("Event loop is closed",):
        assert sign not in text, text[-3000:]
    chapter.write_text(good)
    # Its chapter's kernel forked from the session's kernel server (conftest: torch imported
    # once), as test_stopped_builds' next builds after SIGINT: the pages are its subject.
    again = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache",
                         env=request.getfixturevalue("_kernel_server"))
    assert again.returncode == 0, again.log[-3000:]


# --- The table of faults (docs/faults.md) holds to the code --------------------------------------

# How the table writes a part that varies: "…", or one of these words.
PLACEHOLDERS = re.compile(r"…|\b(?:LINE|N|X|DIR|FILE|KIND|NAME)\b")
# Where a message says where it is: Sphinx's location and level, or a file the fault names.
LOCATION = re.compile(r"^(?:\S*:(?:LINE|\d+): )?(?:ERROR: )?(?:\S+\.(?:ipynb|md|toml): )?")
CODE_SPAN = re.compile(r"``\s(.+?)\s``|(?<!`)`([^`]+)`(?!`)")
FORMAT_SPEC = re.compile(r"%[-#0 +]*\d*(?:\.\d+)?[sdrf]")


def _table_rows() -> list[list[str]]:
    section = (ROOT / "docs" / "faults.md").read_text()
    rows = [[cell.strip() for cell in line.strip().strip("|").split(" | ")]
            for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| ---")]
    return rows[1:]  # the header


def _constants(tree) -> dict[str, str]:
    import ast

    return {target.id: node.value.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for target in node.targets if isinstance(target, ast.Name)}


def _message_pieces() -> set[str]:
    """The literal text of every string in the book's code and tools: f-strings and %-formats
    split where a value goes in, module constants (the commands) put in where they are used."""
    import ast

    files = [*(ROOT / "book" / "_ext").rglob("*.py"), *(ROOT / "tools").glob("*.py")]
    trees = [ast.parse(path.read_text()) for path in files]
    constants = {name: value for tree in trees for name, value in _constants(tree).items()}
    pieces: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                text = "".join(
                    part.value if isinstance(part, ast.Constant) else
                    constants.get(getattr(part.value, "id", None), "\0") for part in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            else:
                continue
            pieces.update(" ".join(piece.split())
                          for piece in FORMAT_SPEC.sub("\0", text).split("\0"))
    return pieces


def _fragments(span: str) -> list[str]:
    """The literal parts of a quoted message: no location, split where a value goes in
    and where a message joins its parts (": ")."""
    parts = PLACEHOLDERS.split(LOCATION.sub("", span.strip()))
    fragments = (fragment.strip(" `'\"()[],;:.") for part in parts for fragment in part.split(": "))
    return [" ".join(fragment.split()) for fragment in fragments if len(fragment) >= 3]


def test_the_readme_quotes_the_messages_the_code_prints():
    """Each fault's message in docs/faults.md (its code spans, the varying parts elided) is text
    the code prints; each command the table names is a target of the Makefile."""
    rows = _table_rows()
    assert len(rows) >= 20 and all(len(row) == 3 for row in rows), rows
    pieces = _message_pieces()
    missing = [(row[0], fragment) for row in rows for span in CODE_SPAN.findall(row[1])
               for fragment in _fragments(span[0] or span[1])
               if not any(fragment in piece for piece in pieces)]
    assert not missing, f"docs/faults.md fragments the code does not print: {missing}"
    targets = set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))
    commands = {command for row in rows
                for command in re.findall(r"`make ([a-z][\w-]*)", " ".join(row))}
    assert commands and commands <= targets, commands - targets


def test_the_readme_table_check_bites():
    """A stale quote (an older wording, a command gone) is found."""
    pieces = _message_pieces()
    for stale in ("a recording labelled TPU ran on 'cpu'", "needs device_platform"):
        assert not all(any(f in piece for piece in pieces) for f in _fragments(stale))
    assert all(any(f in piece for piece in pieces)
               for f in _fragments("pt01.md:LINE: ERROR: code cell `…` is tagged "
                                   "`raises-exception` but did not raise"))


@pytest.mark.slow
@pytest.mark.own_kernels
def test_an_execution_package_not_installed_is_named_with_the_command(tiny_book, tmp_path):
    """conf.py names a package whose version keys the cache, and this Python lacks it (a
    venv older than conf.py): one line, not a crash report."""
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache", settings={
        "coursebook_execution_packages": "torch,no-such-package-here"})
    assert_one_clear_message(build, "coursebook_execution_packages names 'no-such-package-here', "
                                    "which this Python does not have: run `make venv`")


@pytest.mark.slow
@pytest.mark.own_kernels
def test_a_chapter_naming_a_kernel_not_installed_is_told_which(tiny_book, tmp_path):
    """A chapter's top matter names a kernel this machine lacks (a notebook brought from
    elsewhere): one line naming it and the book's kernel, not a crash report."""
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text().replace("  name: python3\n", "  name: python3.12\n", 1))
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert_one_clear_message(build, "no kernel named 'python3.12' is installed here")


@pytest.mark.slow
@pytest.mark.parametrize("named", ["RuntimeError", "ValueError"])
def test_a_cell_raising_another_error_than_its_raises_names_stops_the_build(tiny_book, tmp_path,
                                                                            cache_copy, named):
    """`raises: NAME` (make chapter FROM= writes the error the lesson saved) holds a
    `raises-exception` cell to that error: any other (a module, a name an earlier cell was to
    define) was accepted as the lesson's."""
    chapter = tiny_book / "chapter.md"
    tagged = ":tags: [raises-exception]\n(weights * 2).backward()"
    assert tagged in chapter.read_text()
    chapter.write_text(chapter.read_text().replace(tagged, (
        f"---\ntags: [raises-exception]\nraises: {named}\n---\n(weights * 2).backward()")))
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    if named == "RuntimeError":  # the error it raises
        assert build.returncode == 0, build.log[-3000:]
        return
    line = _line_of(chapter, "(weights * 2).backward()")
    assert_one_clear_message(build, f"{chapter}:{line}: ERROR: code cell `(weights * 2)."
                                    "backward()` raised another error than the ValueError its "
                                    "`raises` names:")
    assert "\n      RuntimeError: " in build.log, build.log[-3000:]  # the error it raised


@pytest.mark.slow
def test_a_syntax_error_its_raises_names_passes(tiny_book, tmp_path, cache_copy):
    """A SyntaxError's traceback starts at the cell's line, its name on a later line."""
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text() + "\n```{code-cell} ipython3\n---\ntags: "
                       "[raises-exception]\nraises: SyntaxError\n---\nprint((1)\n```\n")
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    # It ran, raised its SyntaxError (shown as new output), and that is the lesson's.
    assert "`print((1)` (student edition" in build.log and "SyntaxError" in build.log, \
        build.log[-3000:]
    assert "raised another error" not in build.log, build.log[-3000:]
