"""A cold build forks its chapters' kernels from one server started as the build starts
(coursebook.execute.kernel_pool): each kernel a process that ran nothing else, one
server for builds that share a cache, none on a warm cache or when no chapter executes,
no kernel left running."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from jupyter_client.connect import LocalPortCache
from myst_nb.core.config import NbParserConfig
from nbclient import NotebookClient

from conftest import TINY_BOOK, both_editions_at_once, run_in_kernel, sphinx_build
from coursebook.execute.kernel_forkserver import KERNEL_ARGUMENTS, moves_to, process_alive
from coursebook.execute.kernel_pool import (
    SERVER,
    connection_of,
    executes_when_read,
    fork_kernel,
    make_pool,
    start_kernel_forkserver,
    stop_kernel_forkserver,
    take_waiting_kernel,
)
from coursebook.execute.notebook_runs import kernel_manager_class
from coursebook.execute.shared_cache import cache_lock, create_cache

STARTED = "chapter kernels forked from one server"


CACHE_MODE = NbParserConfig(execution_mode="cache")


def _executing_chapters(source: Path) -> int:
    return sum(executes_when_read(path, CACHE_MODE) for path in source.glob("*.md"))



def test_a_chapter_myst_nb_would_not_run_is_none_to_execute(tmp_path):
    """Before a page is read, "a build executes it" is asked of myst-nb's ``create_client``
    with the book's settings: a chapter the exclude patterns name, or a book not executing
    through the cache, starts no kernel. A page's own ``mystnb`` top matter is myst-nb's to
    merge as it parses, so a chapter turning execution off there is guessed to run (a
    server kept for nothing costs speed only; the build itself does not run it: test_shards)."""
    from conftest import BOOK

    text = (BOOK / "pt01.md").read_text()
    assert text.startswith("---\n")
    (tmp_path / "runs.md").write_text(text)
    (tmp_path / "off.md").write_text(
        text.replace("---\n", "---\nmystnb:\n  execution_mode: 'off'\n", 1))
    (tmp_path / "left.md").write_text(text)
    settings = NbParserConfig(execution_mode="cache", execution_excludepatterns=["*left.md"])
    assert [executes_when_read(tmp_path / f"{name}.md", settings)
            for name in ("runs", "off", "left")] == [True, True, False]
    assert not executes_when_read(tmp_path / "runs.md", NbParserConfig(execution_mode="off"))


def test_a_recorded_notebook_chapter_is_none_to_execute(tmp_path):
    """A recorded chapter never runs in a build, an ``.ipynb`` one too: its recording is
    named in the notebook's metadata, not in a YAML top matter (before 2026-12-05 it was
    taken for a chapter to execute)."""
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
    nbformat.write(notebook, tmp_path / "runs.ipynb")
    notebook.metadata["coursebook"] = {"recording": "bridges", "machine_kinds": ["cpu"]}
    nbformat.write(notebook, tmp_path / "recorded.ipynb")
    assert [executes_when_read(tmp_path / f"{name}.ipynb", CACHE_MODE)
            for name in ("runs", "recorded")] == [True, False]

def _pool(cache: Path, folder: str) -> list[Path]:
    return sorted((cache / "kernels" / folder).glob("*.json"))


def _no_kernel_left(cache: Path) -> bool:
    pool = str(cache / "kernels")
    return not any(pool in " ".join(process.info["cmdline"] or [])
                   for process in psutil.process_iter(["cmdline"]))


@pytest.mark.slow
def test_a_cold_build_forks_its_chapters_kernels_from_one_server(tiny_book, tmp_path):
    chapters = _executing_chapters(tiny_book)
    assert chapters >= 1
    cache = tmp_path / "cache"  # a -D override, read at setup as Sphinx reads it later
    cold = sphinx_build(tiny_book, tmp_path / "cold", cache)
    assert cold.returncode == 0, cold.log[-3000:]  # outputs verified as in every build
    assert f"cold cache: {chapters} {STARTED}" in cold.log
    assert len(_pool(cache, "taken")) == cold.executed == chapters
    assert not _pool(cache, "ready") and _no_kernel_left(cache)
    # A warm cache: whether a chapter runs is known only once it is prepared; none ahead.
    # Forked from the session's build server (conftest): what a build decides, not how
    # it starts, is the subject of a build that starts no kernel.
    warm = sphinx_build(tiny_book, tmp_path / "warm", cache, forked=True)
    assert warm.returncode == 0 and STARTED not in warm.log and warm.executed == 0


@pytest.mark.slow
def test_builds_sharing_a_cold_cache_start_the_kernels_once_and_leave_none(tiny_book, tmp_path):
    # Forked from the session's build server: each build starts its kernels (or takes the
    # other's) as a build started afresh does; how a build starts is not the subject.
    builds = both_editions_at_once(tiny_book, tmp_path, forked=True)
    assert all(build.returncode == 0 for build in builds.values())
    logs = [build.log for build in builds.values()]
    assert sum(STARTED in log for log in logs) == 1
    cache = tmp_path / "cache"
    executed = sum(build.executed for build in builds.values())
    # Each edition's chapter is its own notebook here: both run, each in a kernel the
    # server forks or, once the server has stopped, one of its own.
    assert 1 <= len(_pool(cache, "taken")) <= executed
    assert not _pool(cache, "ready") and _no_kernel_left(cache)


@pytest.mark.slow  # starts a kernel server
def test_a_build_set_up_after_another_made_the_cache_takes_that_builds_kernels(tiny_book,
                                                                              tmp_path):
    """Of two builds started on one cold cache, the second may be set up after the first
    made the cache's database (seen on a loaded machine): the first one's server forks the
    second one's kernels too, rather than each starting Python and importing torch."""
    cache, pool = tmp_path / "cache", tmp_path / "cache" / "kernels"
    create_cache(cache)  # the first build, reading: it holds its server's lock
    lock = cache_lock(cache, "kernels")
    lock.acquire()
    make_pool(pool)
    server = start_kernel_forkserver(pool, [])
    try:
        second = sphinx_build(tiny_book, tmp_path / "second", cache)
    finally:
        stop_kernel_forkserver(pool, server)
        lock.release()
    assert second.returncode == 0, second.log[-3000:]
    assert len(_pool(cache, "taken")) == second.executed >= 1
    # The server file of a build that was stopped, on a cache since made: no server.
    (pool / SERVER).write_text(json.dumps({"pid": 2 ** 22 + 1, "address": str(tmp_path)}))
    warm = sphinx_build(tiny_book, tmp_path / "warm", cache, forked=True)  # as above
    assert warm.returncode == 0 and STARTED not in warm.log and not (pool / SERVER).exists()


