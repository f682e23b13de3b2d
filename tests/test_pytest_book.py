"""`pytest book` (coursebook.pytest_plugin) executes a chapter as the build would: what it
leaves out, the errors it allows, and one line for a package conf.py names but lacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import book_conf_with

CRASH_SIGNS = ("Traceback", "PackageNotFoundError", "importlib")


def _pytest_book(book: Path, *conf_lines: str, collect_only: bool = False):
    """pytest run on a copy of a book, with the book's conf.py and these lines."""
    root = book.parent
    conf = book_conf_with(root / "conf", *conf_lines)
    (root / "pytest.ini").write_text(f"[pytest]\ncoursebook_book = {book.name}\n"
                                     f"coursebook_conf = {conf}\n")
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "-c", str(root / "pytest.ini"), "--rootdir", str(root), str(book),
                           *(["--collect-only"] if collect_only else [])],
                          capture_output=True, text=True, cwd=root)


def test_an_execution_package_not_installed_is_one_line(tiny_book):
    done = _pytest_book(tiny_book, "coursebook_execution_packages.append('no-such-package-here')",
                        collect_only=True)
    assert done.returncode != 0
    assert done.stdout.count("coursebook_execution_packages names 'no-such-package-here', "
                             "which this Python does not have: run `make venv`") >= 1, done.stdout
    assert not any(sign in done.stdout + done.stderr for sign in CRASH_SIGNS), done.stdout
