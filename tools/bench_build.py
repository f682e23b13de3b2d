#!/usr/bin/env python3
"""Benchmark the book's build: cold, warm and after edits, against its floor and its peers.

Prints a table of median wall times over --runs runs, with the notebooks each case
executed, then the ratios the goals are stated in (issues #15 and #21):
  - both editions, built at once as `make editions` does (each reading with -j): cold,
    warm, after a prose edit and a code edit; warm without the expected-output comparison
    (its cost, also taken from the build's own log);
  - the floor: the same distinct notebooks executed one after the other with nbclient;
    Sphinx's own no-op rebuild of the same tree (myst-nb, nothing executed), two at once;
  - the student edition alone, cold and warm, against Jupyter Book 1 and Jupyter Book 2
    building the very notebooks the student build executed (written out as .ipynb);
  - a course-sized book: PT01 and 11 variants of it (other seeds) plus the book's other
    chapters, made in the scratch folder: cold on one core and on two, warm, and a code
    edit of PT01 against the same edit in the book as it is.
Cases compared in a ratio take turns, run by run (A B A B ...), after a warm-up run, and
the ratio is the median of the run-by-run ratios: this machine's speed drifts by a third
over minutes, which would otherwise decide a ratio of cases timed minutes apart.
Everything runs in a scratch folder; nothing under _build/ is touched. Jupyter Book 1
and 2 are installed into their own virtual environments there (with the book's torch),
once per run of this tool. Jupyter Book 2 (mystmd) fetches its HTML theme from the
internet: offline, its time is its site content (execution included), not its HTML.
Figures are wall-clock seconds on this machine: goals, not tests.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from book_environment import sphinx_command, use_book_environment

use_book_environment()
# Every case keeps its compiled modules, as builds on a user's machine do. Installed packages
# (Sphinx, Jupyter Book) come compiled by pip; the book's own extension is not installed, so
# where this is set (it is on the build machines) it alone was compiled on each build: 0.08 s
# of a warm student build (docs/performance.md).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

import nbformat
from nbclient import NotebookClient

from coursebook.model.recordings import recording_name
from coursebook.model.versions import release
from coursebook.verify.expectations import code_digest

ROOT = Path(__file__).resolve().parent.parent
JUPYTER_BOOK_1 = "jupyter-book>=1,<2"
JUPYTER_BOOK_2 = "jupyter-book>=2,<3"
# The book environment's torch, read from its metadata: importing it costs `--help` ~3 s.
TORCH_VERSION = metadata.version("torch")
TORCH = f"torch=={release(TORCH_VERSION)}"
KERNEL_PACKAGES = [TORCH, "jaxtyping", "matplotlib", "ipykernel"]
EXECUTED = "Executing notebook using"  # myst-nb's log line for each notebook it runs
COMPARED = re.compile(r"expected outputs: \d+ chapters compared in ([0-9.]+) s")
# The figure cells import the book's own coursebook.figures.
KERNEL_ENV = {**os.environ, "PYTHONPATH": str(ROOT / "book" / "_ext")}


class Build:
    """One sphinx-build process, started now (so that several can run at once)."""

    def __init__(self, source: Path, out: Path, cache: Path, *extra: str, conf: Path = ROOT,
                 jobs: str = "auto", instructor: bool = False) -> None:
        command = [*sphinx_command(source, out / "html", out / "doctrees", instructor=instructor,
                                   settings={"nb_execution_cache_path": str(cache)},
                                   jobs=jobs, strict=False, conf=conf), *extra]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)

    def log(self) -> str:
        output = self.process.communicate()[0]
        if self.process.returncode != 0:
            sys.exit(f"bench: sphinx-build failed:\n{output[-3000:]}")
        return output


class Logs(list):
    """The logs of the builds of one case: what they executed and compared."""

    @property
    def executed(self) -> int:
        return sum(log.count(EXECUTED) for log in self)

    @property
    def compared_s(self) -> float:
        return sum(float(m) for log in self for m in COMPARED.findall(log))


def at_once(*builds: Build) -> Logs:
    return Logs(build.log() for build in builds)


class Scratch:
    """A copy of the book's sources and exhibits, with its own build folders."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.book = root / "book"
        shutil.rmtree(root, ignore_errors=True)
        self.restore()
        self.cache = root / "cache"
        self.compared: list[float] = []  # seconds the warm builds spent comparing outputs

    def restore(self) -> None:
        """The book's sources and expected outputs as committed, edits undone."""
        shutil.rmtree(self.book, ignore_errors=True)
        # New modification times (no copy2): an incremental build sees the undone edits.
        shutil.copytree(ROOT / "book", self.book, copy_function=shutil.copy,
                        ignore=shutil.ignore_patterns("_ext", "__pycache__"))

    def edition(self, name: str, *extra: str, jobs: str = "auto") -> Build:
        return Build(self.book, self.root / name, self.cache, *extra, jobs=jobs,
                     instructor=name == "instructor")

    def both_editions(self, *extra: str) -> Logs:
        """Both editions at the same time, as `make editions` builds them."""
        return at_once(self.edition("student", *extra), self.edition("instructor", *extra))

    def both(self, *extra: str) -> int:
        return self.both_editions(*extra).executed

    def warm_measured(self) -> int:
        logs = self.both_editions()
        self.compared.append(logs.compared_s)
        return logs.executed

    def warm_unverified(self) -> int:
        return self.both_editions("-D", "coursebook_verify_outputs=0").executed

    def student(self, *extra: str, jobs: str = "auto") -> int:
        return at_once(self.edition("student", *extra, jobs=jobs)).executed

    def clear(self) -> None:
        for path in ("student", "instructor", "cache"):
            shutil.rmtree(self.root / path, ignore_errors=True)

    def cold(self) -> int:
        self.clear()
        return self.both()

    def edit(self, old: str, new: str, chapter: str = "pt01") -> None:
        path = self.book / f"{chapter}.md"
        text = path.read_text()
        if old not in text:
            sys.exit(f"bench: {chapter} no longer contains {old!r}; update the bench's edits")
        path.write_text(text.replace(old, new, 1))

    def executed_notebooks(self, edition: str = "*") -> list[tuple[str, nbformat.NotebookNode]]:
        """The distinct notebooks the builds executed, as myst-nb wrote them, outputs cleared.

        A recorded chapter (the TPU bridges) is not executed by a build: left out.
        """
        seen, notebooks = set(), []
        for path in sorted(self.root.glob(f"{edition}/jupyter_execute/*.ipynb")):
            notebook = nbformat.read(path, as_version=4)
            if recording_name(notebook):
                continue
            for cell in notebook.cells:
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = [], None
            # The code decides what runs (as in jupyter-cache's hash); cell ids do not.
            code = "\0".join(c.source for c in notebook.cells if c.cell_type == "code")
            key = hashlib.sha256(code.encode()).hexdigest()
            if key not in seen:
                seen.add(key)
                notebooks.append((path.stem, notebook))
        return notebooks