@pytest.mark.slow
def test_no_server_when_no_chapter_would_use_it(tiny_book, tmp_path):
    """Not executing through the cache (read at setup), or no chapter to execute among the
    pages to read (known at env-before-read-docs, where a server started is stopped): no
    kernel, nothing left."""
    off = sphinx_build(tiny_book, tmp_path / "off", tmp_path / "off-cache",
                       settings={"nb_execution_mode": "off"}, forked=True)  # as a warm one
    # (It fails: its chapter has no outputs to compare.)
    assert STARTED not in off.log and not (tmp_path / "off-cache" / "kernels").exists()
    for chapter in tiny_book.glob("*.md"):
        if executes_when_read(chapter, CACHE_MODE):
            chapter.write_text("# A page of prose\n\nNothing to execute.\n")
    none = sphinx_build(tiny_book, tmp_path / "none", tmp_path / "none-cache")
    assert none.returncode == 0, none.log[-3000:]
    assert "no chapter to execute here; kernel server stopped" in none.log
    assert STARTED not in none.log and not _pool(tmp_path / "none-cache", "taken")
    assert not (tmp_path / "none-cache" / "kernels" / SERVER).exists()
    assert _no_kernel_left(tmp_path / "none-cache")


def test_a_server_of_another_cache_is_stopped_saying_so(tmp_path, monkeypatch, caplog):
    """R2's find: myst-nb resolved another cache than the one guessed at setup, where the
    server was started; chapters do execute, but the log said none did."""
    import logging
    from types import SimpleNamespace

    from coursebook.execute import kernel_pool

    (tmp_path / "chapter.md").write_text((TINY_BOOK / "chapter.md").read_text())
    stopped, records = [], []
    monkeypatch.setattr(kernel_pool, "stop_kernel_forkserver", lambda pool, _: stopped.append(pool))
    monkeypatch.setattr(kernel_pool, "_server", [(None, tmp_path / "guessed", SimpleNamespace(
        release=lambda: None))])
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("sphinx").addHandler(handler)
    caplog.set_level(logging.INFO, logger="sphinx")
    try:
        kernel_pool.plan_reading(SimpleNamespace(parallel=1), SimpleNamespace(
            doc2path=lambda docname: tmp_path / f"{docname}.md", mystnb_config=NbParserConfig(
                execution_mode="cache", execution_cache_path=str(tmp_path / "resolved"))),
            ["chapter"])
    finally:
        logging.getLogger("sphinx").removeHandler(handler)
    assert [record.getMessage() for record in records] == [
        f"cold cache: the chapters run on {tmp_path / 'resolved'}, not on {tmp_path / 'guessed'}; "
        "kernel server stopped"] and stopped == [tmp_path / "guessed" / "kernels"]


