#!/usr/bin/env python3
"""Start a chapter: book/NAME.md from the chapter skeleton, or from a lesson written elsewhere
(--from: a notebook, a sphinx-gallery or jupytext script, a MyST lecture), listed in the table
of contents and the home page's reading order.

The skeleton (tools/chapter-template.md) has the top matter every chapter needs, the
hidden first cell that keeps errors short, a first code cell, and a short check (its own
data in its own cell, so the first cell can be replaced) whose answer (a markdown cell and
a code cell tagged `answer`) only the instructor edition shows. A lesson brought in with
--from is put in the same form (tools/import_chapter.py says how), and what changed and what
is left to do are printed. NAME joins book/index.md's table of contents after --after, by
default after the last chapter that runs here (a recorded chapter, one that needs a TPU say,
stays last), and the numbered reading order on the same page at the same place. An existing
chapter is never overwritten. The commands that follow are printed: preview, accept the
outputs, build the instructor edition, run the fast tests (docs/first-chapter.md).
"""

from __future__ import annotations

import argparse
import re
import string
import sys
from dataclasses import dataclass
from pathlib import Path

from book_environment import use_book_environment

use_book_environment()

from markdown_it import MarkdownIt

from coursebook.model.faults import BookError, shown_path
from coursebook.model.notebooks import chapter_settings, is_chapter_source, top_matter
from import_chapter import (Imported, NotALesson, book_form, book_names,
                            read_lesson, with_answers)
from import_chapter import chapter_text as imported_text

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "tools" / "chapter-template.md"
NAME = re.compile(r"[a-z][a-z0-9-]*")
_TOCTREE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{toctree\}[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
                      re.M | re.S)

NEXT = """\
Next, from the repository's folder:
  make accept-outputs           # runs it, takes its outputs as expected (both editions):
                                # again after each code edit
  make preview                  # http://127.0.0.1:8000/{name}.html, rebuilt on each save
                                # of book/{name}.md
  make instructor               # the instructor edition: the answers, boxed
  make test-fast                # the fast tests
  git add book/{name}.md {images}book/index.md book/expected/ && git commit
Colab: the chapter stays "not yet verified on Colab" until someone with the replica runs
`make accept-outputs-runtime RUNTIME=colab-cpu` (docs/authoring.md, "Runtimes")."""


class Refused(Exception):
    """Nothing was written: one line says why."""


def chapter_text(name: str, title: str, template: Path = TEMPLATE) -> str:
    return string.Template(template.read_text(encoding="utf8")).substitute(name=name, title=title)


def _entries(body_lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(body_lines)
            if line.strip() and not line.lstrip().startswith(":")]


def _chapter(book: Path, entry: str) -> str | None:
    """The chapter file's text when a toctree entry names a chapter, else None."""
    path = book / f"{entry}.md"
    text = path.read_text(encoding="utf8") if path.is_file() else ""
    return text if is_chapter_source(text) else None


def with_chapter_listed(index: str, name: str, book: Path,
                        after: str | None = None) -> tuple[str, str | None]:
    """index.md with ``name`` in its table of contents after ``after``, by default after the
    last chapter that is not recorded (a recorded one runs on machines the build lacks, and
    comes last); and the chapter it now follows (None: first, or listed already)."""
    found = _TOCTREE.search(index)
    if found is None:
        raise Refused(f"{shown_path(book / 'index.md')} has no {{toctree}}: add `{name}` to its "
                      "table of contents by hand")
    lines = found["body"].splitlines(keepends=True)
    entries = _entries(lines)
    if any(lines[i].strip() == name for i in entries):
        return index, None
    if after is not None:
        places = [i for i in entries if lines[i].strip() == after]
        if not places:
            raise Refused(f"AFTER={after}: {shown_path(book / 'index.md')}'s table of contents "
                          "has no such entry (it lists "
                          f"{', '.join(lines[i].strip() for i in entries)})")
    else:
        texts = {i: _chapter(book, lines[i].strip()) for i in entries}
        chapters = [i for i in entries if texts[i] is not None]
        core = [i for i in chapters if chapter_settings(  # a fault: at its file and line
            top_matter(texts[i]), book / f"{lines[i].strip()}.md", texts[i]).recording is None]
        places = core or chapters or entries
    at = places[-1] + 1 if places else len(lines)
    lines.insert(at, f"{name}\n")
    follows = lines[at - 1].strip() if at else None
    return index[:found.start("body")] + "".join(lines) + index[found.end("body"):], follows