def course_sized(root: Path, variants: int) -> Scratch:
    """The book plus `variants` copies of PT01 with other seeds and their own labels."""
    course = Scratch(root)
    pt01 = (course.book / "pt01.md").read_text()
    if "torch.manual_seed(7)" not in pt01:
        sys.exit("bench: PT01 no longer seeds with torch.manual_seed(7); update the bench")
    names = []
    for number in range(2, variants + 2):
        name = f"pt{number:02d}"
        text = pt01.replace("torch.manual_seed(7)", f"torch.manual_seed({7 + number})", 1)
        (course.book / f"{name}.md").write_text(re.sub(r"(?<=[(`<])pt01(?=[-)`>])", name, text))
        names.append(name)
    index = course.book / "index.md"
    index.write_text(index.read_text().replace(
        "pt01\n", "pt01\n" + "".join(f"{n}\n" for n in names), 1))
    return course


class PreviewServer:
    """`tools/preview.py` serving a book's sources on a free port; its terminal in a file."""

    def __init__(self, book: Path, out: Path, cache: Path, *settings: str) -> None:
        import socket

        self.book = book
        out.mkdir(parents=True, exist_ok=True)
        self.log_path = out / "preview.log"
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        with self.log_path.open("w") as log:
            # Its own session: the server, its builds and kernels end together.
            self.process = subprocess.Popen(
                [sys.executable, str(ROOT / "tools" / "preview.py"), "--source", str(book),
                 "--out", str(out), "--port", str(port),
                 "-D", f"nb_execution_cache_path={cache}", *settings],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)

    def log(self) -> str:
        return self.log_path.read_text()

    def edit(self, path: str, old: str, new: str) -> None:
        file = self.book / path
        text = file.read_text()
        if old not in text:
            sys.exit(f"bench: {path} no longer contains {old!r}; update the preview's edits")
        file.write_text(text.replace(old, new, 1))

    def edit_cell(self, chapter: str, old: str, new: str, expected: str) -> None:
        """Edit the code cell of ``chapter`` that holds ``old``, as its author would after
        accepting its output: its entry in the ``expected`` file takes the cell's new key
        (written first, so that one build sees both)."""
        text = (self.book / chapter).read_text()
        start = text.rindex("```{code-cell}", 0, text.index(old))
        code = text[text.index("\n", start) + 1:text.index("```", start + 3)]
        # The key of a cell whose code appears once in its chapter: the digest of its code.
        keys = [code_digest(c) for c in (code, code.replace(old, new, 1))]
        self.edit(expected, f"=== cell {keys[0]} ", f"=== cell {keys[1]} ")
        self.edit(chapter, old, new)

    def wait(self, done: Callable[[], bool], what: str, timeout: float = 900) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if self.process.poll() is not None:
                sys.exit(f"bench: the preview ended:\n{self.log()[-4000:]}")
            if time.monotonic() > deadline:
                sys.exit(f"bench: the preview never {what}:\n{self.log()[-4000:]}")
            time.sleep(0.05)

    def wait_for_log(self, text: str, count: int = 1) -> None:
        self.wait(lambda: self.log().count(text) >= count, f"logged {text!r}")

    def page(self, name: str) -> str:
        """The served page; "" while a build is rewriting it (its length changed mid-read)
        or before the server listens (it logs that it waits for changes a moment before)."""
        import http.client
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(f"{self.url}/{name}") as response:
                return response.read().decode()
        except http.client.IncompleteRead:
            return ""
        except urllib.error.URLError as error:
            if isinstance(error.reason, ConnectionRefusedError):
                return ""
            raise

    def wait_until_serving(self) -> None:
        """Its first build done and its pages served."""
        self.wait_for_log("Waiting to detect changes")
        self.wait(lambda: bool(self.page("index.html")), "served its pages")

    def wait_for_page(self, name: str, text: str) -> None:
        self.wait(lambda: text in self.page(name), f"served {text!r} in {name}")

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=60)