@pytest.mark.slow  # starts a kernel server
def test_a_kernel_another_build_took_outlives_the_build_that_started_it(tmp_path):
    """The pool is shared by builds on one cache; a kernel ends with the process that
    started it, so that process waits, at its end, while the kernel's taker lives."""
    pool = tmp_path / "pool"
    make_pool(pool)
    starter = subprocess.Popen(
        [sys.executable, "-c",
         "import sys\nfrom pathlib import Path\n"
         "from coursebook.execute.kernel_pool import (start_kernel_forkserver,\n"
         "                                             stop_kernel_forkserver)\n"
         f"pool = Path({str(pool)!r})\n"
         "server = start_kernel_forkserver(pool, [])\n"
         "print('started', flush=True)\nsys.stdin.readline()\n"
         "stop_kernel_forkserver(pool, server)\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert starter.stdout.readline().strip() == "started"
    kernel = fork_kernel(pool, str(tmp_path), None)  # as the other build's chapter asks
    assert kernel is not None
    starter.stdin.write("\n")
    starter.stdin.flush()  # the starter's build ends: it stops its kernels
    assert "42" in _run(kernel, "print(6 * 7)") and starter.poll() is None
    os.kill(kernel["pid"], signal.SIGKILL)  # as nbclient stops it once its chapter ends
    assert starter.wait(timeout=60) == 0


def test_a_waiting_kernel_that_never_starts_is_stopped_and_not_taken(tmp_path):
    """A chapter falls back to a kernel of its own rather than wait for ever."""
    stuck = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    kernel = {"pid": stuck.pid, "connection_file": str(tmp_path / "never-written.json")}
    assert connection_of(kernel, timeout=0.5) is None
    assert stuck.wait(timeout=60) == -signal.SIGKILL


def test_a_waiting_kernel_is_told_the_folder_its_taker_runs_it_in(tmp_path, monkeypatch):
    """The preview keeps a kernel waiting (in the book's folder) and each chapter runs in a
    temporary folder of its own: a kernel that waited only where it was started was never
    taken (each code edit forked one, 0.27 to 0.66 s to its first output). It is taken
    wherever it waits and told the taker's folder (none given: the taker's own, as
    jupyter_client starts one there), which it moves into before its first cell, and the
    run's temporary folder, its TMPDIR."""
    pool = tmp_path / "pool"
    make_pool(pool)
    for name in ("a", "b"):
        (pool / "ready" / f"{name}.json").write_text(json.dumps({
            "pid": 1, "connection_file": str(pool / "connections" / f"{name}.json")}))

    def told(name: str) -> dict:
        return json.loads(moves_to(str(pool / "connections" / f"{name}.json")).read_text())

    assert take_waiting_kernel(pool, str(tmp_path / "run"), "/tmp/run-1")["pid"] == 1
    assert told("a") == {"cwd": str(tmp_path / "run"), "TMPDIR": "/tmp/run-1"}
    monkeypatch.chdir(tmp_path)
    assert take_waiting_kernel(pool, None, None)["pid"] == 1
    assert told("b") == {"cwd": str(tmp_path), "TMPDIR": None}
    assert take_waiting_kernel(pool, None, None) is None


@pytest.mark.slow  # starts a kernel server
def test_a_kernel_kept_waiting_runs_its_chapter_in_the_folder_its_taker_names(tmp_path,
                                                                            monkeypatch):
    """A chapter's run takes the kernel the preview keeps waiting: its cells run in the
    run's folder, where what they write stays, and its reads there are told."""
    from coursebook.execute.kernel_pool import offer_waiting_kernels
    from coursebook.execute.notebook_runs import NOTEBOOK_FOLDER, run_notebook

    waiting, run = tmp_path / "book", tmp_path / "run"
    for folder in (waiting, run):
        folder.mkdir()
    (run / "data.csv").write_text("1\n")
    pool = tmp_path / "pool"
    make_pool(pool)
    for name in ("JUPYTER_PATH", "COURSEBOOK_KERNEL_POOL"):  # restored after the test
        monkeypatch.setenv(name, os.environ.get(name, ""))
    offer_waiting_kernels(pool)
    server = start_kernel_forkserver(pool, [], keep=waiting)
    try:
        while not list((pool / "ready").glob("*.json")):
            time.sleep(0.05)
        kept = next((pool / "ready").glob("*.json")).name
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
            "import os\nopen('out.txt', 'w').write(open('data.csv').read())\nprint(os.getcwd())")],
            metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                     "language": "python"}})
        _, stopped = run_notebook(notebook, cwd=str(run), timeout=60, allow_errors=False)
    finally:
        stop_kernel_forkserver(pool, server)
    assert (pool / "taken" / kept).exists()
    # the folder it ran in (named as the page names it) is the run's: out.txt is there
    assert notebook.cells[0].outputs[0]["text"] == f"{NOTEBOOK_FOLDER}\n"
    assert (run / "out.txt").read_text() == "1\n" and not list(waiting.iterdir())
    assert stopped is not None and stopped.file == "data.csv"  # beside it, unlisted