def with_reading_order(index: str, name: str, title: str, follows: str | None,
                       book: Path) -> str | None:
    """index.md with ``title`` in its reading order, the first numbered list, whose items go
    with the chapters of the table of contents one by one: after the item of ``follows``,
    the items after it numbered on. None when no such list is found."""
    body = _TOCTREE.search(index)["body"].splitlines()
    chapters = [body[i].strip() for i in _entries(body)
                if body[i].strip() != name and _chapter(book, body[i].strip()) is not None]
    tokens = MarkdownIt().parse(index)
    opened = next((t for t in tokens if t.type == "ordered_list_open" and t.level == 0), None)
    if opened is None:
        return None
    items = [t for t in tokens[tokens.index(opened):]
             if t.type == "list_item_open" and t.level == opened.level + 1]
    items = items[:next((n for n, t in enumerate(items) if t.map[0] >= opened.map[1]), len(items))]
    if len(items) != len(chapters):
        return None
    place = chapters.index(follows) + 1 if follows in chapters else 0
    lines = index.splitlines(keepends=True)
    start = int(opened.info or 1) if opened.info.isdigit() else 1
    for number, item in list(enumerate(items, start))[place:]:
        lines[item.map[0]] = re.sub(r"^(\s*)\d+", rf"\g<1>{number + 1}", lines[item.map[0]], 1)
    at = items[place].map[0] if place < len(items) else opened.map[1]
    lines.insert(at, f"{start + place}. *{title}*.\n")
    return "".join(lines)


def name_for(lesson: Path) -> str:
    """A chapter name made of a lesson's file name: ``02_Tensors.ipynb``: ``lesson-02-tensors``."""
    slug = re.sub(r"[^a-z0-9]+", "-", lesson.stem.lower()).strip("-")
    return slug if slug[:1].isalpha() else f"lesson-{slug}".rstrip("-")


@dataclass
class Written:
    """A chapter written and listed: where, after what, and, for a lesson brought in, what
    changed and what is left to do."""

    chapter: Path
    follows: str | None
    in_reading_order: bool
    imported: Imported | None = None
    listed_already: bool = False  # the contents named it before (a page it replaces)


def new_chapter(name: str, title: str, book: Path, after: str | None = None,
                lesson: Path | None = None, solutions: Path | None = None) -> Written:
    imported = None
    if not (book / "index.md").is_file():  # its table of contents takes the chapter
        raise Refused(f"--book {book}: no index.md there: give the book's sources (book/)")
    if solutions is not None and lesson is None:
        raise Refused(f"SOLUTIONS={solutions} without FROM=: give the lab it solves "
                      f"(make chapter FROM=lab.ipynb SOLUTIONS={solutions})")
    if lesson is not None:
        if not lesson.is_file():
            raise Refused(f"FROM={lesson}: no such file")
        if solutions is not None and not solutions.is_file():
            raise Refused(f"SOLUTIONS={solutions}: no such file")
        name = name or name_for(lesson)
    if not NAME.fullmatch(name):
        raise Refused(f"NAME {name!r} is not a chapter name: lower-case letters, digits and "
                      "hyphens, starting with a letter (make chapter NAME=pt02 TITLE=\"...\")")
    if lesson is not None:
        try:
            notebook, source_format = read_lesson(lesson)
            added, stubs = None, []
            if solutions is not None:
                notebook, added, stubs = with_answers(notebook, lesson, solutions)
            imported = book_form(notebook, name, source_format, title.strip() or None,
                                 lesson.parent, book_names(book))
            imported.changed += [added] if added else []
            imported.to_do += stubs
        except NotALesson as error:
            raise Refused(str(error)) from None
        title = imported.title
    if not title.strip():
        raise Refused("TITLE is empty: make chapter NAME=... TITLE=\"PT02: Training loops\"")
    chapter = book / f"{name}.md"
    if chapter.exists():
        raise Refused(f"{shown_path(chapter)} exists: nothing written "
                      "(edit it, or choose another NAME)")
    for path, content in (imported.files.items() if imported is not None else ()):
        if (book / path).is_file() and (book / path).read_bytes() != content:
            raise Refused(f"{shown_path(book / path)} exists, and the lesson's {path} differs: "
                          "nothing written (rename one, and the cells' name for it)")
    index = book / "index.md"
    old = index.read_text(encoding="utf8")
    listed, follows = with_chapter_listed(old, name, book, after)
    already = listed == old  # listed before, as the page the chapter replaces: left there
    ordered = None if already else with_reading_order(listed, name, title.strip(), follows, book)
    text = (imported_text(imported) if imported is not None
            else chapter_text(name, title.strip()))
    chapter.write_text(text, encoding="utf8")
    for path, content in (imported.files.items() if imported is not None else ()):
        (book / path).parent.mkdir(parents=True, exist_ok=True)
        (book / path).write_bytes(content)
    index.write_text(ordered or listed, encoding="utf8")
    return Written(chapter, follows, ordered is not None, imported, already)