def nbclient_floor(notebooks: list[tuple[str, nbformat.NotebookNode]], cwd: Path) -> int:
    for _, notebook in notebooks:
        NotebookClient(nbformat.from_dict(notebook), timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(cwd)}}).execute()
    return len(notebooks)


def plain_sphinx_conf(root: Path) -> Path:
    """Sphinx with myst-nb and the same theme, executing nothing: its own no-op cost."""
    conf = root / "plain-conf"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "conf.py").write_text(
        'extensions = ["myst_nb", "sphinx_design", "sphinx_copybutton"]\n'
        'html_theme = "sphinx_book_theme"\nnb_execution_mode = "off"\n'
        'myst_enable_extensions = ["colon_fence", "dollarmath", "amsmath", "deflist"]\n'
        'suppress_warnings = ["myst.directive_unknown", "ref.ref", "myst.xref_missing"]\n')
    return conf


def venv_with(root: Path, name: str, *packages: str) -> Path:
    venv = root / name
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *packages],
                   check=True)
    return venv / "bin"


def peer_project(root: Path, notebooks: list[tuple[str, nbformat.NotebookNode]]
                 ) -> tuple[Path, list[str]]:
    """A folder with an index page and the student build's notebooks (.ipynb)."""
    root.mkdir(parents=True)
    (root / "index.md").write_text("# Deep Learning Labs\n\nThe chapters, built by a peer.\n")
    for name, notebook in notebooks:
        nbformat.write(notebook, root / f"{name}.ipynb")
    return root, [name for name, _ in notebooks]


