"""Shared helpers: the repository's paths and a way to run sphinx-build as a person would."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
TINY_BOOK = Path(__file__).resolve().parent / "fixtures" / "tiny_book"
BOOK_CACHE = ROOT / "_build" / ".jupyter_cache"  # conf.py's nb_execution_cache_path
EXHIBITS = ROOT / "exhibits"  # conf.py's coursebook_exhibits_dir
MACHINE_KINDS_FILE = ROOT / "tools" / "machine-kinds.toml"  # conf.py's coursebook_machine_kinds_file


def book_museum(exhibits: Path = EXHIBITS):
    """The museum as a build of the book loads it."""
    from coursebook.model.machine_kinds import load_machine_kinds
    from coursebook.model.museum import load_museum

    return load_museum(exhibits, load_machine_kinds(MACHINE_KINDS_FILE))


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


def sphinx_build(srcdir: Path, outdir: Path, cache: Path, *tags: str,
                 settings: dict[str, str] | None = None) -> Build:
    """Build one edition with the repository's conf.py, as the Makefile does."""
    command = [sys.executable, "-m", "sphinx", "-N", "-b", "html", "-c", str(ROOT),
               "-d", str(outdir / "doctrees"), "-W", "--keep-going", "-j", "auto",
               "-D", f"nb_execution_cache_path={cache}"]
    for name, value in (settings or {}).items():
        command += ["-D", f"{name}={value}"]
    for tag in tags:
        command += ["-t", tag]
    command += [str(srcdir), str(outdir / "html")]
    (outdir / "tmp").mkdir(parents=True, exist_ok=True)
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "TMPDIR": str(outdir / "tmp")})
    return Build(done.returncode, done.stdout + done.stderr, outdir)


@pytest.fixture
def tiny_book(tmp_path: Path) -> Path:
    """A private copy of the tiny fixture book, to break on purpose."""
    copy = tmp_path / "src"
    shutil.copytree(TINY_BOOK, copy)
    return copy


def tiny_book_with_an_overflow(tmp_path: Path) -> Path:
    """A copy of the tiny book whose prose has a word too long for any line; its chapter."""
    source = tmp_path / "src"
    shutil.copytree(TINY_BOOK, source)
    chapter = source / "chapter.md"
    chapter.write_text(chapter.read_text().replace(
        "A worked example.", "A worked example: " + "Unbreakable" * 20 + "."))
    return chapter


def both_editions_at_once(srcdir: Path, root: Path,
                          settings: dict[str, str] | None = None) -> dict[str, Build]:
    """Student and instructor editions built at the same time into root, sharing
    root/cache, as `make editions` builds them."""
    cache = root / "cache"
    with ThreadPoolExecutor(2) as pool:
        student = pool.submit(sphinx_build, srcdir, root / "student", cache, settings=settings)
        instructor = pool.submit(sphinx_build, srcdir, root / "instructor", cache, "instructor",
                                 settings=settings)
        return {"student": student.result(), "instructor": instructor.result()}


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> dict[str, Build]:
    """Student and instructor editions of the real book, cold, built at once, one new cache."""
    builds = both_editions_at_once(BOOK, tmp_path_factory.mktemp("book"))
    for edition, build in builds.items():
        assert build.returncode == 0, f"{edition} build failed:\n{build.log[-4000:]}"
    # On a fresh clone (CI), `pytest book`, later in the session, reads the book's own cache:
    # hand it the cells just executed rather than running every chapter again.
    if not BOOK_CACHE.exists():
        copy_of_built_cache(builds, BOOK_CACHE)
    return builds


def copy_of_built_cache(built: dict[str, Build], to: Path) -> Path:
    """A private copy of the `built` books' execution cache: a slow test that builds the
    book again executes only what it changed, not every chapter."""
    shutil.copytree(built["student"].outdir.parent / "cache", to)
    return to
