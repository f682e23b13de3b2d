#!/usr/bin/env python3
"""Start a chapter: book/NAME.md from the chapter skeleton, listed in the table of contents.

The skeleton (tools/chapter-template.md) has the top matter every chapter needs, the
hidden first cell that keeps errors short, a first code cell, and a short check (its own
data in its own cell, so the first cell can be replaced) whose answer (a markdown cell and
a code cell tagged `answer`) only the instructor edition shows. NAME joins book/index.md's table of contents after the last chapter. An existing
chapter is never overwritten. The commands that follow are printed: preview, accept the
outputs, build the instructor edition, run the fast tests (docs/first-chapter.md).
"""

from __future__ import annotations

import argparse
import re
import string
import sys
from pathlib import Path

from book_environment import use_book_environment

use_book_environment()

from coursebook.model.faults import shown_path  # noqa: E402
from coursebook.model.notebooks import is_chapter_source  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "tools" / "chapter-template.md"
NAME = re.compile(r"[a-z][a-z0-9-]*")
_TOCTREE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{toctree\}[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
                      re.M | re.S)

NEXT = """\
Next, from the repository's folder:
  make accept-outputs           # runs it, takes its outputs as expected (both editions): again after each code edit
  make preview                  # http://127.0.0.1:8000/{name}.html, rebuilt on each save of book/{name}.md
  make instructor               # the instructor edition: the check's answer, boxed
  make test-fast                # the fast tests
  git add book/{name}.md book/index.md book/expected/ && git commit
Colab: the chapter stays "not yet verified on Colab" until someone with the replica runs
`make accept-outputs-runtime RUNTIME=colab-cpu` (docs/authoring.md, "Runtimes")."""


class Refused(Exception):
    """Nothing was written: one line says why."""


def chapter_text(name: str, title: str, template: Path = TEMPLATE) -> str:
    return string.Template(template.read_text(encoding="utf8")).substitute(name=name, title=title)


def with_chapter_listed(index: str, name: str, book: Path) -> str:
    """index.md with ``name`` in its table of contents, after the last chapter listed."""
    found = _TOCTREE.search(index)
    if found is None:
        raise Refused(f"{shown_path(book / 'index.md')} has no {{toctree}}: add `{name}` to its table of "
                      "contents by hand")
    lines = found["body"].splitlines(keepends=True)
    entries = [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith(":")]
    if any(lines[i].strip() == name for i in entries):
        return index
    chapters = [i for i in entries if (book / f"{lines[i].strip()}.md").is_file()
                and is_chapter_source((book / f"{lines[i].strip()}.md").read_text(encoding="utf8"))]
    at = (chapters or entries or [len(lines) - 1])[-1] + 1
    lines.insert(at, f"{name}\n")
    return index[:found.start("body")] + "".join(lines) + index[found.end("body"):]


def new_chapter(name: str, title: str, book: Path) -> Path:
    if not NAME.fullmatch(name):
        raise Refused(f"NAME {name!r} is not a chapter name: lower-case letters, digits and "
                      "hyphens, starting with a letter (make chapter NAME=pt02 TITLE=\"...\")")
    if not title.strip():
        raise Refused("TITLE is empty: make chapter NAME=... TITLE=\"PT02: Training loops\"")
    chapter = book / f"{name}.md"
    if chapter.exists():
        raise Refused(f"{shown_path(chapter)} exists: nothing written (edit it, or choose another NAME)")
    index = book / "index.md"
    listed = with_chapter_listed(index.read_text(encoding="utf8"), name, book)
    chapter.write_text(chapter_text(name, title.strip()), encoding="utf8")
    index.write_text(listed, encoding="utf8")
    return chapter


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog="\n".join(__doc__.splitlines()[2:]),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", help="the chapter's file name without .md, e.g. pt02")
    parser.add_argument("title", help='its title, e.g. "PT02: Training loops"')
    parser.add_argument("--book", type=Path, default=ROOT / "book",
                        help="the book's sources (default: book/)")
    args = parser.parse_args(argv)
    try:
        chapter = new_chapter(args.name, args.title, args.book)
    except Refused as refused:
        print(f"chapter: {refused}", file=sys.stderr)
        return 1
    print(f"chapter: wrote {shown_path(chapter)} and listed {args.name} in "
          f"{shown_path(args.book / 'index.md')}'s table of contents")
    print(NEXT.format(name=args.name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
