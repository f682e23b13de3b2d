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
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from book_environment import BUILD, ROOT, use_book_environment

use_book_environment()

from coursebook.execute.fill_cache import (
    BookRead,
    BookReadError,
    ExecutionFailed,
    Run,
    execute_into_cache,
    read_book,
)
from coursebook.execute.shared_cache import (
    cache_key,
    cache_run,
    cached_record,
    create_cache,
    created,
    open_cache,
)
from coursebook.model.faults import shown_path
from coursebook.prepare.editions import Edition

MANIFEST = "shard.json"


class ShardError(Exception):
    """A shard that cannot be executed or merged; the message says why and what to run."""


@dataclass(frozen=True)
class Shard:
    index: int  # from 1
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        try:
            index, count = (int(part) for part in text.split("/"))
        except ValueError:
            index = count = 0
        if not 1 <= index <= count:
            raise ShardError(f"a shard is I/N with 1 <= I <= N (say SHARD=2/3), not {text!r}")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def folder(self, root: Path) -> Path:
        return root / f"shard-{self.index}"

    def cache(self, root: Path) -> Path:
        return self.folder(root) / ".jupyter_cache"

    @property
    def command(self) -> str:
        return f"make execute SHARD={self}"


@dataclass
class Chapter:
    """A chapter that executes: its distinct notebooks (editions sharing code run once)."""

    name: str
    path: Path
    notebooks: dict[str, Run] = field(default_factory=dict)  # by cache key


def book_reads(book_dir: Path, conf_dir: Path) -> dict[Edition, BookRead]:
    """Sphinx's read of the book for each edition; a page that does not prepare stops it."""
    reads = {edition: read_book(book_dir, conf_dir, edition) for edition in Edition}
    for read in reads.values():
        for message in read.failed.values():
            raise ShardError(message)
    return reads


def chapters_to_execute(reads: dict[Edition, BookRead]) -> list[Chapter]:
    chapters: dict[Path, Chapter] = {}
    for read in reads.values():
        for path, run in read.runs.items():
            chapter = chapters.setdefault(path, Chapter(path.stem, path))
            chapter.notebooks.setdefault(cache_key(read.cache_path, run.notebook), run)
    return sorted(chapters.values(), key=lambda chapter: chapter.name)


def deal(chapters: list[Chapter], count: int, seconds: dict[str, float]) -> dict[str, int]:
    """Each chapter's shard (from 1): longest first to the least loaded; by count when
    nothing was recorded (a chapter not recorded weighs the recorded mean)."""
    known = [seconds[c.name] for c in chapters if c.name in seconds]
    mean = statistics.mean(known) if known else 1.0
    weight = {c.name: seconds.get(c.name, mean) * len(c.notebooks) if known else 1.0
              for c in chapters}
    load = [0.0] * count
    shards = {}
    for chapter in sorted(chapters, key=lambda c: (-weight[c.name], c.name)):
        index = min(range(count), key=lambda i: (load[i], i))
        load[index] += weight[chapter.name]
        shards[chapter.name] = index + 1
    return shards


def _copy_notebook(source, record, target: Path) -> None:
    """A cached notebook and its data, from one cache to another (the book caches no artifacts)."""
    cache_run(target, source.get_cache_bundle(record.pk).nb, record.uri, dict(record.data or {}))


