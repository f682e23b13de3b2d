"""Shared helpers: the repository's paths and a way to run sphinx-build as a person would."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from coursebook.model.versions import installed_version
from coursebook.pytest_plugin import CHAPTER_CACHE

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from book_environment import sphinx_command  # noqa: E402
from forked_builds import BuildServer  # noqa: E402

BOOK = ROOT / "book"
TINY_BOOK = Path(__file__).resolve().parent / "fixtures" / "tiny_book"
EXHIBITS = ROOT / "exhibits"  # conf.py's coursebook_exhibits_dir
# conf.py's coursebook_machine_kinds_file
MACHINE_KINDS_FILE = ROOT / "tools" / "machine-kinds.toml"
RUNTIMES_FILE = ROOT / "tools" / "runtimes.toml"  # conf.py's coursebook_runtimes_file
# The build's torch, as conf.py reads it: a test module that imports torch makes each pytest
# process that collects it import torch (about 2 s of CPU), even where no test uses it.
TORCH_VERSION = installed_version("torch")


# The course material (../shared/seeds) and the copy of Colab's published lists
# (../shared/colab-runtimes) sit beside the team's checkouts and CI's clone, not beside a
# newcomer's: there the tests that compare the book with them skip, saying so. CI sets
# COURSEBOOK_REQUIRE_SEEDS (.ci/run), under which a missing folder is a broken checkout.
SEEDS = ROOT.parent / "shared" / "seeds"
COLAB_LISTS = ROOT.parent / "shared" / "colab-runtimes"
REQUIRE_SEEDS = "COURSEBOOK_REQUIRE_SEEDS"


def _beside_the_checkout(folder: Path, what: str) -> Path:
    """``folder``; skips without it, fails without it where required."""
    if folder.is_dir():
        return folder
    if os.environ.get(REQUIRE_SEEDS):
        pytest.fail(f"the {what} is missing: {folder} should hold it "
                    f"({REQUIRE_SEEDS} is set: this checkout must have it)", pytrace=False)
    pytest.skip(f"no {what} beside this checkout ({folder})")


@pytest.fixture
def seeds() -> Path:
    """The course material's folder."""
    return _beside_the_checkout(SEEDS, "course material")


@pytest.fixture
def colab_lists() -> Path:
    """The copy of Colab's published package lists."""
    return _beside_the_checkout(COLAB_LISTS, "copy of Colab's published lists")


# The top matter that makes a Markdown file a chapter (a MyST notebook, as myst-nb reads it);
# ``extra``: more top-matter lines.
CHAPTER_TOP = ("---\njupytext:\n  text_representation:\n    format_name: myst\n"
               "kernelspec:\n  name: python3\n  display_name: Python 3\n{extra}---\n")


def plant_distribution(site: Path, name: str, version: str, module: str = "") -> None:
    """An installed distribution in the folder ``site``: its package ``name`` (``module``,
    its ``__init__.py``) and the metadata that says ``version``, as importlib finds one."""
    (site / name).mkdir(parents=True)
    (site / name / "__init__.py").write_text(module)
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text(f"{name}/__init__.py,,\n")


def book_machine_kinds():
    """The machine kinds as a build of the book loads them."""
    from coursebook.model.machine_kinds import load_machine_kinds

    return load_machine_kinds(MACHINE_KINDS_FILE)


def book_museum(exhibits: Path = EXHIBITS):
    """The museum as a build of the book loads it."""
    from coursebook.model.machine_kinds import load_machine_kinds
    from coursebook.museum.model import load_museum
    from coursebook.model.runtimes import reader_runtimes

    return load_museum(exhibits, load_machine_kinds(MACHINE_KINDS_FILE),
                       reader_runtimes(RUNTIMES_FILE))


def sphinx_config(book):
    """A Sphinx Config holding a BookConfig's settings, as a build's holds them."""
    from sphinx.config import Config

    from coursebook.config import PREFIX

    config = Config({}, {})
    for name, value in vars(book).items():
        setattr(config, PREFIX + name, value)
    return config


