"""Both editions build at once from an empty cache, sharing it (`make editions`).

The tiny book gets a second chapter with no answers: both editions execute the very same
notebook. With the cache locks it executes once and both builds pass; its cell holds the
build that runs it until the other build is seen trying that notebook's lock, so the test
proves a collision avoided, not builds that happened not to meet. Without the locks, both
execute it and jupyter-cache refuses the second copy ("hashkey already exists") or runs it
twice. There the chapter's cell is a barrier: it waits until both builds' kernels are in
it. Either way the two builds overlap on any machine, however loaded. Each build is
forked from the worker's build server (a process of its own, as each `make` build is: the
subject is the cache they share, not how a build starts).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from conftest import CHAPTER_TOP, both_editions_at_once

SHARED_CHAPTER = CHAPTER_TOP.format(extra="") + """
# A chapter both editions share

```{code-cell} ipython3
WAIT
print("shared")
```
"""
# With the locks, the build running the cell holds the notebook's lock, among the notebook
# locks a process of its kernel cannot take (a cold build runs its chapters at once, each
# under its lock): the cell waits until one of those is opened to be tried (inotify's IN_OPEN;
# filelock opens the file at each try), and notes it. The builds' only notebook in common
# is this one: a try is the other build's, at this chapter.
CONTENDED = """\
import ctypes, fcntl, os, re, select, struct, time
locks = os.path.join(LOCKS, "locks")
def held(name):
    descriptor = os.open(os.path.join(locks, name), os.O_RDONLY)  # flock needs no write
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)
taken = {name for name in os.listdir(locks) if re.fullmatch(r"[0-9a-f]{32}[.]lock", name)
         and held(name)}
assert taken, os.listdir(locks)
libc = ctypes.CDLL(None, use_errno=True)
watch = libc.inotify_init1(os.O_NONBLOCK)
assert libc.inotify_add_watch(watch, locks.encode(), 0x20) >= 0  # IN_OPEN
# Under the cell limit (300 s): a miss is told below.
tried, deadline = False, time.monotonic() + 240
while not tried and time.monotonic() < deadline:
    events = os.read(watch, 65536) if select.select([watch], [], [], 1)[0] else b""
    while events:
        size = struct.unpack_from("iIII", events)[3]
        tried |= events[16:16 + size].rstrip(b"\\0").decode() in taken
        events = events[16 + size:]