def execute_shard(chapters: list[Chapter], versions: dict[str, str], shard: Shard, root: Path,
                  history: Path, reuse: Path | None = None) -> dict[str, float]:
    """Execute the shard's chapters into its cache (dealt by the times ``history``, a cache,
    recorded), taking what ``reuse`` holds; write its manifest. The seconds per chapter."""
    runs: dict[str, list[float]] = {}  # each chapter's recorded runs
    if created(history):
        for record in open_cache(history).list_cache_records():
            if (record.data or {}).get("execution_seconds") is not None:
                runs.setdefault(Path(record.uri).stem, []).append(
                    float(record.data["execution_seconds"]))
    shards = deal(chapters, shard.count, {name: statistics.mean(t) for name, t in runs.items()})
    mine = [c for c in chapters if shards[c.name] == shard.index]
    cache = shard.cache(root)
    reusable = reuse is not None and created(reuse)
    seconds: dict[str, float] = {}
    for chapter in mine:
        seconds[chapter.name] = 0.0
        for run in chapter.notebooks.values():
            record = cached_record(reuse, run.notebook) if reusable else None
            if record is None:
                seconds[chapter.name] += execute_into_cache(cache, run)[1] or 0.0
            else:
                create_cache(cache)
                _copy_notebook(open_cache(reuse), record, cache)
        print(f"shard {shard}: {chapter.name}: {len(chapter.notebooks)} notebooks, "
              f"{seconds[chapter.name]:.1f} s executing")
    create_cache(cache)  # a shard dealt no chapter still hands over an (empty) cache
    manifest = {"shard": str(shard), "versions": versions,
                "chapters": {c.name: sorted(c.notebooks) for c in mine}, "seconds": seconds}
    (shard.folder(root) / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return seconds


def merge_shards(chapters: list[Chapter], torch: str, count: int, root: Path,
                 target: Path) -> int:
    """Check the shards' caches against the book's ``chapters`` as built now (with this
    ``torch``), then merge them into ``target``. The number of notebooks merged."""
    shards = [Shard(index, count) for index in range(1, count + 1)]
    for shard in shards:
        cache = shard.cache(root)
        if not (shard.folder(root) / MANIFEST).is_file() or not created(cache):
            raise ShardError(f"shard {shard}'s cache is missing: {shown_path(cache)} (with "
                             f"{MANIFEST} beside it) should hold what it executed. Run "
                             f"`{shard.command}` (in CI: its execute job uploads it).")
    manifests = {shard: json.loads((shard.folder(root) / MANIFEST).read_text()) for shard in shards}
    for shard, manifest in manifests.items():
        if manifest["shard"] != str(shard):
            raise ShardError(f"{shown_path(shard.folder(root) / MANIFEST)} is shard "
                             f"{manifest['shard']}'s, not shard {shard}'s: the shards were dealt "
                             f"for another count. Run `{shard.command}`.")
        if manifest["versions"].get("torch") != torch:
            raise ShardError(f"shard {shard} executed its chapters with torch "
                             f"{manifest['versions'].get('torch')}; this build has torch {torch}, "
                             f"so their outputs cannot be verified here. Run `{shard.command}` "
                             f"with torch {torch} (or build with the shards' torch).")
    owner: dict[str, Shard] = {}
    for shard, manifest in manifests.items():
        for name in manifest["chapters"]:
            if name in owner:
                raise ShardError(f"two shards executed chapter {name}: shard {owner[name]} and "
                                 f"shard {shard}. Each must be run for the same count from the "
                                 f"same record: run `{owner[name].command}` and `{shard.command}` "
                                 "again.")
            owner[name] = shard
    caches = {shard: open_cache(shard.cache(root)) for shard in shards}
    records = {shard: {r.hashkey: r for r in cache.list_cache_records()}
               for shard, cache in caches.items()}
    for chapter in chapters:
        shard = owner.get(chapter.name)
        if shard is None:
            raise ShardError(f"no shard executed chapter {chapter.name} "
                             f"({shown_path(chapter.path)}): the shards were dealt for other "
                             f"chapters. Run every `make execute SHARD=I/{count}` again.")
        if any(key not in records[shard] for key in chapter.notebooks):
            raise ShardError(f"shard {shard} executed another version of chapter {chapter.name}: "
                             f"{shown_path(chapter.path)} as the build prepares it now is not in "
                             f"its cache (edited since, or another exhibit or extension). "
                             f"Run `{shard.command}` again.")
    create_cache(target)
    for chapter in chapters:
        for key in chapter.notebooks:
            _copy_notebook(caches[owner[chapter.name]], records[owner[chapter.name]][key], target)
    return sum(len(chapter.notebooks) for chapter in chapters)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="\n".join(
        __doc__.splitlines()[2:]), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--book", type=Path, default=ROOT / "book",
                        help="the chapters (default: book/)")
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