def load_tool(name: str):
    """A program of tools/ as a module, to test its functions."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@dataclass
class Build:
    returncode: int
    log: str
    outdir: Path

    @property
    def executed(self) -> int:
        """Notebooks executed (not taken from the cache) during this build."""
        return self.log.count("Executing notebook using")

    @property
    def crash_reports(self) -> list[Path]:
        """The files Sphinx wrote its crash reports to (its temporary folder is the build's)."""
        return sorted((self.outdir / "tmp").glob("sphinx-err-*"))


def imported_ahead(srcdir: Path) -> dict[str, str]:
    """The kernel server's imports for a book other than the real one: torch where a chapter
    imports it, else only the kernel (what the server always imports). The book's conf.py
    adds torch._dynamo: 2 s of CPU that no tiny book's cold build uses (8.4 s -> 5.9 s)."""
    if srcdir.resolve() == BOOK:
        return {}
    uses_torch = any("import torch" in path.read_text(errors="replace")
                     for path in srcdir.rglob("*") if path.suffix in (".md", ".ipynb", ".py"))
    return {"coursebook_kernel_imports": "torch" if uses_torch else "ipykernel.kernelapp"}


# A test's builds are forked from its worker's build server (tests/forked_builds.py), but
# in the files of OWN_KERNELS (below: kernels, processes, the preview, stopped builds),
# whose subject is the processes: there a build starts afresh, as a person starts one,
# unless the test asks for it forked (run_sphinx's ``forked``). test_stopped_builds forks
# only the builds it neither stops nor searches for: it finds a build's processes by their
# environment, which the system shows for a forked build as the server's (os.environ
# changes what a program started sees, not that record).
_BUILD_SERVERS: list[BuildServer] = []  # the worker's: the session's, then any a test asked for
_STARTING_AFRESH = False  # during a test of OWN_KERNELS' files


def run_sphinx(command: list[str], *, cwd: Path = ROOT, env: dict[str, str] | None = None,
               merged: bool = False, forked: bool | None = None) -> subprocess.CompletedProcess:
    """``command`` (:func:`sphinx_command`'s) run as ``subprocess.run`` runs it, its output
    captured as text (``merged``: its errors with it): forked from a build server where
    it stands in for a new process. ``forked`` None: from the session's, but not in the
    files of OWN_KERNELS; True: also there, and under Python settings (PYTHONPATH, ...)
    other than the session's, from a server of those settings (started for the first such
    build, kept for the next); False: never."""
    env = dict(os.environ if env is None else env)
    conf = command[command.index("-c") + 1] if "-c" in command else None
    if conf == str(ROOT) and not any("nb_execution_cache_path=" in arg for arg in command):
        pytest.fail("this test builds with conf.py's execution cache, the repository's "
                    "_build/.jupyter_cache: give it its own (nb_execution_cache_path)",
                    pytrace=False)
    if forked is None:
        servers = [] if _STARTING_AFRESH else _BUILD_SERVERS[:1]
    else:
        servers = _BUILD_SERVERS if forked else []
    server = next((server for server in servers if server.stands_in(command, env)), None)
    if server is None and forked and (new := BuildServer(env)).stands_in(command, env):
        _BUILD_SERVERS.append(server := new)  # kept only if it stands in for the command
    if server is not None:
        _STARTED.append("a Sphinx build")
        return server.run(command, cwd=cwd, env=env, merged=merged)
    return subprocess.run(command, capture_output=not merged, text=True, cwd=cwd, env=env,
                          **({"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT}
                             if merged else {}))


class _ForkedRuns:
    """``subprocess`` for a tool of tools/ (:func:`load_tool`'s) whose builds a test forks as
    its own (:func:`run_sphinx`: about 2 s of CPU a build less): ``run`` of a command whose
    output is not captured (a build's) prints what it printed where the tool's own output
    goes; any other is ``subprocess.run``'s."""

    @staticmethod
    def run(command: list[str], **options) -> subprocess.CompletedProcess:
        if set(options) - {"cwd"}:
            return subprocess.run(command, **options)
        done = run_sphinx(command, cwd=options.get("cwd", Path.cwd()), merged=True)
        print(done.stdout, end="", flush=True)
        return done


class _PrintedByThread(io.TextIOBase):
    """sys.stdout and sys.stderr while tools run in this process (:func:`tool_in_process`):
    what a thread prints goes to the text of the tool it runs, so several run at once."""

    def __init__(self) -> None:
        self.texts: dict[int, io.StringIO] = {}
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        return self.texts.get(threading.get_ident(), self.streams[0]).write(text)

    @contextlib.contextmanager
    def text(self):
        """This thread's text; meanwhile sys.stdout and sys.stderr are this object."""
        with self.lock:
            if not self.texts:
                self.streams = sys.stdout, sys.stderr
                sys.stdout = sys.stderr = self
            self.texts[threading.get_ident()] = printed = io.StringIO()
        try:
            yield printed
        finally:
            with self.lock:
                del self.texts[threading.get_ident()]
                if not self.texts:
                    sys.stdout, sys.stderr = self.streams


_PRINTED = _PrintedByThread()


def tool_in_process(name: str, arguments: list[str]) -> tuple[int, str]:
    """tools/NAME.py run on ``arguments`` in this process, its builds forked (_ForkedRuns): its
    exit status and all it printed. Several may run at once, each in a thread of its own."""
    tool = load_tool(name)
    tool.subprocess = _ForkedRuns
    with _PRINTED.text() as printed:
        returncode = tool.main(arguments)
    return returncode, printed.getvalue()


def sphinx_build(srcdir: Path, outdir: Path, cache: Path, *tags: str,
                 settings: dict[str, str] | None = None, jobs: str | None = "auto",
                 forked: bool | None = None, env: dict[str, str] | None = None,
                 strict: bool = True) -> Build:
    """Build one edition with the repository's conf.py, as the Makefile does (``jobs``
    reader processes; ``strict``: -W); a book other than the real one imports ahead what it
    needs. ``forked``: :func:`run_sphinx`'s; ``env``: variables of this build's alone (another
    build may run at once)."""
    command = sphinx_command(srcdir, outdir / "html", outdir / "doctrees", tags=tags, jobs=jobs,
                             strict=strict,
                             settings={"nb_execution_cache_path": str(cache),
                                       **imported_ahead(srcdir), **(settings or {})})
    (outdir / "tmp").mkdir(parents=True, exist_ok=True)
    done = run_sphinx(command, env={**os.environ, **(env or {}), "TMPDIR": str(outdir / "tmp")},
                      forked=forked)
    return Build(done.returncode, done.stdout + done.stderr, outdir)


@pytest.fixture
def tiny_book(tmp_path: Path) -> Path:
    """A private copy of the tiny fixture book, to break on purpose."""
    copy = tmp_path / "src"
    shutil.copytree(TINY_BOOK, copy)
    return copy


@pytest.fixture(scope="session")
def tiny_cache(tmp_path_factory) -> Path:
    """An execution cache holding the tiny book's run (its build passing), once a session
    (a worker): a test that breaks no code cell copies it rather than start a kernel."""
    root = tmp_path_factory.mktemp("tiny")
    build = sphinx_build(TINY_BOOK, root / "out", root / "cache")
    assert build.returncode == 0, build.log[-3000:]
    return root / "cache"


@pytest.fixture
def cache_copy(tiny_cache, tmp_path) -> Path:
    """A private copy of :func:`tiny_cache` (a build writes to a cache it reads)."""
    shutil.copytree(tiny_cache, tmp_path / "cache")
    return tmp_path / "cache"


def book_conf_with(folder: Path, *lines: str) -> Path:
    """A folder (made) whose conf.py is the book's, its cache in ``folder``, then ``lines``:
    for what runs chapters outside Sphinx (shards, `pytest book`), which has no -D."""
    folder.mkdir(parents=True)
    (folder / "conf.py").write_text("\n".join([
        f"__file__ = {str(ROOT / 'conf.py')!r}  # the book's paths",
        "exec(compile(open(__file__).read(), __file__, 'exec'))",
        f"nb_execution_cache_path = {str(folder / 'cache')!r}", *lines]) + "\n")
    return folder


def tiny_book_with_an_overflow(tmp_path: Path) -> Path:
    """A copy of the tiny book whose prose has a word too long for any line; its chapter.
    Digits: LuaTeX hyphenates a word of letters however long it is."""
    source = tmp_path / "src"
    shutil.copytree(TINY_BOOK, source)
    chapter = source / "chapter.md"
    chapter.write_text(chapter.read_text().replace(
        "A worked example.", "A worked example: " + "0123456789" * 22 + "."))
    return chapter


def both_editions_at_once(srcdir: Path, root: Path, settings: dict[str, str] | None = None,
                          forked: bool | None = None) -> dict[str, Build]:
    """Student and instructor editions built at the same time into root, sharing
    root/cache, as `make editions` builds them (``forked``: :func:`run_sphinx`'s)."""
    cache = root / "cache"
    with ThreadPoolExecutor(2) as pool:
        student = pool.submit(sphinx_build, srcdir, root / "student", cache, settings=settings,
                              forked=forked)
        instructor = pool.submit(sphinx_build, srcdir, root / "instructor", cache, "instructor",
                                 settings=settings, forked=forked)
        return {"student": student.result(), "instructor": instructor.result()}


BUILT = pytest.StashKey[dict[str, Build]]()


def _built_by_one_worker(config: pytest.Config) -> dict[str, Build] | None:
    """Under pytest-xdist, both editions built once a session, by the first worker that asks
    (the others wait for it), in the folder the session's workers share (their own folders'
    parent); each worker then reads its own copy: a cache is written even when read
    (jupyter-cache notes when a notebook was last used), so two workers never share one.
    None in a session of one process."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        return None
    if BUILT not in config.stash:
        shared = Path(config.option.basetemp).parent
        own = shared / f"book-{worker}"
        with FileLock(shared / "built.lock"):
            record = shared / "built.json"
            if not record.exists():
                builds = both_editions_at_once(BOOK, shared / "book")
                record.write_text(json.dumps({edition: [build.returncode, build.log]
                                              for edition, build in builds.items()}))
            shutil.copytree(shared / "book", own)
            config.stash[BUILT] = {edition: Build(code, log, own / edition) for edition, (code, log)
                                   in json.loads(record.read_text()).items()}
    return config.stash[BUILT]


def _built_cache(builds: dict[str, Build]) -> Path:
    return builds["student"].outdir.parent / "cache"


@pytest.fixture(scope="session")
def built(tmp_path_factory, pytestconfig) -> dict[str, Build]:
    """Student and instructor editions of the real book, cold, built at once, one new cache,
    once a session (also with two workers)."""
    builds = (_built_by_one_worker(pytestconfig)
              or both_editions_at_once(BOOK, tmp_path_factory.mktemp("book")))
    for edition, build in builds.items():
        assert build.returncode == 0, f"{edition} build failed:\n{build.log[-4000:]}"
    # The chapters' own items (`pytest book`, later in the session) read this cache: the
    # cells just executed, not the repository's _build/ (which the tests never write).
    pytestconfig.stash[CHAPTER_CACHE] = str(_built_cache(builds))
    return builds


def _is_chapter_cell(item: pytest.Item) -> bool:
    """An item of `pytest book`: a chapter's cell, not a test of this folder."""
    return Path(item.fspath).parent != Path(__file__).parent


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    # With two workers (`make test-suite`, --dist loadfile) a chapter's cells may reach a
    # worker before any of its tests asked for `built`: they wait for the books too (time that
    # --durations then counts in no test), and read the cache the builds filled (a build that
    # failed fails `built`'s tests).
    if _is_chapter_cell(item) and (builds := _built_by_one_worker(item.config)) is not None:
        item.config.stash[CHAPTER_CACHE] = str(_built_cache(builds))
    return (yield)


# Fast tests start no build and no kernel (`make test-fast`): one that starts a kernel, a
# kernel server or a build that writes pages, in this process or as a program it runs (not
# in a fork, nor in a program that program runs), fails at its end, saying what it started.
# (A Sphinx read, whose builder writes nothing, is no build.)
_STARTED: list[str] = []
_STARTING = {"ipykernel_launcher": "a kernel", "coursebook.execute.kernel_forkserver":
             "a kernel server", "-m sphinx ": "a Sphinx build", "sphinx_autobuild": "a preview",
             ".build(": "a Sphinx build"}  # the last: a Python started with Sphinx(...).build()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "own_kernels: its builds start kernels as a build does, "
                            "not from the session's kernel server (tests/conftest.py)")
    from sphinx.application import Sphinx
    from sphinx.builders.dummy import DummyBuilder

    popen, build = subprocess.Popen.__init__, Sphinx.build

    def noted_popen(self, args, *more, **options):
        command = " ".join(map(str, args)) if isinstance(args, (list, tuple)) else str(args)
        _STARTED.extend(what for marker, what in _STARTING.items() if marker in f"{command} ")
        popen(self, args, *more, **options)

    def noted_build(self, *more, **options):
        if not isinstance(self.builder, DummyBuilder):
            _STARTED.append(f"a Sphinx {self.builder.name} build")
        return build(self, *more, **options)

    subprocess.Popen.__init__, Sphinx.build = noted_popen, noted_build


@pytest.fixture(autouse=True)
def _fast_tests_start_no_build_and_no_kernel(request: pytest.FixtureRequest):
    _STARTED.clear()
    yield
    if _STARTED and not request.node.get_closest_marker("slow"):
        pytest.fail(f"this fast test started {', '.join(sorted(set(_STARTED)))}: mark it "
                    "slow, or test the logic on data", pytrace=False)


# A slow test's builds and chapter runs fork their kernels from one kernel server of the
# session (a worker's), as the preview's do (coursebook.execute.kernel_pool): torch is
# imported once, not in each build's server or kernel (about 3 s of CPU each). A test marked
# own_kernels (the files below: kernels, processes, the preview, stopped builds; in others,
# a kernel's faults) starts them as a build does.
OWN_KERNELS = {"test_kernel_pool", "test_stopped_builds", "test_concurrency",
               "test_build_processes", "test_preview"}


@pytest.fixture(scope="session")
def _kernel_server(tmp_path_factory) -> dict[str, str]:
    """The session's kernel server; the environment that has kernels forked from it."""
    from coursebook.execute.kernel_pool import (POOL_ENV, make_pool, offer_waiting_kernels,
                                                start_kernel_forkserver, stop_kernel_forkserver)

    pool = tmp_path_factory.mktemp("kernels")
    make_pool(pool)
    before = os.environ.copy()
    offer_waiting_kernels(pool)  # writes the pool's kernel spec, and names it in os.environ
    offered = {name: os.environ[name] for name in ("JUPYTER_PATH", POOL_ENV)}
    os.environ.clear()
    os.environ.update(before)  # set by each test that shares the server (below)
    server = start_kernel_forkserver(pool, ["torch"])
    yield offered
    stop_kernel_forkserver(pool, server)


@pytest.fixture(autouse=True)
def _slow_tests_share_a_kernel_server(request: pytest.FixtureRequest, monkeypatch):
    if request.node.get_closest_marker("slow") and not request.node.get_closest_marker(
            "own_kernels"):
        for name, value in request.getfixturevalue("_kernel_server").items():
            monkeypatch.setenv(name, value)


@pytest.fixture(scope="session", autouse=True)
def _build_server():
    _BUILD_SERVERS.append(BuildServer())  # its process starts at the first build
    yield
    while _BUILD_SERVERS:
        _BUILD_SERVERS.pop().close()


@pytest.fixture(autouse=True)
def _process_tests_start_their_builds(request: pytest.FixtureRequest):
    global _STARTING_AFRESH
    _STARTING_AFRESH = request.node.path.stem in OWN_KERNELS
    yield
    _STARTING_AFRESH = False


def copy_of_built_cache(built: dict[str, Build], to: Path) -> Path:
    """A private copy of the `built` books' execution cache: a slow test that builds the
    book again executes only what it changed, not every chapter."""
    shutil.copytree(_built_cache(built), to)
    return to


CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, headless, driven by Playwright."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking"])
        yield browser
        browser.close()


