"""How builds run as processes, each speed-up checked for what it must not change: the
collector held while extensions load runs again once the builder starts; a preview's
build forked from a process that imported ahead is still a build of its own; importing
ahead leaves logging as it was; a waiting kernel has its imports in its process, not in
the cells' namespace."""

from __future__ import annotations

import gc
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import BOOK, ROOT, load_tool, run_in_kernel, run_in_python
from coursebook.execute.kernel_pool import (POOL_ENV, make_pool, start_kernel_forkserver,
                                            stop_kernel_forkserver)
from coursebook.process.forked_builds import Forked, build_modules, import_modules, sphinx_build


def test_the_collector_waits_while_extensions_load_and_runs_again_for_the_build(tmp_path):
    conf = load_tool("preview").edition_configuration("student", BOOK, {})
    assert gc.isenabled()  # conf.py holds it for a build, set up in a process of its own
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.md").write_text("# Title\n")
    # A Sphinx application of the book's configuration, in a Python of its own: whether its
    # collector ran while Sphinx's own extensions (linkcheck, after conf.py) and the book's
    # heaviest imports loaded, and once the builder is ready. (jupyter-cache and SQLAlchemy
    # load only when pages are read: test_myst_nb_clients.py.)
    heavy = ["sphinx.builders.linkcheck", "myst_nb", conf["html_theme"]]
    code = ("import gc, sys\nfrom sphinx.application import Sphinx\n"
            "collecting = {}\n"
            "class Watch:\n"
            "    def find_spec(name, path=None, target=None):\n"
            f"        if name in {heavy!r}: collecting[name] = gc.isenabled()\n"
            "sys.meta_path.insert(0, Watch)\n"
            f"Sphinx({str(tmp_path / 'src')!r}, {str(ROOT)!r}, {str(tmp_path / 'out')!r}, "
            f"{str(tmp_path / 'doctrees')!r}, 'html', status=None)\n"
            "print(sorted(collecting.items()), gc.isenabled(), gc.get_freeze_count() > 100_000)")
    # No kernel server: on a cache without its database (conf.py's, the repository's) the
    # extension's setup would start one there, importing torch, for an app never built.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "book" / "_ext"),
                               POOL_ENV: "none"})
    held = sorted((name, False) for name in heavy)
    assert done.stdout.strip() == f"{held} True True", done.stderr[-2000:]


def test_the_modules_imported_ahead_are_those_conf_py_names():
    conf = load_tool("preview").edition_configuration("student", BOOK, {})
    names = build_modules(conf)
    assert set(conf["extensions"]) <= set(names)
    assert conf["html_theme"] in names and "sphinx.cmd.build" in names


@pytest.mark.slow  # builds (two tiny Sphinx builds)
def test_a_forked_build_reports_its_status_and_what_it_imported(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "conf.py").write_text("")
    (source / "index.rst").write_text("Title\n=====\n\nText.\n")
    html = ["-q", "-b", "html", str(source), str(tmp_path / "out")]
    status, imported = Forked(sphinx_build, html).result()
    assert status == 0 and (tmp_path / "out" / "index.html").is_file()
    assert "sphinx.builders.html" in imported
    (source / "index.rst").write_text("Title\n=====\n\n.. unknown-directive::\n")
    status, _ = Forked(sphinx_build, ["-W", *html]).result()
    assert status != 0  # a failed build's status reaches the preview