if tried:
    open(os.path.join(MARKS, "contended"), "w").close()"""
# Without them, both kernels are in the cell at once: each waits for the other to arrive.
BARRIER = """\
import os, time
arrived = os.path.join(MARKS, "arrived")
os.makedirs(arrived, exist_ok=True)
open(os.path.join(arrived, str(os.getpid())), "w").close()
deadline = time.monotonic() + 300
while len(os.listdir(arrived)) < 2 and time.monotonic() < deadline:
    time.sleep(0.05)"""
# The fixture's expectations do not cover the extra chapter; this test is about the cache.
SETTINGS = {"coursebook_verify_outputs": "0"}


@pytest.fixture
def marks():
    """Where both builds' kernels leave their marks: each runs in a folder of its own and may
    change nothing outside it but its temporary folder (each run's own), the home and /dev
    (kernel_forkserver.kept_outside): /dev/shm is the one they share."""
    folder = Path(tempfile.mkdtemp(dir="/dev/shm"))
    yield folder
    shutil.rmtree(folder)


def _with_shared_chapter(book: Path, wait: str, marks: Path) -> Path:
    # Read first (pages are read in name order): both builds reach it right after starting.
    (book / "a_shared.md").write_text(SHARED_CHAPTER.replace("WAIT", wait).replace(
        "MARKS", repr(str(marks))))
    index = book / "index.md"
    index.write_text(index.read_text().replace("chapter\n", "a_shared\nchapter\n"))
    return book


@pytest.mark.slow
def test_both_editions_at_once_share_one_cache(tiny_book, tmp_path, marks):
    wait = CONTENDED.replace("LOCKS", repr(str(tmp_path / "cache")))
    builds = both_editions_at_once(_with_shared_chapter(tiny_book, wait, marks), tmp_path,
                                   SETTINGS, forked=True)
    for edition, build in builds.items():
        assert build.returncode == 0, f"{edition} build failed:\n{build.log[-3000:]}"
    # The other build tried the shared chapter's lock while the cell held it.
    assert (marks / "contended").is_file(), _what_ran(builds)
    # Each edition's own tiny chapter, and the shared chapter once.
    assert sum(build.executed for build in builds.values()) == 3, _what_ran(builds)


def _what_ran(builds) -> str:
    """Each build's lines on runs and cache entries: a failure's message, as text (pytest
    cuts any other object short)."""
    return "\n".join(f"{edition}: {line}" for edition, build in builds.items()
                     for line in build.log.splitlines()
                     if "notebook" in line.lower() or "execution cache" in line)


@pytest.mark.slow
def test_without_the_locks_the_shared_chapter_races(tiny_book, tmp_path, marks):
    """The test above can fail: with the locks off, the same builds collide."""
    builds = both_editions_at_once(_with_shared_chapter(tiny_book, BARRIER, marks), tmp_path,
                                   {**SETTINGS, "coursebook_cache_locks": "0"}, forked=True)
    # Both kernels were in the shared cell at once (the barrier); a build whose cache write
    # failed may run it a third time.
    assert len(list((marks / "arrived").iterdir())) >= 2
    # Then a build fails on the other's cache record (jupyter-cache says so in one of
    # several ways: "hashkey already exists", a StaleDataError, a record not found), or
    # both builds executed it and cached it in turn.
    collided = any(build.returncode != 0 for build in builds.values())
    ran_twice = sum(build.executed for build in builds.values()) >= 4
    assert collided or ran_twice


def _notebook(code: str):
    import nbformat

    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])


def test_a_notebook_lock_excludes_the_same_key_only(tmp_path):
    from filelock import FileLock, Timeout

    from coursebook.execute.shared_cache import cache_key, notebook_lock

    held, other = _notebook("print(1)"), _notebook("print(2)")
    with notebook_lock(tmp_path, held):
        with pytest.raises(Timeout):
            FileLock(tmp_path / "locks" / f"{cache_key(tmp_path, held)}.lock").acquire(timeout=0)
        with FileLock(tmp_path / "locks" / f"{cache_key(tmp_path, other)}.lock").acquire(timeout=0):
            pass


def test_the_cache_key_is_jupyter_caches_own(tmp_path):
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    from coursebook.execute.shared_cache import cache_key

    notebook = _notebook("print(1)")
    record = get_cache(str(tmp_path)).cache_notebook_bundle(
        CacheBundleIn(notebook, str(tmp_path / "x.ipynb")), check_validity=False)
    assert record.hashkey == cache_key(tmp_path, notebook)


def test_creating_the_cache_makes_its_tables_before_readers_fork(tmp_path):
    """Parallel readers that find no tables all create them, and all but one fail."""
    import sqlite3

    from coursebook.execute.shared_cache import create_cache

    create_cache(tmp_path / "cache")
    with sqlite3.connect(tmp_path / "cache" / "global.db") as db:
        tables = {row[0] for row in db.execute("select name from sqlite_master")}
    assert {"nbcache", "nbproject", "settings"} <= tables


def test_a_cache_whose_creation_was_stopped_is_created_again(tmp_path):
    """sqlite makes the file as it connects, before the tables: a build stopped then left an
    empty global.db, which jupyter-cache (it creates tables only where there is no file) read
    as 'no such table' in every later build. Without the __version__.txt jupyter-cache
    writes after the tables, it is made again; a whole cache is kept."""
    from coursebook.execute.shared_cache import cache_run, create_cache, open_cache

    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "global.db").write_bytes(b"")
    create_cache(tmp_path / "cache")
    assert open_cache(tmp_path / "cache").list_cache_records() == []
    cache_run(tmp_path / "cache", _notebook("print(1)"), "a.md", {})
    create_cache(tmp_path / "cache")
    assert len(open_cache(tmp_path / "cache").list_cache_records()) == 1
    # HR: a database copied by hand without __version__.txt holds runs: not removed
    (tmp_path / "cache" / "__version__.txt").unlink()
    create_cache(tmp_path / "cache")
    assert len(open_cache(tmp_path / "cache").list_cache_records()) == 1


def test_the_cache_check_leaves_an_entry_another_build_is_writing(tmp_path):
    """jupyter-cache adds a record before its notebook file: a build starting then saw the
    file missing and dropped the entry, and the writer's chapter ran twice (CI, twice)."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    from coursebook.execute.cached_chapters import drop_unreadable_entries
    from coursebook.execute.shared_cache import create_cache, notebook_lock

    create_cache(tmp_path)
    notebook = _notebook("print(1)")
    record = get_cache(str(tmp_path)).cache_notebook_bundle(
        CacheBundleIn(notebook, str(tmp_path / "x.ipynb")), check_validity=False)
    shutil.rmtree(get_cache(str(tmp_path))._get_notebook_path_cache(record.hashkey).parent)
    with notebook_lock(tmp_path, notebook):  # the writer, between its record and its file
        assert drop_unreadable_entries(tmp_path) == []
    assert drop_unreadable_entries(tmp_path) == [(str(tmp_path / "x.ipynb"), "missing")]


@pytest.mark.parametrize("damage", [
    lambda data: b"", lambda data: data[:len(data) // 2], lambda data: b"[1, 2]",
    lambda data: b'{"nbformat": 4}', lambda data: b'{"nbformat": 4, "cells": {}}',
    lambda data: b"\xff",
    # whole JSON, a byte no UTF-8 holds inside a string: myst-nb's strict read stopped the build
    lambda data: data.replace(b"print(2)", b"print(\xff2)")],
    ids=["empty", "cut", "a list", "no cells", "cells no list", "no UTF-8", "no UTF-8 inside"])
def test_the_cache_check_drops_an_entry_whose_notebook_is_no_notebooks_json(tmp_path, damage):
    """Not UTF-8, not JSON, not an object, no list of cells: damaged, dropped (its chapter
    runs again)."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    from coursebook.execute.cached_chapters import drop_unreadable_entries
    from coursebook.execute.shared_cache import create_cache

    create_cache(tmp_path)
    cache = get_cache(str(tmp_path))
    kept, damaged = (cache.cache_notebook_bundle(CacheBundleIn(_notebook(code), str(
        tmp_path / f"{name}.ipynb")), check_validity=False) for code, name in (
            ("print(1)", "kept"), ("print(2)", "damaged")))
    path = cache._get_notebook_path_cache(damaged.hashkey)
    path.write_bytes(damage(path.read_bytes()))
    assert drop_unreadable_entries(tmp_path) == [
        (str(tmp_path / "damaged.ipynb"), "damaged (not a notebook's JSON)")]
    assert [record.pk for record in cache.list_cache_records()] == [kept.pk]


def test_every_insert_trims_the_cache_under_the_write_lock(tmp_path, monkeypatch):
    """jupyter-cache trims the cache after each insert in two queries (the newest records,
    then all others): a record another build inserted between them was deleted at once, so
    its chapter ran twice, or its reader met a record without its notebook file (CI, the
    test above). Every write here holds the cache's write lock while jupyter-cache trims."""
    from filelock import Timeout
    from jupyter_cache.cache.main import JupyterCacheBase

    from coursebook.execute.shared_cache import (
        cache_lock,
        cache_run,
        create_cache,
        open_cache,
    )
    from shards import _copy_notebook

    trims = []

    def trim(cache):
        try:
            cache_lock(cache.path, "write").acquire(timeout=0).release()
            trims.append("unlocked")
        except Timeout:
            trims.append("locked")

    monkeypatch.setattr(JupyterCacheBase, "truncate_caches", trim)
    source, target = tmp_path / "source", tmp_path / "target"
    for cache in (source, target):
        create_cache(cache)
    cache_run(source, _notebook("print(1)"), "a.md", {})
    cache_run(source, _notebook("print(2)"), "b.md", {"recorded": True})  # a recording
    _copy_notebook(open_cache(source), open_cache(source).list_cache_records()[0], target)
    assert trims == ["locked"] * 3