# Each test file tests one stage of the pipeline (docs/architecture.md), marked so that
# `pytest -m verify` (say) runs one stage's tests. A new test file names its stage here.
STAGES = {
    "model": ["test_config", "test_museum", "test_recordings", "test_readiness", "test_runtimes",
              "test_versions", "test_layout", "test_tpu_smoke", "test_cloud_tpu_record",
              "test_colab_notebooks", "test_toml_files"],
    "prepare": ["test_editions", "test_runtime_setup", "test_answer_checks", "test_new_chapter",
                "test_book_markup", "test_notebook_chapters",
                "test_chapter_packages"],
    "execute": ["test_concurrency", "test_shards", "test_kernel_pool", "test_myst_nb_clients",
                "test_cache_key", "test_pytest_book"],
    "verify": ["test_expectations", "test_accept_outputs", "test_varying_outputs",
               "test_expected_outputs_build", "test_execution_checks",
               "test_claims", "test_check_teaching",
               "test_museum_build", "test_torch_versions", "test_outputs",
               "test_compared_outputs"],
    "render": ["test_downloads", "test_download_figures", "test_handouts", "test_pdf",
               "test_pdf_headings",
               "test_pdf_characters",
               "test_pdfcheck", "test_browser", "test_student_pages", "test_glossary",
               "test_preview", "test_compiled_templates",
               "test_offline_mathjax", "test_search_index"],
    "audit": ["test_audit", "test_prose_overlap", "test_book", "test_dated_prose"],
    "process": ["test_faults", "test_quiet_log", "test_build_processes",
                "test_stopped_builds", "test_private_names"],
    "publish": ["test_workflows", "test_system_tools", "test_fresh_clone", "test_bench",
                "test_style"],
}
STAGE_OF = {module: stage for stage, modules in STAGES.items() for module in modules}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Two workers take whole files in this order (`make test-suite`: --dist loadfile
    # --no-loadscope-reorder): the files with the most slow tests first, the chapters' cells
    # last, so that the run ends on short files rather than one worker's long one.
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: (_is_chapter_cell(item), -slow[item.path]))
    for item in items:
        if _is_chapter_cell(item):
            continue
        path = Path(item.fspath)
        if path.stem not in STAGE_OF:
            raise pytest.UsageError(f"{path.name}: name its pipeline stage in conftest.STAGES")
        item.add_marker(STAGE_OF[path.stem])
        if path.stem in OWN_KERNELS:
            item.add_marker("own_kernels")


