#!/usr/bin/env python3
"""Execute the book's chapters as N shards (one per machine), then merge their caches.

  shards.py execute I/N   shard I of N executes its chapters (both editions) into its own
                          cache, _build/shards/shard-I/.jupyter_cache (CI: one job per
                          shard, uploading that folder)
  shards.py merge N       checks the N shards against the book as it builds now, then
                          merges their caches into the build's (_build/.jupyter_cache):
                          `make html instructor` then executes nothing

Chapters are dealt by the execution times the build's cache recorded (so shards finish
together), by count when it has none. Each problem ends the command with one message.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from book_environment import BUILD, ROOT, use_book_environment

use_book_environment()

from coursebook.execute.fill_cache import (  # noqa: E402
    BookReadError,
    ExecutionFailed,
    Shard,
    ShardError,
    book_reads,
    chapters_to_execute,
    execute_shard,
    merge_shards,
)
from coursebook.model.faults import shown_path  # noqa: E402
from coursebook.prepare.editions import Edition  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="\n".join(
        __doc__.splitlines()[2:]), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--book", type=Path, default=ROOT / "book", help="the chapters (default: book/)")
    parser.add_argument("--shards-dir", type=Path, default=BUILD / "shards",
                        help="the shards' folders (default: _build/shards/)")
    commands = parser.add_subparsers(dest="command", required=True)
    execute = commands.add_parser("execute", help="execute shard I of N (I/N)")
    execute.add_argument("shard", help="I/N, say 2/3")
    execute.add_argument("--reuse", type=Path, default=None, metavar="CACHE",
                         help="take the notebooks this cache holds instead of executing them "
                              "(make execute: the build's cache)")
    execute.add_argument("--history", type=Path, default=None,
                         help="the cache whose recorded execution times deal the chapters "
                              "(default: the build's, conf.py's _build/.jupyter_cache)")
    merge = commands.add_parser("merge", help="merge the caches of N shards")
    merge.add_argument("count", type=int, help="N, the number of shards")
    merge.add_argument("--into", type=Path, default=None,
                       help="the cache to merge into (default: the build's, _build/.jupyter_cache)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        shard = Shard.parse(args.shard) if args.command == "execute" else None
        reads = book_reads(args.book, ROOT)  # what a build of each edition executes
        book = reads[Edition.STUDENT].book
        chapters = chapters_to_execute(reads)
        cache = (args.history if shard else args.into) or Path(reads[Edition.STUDENT].cache_path)
        if shard:
            seconds = execute_shard(chapters, book.execution_versions, shard, args.shards_dir,
                                    cache, args.reuse)
            print(f"shard {shard}: {len(seconds)} chapters executed into "
                  f"{shown_path(shard.cache(args.shards_dir))} in "
                  f"{time.perf_counter() - started:.1f} s")
        else:
            merged = merge_shards(chapters, book.torch, args.count, args.shards_dir, cache)
            print(f"merged {merged} notebooks of {args.count} shards into {shown_path(cache)} "
                  f"in {time.perf_counter() - started:.1f} s")
    except (ShardError, ExecutionFailed, BookReadError) as error:
        print(f"shards: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
