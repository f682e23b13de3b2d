#!/usr/bin/env python3
"""Benchmark the book's build: cold, warm and after edits, against its floor and its peers.

Prints a table of median wall times over --runs runs (and the notebooks executed in each
case), then the ratios the goals are stated in:
  1/5  cold build of both editions vs executing the same distinct notebooks with nbclient
  2/6  warm rebuild vs Sphinx's own no-op rebuild of the same tree (myst-nb, no execution)
  1/7, 2/7  vs Jupyter Book 1.x building the same chapter sources, cold and warm
Everything runs in a scratch folder; nothing under _build/ is touched. Jupyter Book 1 is
installed into its own virtual environment there (with the book's torch), once per run of
this tool. Figures are wall-clock seconds on this machine: goals, not tests.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from book_environment import use_book_environment

use_book_environment()

import nbformat
import torch
from nbclient import NotebookClient

from coursebook.notebooks import read_chapter
from coursebook.recordings import recording_name

ROOT = Path(__file__).resolve().parent.parent
JUPYTER_BOOK = "jupyter-book>=1,<2"


def sphinx(source: Path, out: Path, cache: Path, *extra: str, conf: Path = ROOT) -> str:
    command = [sys.executable, "-m", "sphinx", "-N", "-b", "html", "-c", str(conf),
               "-d", str(out / "doctrees"), "-D", f"nb_execution_cache_path={cache}",
               *extra, str(source), str(out / "html")]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench: sphinx-build failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return done.stdout + done.stderr


def executed(log: str) -> int:
    return log.count("Executing notebook using")


def timed(action: Callable[[], int]) -> tuple[float, int]:
    started = time.perf_counter()
    count = action()
    return time.perf_counter() - started, count


class Scratch:
    """A copy of the book's sources and exhibits, with its own build folders."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.book = root / "book"
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(ROOT / "book", self.book, ignore=shutil.ignore_patterns("_ext", "__pycache__"))
        self.cache = root / "cache"

    def both_editions(self) -> int:
        """Both editions one after the other, as `make editions` builds them."""
        return (executed(sphinx(self.book, self.root / "student", self.cache))
                + executed(sphinx(self.book, self.root / "instructor", self.cache, "-t", "instructor")))

    def cold(self) -> int:
        for path in ("student", "instructor", "cache"):
            shutil.rmtree(self.root / path, ignore_errors=True)
        return self.both_editions()

    def edit_pt01(self, old: str, new: str) -> None:
        chapter = self.book / "pt01.md"
        text = chapter.read_text()
        if old not in text:
            sys.exit(f"bench: PT01 no longer contains {old!r}; update the bench's edits")
        chapter.write_text(text.replace(old, new, 1))

    def executed_notebooks(self) -> list[nbformat.NotebookNode]:
        """The distinct notebooks the cold build executed, as myst-nb wrote them.

        A recorded chapter (the TPU bridges) is not executed by a build: left out.
        """
        seen, notebooks = set(), []
        for path in sorted(self.root.glob("*/jupyter_execute/*.ipynb")):
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
                notebooks.append(notebook)
        return notebooks


def nbclient_floor(notebooks: list[nbformat.NotebookNode], cwd: Path) -> int:
    for notebook in notebooks:
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
        'myst_enable_extensions = ["colon_fence", "dollarmath", "amsmath"]\n'
        'suppress_warnings = ["myst.directive_unknown", "ref.ref", "myst.xref_missing"]\n')
    return conf


def jupyter_book_venv(root: Path) -> Path:
    venv = root / "jb-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run(pip + [JUPYTER_BOOK, f"torch=={torch.__version__.split('+')[0]}",
                          "jaxtyping", "matplotlib", "ipykernel"], check=True)
    return venv / "bin" / "jupyter-book"


