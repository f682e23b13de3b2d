"""What the tools share: the book's data files, and the book's environment.

A tool started as ``tools/NAME.py`` (its shebang: the system Python) runs in the book's
environment: it starts again with ``.venv``'s Python, or says how to create it."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
# conf.py names the same files for a build (coursebook_exhibits_dir, ..._machine_kinds_file,
# ..._runtimes_file).
EXHIBITS_DIR = ROOT / "exhibits"
MACHINE_KINDS_FILE = ROOT / "tools" / "machine-kinds.toml"
RUNTIMES_FILE = ROOT / "tools" / "runtimes.toml"
RECORDINGS_DIR = ROOT / "book" / "recordings"  # conf.py's coursebook_recordings_dir
BUILD = ROOT / "_build"


BOOK_DISTRIBUTION = "coursebook"  # pyproject.toml's [project] name: installed, all its pins are
RECORDER_REQUIREMENTS = ROOT / "tools" / "recorder-requirements.txt"


def requirement_names(path: Path) -> list[str]:
    """The names of the packages a requirements file lists."""
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [re.match(r"[A-Za-z0-9._-]+", line)[0] for line in lines if line]


def use_book_environment(*needs: str,
                         start: str = "run `make venv`, then start the tool again") -> None:
    """Return when every package of ``needs`` (by default the book's own, which brings all the
    book's packages) is installed here; else re-run the tool with .venv's Python, or stop
    with one line naming what is missing and ``start``, how to start the tool. Only
    the standard library runs before: a Python lacking the packages gets no traceback."""
    from importlib import metadata

    def installed(name: str) -> bool:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return False
        return True

    missing = [name for name in needs or (BOOK_DISTRIBUTION,) if not installed(name)]
    if not missing:
        return
    if VENV_PYTHON.is_file() and Path(sys.prefix).resolve() != VENV_PYTHON.parent.parent.resolve():
        os.execv(VENV_PYTHON, [str(VENV_PYTHON), sys.argv[0], *sys.argv[1:]])
    sys.exit(f"{Path(sys.argv[0]).name}: this Python ({sys.executable}) lacks "
             f"{', '.join(missing)}, and the book's environment ({VENV_PYTHON.parent.parent}) "
             f"is missing: {start}.")


def sphinx_command(source: Path, out: Path, doctrees: Path, **options) -> list[str]:
    """The sphinx-build command line of one edition, as the Makefile's ``edition`` runs it
    (the options of :func:`sphinx_arguments`)."""
    return [sys.executable, "-m", "sphinx", *sphinx_arguments(source, out, doctrees, **options)]


def sphinx_arguments(source: Path, out: Path, doctrees: Path, *, builder: str = "html",
                     instructor: bool = False, tags: tuple[str, ...] = (),
                     settings: dict[str, str] | None = None, jobs: str | None = "auto",
                     strict: bool = True, conf: Path = ROOT) -> list[str]:
    """sphinx-build's arguments for one edition (sphinx-autobuild takes the same): a
    warning is an error and all are reported (``strict``), pages read in ``jobs``
    processes; ``settings`` are ``-D`` overrides."""
    command = ["-N", "-b", builder, "-c", str(conf), "-d", str(doctrees)]
    if strict:
        command += ["-W", "--keep-going"]
    if jobs:
        command += ["-j", jobs]
    for tag in (*tags, *(["instructor"] if instructor else [])):
        command += ["-t", tag]
    for name, value in (settings or {}).items():
        command += ["-D", f"{name}={value}"]
    return [*command, str(source), str(out)]


def find_python(version: str, nearest: bool = False) -> tuple[Path, str] | None:
    """A Python of this major.minor version on this machine (with ``nearest``, else the
    nearest one), and a note saying which it stands in for when it is not that version."""
    major, minor = (int(n) for n in version.split("."))
    for distance in range(0, 4 if nearest else 1):
        for candidate in sorted({minor - distance, minor + distance}):
            name = f"python{major}.{candidate}"
            # pyenv's shim is on PATH even where that version is not selected: try its
            # installed versions too, and take the first that runs with its venv module.
            found = [shutil.which(name), *sorted(glob.glob(str(
                Path.home() / ".pyenv" / "versions" / f"{major}.{candidate}.*" / "bin" / name)),
                reverse=True)]
            for python in filter(None, found):
                if subprocess.run([python, "-c", "import venv"],
                                  capture_output=True).returncode == 0:
                    note = "" if distance == 0 else f" (nearest to the runtime's {version})"
                    return Path(python), note
    return None