def _run(kernel: dict, code: str) -> str:
    """What ``code`` prints in ``kernel``."""
    return run_in_kernel(kernel, code)[1]


@pytest.mark.slow  # starts a kernel server
def test_a_kernel_forked_after_pyplot_was_imported_still_shows_a_figure_inline(tmp_path):
    """A cold build's server imports matplotlib before the kernel's IPython exists (conf.py):
    a figure a cell draws is still shown and closed at the cell's end, as in a fresh kernel."""
    pool = tmp_path / "pool"
    make_pool(pool)
    server = start_kernel_forkserver(pool, ["matplotlib.pyplot"])
    try:
        kernel = fork_kernel(pool, str(tmp_path), None)
        _run(kernel, "import matplotlib.pyplot as plt\nplt.plot([1, 2])")
        assert _run(kernel, "print(plt.get_fignums())").strip() == "[]"
    finally:
        stop_kernel_forkserver(pool, server)


PROBE = ("import gc, json, os, random, signal, sys\n"
         "print(json.dumps({'cwd': os.getcwd(), 'path': sys.path, 'name': __name__,\n"
         "    'collector': [gc.isenabled(), gc.get_threshold()],\n"
         "    'main': repr(sys.modules['__main__']), 'own session': os.getsid(0) == os.getpid(),\n"
         "    'parent': os.environ['JPY_PARENT_PID'] == str(os.getppid()),\n"
         "    'signals': [str(signal.getsignal(n)) for n in signal.valid_signals() if n < 32],\n"
         # its parent's pid, and the file its refused pip commands go to, are each kernel's own
         "    'env': sorted((k, v) for k, v in os.environ.items()\n"
         "        if k not in ('JPY_PARENT_PID', 'COURSEBOOK_PIP_REFUSED')),\n"
         "    'names': sorted(dir()), 'modules': sorted(sys.modules),\n"
         "    'random': random.random()}))\n")


