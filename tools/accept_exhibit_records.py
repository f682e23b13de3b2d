#!/usr/bin/env python3
"""Record the error each CPU exhibit raises on this machine's torch, for the book to check.

Runs every exhibit's failing code (those that run in every build: runs_on the stand-in kind),
and adds a record for the running torch version to its file under exhibits/: exception type
and message (addresses and temporary paths normalised), where and when. The museum's own
records are never changed. An existing record for this torch that no longer matches is
reported, and replaced only with --replace. Review the diff of exhibits/ before committing it.
"""

from __future__ import annotations

import argparse
import platform
import sys
from pathlib import Path

from book_environment import EXHIBITS_DIR, MACHINE_KINDS_FILE, use_book_environment

use_book_environment()

from coursebook.model import provenance, versions
from coursebook.model.machine_kinds import load_machine_kinds
from coursebook.model.outputs import normalise
from coursebook.museum.model import ErrorRecord, Exhibit, ExhibitError, load_museum, write_records

ROOT = Path(__file__).resolve().parent.parent


def raised_by(exhibit: Exhibit) -> tuple[str, str] | None:
    """Run the failing code here: the (type, normalised message) it raises, or None."""
    try:
        exec(compile(exhibit.failing_code, str(exhibit.path), "exec"), {"__name__": "exhibit"})
    except Exception as error:  # the exhibit's error is the point
        return type(error).__name__, normalise(str(error))
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exhibits", type=Path, default=EXHIBITS_DIR,
                        help="the exhibits folder (default: exhibits/)")
    parser.add_argument("--replace", action="store_true",
                        help="replace a record for this torch that no longer matches")
    args = parser.parse_args(argv)
    try:
        museum = load_museum(args.exhibits, load_machine_kinds(MACHINE_KINDS_FILE))
    except ExhibitError as error:
        print(f"accept_exhibit_records: {error}", file=sys.stderr)
        return 2
    import torch  # after the arguments and the museum: --help or a wrong folder needs none (~3 s)

    release = versions.release(torch.__version__)
    where = f"{platform.system()} {platform.machine()}, CPU (torch {torch.__version__})"
    today = provenance.today()
    problems = 0
    for wing in museum.values():
        for exhibit in wing.exhibits:
            if not exhibit.runs_in_every_build:
                continue
            raised = raised_by(exhibit)
            if raised is None:
                print(f"{exhibit.key}: the failing code did not raise; fix the exhibit first")
                problems += 1
                continue
            new = ErrorRecord(torch=release, source="build", where=where, date=today,
                         type=raised[0], message=raised[1])
            old = exhibit.record_for(release)
            if old is not None and (old.type, old.message) == raised:
                print(f"{exhibit.key}: unchanged for torch {release}")
                continue
            if old is not None and (old.source == "museum" or not args.replace):
                print(f"{exhibit.key}: torch {release} now raises\n    {raised[0]}: {raised[1]}\n"
                      f"  but its record says\n    {old.type}: {old.message}\n"
                      "  (rerun with --replace to take the new text)")
                problems += 1
                continue
            records = [r for r in exhibit.records if r is not old] + [new]
            write_records(exhibit, records)
            print(f"{exhibit.key}: recorded for torch {release}: {raised[0]}: {raised[1]}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