def jupyter_book_project(root: Path, scratch: Scratch) -> Path:
    project = root / "jb"
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    # A recorded chapter (the TPU bridges) runs in its own environment only: left out.
    chapters = sorted(p.stem for p in scratch.book.glob("*.md") if p.stem != "index"
                      and not recording_name(read_chapter(p.read_text())))
    for name in ["index", *chapters]:
        shutil.copy(scratch.book / f"{name}.md", project / f"{name}.md")
    (project / "_config.yml").write_text(
        "title: Deep Learning Labs\nexecute:\n  execute_notebooks: cache\n  timeout: 600\n"
        "parse:\n  myst_enable_extensions: [colon_fence, dollarmath, amsmath]\n"
        "sphinx:\n  extra_extensions: [sphinx_design]\n")
    (project / "_toc.yml").write_text(
        "format: jb-book\nroot: index\nchapters:\n" + "".join(f"- file: {c}\n" for c in chapters))
    return project


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per case (default 3)")
    parser.add_argument("--skip-jupyter-book", action="store_true",
                        help="leave out the Jupyter Book 1 comparison (no install)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="book-bench-"))
    scratch = Scratch(work / "tree")
    results: dict[str, list[tuple[float, int]]] = {}

    def run(case: str, action: Callable[[], int], before: Callable[[], None] = lambda: None):
        for index in range(args.runs):
            before()
            results.setdefault(case, []).append(timed(action))
            print(f"  {case}: run {index + 1}/{args.runs}", file=sys.stderr)

    run("1 cold build, both editions", scratch.cold)
    run("2 warm rebuild, no change", scratch.both_editions)
    edits = iter(range(10 ** 6))
    run("3 prose edit in PT01", scratch.both_editions,
        lambda: scratch.edit_pt01("## 1. Tensors\n", f"## 1. Tensors\n\nProse edit {next(edits)}.\n"))
    run("4 code edit in one PT01 cell", scratch.both_editions,
        lambda: scratch.edit_pt01('print("Dtype:", X.dtype)',
                                  f'print("Dtype:", X.dtype)  # edit {next(edits)}'))
    notebooks = scratch.executed_notebooks()
    run("5 floor: nbclient, same notebooks", lambda: nbclient_floor(notebooks, work))
    plain = plain_sphinx_conf(work)
    plain_cache = work / "plain-cache"

    def plain_noop() -> int:  # two output trees, as case 2 rebuilds two editions
        return sum(executed(sphinx(scratch.book, work / f"plain-{tree}", plain_cache, conf=plain))
                   for tree in ("a", "b"))
    plain_noop()
    run("6 Sphinx's own no-op rebuild (x2)", plain_noop)
    if not args.skip_jupyter_book:
        jupyter_book = jupyter_book_venv(work)
        project = jupyter_book_project(work, scratch)

        def jb_build() -> int:
            # PYTHONPATH: the figure cells import the book's own coursebook.figures.
            done = subprocess.run([str(jupyter_book), "build", str(project)],
                                  capture_output=True, text=True,
                                  env={**os.environ, "PYTHONPATH": str(ROOT / "book" / "_ext")})
            if done.returncode != 0:
                sys.exit(f"bench: jupyter-book failed:\n{(done.stdout + done.stderr)[-3000:]}")
            return (done.stdout + done.stderr).count("Executing notebook using")

        run("7a Jupyter Book 1, cold", jb_build, lambda: shutil.rmtree(project / "_build",
                                                                        ignore_errors=True))
        run("7b Jupyter Book 1, warm", jb_build)
    print(f"\nPython {platform.python_version()}, torch {torch.__version__}, "
          f"{platform.machine()}, {args.runs} runs per case (median seconds)\n")
    print(f"| {'case':<36} | {'median s':>8} | {'min s':>6} | {'notebooks executed':>18} |")
    print(f"|{'-' * 38}|{'-' * 10}|{'-' * 8}|{'-' * 20}|")
    median = {case: statistics.median(t for t, _ in runs) for case, runs in results.items()}
    for case, runs in results.items():
        counts = sorted({count for _, count in runs})
        print(f"| {case:<36} | {median[case]:>8.2f} | {min(t for t, _ in runs):>6.2f} | "
              f"{'/'.join(map(str, counts)):>18} |")
    key = {name[0:2].strip(): name for name in median}

    def ratio(a: str, b: str, goal: str) -> None:
        if a in key and b in key:
            print(f"  {a}/{b}: {median[key[a]] / median[key[b]]:.2f}   (goal {goal})")
    print("\nratios")
    ratio("1", "5", "<= 1.3")
    ratio("2", "6", "<= 1.1")
    ratio("1", "7a", "< 1: faster than Jupyter Book 1 cold")
    ratio("2", "7b", "<= 0.5 of Jupyter Book 1 warm")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