def report(written: Written, book: Path, lesson: Path | None) -> str:
    """What `make chapter` did, what the author must still do, and the commands that follow."""
    name, index = written.chapter.stem, shown_path(book / "index.md")
    where = f"after {written.follows}" if written.follows else "first"
    lines = [f"chapter: wrote {shown_path(written.chapter)}"
             + (f" from {lesson} ({written.imported.source_format})" if written.imported else "")
             + (f"; {name} was in {index}'s table of contents already, left where it is"
                if written.listed_already else
                f"; listed {name} {where} in {index}'s table of contents"
                + (" and reading order" if written.in_reading_order else ""))]
    to_do = []
    others = sorted(path for path in book.glob(f"{name}.*") if path != written.chapter)
    if others:  # the lesson itself, among the book's pages: two files for one page
        to_do.append(f"delete {', '.join(str(shown_path(p)) for p in others)}: "
                     f"{shown_path(written.chapter)} replaces it (Sphinx would find two files "
                     f"for the page {name})")
    if written.listed_already:
        to_do.append(f"check {name}'s place in {index}'s reading order")
    elif written.in_reading_order:
        to_do.append(f"say in {index}'s reading order what the chapter teaches (its item "
                     "names only the title)")
    else:
        to_do.append(f"add the chapter to {index}'s reading order (no numbered list there "
                     "goes with the table of contents)")
    if written.imported is not None:
        lines += ["Changed:", *(f"  - {change}" for change in written.imported.changed)]
        to_do += written.imported.to_do
        to_do.append("tag `raises-exception` each cell whose error is the lesson: the build "
                     "names every cell that raised")
    copied = written.imported.files if written.imported else ()
    folders = dict.fromkeys(f"book/{path.split('/')[0]}/" if "/" in path else f"book/{path}"
                            for path in copied)  # a folder's files once, a file by its name
    lines += ["Still to do:", *(f"  - {item}" for item in to_do),
              NEXT.format(name=name, images="".join(f"{folder} " for folder in folders))]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog="\n".join(__doc__.splitlines()[2:]),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", nargs="?", default="",
                        help="the chapter's file name without .md, e.g. pt02 (with --from: "
                             "made of the lesson's file name if not given)")
    parser.add_argument("title", nargs="?", default="",
                        help='its title, e.g. "PT02: Training loops" (with --from: the '
                             "lesson's first heading if not given)")
    parser.add_argument("--from", dest="lesson", type=Path,
                        help="a lesson to bring in: .ipynb, sphinx-gallery or jupytext .py, "
                             "MyST .md")
    parser.add_argument("--solutions", type=Path,
                        help="the lesson's solutions notebook: each code cell that differs "
                             "from the lesson's comes in as an answer after it")
    parser.add_argument("--after", help="the table of contents entry it follows (default: "
                                        "the last chapter that is not recorded)")
    parser.add_argument("--book", type=Path, default=ROOT / "book",
                        help="the book's sources (default: book/)")
    args = parser.parse_args(argv)
    try:
        written = new_chapter(args.name, args.title, args.book, args.after or None, args.lesson,
                              args.solutions)
    except (Refused, BookError) as refused:
        print(f"chapter: {refused}", file=sys.stderr)
        return 1
    print(report(written, args.book, args.lesson))
    return 0


if __name__ == "__main__":
    sys.exit(main())