def jupyter_book_1(root: Path, notebooks: list[tuple[str, nbformat.NotebookNode]]
                   ) -> Callable[[], int]:
    bin_dir = venv_with(root, "jb1-venv", JUPYTER_BOOK_1, *KERNEL_PACKAGES)
    project, names = peer_project(root / "jb1", notebooks)
    (project / "_config.yml").write_text(
        "title: Deep Learning Labs\nexecute:\n  execute_notebooks: cache\n  timeout: 600\n"
        "parse:\n  myst_enable_extensions: [colon_fence, dollarmath, amsmath, deflist]\n"
        "sphinx:\n  extra_extensions: [sphinx_design]\n")
    (project / "_toc.yml").write_text(
        "format: jb-book\nroot: index\nchapters:\n" + "".join(f"- file: {n}\n" for n in names))

    def build() -> int:
        done = subprocess.run([str(bin_dir / "jupyter-book"), "build", str(project)],
                              capture_output=True, text=True, env=KERNEL_ENV)
        if done.returncode != 0:
            sys.exit(f"bench: jupyter-book 1 failed:\n{(done.stdout + done.stderr)[-3000:]}")
        return (done.stdout + done.stderr).count(EXECUTED)
    return build


def jupyter_book_2(root: Path, notebooks: list[tuple[str, nbformat.NotebookNode]]
                   ) -> Callable[[], int]:
    bin_dir = venv_with(root, "jb2-venv", JUPYTER_BOOK_2, "jupyter-server", *KERNEL_PACKAGES)
    project, names = peer_project(root / "jb2", notebooks)
    (project / "myst.yml").write_text(
        "version: 1\nproject:\n  title: Deep Learning Labs\n  toc:\n    - file: index.md\n"
        + "".join(f"    - file: {n}.ipynb\n" for n in names) + "site:\n  template: book-theme\n")
    # mystmd runs the notebooks through a Jupyter server (`python` on PATH), which will not
    # start as root (CI) unless told to.
    config = root / "jb2-jupyter-config"
    config.mkdir()
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"allow_root": True}}))
    env = {**KERNEL_ENV, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "JUPYTER_CONFIG_DIR": str(config)}

    def build() -> int:
        # Its own session: mystmd leaves the Jupyter server it started running; ended here.
        done = subprocess.Popen([str(bin_dir / "jupyter-book"), "build", "--site", "--execute",
                                 "--execute-parallel", "2"], cwd=project, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        log = done.communicate()[0]
        try:
            os.killpg(done.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        built = all((project / "_build" / "site" / "content" / f"{n}.json").is_file()
                    for n in names)
        # Offline, only the theme fetch may fail, after the content is built.
        if not built or (done.returncode != 0 and "api.mystmd.org" not in log):
            sys.exit(f"bench: jupyter-book 2 failed:\n{log[-3000:]}")
        return log.count("no execution cache found")
    return build


Case = tuple[str, Callable[[], int], Callable[[], None]]  # name, timed action, untimed setup


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per case (default 3)")
    parser.add_argument("--course-runs", type=int, default=1,
                        help="runs per case of the course-sized book (default 1)")
    parser.add_argument("--variants", type=int, default=10,
                        help="copies of PT01 added to the book (default 10: 12 executed chapters)")
    parser.add_argument("--skip-jupyter-book", action="store_true",
                        help="leave out Jupyter Book 1 and 2 (no install)")
    parser.add_argument("--skip-course", action="store_true",
                        help="leave out the course-sized book")
    parser.add_argument("--only", choices=["preview", "shards"], action="append", default=[],
                        help="run only these parts (their untimed set-up and case 9 included)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="book-bench-"))
    scratch = Scratch(work / "tree")
    results: dict[str, list[tuple[float, int, float]]] = {}
    nothing = lambda: None  # noqa: E731

    def together(*cases: Case, runs: int = args.runs) -> None:
        """Cases compared in a ratio take turns (A B A B ...): the machine's speed drifts
        over minutes, and a drift then weighs on both sides of the ratio alike."""
        for index in range(runs):
            for case, action, before in cases:
                before()
                started, cpu = time.perf_counter(), children_cpu()
                count = action()
                results.setdefault(case, []).append(
                    (time.perf_counter() - started, count, children_cpu() - cpu))
                print(f"  {case}: run {index + 1}/{runs}: {results[case][-1][0]:.2f} s, "
                      f"{count} notebooks executed", file=sys.stderr, flush=True)

    def optional(part: str, cases: Callable[[], None]) -> None:
        """A peer or the course-sized book that fails is reported; the table still prints."""
        try:
            cases()
        except (SystemExit, subprocess.CalledProcessError) as error:
            left_out.append(f"{part}: {error}")
            print(f"bench: {part} left out: {error}", file=sys.stderr)

    left_out: list[str] = []

    edits = iter(range(10 ** 6))

    def code_edit(book: Scratch) -> Callable[[], None]:
        return lambda: book.edit('print("Dtype:", X.dtype)',
                                 f'print("Dtype:", X.dtype)  # edit {next(edits)}')

    accept = ("-D", "coursebook_accept_outputs=1")
    student_edit: Case = ("9 code edit in PT01, student", lambda: scratch.student(*accept),
                          code_edit(scratch))
    expected = f"expected/torch-{release(TORCH_VERSION)}/pt01.txt"

    def preview_cases() -> None:
        """`make preview` of a copy of the book: a save to the page served with it."""
        copy = Scratch(work / "preview")
        shutil.copytree(scratch.cache, copy.cache)
        shutil.copytree(copy.book, copy.root / "book-cold")
        servers = {warm: PreviewServer(copy.book if warm else copy.root / "book-cold",
                                       copy.root / f"out-{warm}", copy.cache,
                                       *([] if warm else ["--no-warm-kernels"]))
                   for warm in (True, False)}
        for server in servers.values():
            server.wait_until_serving()

        def idle(server: PreviewServer) -> Callable[[], None]:
            # Each save starts a build ("Rebuilding...") that ends serving ("Serving on").
            return lambda: server.wait(lambda: server.log().count("Serving on") >
                                       server.log().count("Rebuilding..."), "went idle")

        def save(server: PreviewServer, change: Callable[[str], None]) -> int:
            marker = f"edit {next(edits)}"
            before = server.log().count(EXECUTED)
            change(marker)
            server.wait_for_page("pt01.html", marker)
            return server.log().count(EXECUTED) - before

        def code(server: PreviewServer) -> Callable[[], int]:
            return lambda: save(server, lambda marker: server.edit_cell(
                "pt01.md", 'print("Dtype:", X.dtype)', f'print("Dtype:", X.dtype)  # {marker}',
                expected))
        prose = lambda: save(servers[True], lambda marker: servers[True].edit(  # noqa: E731
            "pt01.md", "## 1. Tensors\n", f"## 1. Tensors\n\nProse {marker}.\n"))
        try:
            together(("13a preview: prose edit, save to served page", prose, idle(servers[True])))
            together(student_edit,
                     ("13b preview: code edit, save to served page", code(servers[True]),
                      idle(servers[True])),
                     ("13c preview: code edit, kernels not started ahead", code(servers[False]),
                      idle(servers[False])))
        finally:
            for server in servers.values():
                server.stop()

    def shard_cases(course: Scratch) -> None:
        """The course-sized book executed as 1, 2 and 3 shards at once, merged, built."""
        for count in (1, 2, 3):
            folder = work / f"shards-{count}"

            def execute(count: int = count, folder: Path = folder) -> int:
                shutil.rmtree(folder, ignore_errors=True)
                runs = [subprocess.Popen(
                    [sys.executable, str(ROOT / "tools" / "shards.py"), "--book", str(course.book),
                     "--shards-dir", str(folder), "execute", f"{index}/{count}",
                     "--history", str(course.cache)], stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL, text=True) for index in range(1, count + 1)]
                own = []
                for run in runs:
                    log = run.communicate()[0]
                    if run.returncode != 0:
                        sys.exit(f"bench: a shard failed:\n{log[-3000:]}")
                    own.append(float(re.findall(r"in ([0-9.]+) s$", log.strip())[-1]))
                shard_seconds.setdefault(count, []).append(own)
                return len(list(folder.glob("shard-*/.jupyter_cache/executed/*")))
            together((f"14{'abc'[count - 1]} course-sized as {count} shard(s) at once, execute",
                      execute, nothing), runs=args.course_runs)
        merged = work / "merged-cache"

        def merge() -> int:
            shutil.rmtree(merged, ignore_errors=True)
            subprocess.run([sys.executable, str(ROOT / "tools" / "shards.py"), "--book",
                            str(course.book), "--shards-dir", str(work / "shards-3"), "merge", "3",
                            "--into", str(merged)], check=True, capture_output=True)
            return 0
        together(("14m merge of the 3 shards' caches", merge, nothing), runs=args.course_runs)

        def merged_build() -> int:
            # Both editions, one after the other (the instructor's expected outputs of the
            # variants are taken here: they write the same files).
            logs = Logs(Build(course.book, work / "merged" / name, merged, *accept,
                              instructor=name == "instructor").log()
                        for name in ("student", "instructor"))
            return logs.executed
        together(("14n both editions from the merged cache", merged_build,
                  lambda: shutil.rmtree(work / "merged", ignore_errors=True)),
                 runs=args.course_runs)
        manifest = json.loads((work / "shards-1" / "shard-1" / "shard.json").read_text())
        shard_chapters.append(len(manifest["chapters"]))

    shard_seconds: dict[int, list[list[float]]] = {}
    shard_chapters: list[int] = []
    if args.only:
        scratch.student()  # not counted: the cache the copies start from
        if "preview" in args.only:
            preview_cases()
        if "shards" in args.only:
            course = course_sized(work / "course", args.variants)
            course.student(*accept)  # not counted: the execution times that deal the shards
            shard_cases(course)
        report(results, [], args, chapters=0, course_chapters=sum(shard_chapters),
               shard_seconds=shard_seconds)
        shutil.rmtree(work, ignore_errors=True)
        return 0

    # Warm-up, not counted: fills the disk cache and writes the notebooks the floor runs.
    scratch.cold()
    notebooks = scratch.executed_notebooks()
    together(("1 cold, both editions", scratch.cold, nothing),
             ("5 floor: nbclient, same notebooks", lambda: nbclient_floor(notebooks, work),
              nothing))
    plain = plain_sphinx_conf(work)

    def plain_noop() -> int:  # two output trees at once, as case 2 rebuilds two editions
        return at_once(*(Build(scratch.book, work / f"plain-{tree}", work / "plain-cache",
                               conf=plain) for tree in ("a", "b"))).executed
    plain_noop()
    scratch.both()
    together(("2 warm, both editions, no change", scratch.warm_measured, nothing),
             ("2v warm, no output comparison", scratch.warm_unverified, nothing),
             ("6 Sphinx's own no-op (x2 at once)", plain_noop, nothing))
    together(("3 prose edit in PT01, both", scratch.both,
              lambda: scratch.edit("## 1. Tensors\n",
                                   f"## 1. Tensors\n\nProse edit {next(edits)}.\n")))
    # An edited cell has no expected output yet: its author accepts the new one (in the
    # scratch copy), as `make accept-outputs` would.
    together(("4 code edit in PT01, both", lambda: scratch.both(*accept), code_edit(scratch)))
    scratch.restore()
    scratch.student()  # not counted: the student notebooks of the book as committed
    student_notebooks = scratch.executed_notebooks("student")
    student_cold: Case = ("7 student edition, cold", lambda: scratch.student(), scratch.clear)
    student_warm: Case = ("8 student edition, warm", lambda: scratch.student(), nothing)
    peers: list[tuple[Case, Case]] = []

    def peer(name: str, make: Callable, key: str, folder: str) -> Callable[[], None]:
        def install() -> None:
            build = make(work / "peers", student_notebooks)
            build()  # warm-up, not counted
            clear = lambda: shutil.rmtree(work / "peers" / folder / "_build",  # noqa: E731
                                          ignore_errors=True)
            peers.append(((f"{key}a {name}, cold", build, clear),
                          (f"{key}b {name}, warm", build, nothing)))
        return install

    if not args.skip_jupyter_book:
        optional("Jupyter Book 1", peer("Jupyter Book 1", jupyter_book_1, "10", "jb1"))
        optional("Jupyter Book 2", peer("Jupyter Book 2 (no HTML)", jupyter_book_2, "11", "jb2"))
    together(student_cold, *(cold for cold, _ in peers))
    together(student_warm, *(warm for _, warm in peers))
    optional("the preview", preview_cases)

    def course_cases() -> None:
        course = course_sized(work / "course", args.variants)
        # The variants print other values: their expected outputs are taken when cold.
        together(("12a course-sized, student, cold, 1 core",
                  lambda: course.student(*accept, jobs="1"), course.clear),
                 ("12b course-sized, student, cold, 2 cores", lambda: course.student(*accept),
                  course.clear), runs=args.course_runs)
        together(("12c course-sized, student, warm", lambda: course.student(), nothing),
                 runs=args.course_runs)
        together(student_edit, ("12d course-sized, code edit in PT01, student",
                                lambda: course.student(*accept), code_edit(course)))
        shard_cases(course)

    if not args.skip_course:
        optional("the course-sized book", course_cases)
    if not any(case.startswith("9 ") for case in results):
        together(student_edit)
    report(results, scratch.compared, args, chapters=len(notebooks),
           course_chapters=args.variants + len(student_notebooks), shard_seconds=shard_seconds)
    for reason in left_out:
        print(f"  left out: {reason}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


def children_cpu() -> float:
    """CPU seconds (user + sys) of the finished processes this one waited for: a figure
    that load on a shared machine moves far less than wall time."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def report(results: dict[str, list[tuple[float, int, float]]], compared: list[float],
           args: argparse.Namespace, chapters: int, course_chapters: int,
           shard_seconds: dict[int, list[list[float]]]) -> None:
    print(f"\nPython {platform.python_version()}, torch {TORCH_VERSION}, "
          f"{platform.machine()}, {os.cpu_count()} cores, {args.runs} runs per case "
          f"({args.course_runs} for the course-sized book); median seconds\n")
    print(f"| {'case':<45} | {'median s':>8} | {'min s':>6} | {'CPU s':>6} "
          f"| {'notebooks executed':>18} |")
    print(f"|{'-' * 47}|{'-' * 10}|{'-' * 8}|{'-' * 8}|{'-' * 20}|")
    median = {case.split()[0]: statistics.median(t for t, _, _ in runs)
              for case, runs in results.items()}
    cpu = {case.split()[0]: statistics.median(c for _, _, c in runs)
           for case, runs in results.items()}
    for case, runs in results.items():
        counts = sorted({count for _, count, _ in runs})
        key = case.split()[0]
        print(f"| {case:<45} | {median[key]:>8.2f} | {min(t for t, _, _ in runs):>6.2f} "
              f"| {cpu[key]:>6.2f} | {'/'.join(map(str, counts)):>18} |")
    print("(CPU s: median user + sys of the processes a case ran and waited for; a preview "
          "server's, still running, is not in it)")

    print("\n| ratio | value | goal | met |\n|---|---|---|---|")

    runs = {case.split()[0]: [t for t, _, _ in times] for case, times in results.items()}

    def ratio(label: str, a: str, b: str, goal: float, higher: bool = False) -> None:
        if a in median and b in median:
            # Cases that took turns: the median of the ratios run by run.
            value = (statistics.median(x / y for x, y in zip(runs[a], runs[b]))
                     if len(runs[a]) == len(runs[b]) else median[a] / median[b])
            met = value >= goal if higher else value <= goal
            print(f"| {label} ({a}/{b}) | {value:.2f} | {'>=' if higher else '<='} {goal} | "
                  f"{'yes' if met else 'NO'} |")
    ratio("cold both editions / serial nbclient floor", "1", "5", 0.65)
    ratio("warm both editions / Sphinx's no-op", "2", "6", 0.8)
    ratio("student cold / Jupyter Book 1 cold", "7", "10a", 0.65)
    ratio("student warm / Jupyter Book 1 warm", "8", "10b", 0.8)
    ratio("student cold / Jupyter Book 2 cold (its HTML left out)", "7", "11a", 1.0)
    ratio("student warm / Jupyter Book 2 warm (its HTML left out)", "8", "11b", 1.0)
    ratio("one-chapter edit: course-sized / this book", "12d", "9", 1.2)
    ratio("preview code edit / student code edit build", "13b", "9", 0.5)
    ratio("two-core speed-up, course-sized cold (1 core / 2 cores)", "12a", "12b", 1.5, True)

    print("\nfigures")
    for label, a, b in (("student cold / Jupyter Book 1 cold", "7", "10a"),
                        ("student warm / Jupyter Book 1 warm", "8", "10b")):
        if a in cpu and b in cpu:
            print(f"  {label}, by CPU (user + sys): {cpu[a]:.2f} / {cpu[b]:.2f} s = "
                  f"{cpu[a] / cpu[b]:.2f} (wall is the goal's measure; CPU moves less with load)")
    if "2" in median and compared:
        per_build = statistics.median(compared)
        print(f"  expected-output comparison, warm rebuild of both editions: {per_build:.2f} s "
              f"(logged by the builds) = {100 * per_build / median['2']:.1f}% of case 2; "
              f"case 2 - case 2v = {median['2'] - median.get('2v', median['2']):+.2f} s")
    if "12a" in median:
        for case in ("12a", "12b", "12c"):
            print(f"  course-sized, case {case}: {median[case] / course_chapters:.2f} s per "
                  f"chapter ({course_chapters} chapters executed by the student edition)")
    if chapters:
        print(f"  this book: {chapters} distinct notebooks executed by both editions")
    if "13b" in median and "13c" in median:
        print(f"  preview code edit: {median['13b']:.2f} s with a kernel started ahead, "
              f"{median['13c']:.2f} s without")
    shard_model(median, shard_seconds, course_chapters)  # chapters the shards executed


def shard_model(median: dict[str, float], shard_seconds: dict[int, list[list[float]]],
                chapters: int) -> None:
    """Each shard's own time, and what a course costs as shards: per-chapter cost x
    chapters / shards + merge + build (both editions from the merged cache)."""
    if not all(case in median for case in ("14a", "14m", "14n")):
        return
    for count, runs in sorted(shard_seconds.items()):
        own = ", ".join(f"{s:.1f}" for s in runs[len(runs) // 2])
        print(f"  course-sized as {count} shard(s) at once on this machine: wall "
              f"{median['14' + 'abc'[count - 1]]:.1f} s; each shard's own time: {own} s")
    per_chapter = median["14a"] / chapters
    merge, build = median["14m"] / chapters, median["14n"] / chapters
    print(f"  model: {per_chapter:.2f} s per chapter executed (both editions' notebooks, one "
          f"shard) x chapters / shards + {merge:.3f} s per chapter merging + {build:.2f} s "
          f"per chapter building both editions from the merged cache")
    for count in (2, 3):
        if count in shard_seconds:
            slowest = max(shard_seconds[count][len(shard_seconds[count]) // 2])
            print(f"    {chapters} chapters, {count} shards: model "
                  f"{per_chapter * chapters / count:.1f} s executing; measured slowest shard "
                  f"{slowest:.1f} s (shards here share 2 cores)")
    for count in (1, 4, 10):
        total = 50 * per_chapter / count + 50 * (merge + build)
        print(f"    50 chapters on {count} runner(s): {total / 60:.1f} min "
              f"(+ each runner's set-up)")


if __name__ == "__main__":
    sys.exit(main())