def test_importing_ahead_leaves_this_processs_logging_as_it_was(tmp_path, monkeypatch):
    (tmp_path / "configures_logging.py").write_text(
        "import logging\n"
        "logging.basicConfig(level=logging.INFO, format='# %(message)s', force=True)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    root = logging.getLogger()
    before = (root.handlers[:], root.level)
    import_modules(["configures_logging", "no_such_module_here"])
    assert "configures_logging" in sys.modules
    assert (root.handlers[:], root.level) == before


@pytest.fixture
def waiting_kernel(tmp_path):
    make_pool(tmp_path / "pool")
    server = start_kernel_forkserver(tmp_path / "pool", ["colorsys"], keep=tmp_path)
    deadline = time.monotonic() + 60
    while not list((tmp_path / "pool" / "ready").glob("*.json")):
        assert time.monotonic() < deadline, "no kernel was started"
        time.sleep(0.1)
    yield json.loads(next((tmp_path / "pool" / "ready").glob("*.json")).read_text())
    stop_kernel_forkserver(tmp_path / "pool", server)


@pytest.mark.slow  # starts a kernel
def test_a_waiting_kernel_imported_ahead_into_its_process_not_into_the_cells_namespace(
        waiting_kernel):
    code = ("import os, sys\n"
            "print('colorsys' in sys.modules, 'colorsys' in dir(), os.environ['MPLBACKEND'])")
    status, text = run_in_kernel(waiting_kernel, code)
    assert status == "ok"
    assert text.split() == ["True", "False", "module://matplotlib_inline.backend_inline"]


def test_the_preview_swaps_sphinx_autobuilds_builder_and_its_rebuilds_fork():
    """tools/preview.py replaces the Builder that sphinx-autobuild's main makes by that
    name, and each rebuild inherits the preview's imports only through a fork (about 1.5 s
    a save here). An upgrade of sphinx-autobuild that makes its builder otherwise, or runs
    it other than in a process-pool worker, fails here; so does a preview that leaves the
    start method to Python (3.14's default is forkserver)."""
    import inspect

    import sphinx_autobuild.__main__ as autobuild
    import sphinx_autobuild.server as server

    assert "builder = Builder(" in inspect.getsource(autobuild.main)
    assert "ProcessPoolExecutor()" in inspect.getsource(server.RebuildServer.watch)
    method = run_in_python(
        "import json, multiprocessing, sys\n"
        f"sys.path.insert(0, {str(ROOT / 'tools')!r})\n"
        "multiprocessing.set_start_method('forkserver')\n"
        "import preview\n"
        "preview.fork_rebuilds()\n"
        "print(json.dumps(multiprocessing.get_start_method()))")
    assert method == "fork"


def test_a_build_adds_its_source_suffixes_to_its_own_config_not_to_sphinxs_default():
    """Sphinx adds the suffixes extensions register to ``config.source_suffix`` (priority
    800), which, where conf.py sets none, was its shared default: a later build in the same
    process (an xdist worker's forked build) read myst-nb's ``.py``, ``conf.py`` as a page."""
    from sphinx.config import Config
    from sphinx.registry import merge_source_suffix

    from coursebook.process.next_build import own_source_suffix

    default = Config.config_values["source_suffix"].default
    before = dict(default)
    config = Config({}, {})
    app = type("App", (), {"config": config, "registry": type("R", (), {
        "source_suffix": {".py": "myst-nb"}})()})()
    own_source_suffix(app, config)
    merge_source_suffix(app, config)
    assert config.source_suffix == {**before, ".py": "myst-nb"} and default == before


# A conf.py that prints what its process finds, then a page whose warning fails the build.
REPORTING_CONF = """\
import gc, json, locale, logging, os, signal, sys, tempfile, threading
streams = {name: [stream.encoding, stream.line_buffering, stream.isatty()]
           for name, stream in (("out", sys.stdout), ("err", sys.stderr))}
print(json.dumps({
    "cwd": os.getcwd(), "argv": sys.argv, "path": sys.path, "environ": dict(os.environ),
    "temporary": tempfile.gettempdir(), "locale": locale.setlocale(locale.LC_ALL),
    "signals": {s.name: str(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGTERM,
                                                           signal.SIGPIPE, signal.SIGCHLD)},
    "blocked": sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])),
    "logging": [len(logging.getLogger().handlers), logging.getLogger().level],
    "collector": gc.isenabled(), "threads": threading.active_count(), "streams": streams}))
print("a line on stderr", file=sys.stderr)
"""


@pytest.mark.slow  # builds (a tiny book, started and forked)
def test_a_forked_test_build_is_the_build_python_m_sphinx_would_be(tmp_path):
    """A slow test's build forked from its worker's build server (tests/forked_builds.py),
    which has run a build in other surroundings, finds what ``python -m sphinx`` started in
    its place finds (folder, arguments, environment, temporary folder, import path,
    signals, logging, streams) and ends as it does: exit status, output, errors."""
    from forked_builds import BuildServer

    def book(name: str) -> tuple[Path, dict[str, str]]:
        folder = tmp_path / name
        (folder / "src").mkdir(parents=True)
        (folder / "tmp").mkdir()
        (folder / "src" / "conf.py").write_text(REPORTING_CONF)
        (folder / "src" / "index.rst").write_text("Title\n=====\n\n.. no-such-directive::\n")
        return folder, {**os.environ, "TMPDIR": str(folder / "tmp"), "ONLY_HERE": str(folder)}

    def same(done: subprocess.CompletedProcess, folder: Path):
        return [done.returncode, *(text and text.replace(str(folder), "FOLDER")
                                   for text in (done.stdout, done.stderr))]

    command = [sys.executable, "-m", "sphinx", "-q", "-W", "-b", "html", "src", "out"]
    server = BuildServer()
    try:
        for merged in (False, True):
            first, env = book(f"first-{merged}")  # the server's start, and its imports after
            server.run(command, cwd=first, env={**env, "ONLY_THERE": "1"}, merged=merged)
            started, env = book(f"started-{merged}")
            done = subprocess.run(command, cwd=started, env=env, text=True,
                                  **({"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT}
                                     if merged else {"capture_output": True}))
            forked, env = book(f"forked-{merged}")
            assert same(server.run(command, cwd=forked, env=env, merged=merged),
                        forked) == same(done, started)
            assert done.returncode != 0 and "a line on stderr" in (done.stderr or done.stdout)
    finally:
        server.close()


@pytest.mark.slow  # builds a one-page book three times: started, then forked twice
def test_a_forked_test_build_defers_myst_nbs_clients_as_a_started_one(tmp_path):
    """The build server imports what each build imported, myst-nb's execution clients among
    them; a later forked build still finds them deferred when its extensions are set up, as
    ``python -m sphinx`` does (coursebook.execute.myst_nb_clients)."""
    from forked_builds import BuildServer

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.md").write_text("# A page\n\nSome text.\n")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "conf.py").write_text(
        f"__file__ = {str(ROOT / 'conf.py')!r}\n"
        "exec(compile(open(__file__).read(), __file__, 'exec'))\n"
        f"nb_execution_cache_path = {str(tmp_path / 'cache')!r}\n"
        "def setup(app):\n"
        "    app.connect('builder-inited', lambda app: print('clients:', type(sys.modules.get(\n"
        "        'myst_nb.core.execute.cache')).__name__, file=sys.stderr))\n")

    def build(number: int, run) -> str:
        command = [sys.executable, "-m", "sphinx", "-q", "-b", "html", "-c",
                   str(tmp_path / "conf"), str(tmp_path / "src"), str(tmp_path / f"out{number}")]
        done = run(command)
        assert done.returncode == 0, done.stderr[-2000:]
        return [line for line in done.stderr.splitlines() if line.startswith("clients:")]

    started = build(0, lambda command: subprocess.run(command, cwd=ROOT, capture_output=True,
                                                      text=True))
    assert started == ["clients: _DeferredModule"]
    server = BuildServer()
    try:
        for number in (1, 2):  # the second after the server imported the first's modules
            assert build(number, lambda command: server.run(
                command, cwd=ROOT, env=dict(os.environ), merged=False)) == started
    finally:
        server.close()
