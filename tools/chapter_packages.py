#!/usr/bin/env python3
"""``make chapter-packages``: the packages a folder's chapters declare, one a line, or with
``--install`` installed into this environment, held to the book's pins (a build refuses a
chapter that needs one the environment lacks: coursebook/prepare/chapter_packages.py)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from book_environment import ROOT, use_book_environment

use_book_environment()

from coursebook.model.faults import BookError, shown_path
from coursebook.model.notebooks import (chapter_files, chapter_settings, top_matter,
                                        top_matter_line)


def install(chapters: dict[Path, list[str]], *pip_options: str) -> int:
    """Install each chapter's packages with pyproject.toml's pins as pip's constraints: unheld,
    d2l==1.0.3 took numpy 2.4.6 down to 1.23.5 and matplotlib 3.11.2 to 3.7.2 under every
    chapter. A chapter whose packages do not fit them is named at its declaration."""
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as constraints:
        constraints.write("\n".join(pins) + "\n")
        constraints.flush()
        for path, packages in chapters.items():
            # Not --quiet: pip then leaves out the lines that name the conflict.
            if subprocess.run([sys.executable, "-m", "pip", "install", "-c", constraints.name,
                               *pip_options, *packages]).returncode:
                # at the declaration, as the build's check names it
                line = top_matter_line(path.read_text(encoding="utf8"), "coursebook", "packages")
                print(f"{shown_path(path)}:{line}: pip could not install {', '.join(packages)} "
                      "(its lines above say why: a pin of the book's it would move, "
                      "pyproject.toml's dependencies, or a name it cannot find): change the "
                      "declaration (`coursebook: {packages}`), or take out the cells that import "
                      "them; then `make chapter-packages`", file=sys.stderr)
                return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description="The packages a folder's chapters declare, "
                                     "one a line.")
    parser.add_argument("book", type=Path, help="the folder of the chapters")
    parser.add_argument("--install", action="store_true",
                        help="install them, held to the book's pins, instead")
    args = parser.parse_args()
    try:
        chapters = {path: packages for path, text in chapter_files(args.book)
                    if (packages := chapter_settings(top_matter(text), path, text).packages)}
    except BookError as error:  # a top matter the build would refuse, as it says it
        print(error, file=sys.stderr)
        return 1
    if args.install:
        return install(chapters)
    packages = {package: None for declared in chapters.values() for package in declared}
    for package in packages:
        print(package)
    print(f"{len(packages)} package(s) declared by the chapters of {shown_path(args.book)}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
