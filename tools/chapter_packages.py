#!/usr/bin/env python3
"""``make chapter-packages``: the packages a folder's chapters declare, one a line (which the
Makefile installs; a build refuses a chapter that needs one the environment lacks:
coursebook/prepare/chapter_packages.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from book_environment import use_book_environment

use_book_environment()

from coursebook.model.faults import shown_path  # noqa: E402
from coursebook.model.notebooks import chapter_files, top_matter  # noqa: E402
from coursebook.prepare.chapter_packages import declared_packages  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description="The packages a folder's chapters declare, "
                                     "one a line.")
    parser.add_argument("book", type=Path, help="the folder of the chapters")
    book = parser.parse_args().book
    packages = {package: None for _, text in chapter_files(book)
                for package in declared_packages(top_matter(text))}
    for package in packages:
        print(package)
    print(f"{len(packages)} package(s) declared by the chapters of {shown_path(book)}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