def pytest_collection_finish(session: pytest.Session) -> None:
    # A file whose slow tests mostly wait (test_readiness: on the package registry) starts
    # that wait as the session starts, in the background: its start_in_background(config).
    for module in {getattr(item, "module", None) for item in session.items
                   if item.get_closest_marker("slow")}:
        if hasattr(module, "start_in_background"):
            module.start_in_background(session.config)


def run_in_kernel(kernel: dict, code: str) -> tuple[str, str]:
    """``code`` run in a pool's kernel (coursebook.execute.kernel_pool): its reply's
    status and what it printed."""
    from jupyter_client import BlockingKernelClient

    from coursebook.execute.kernel_pool import connection_of

    connection = connection_of(kernel)
    client = BlockingKernelClient()
    client.load_connection_info({**connection, "key": connection["key"].encode()})
    client.start_channels()
    printed: list[str] = []
    try:
        client.wait_for_ready(timeout=60)
        reply = client.execute_interactive(code, timeout=60, output_hook=lambda message:
                                           printed.append(message["content"].get("text", "")))
    finally:
        client.stop_channels()
    return reply["content"]["status"], "".join(printed)


def run_in_python(code: str):
    """The JSON value ``code`` printed last, run in a Python of its own that imports the
    extension (a build's imports and state stay out of the test process)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "book" / "_ext")})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
