#!/usr/bin/env python3
"""Take this build's outputs as the expected ones, then run each chapter whose expected
outputs changed a second time, so that an output that varies between runs (an unseeded
random number, a timing) is found before it is committed, not on a later cold build.

Both editions are built with ``coursebook_accept_outputs`` (``make accept-outputs`` runs
this after the exhibits' records). A chapter whose file under ``expected/`` changed leaves
the execution cache and both editions are built again, verifying: a cell that printed
something else the second time stops with the build's "varies between runs" message, which
offers a seed and a pattern (an output that holds the time it ran, which two runs of one
minute print alike, the accepting build itself refuses). Two runs that printed alike are no
proof where a cell draws random numbers before any seed (they may have drawn alike: QuantEcon's
functions.md drew 3 twice, P ~ 0.18): its literal entry is refused, with the seed to add,
before any second run.
Exit status 0: accepted, and every changed chapter printed the same twice, from no unseeded draw."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from book_environment import BUILD, ROOT, sphinx_command, use_book_environment

use_book_environment()

from import_chapter import SEEDS, unseeded_draws
from jupyter_cache import get_cache

from coursebook.model.cell_notes import cell_line
from coursebook.model.faults import shown_path
from coursebook.model.notebooks import CHAPTER_SUFFIXES, read_chapter
from coursebook.verify.expectations import (
    EDITIONS,
    code_digest,
    expectations_path,
    read_expectations,
)

ACCEPT = {"coursebook_accept_outputs": "1"}


def expected_files(book: Path) -> dict[str, str]:
    """This torch's expected outputs, each chapter's text by its page name (conf.py's
    coursebook_expected_dir)."""
    folder = expectations_path(book / "expected", metadata.version("torch"), "").parent
    return {path.relative_to(folder).with_suffix("").as_posix(): path.read_text(encoding="utf8")
            for path in sorted(folder.rglob("*.txt"))}


def build(book: Path, out: Path, cache: Path, edition: str, settings: dict[str, str]) -> bool:
    """One edition, as the Makefile builds it; True when it passed."""
    command = sphinx_command(book, out / edition / "html", out / edition / "doctrees",
                             instructor=edition == "instructor",
                             settings={"nb_execution_cache_path": str(cache), **settings})
    return subprocess.run(command, cwd=ROOT).returncode == 0


def drawn_alike(book: Path, chapters: list[str]) -> list[str]:
    """Each cell of ``chapters`` that draws random numbers before any seed, its output
    accepted as it is (not empty, not marked ``(varies)``), as a message at its line. Only the
    drawing cell: a draw printed by a later cell is not told (a limit, docs/faults.md)."""
    folder = expectations_path(book / "expected", metadata.version("torch"), "").parent
    told = []
    for name in chapters:
        expected = read_expectations(folder / f"{name}.txt")
        path = next(p for p in book.glob(f"{name}.*") if p.suffix in CHAPTER_SUFFIXES)
        for module, cell, line, call in unseeded_draws(read_chapter(path.read_text("utf8")).cells):
            if any(text and key.split(".")[0] == code_digest(cell.source)
                   and key not in expected.varying[edition] for edition in EDITIONS
                   for key, text in expected.by_edition[edition].items()):
                told.append(f"{shown_path(path)}:{cell_line(cell, line - 1)}: `{call}` draws "
                            "random numbers before any seed, so its output may hold a draw, "
                            "which two runs may print alike by chance: seed before it "
                            f"(`{SEEDS[module]}`), then run `make accept-outputs` again")
    return told


def take_back(book: Path, before: dict[str, str]) -> None:
    """What this accept wrote goes back: kept, the next accept would find it unchanged and
    skip the second run (d2l's `print(id(Z))` was so accepted) and the unseeded draws' check."""
    folder = expectations_path(book / "expected", metadata.version("torch"), "")
    taken = [name for name, text in expected_files(book).items() if before.get(name) != text]
    for name in taken:
        path = folder.parent / f"{name}.txt"
        if name in before:
            path.write_text(before[name], encoding="utf8")
        else:
            path.unlink()
    if taken:  # the builds said `wrote ...`: not so any more
        print(f"accept-outputs: nothing accepted: the expected outputs written above are taken "
              f"back ({', '.join(sorted(taken))})", file=sys.stderr)


def forget_runs(cache: Path, book: Path, docnames: set[str]) -> None:
    """Remove these chapters' records (each edition's) from the execution cache, whatever
    their source's format."""
    store = get_cache(str(cache))
    book = book.resolve()
    records = [r for r in store.list_cache_records()
               if Path(r.uri).is_relative_to(book)
               and Path(r.uri).relative_to(book).with_suffix("").as_posix() in docnames]
    for record in records:
        store.remove_cache(record.pk)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--book", type=Path, default=ROOT / "book", help="the book's sources")
    parser.add_argument("--out", type=Path, default=BUILD,
                        help="where the editions are built (default: _build)")
    parser.add_argument("--cache", type=Path, default=BUILD / ".jupyter_cache",
                        help="the execution cache (default: conf.py's, _build/.jupyter_cache)")
    args = parser.parse_args(argv)
    before = expected_files(args.book)
    for edition in EDITIONS:  # one after the other: both write the same files
        if not build(args.book, args.out, args.cache, edition, ACCEPT):
            take_back(args.book, before)
            return 1
    changed = [name for name, text in expected_files(args.book).items()
               if before.get(name) != text]
    if not changed:
        print("accept-outputs: no expected outputs changed")
        return 0
    names = ", ".join(changed)
    # Before the second run, whose outcome proves nothing of a draw: were this checked only
    # after it passed, a chapter that varied there kept the others' entries, which the next
    # accept found unchanged and never checked (makemore beside mrdbourke's fundamentals).
    if drawn := drawn_alike(args.book, changed):
        print("\n".join(drawn), file=sys.stderr)
        take_back(args.book, before)
        return 1
    forget_runs(args.cache, args.book, set(changed))
    print(f"accept-outputs: {names} changed; running {'it' if len(changed) == 1 else 'them'} "
          "a second time to find outputs that vary between runs")
    if all([build(args.book, args.out, args.cache, edition, {}) for edition in EDITIONS]):
        print(f"accept-outputs: {names}: the second run printed the same; review the diff "
              f"of {args.book / 'expected'} and commit it")
        return 0
    print(f"accept-outputs: a second run of {names} printed other outputs in the cells the "
          "messages above name: seed what varies or mark its entry `(varies)` as they say, "
          "then run `make accept-outputs` again", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
