#!/usr/bin/env python3
"""Prove that a student build of the book holds no answer anywhere.

The answers are the chapters' cells tagged `answer`; see coursebook.audit.answer_leaks for how
they are recognised in pages, sources, notebooks and the search index. It then lists each
factual sentence of the chapters and exhibits that neither a claim's check nor a source holds
(coursebook.claims.audit), for the author to back or to leave as it is.
Exit status: 0 when the build is clean, 1 when an answer leaked, 2 on a usage error or a
fault of the sources (named at its line).
"""

import argparse
import sys
from pathlib import Path

from book_environment import MACHINE_KINDS_FILE, use_book_environment

use_book_environment()

from coursebook.audit.answer_leaks import audit_build, chapter_fingerprints
from coursebook.claims.audit import book_unbacked
from coursebook.model.faults import BookError
from coursebook.model.machine_kinds import load_machine_kinds
from coursebook.museum.model import load_museum

ROOT = Path(__file__).resolve().parent.parent
# What `make audit`'s build writes afresh (the Makefile clears them first). Anything else in
# the build folder (PDFs, LaTeX) an earlier build left: audited by the build that made it
# (tools/build_pdf.py), never again here (a removed chapter's against today's answers).
MADE = ("html", "jupyter_execute")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", nargs="?", type=Path, default=ROOT / "_build" / "student",
                        help="the student build folder to search (default: _build/student)")
    parser.add_argument("--book", type=Path, default=ROOT / "book",
                        help="the chapter sources that define the answers (default: book/)")
    parser.add_argument("--exhibits", type=Path, default=ROOT / "exhibits",
                        help="the exhibits, student-visible text (default: exhibits/)")
    args = parser.parse_args(argv)
    if not args.build.is_dir():
        print(f"audit: no build at {args.build}; run `make html` first.", file=sys.stderr)
        return 2
    try:
        fingerprints = chapter_fingerprints(args.book, args.exhibits)
        if not fingerprints.runs:
            print(f"audit: no answer cells found under {args.book}; nothing to look for.",
                  file=sys.stderr)
            return 2
        # Answer passages in any text, and what the students' answer checks hold.
        made = [args.build / name for name in MADE if (args.build / name).is_dir()]
        leaks = [leak for folder in made for leak in audit_build(folder, fingerprints)]
        for leak in leaks:
            print(f"LEAK {leak}")
        print(f"audit: {len(leaks)} leak(s) in {args.build} "
              f"({len(fingerprints.runs)} answer passages looked for, and the answer checks)")
        if left := sorted(p.name for p in args.build.iterdir()
                          if p.name not in MADE and not p.name.startswith("doctrees")):
            print(f"audit: not read: {', '.join(left)} in {args.build} (earlier builds' files: "
                  "`make pdf` and `make handouts` audit the PDFs they make)")
        museum = load_museum(args.exhibits, load_machine_kinds(MACHINE_KINDS_FILE))
        unbacked = book_unbacked(args.book, museum)
        for sentence in unbacked:
            print(f"NEITHER CHECKED NOR CITED {sentence}")
        print(f"audit: {len(unbacked)} factual sentence(s) neither checked nor cited, listed above "
              "(back each with a claim cell or a source, or leave it: docs/authoring.md, Claims)")
        return 1 if leaks else 0
    except BookError as error:  # a fault of the sources: one line at its place, as a build says
        print(f"audit: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