def run_cells(sources: list[str], cwd: Path) -> list[str]:
    """What each cell printed, run in a kernel started as a run starts one."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)
                                               for source in sources])
    NotebookClient(notebook, kernel_name="python3", kernel_manager_class=kernel_manager_class(),
                   startup_timeout=30, extra_arguments=KERNEL_ARGUMENTS,
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return ["".join(output.get("text", "") for output in cell.outputs)
            for cell in notebook.cells]


def _probe(kernel_run) -> dict:
    return json.loads(kernel_run(PROBE))


@pytest.mark.slow  # starts a kernel server
def test_a_forked_kernel_is_as_a_fresh_one_but_for_the_modules_imported_ahead(
        tmp_path, monkeypatch):
    """A kernel the server forks, against one jupyter_client starts: the same folder,
    import path, main module, session, signals, collector (on) and environment (the one
    asked for), an empty namespace; more modules only those imported ahead and the server's
    own."""
    (tmp_path / "chapter").mkdir()
    monkeypatch.setenv("ASKED", "1")
    # Started as the server starts one, ipykernel binding its own ports (TCP, as a forked
    # kernel's; ports jupyter_client picked could be taken by another test worker first).
    connection = tmp_path / "fresh.json"
    started = subprocess.Popen(
        [sys.executable, "-m", "ipykernel_launcher", "-f", str(connection), *KERNEL_ARGUMENTS],
        cwd=tmp_path / "chapter", env={**os.environ, "JPY_PARENT_PID": str(os.getpid())},
        start_new_session=True)
    try:
        fresh = json.loads(_run({"connection_file": str(connection), "pid": started.pid}, PROBE))
    finally:
        started.kill()
        started.wait()
    pool = tmp_path / "pool"
    make_pool(pool)
    # A module that cannot be imported is left to the chapter that imports it.
    server = start_kernel_forkserver(pool, ["no_such_module_here", "colorsys"])
    try:
        kernel = fork_kernel(pool, str(tmp_path / "chapter"),
                              {**os.environ, "PYTHONHASHSEED": "0"})
        forked = json.loads(_run(kernel, PROBE))
    finally:
        stop_kernel_forkserver(pool, server)
    forked["env"].remove(["PYTHONHASHSEED", "0"])  # the environment asked for
    server_modules = subprocess.run(
        [sys.executable, "-c", "import sys; before = set(sys.modules)\n"
         "import coursebook.execute.kernel_forkserver\nprint(*set(sys.modules) - before)"],
        capture_output=True, text=True, check=True).stdout.split()
    extra = set(forked.pop("modules")) - set(fresh.pop("modules"))
    assert "colorsys" in extra and extra <= {"colorsys", *server_modules}
    assert forked.pop("random") != fresh.pop("random")
    assert forked == fresh


@pytest.mark.slow  # starts a kernel server
def test_kernels_forked_from_one_server_share_no_state(tmp_path):
    """Each chapter runs in a kernel that ran nothing else: what one kernel imported,
    defined or drew at random is not in the next (Python's random reseeds at a fork; torch
    and numpy, imported ahead, are reseeded by the server)."""
    pool = tmp_path / "pool"
    make_pool(pool)
    server = start_kernel_forkserver(pool, ["torch", "numpy"])
    draws = "import numpy, torch\nprint(torch.rand(1).item(), numpy.random.random())"
    try:
        first = fork_kernel(pool, str(tmp_path), None)
        before = _probe(lambda code: _run(first, code))
        drawn = _run(first, draws)
        _run(first, "import wave\nleft = 1\n")
        second = fork_kernel(pool, str(tmp_path), None)
        after = _probe(lambda code: _run(second, code))
        drawn_after = _run(second, draws)
    finally:
        stop_kernel_forkserver(pool, server)
    assert first["pid"] != second["pid"]
    assert "left" not in after["names"] and "wave" not in after["modules"]
    assert after["random"] != before["random"]
    assert drawn.split()[0] != drawn_after.split()[0] and drawn.split()[1] != drawn_after.split()[1]
    assert not list(pool.glob("ready/*.json")) and _no_kernel_left(pool.parent)


@pytest.mark.slow  # starts a kernel server
def test_a_chapter_starts_its_own_kernel_when_the_server_is_gone(tmp_path):
    pool = tmp_path / "pool"
    make_pool(pool)
    assert fork_kernel(pool, str(tmp_path), None) is None  # no server was started
    server = start_kernel_forkserver(pool, [])
    (pool / SERVER).write_text(
        (pool / SERVER).read_text().replace(str(server.pid), str(2 ** 22 + 1)))
    server.kill()  # its socket unanswered, and its pid gone
    assert fork_kernel(pool, str(tmp_path), None) is None
    socket_folder = Path(json.loads((pool / SERVER).read_text())["address"]).parent
    stop_kernel_forkserver(pool, server)  # the build's end, after its server was killed
    assert not socket_folder.exists()


@pytest.mark.slow  # starts a kernel server
def test_no_kernel_is_forked_from_a_server_whose_imports_were_upgraded(tmp_path, monkeypatch):
    """A package upgraded while the preview's server runs (its files replaced): the
    server's kernels hold the old one, while the cache key names the new one. A chapter
    starts a kernel of its own then, and the waiting kernel is not taken."""
    (tmp_path / "site").mkdir()
    module = tmp_path / "site" / "upgraded_here.py"
    module.write_text("VERSION = 1\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "site"),
                                                      os.environ.get("PYTHONPATH", "")]))
    pool = tmp_path / "pool"
    make_pool(pool)
    server = start_kernel_forkserver(pool, ["upgraded_here"], keep=tmp_path)
    try:
        kernel = fork_kernel(pool, str(tmp_path), None)
        assert "True 1" in _run(kernel, "import sys\nprint('upgraded_here' in sys.modules, "
                                "end=' ')\nimport upgraded_here\nprint(upgraded_here.VERSION)")
        upgrade = tmp_path / "site" / "upgrade.tmp"
        upgrade.write_text("VERSION = 2\n")
        upgrade.replace(module)  # as an installer does
        assert fork_kernel(pool, str(tmp_path), None) is None
        time.sleep(0.5)  # the server looks at least every 0.2 s
        assert take_waiting_kernel(pool, str(tmp_path), None) is None
    finally:
        stop_kernel_forkserver(pool, server)


def _build_with_a_kernel_server(pool: Path, env: dict | None = None) -> subprocess.Popen:
    """A process standing for a build: it starts a kernel server and stops as a build does."""
    starter = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom pathlib import Path\n"
         "from coursebook.execute.kernel_pool import start_kernel_forkserver\n"
         "from coursebook.process.interrupt import stop_cleanly_on_interrupt\n"
         "stop_cleanly_on_interrupt(None)\n"
         f"server = start_kernel_forkserver(Path({str(pool)!r}), [])\n"
         "print('started', flush=True)\ntime.sleep(60)\n"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert starter.stdout.readline().strip() == "started"
    return starter


@pytest.mark.slow  # starts a kernel server
@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGINT"])
def test_a_stopped_build_leaves_no_socket_folder_of_its_kernel_server(tmp_path, signal_name):
    """A server's socket lies in a temporary folder of its own: stopped with its build
    (kill -9, or Ctrl-C and the build's one line), it leaves none behind."""
    pool = tmp_path / "pool"
    make_pool(pool)
    starter = _build_with_a_kernel_server(pool, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert fork_kernel(pool, str(tmp_path), None) is not None  # it serves
    starter.send_signal(getattr(signal, signal_name))
    starter.wait(timeout=60)
    deadline = time.monotonic() + 60  # a wait, not a speed: a busy machine is slow to clean up
    while list(tmp_path.glob("kernels-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not list(tmp_path.glob("kernels-*"))


@pytest.mark.slow  # starts a kernel server
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGKILL"])
def test_a_chapter_whose_kernel_server_stopped_with_another_build_is_told_so(
        tmp_path, monkeypatch, signal_name):
    """Both editions on one cold cache: one stopped (its server and every kernel it forked
    end with it) while a chapter of the other runs in a kernel of that server. The cell
    did nothing wrong; the advice says what happened, not to look for it in the cell."""
    import threading

    import nbformat

    from coursebook.execute.kernel_pool import offer_waiting_kernels
    from coursebook.execute.notebook_runs import run_notebook

    pool = tmp_path / "pool"
    make_pool(pool)
    starter = _build_with_a_kernel_server(pool)
    for name in ("JUPYTER_PATH", "COURSEBOOK_KERNEL_POOL"):  # restored after the test
        monkeypatch.setenv(name, os.environ.get(name, ""))
    offer_waiting_kernels(pool)  # as the other build, on the same cache, does
    running = tmp_path / "running"  # the cell writes it as it starts

    def stop_the_starter() -> None:
        while not running.exists():
            time.sleep(0.05)
        starter.send_signal(getattr(signal, signal_name))

    threading.Thread(target=stop_the_starter, daemon=True).start()
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"import pathlib, time\npathlib.Path({str(running)!r}).touch()\ntime.sleep(30)")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}})
    _, stopped = run_notebook(notebook, cwd=str(tmp_path), timeout=60, allow_errors=False,
                              meta_override=True)
    starter.wait(timeout=60)
    assert stopped is not None and stopped.error == "DeadKernelError"
    assert "the build that started it stopped" in stopped.what, stopped.what
    assert "Jupyter" not in stopped.what, stopped.what


