"""List the runs of words the book's prose shares with the course material.

Reads every page under book/ and the prose fields of every exhibit and wing, and prints
each run of --words or more consecutive words that also occurs in a seed under --seeds
(code, headings, math and error messages are exempt). Exits 1 when it finds one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))

from book_environment import EXHIBITS_DIR, MACHINE_KINDS_FILE

from coursebook.audit.own_words import SHARED_RUN, book_overlaps
from coursebook.model.machine_kinds import load_machine_kinds
from coursebook.museum.model import load_museum


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=Path, default=ROOT.parent / "shared" / "seeds",
                        help="folder of the course material, *.txt (default: ../shared/seeds)")
    parser.add_argument("--words", type=int, default=SHARED_RUN,
                        help=f"shortest run reported (default: {SHARED_RUN}, the test's limit)")
    args = parser.parse_args(argv)
    if not args.seeds.is_dir():
        sys.exit(f"prose_overlap: {args.seeds} is not a folder; pass --seeds DIR")
    found = book_overlaps(ROOT, ROOT / "book",
                          load_museum(EXHIBITS_DIR, load_machine_kinds(MACHINE_KINDS_FILE)),
                          args.seeds, args.words)
    for overlap in found:
        print(overlap)
    print(f"prose_overlap: {len(found)} run(s) of {args.words}+ words shared with {args.seeds}",
          file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