@pytest.mark.slow  # starts a kernel server
def test_a_stopped_build_leaves_no_kernel_it_took_from_another_builds_server(tmp_path):
    """The kernel a build took from the other build's server is no process of its own
    (the server forked it): stopped, the build cannot end it; the server does."""
    pool = tmp_path / "pool"
    make_pool(pool)
    server = start_kernel_forkserver(pool, [])
    running = tmp_path / "running"  # the cell writes it as it starts
    cell = f"import pathlib, time\npathlib.Path({str(running)!r}).touch()\ntime.sleep(60)"
    try:
        taker = subprocess.Popen(
            [sys.executable, "-c",
             "import nbformat\nfrom pathlib import Path\n"
             "from coursebook.execute.kernel_pool import offer_waiting_kernels\n"
             "from coursebook.execute.notebook_runs import run_notebook\n"
             "from coursebook.process.interrupt import stop_cleanly_on_interrupt\n"
             "stop_cleanly_on_interrupt(None)\n"
             f"offer_waiting_kernels(Path({str(pool)!r}))\n"
             f"notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell({cell!r})],\n"
             "    metadata={'kernelspec': {\n"
             "    'name': 'python3', 'display_name': 'Python 3', 'language': 'python'}})\n"
             f"run_notebook(notebook, cwd={str(tmp_path)!r}, timeout=120, allow_errors=False,\n"
             "             meta_override=True)\n"], stderr=subprocess.DEVNULL)
        while not running.exists():
            time.sleep(0.05)
        kernel = json.loads(next((pool / "taken").glob("*.json")).read_text())
        taker.send_signal(signal.SIGTERM)
        assert taker.wait(timeout=60) == 143
        deadline = time.monotonic() + 60  # a wait, not a speed
        while process_alive(kernel["pid"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not process_alive(kernel["pid"])
    finally:
        stop_kernel_forkserver(pool, server)


def test_a_kernel_pid_that_comes_again_is_not_taken_for_the_ended_kernels(tmp_path):
    """The server stops a kernel whose taker ended; the record of a kernel that ended
    names a pid a later kernel may get, whose taker lives: that one runs on."""
    from coursebook.execute.kernel_forkserver import _left_by_takers

    pool = tmp_path / "pool"
    make_pool(pool)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (pool / "taken" / "first.json").write_text(json.dumps({"pid": 4242, "taker": int(gone)}))
    takers: dict = {}
    assert _left_by_takers(pool, {4242}, takers) == [4242]
    assert _left_by_takers(pool, set(), takers) == []  # it ended
    assert _left_by_takers(pool, {4242}, takers) == []  # its pid, another kernel's now


@pytest.mark.parametrize("folders", [["a-folder-deep-in-the-tree"] * 4, ["数" * 27]],
                         ids=["deep", "few characters, many bytes"])
@pytest.mark.slow  # starts a kernel server
def test_a_build_whose_temporary_folder_is_deep_still_forks_kernels(tmp_path, monkeypatch,
                                                                   folders):
    """A Unix socket's path holds 107 bytes: under a deep TMPDIR (pytest-xdist's test
    folders) the server could not listen, and every chapter started a kernel of its own."""
    top = Path(tempfile.mkdtemp(dir="/tmp"))  # not tmp_path: it is deep itself
    deep = top.joinpath(*folders)
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    pool = tmp_path / "pool"
    make_pool(pool)
    server = start_kernel_forkserver(pool, [])
    try:
        kernel = fork_kernel(pool, str(tmp_path), None)
        assert kernel is not None and "42" in _run(kernel, "print(6 * 7)")
        os.kill(kernel["pid"], signal.SIGKILL)
    finally:
        stop_kernel_forkserver(pool, server)
        shutil.rmtree(top)


@pytest.mark.slow  # starts a kernel server
def test_a_server_whose_starter_dies_while_it_imports_ends_then(tmp_path):
    """A build killed while its server still imports torch (seconds, more under load) left
    the server running until the import was done (a stopped-build test saw it alive), then
    its socket folder behind."""
    (tmp_path / "slow_import.py").write_text("import time\ntime.sleep(60)\n")
    pool = tmp_path / "pool"
    make_pool(pool)
    # Not through a pipe: the server, inheriting it, would hold the run until its import ends.
    subprocess.run([sys.executable, "-c", (
        "from coursebook.execute.kernel_pool import start_kernel_forkserver\n"
        "from pathlib import Path\n"
        f"server = start_kernel_forkserver(Path({str(pool)!r}), ['slow_import'])\n"
        f"Path({str(tmp_path / 'pid')!r}).write_text(str(server.pid))\n")],
        stdout=subprocess.DEVNULL, check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])})
    server = int((tmp_path / "pid").read_text())
    deadline = time.monotonic() + 20  # a third of the import's sleep
    while process_alive(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = process_alive(server)
    if alive:
        os.kill(server, signal.SIGKILL)
    assert not alive
    socket_folder = Path(json.loads((pool / SERVER).read_text())["address"]).parent
    assert not socket_folder.exists()


@pytest.mark.slow  # starts a kernel
def test_a_kernel_started_here_needs_no_free_tcp_port(tmp_path, monkeypatch):
    """Another process can bind a TCP port the manager picked before the kernel does (two test
    workers did): a kernel started here (a run with no server, the recorder's, a download's)
    talks over Unix sockets, whose folder is gone once it stopped."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setattr(LocalPortCache, "find_available_port",
                            lambda self, ip: taken.getsockname()[1])
        printed = run_cells(["from ipykernel.kernelapp import IPKernelApp\n"
                             "print(IPKernelApp.instance().ip)"], tmp_path)
    sockets = Path(printed[0].strip())
    assert sockets.is_absolute() and not sockets.parent.exists()
