"""Execution split over shards (tools/shards.py): dealt by recorded time, merged through
jupyter-cache, then built executing nothing; each bad input named in one message."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

from book_environment import sphinx_command
from conftest import (BOOK, ROOT, book_conf_with, copy_of_built_cache, load_tool, run_sphinx,
                      sphinx_build)
from coursebook.execute.fill_cache import ExecutionFailed, Run, execute_into_cache, read_book
from coursebook.execute.shared_cache import cache_key, cache_run, create_cache, open_cache
from coursebook.model.notebooks import code_cell
from coursebook.model.outputs import normalise
from coursebook.prepare.editions import Edition
from shards import (
    MANIFEST,
    Chapter,
    Shard,
    ShardError,
    book_reads,
    chapters_to_execute,
    deal,
    execute_shard,
    merge_shards,
)
from shards import main as shards_main

SHARDS = ROOT / "tools" / "shards.py"
ACCEPT = {"coursebook_accept_outputs": "1"}
SMALL_CHAPTER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  name: python3
  display_name: Python 3
  language: python
---

({name})=
# Small chapter {number}

```{{code-cell}} ipython3
import random

random.seed({number})
print("{name}:", random.random())
```
"""


def _chapters(*names: str, notebooks: int = 2) -> list[Chapter]:
    return [Chapter(name, Path(f"{name}.md"), {f"{name}-{i}": None for i in range(notebooks)})
            for name in names]


def test_with_no_record_chapters_are_dealt_by_count():
    shards = deal(_chapters(*"abcdefg"), 3, {})
    assert sorted(shards) == list("abcdefg")
    counts = sorted(list(shards.values()).count(i) for i in (1, 2, 3))
    assert counts == [2, 2, 3]


def test_recorded_times_deal_the_long_chapters_apart():
    seconds = {"long": 60.0, "mid": 31.0, "a": 10.0, "b": 10.0, "c": 10.0}
    shards = deal(_chapters(*seconds), 2, seconds)
    load = {i: sum(seconds[n] for n, s in shards.items() if s == i) for i in (1, 2)}
    assert shards["long"] != shards["mid"]
    assert sorted(load.values()) == [60.0, 61.0]  # by count it would be 3 chapters against 2
    # A chapter with no record weighs the recorded mean; every chapter has one shard.
    assert set(deal(_chapters("long", "new"), 2, {"long": 60.0})) == {"long", "new"}


@pytest.mark.parametrize("text", ["0/3", "4/3", "2", "a/b"])
def test_a_shard_is_i_of_n(text):
    with pytest.raises(ShardError, match="I/N"):
        Shard.parse(text)


def _shards(*args: str, book: Path, shards_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SHARDS), "--book", str(book), "--shards-dir",
                           str(shards_dir), *args], capture_output=True, text=True, cwd=ROOT)


def _merge(capsys, *args: str, book: Path, shards_dir: Path) -> subprocess.CompletedProcess:
    """`shards.py merge` (_shards's) run in this process: the book is read all the same, a
    Python's start and imports less (1.8 -> 0.2 s of CPU on the tiny book)."""
    capsys.readouterr()  # what this command prints, not what came before it
    code = shards_main(["--book", str(book), "--shards-dir", str(shards_dir), "merge", *args])
    printed = capsys.readouterr()
    return subprocess.CompletedProcess(["merge", *args], code, printed.out, printed.err)


def _joined_streams(outputs: list) -> list:
    """Outputs with consecutive stream texts joined as printed: where ipykernel splits a
    stream into messages varies from run to run (in one build as across shards)."""
    joined: list = []
    for output in outputs:
        if (output["output_type"] == "stream" and joined
                and joined[-1]["output_type"] == "stream" and joined[-1]["name"] == output["name"]):
            joined[-1] = {**joined[-1], "text": joined[-1]["text"] + output["text"]}
        else:
            joined.append(dict(output))
    return joined


def _cached_outputs(cache: Path) -> dict[str, list]:
    """Each cached notebook's code cell outputs, by jupyter-cache key, as the book shows
    them (memory addresses and the kernel's temporary paths replaced: coursebook.model.outputs)."""
    from jupyter_cache import get_cache

    found = {}
    cache_ = get_cache(str(cache))
    for record in cache_.list_cache_records():
        notebook = cache_.get_cache_bundle(record.pk).nb
        found[record.hashkey] = [[_normalised(o) for o in _joined_streams(c.outputs)]
                                 for c in notebook.cells if c.cell_type == "code"]
    return found


def _normalised(output: dict) -> dict:
    """An output's texts normalised (not its images: the rules are for text)."""
    if "text" in output:
        return {**output, "text": normalise(output["text"])}
    data = output.get("data", {})
    if "text/plain" in data:
        return {**output, "data": {**data, "text/plain": normalise(data["text/plain"])}}
    return output


def _shown_outputs(build) -> dict[str, list[str]]:
    """The text of the outputs each page shows (myst-nb's cell_output blocks). Spacing
    aside: myst-nb ends every stream message with a line break, so a line that ipykernel
    happened to send in two messages shows broken in two."""
    from bs4 import BeautifulSoup

    return {page.stem: [" ".join(div.get_text().split()) for div in
                        BeautifulSoup(page.read_text(), "html.parser").select("div.cell_output")]
            for page in sorted((build.outdir / "html").glob("*.html"))}


def _one_message(done: subprocess.CompletedProcess, *phrases: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("shards: "), done.stderr
    for phrase in phrases:
        assert phrase in lines[0], lines[0]


@pytest.mark.slow
def test_shards_merged_build_what_one_machine_builds(built, tmp_path, tiny_book, capsys):
    """The book's chapters dealt over as many shards, each its own process and cache, run at
    once as CI's jobs would; merged, both editions build executing nothing and show what the
    `built` books (one machine) show."""
    reads = book_reads(BOOK, ROOT)
    chapters, torch = chapters_to_execute(reads), reads[Edition.STUDENT].book.torch
    count = len(chapters)
    # Each shard reuses what a cache at hand holds, as `make execute` reuses _build's: the
    # `built` books' cache without the runs of the chapter of fewest notebooks, which its
    # shard executes; the others are taken.
    executes = min(chapters, key=lambda chapter: len(chapter.notebooks)).name
    from jupyter_cache import get_cache

    reuse = get_cache(str(copy_of_built_cache(built, tmp_path / "reuse-cache")))
    for record in reuse.list_cache_records():
        if Path(record.uri).stem == executes:
            reuse.remove_cache(record.pk)
    shards_dir = tmp_path / "shards"
    options = ("--history", str(copy_of_built_cache(built, tmp_path / "history")),
               "--reuse", str(reuse.path))
    with ThreadPoolExecutor(count) as pool:
        runs = list(pool.map(lambda i: _shards("execute", f"{i}/{count}", *options, book=BOOK,
                                               shards_dir=shards_dir), range(1, count + 1)))
    for run in runs:
        assert run.returncode == 0, run.stdout + run.stderr
    shards = [Shard(i, count) for i in range(1, count + 1)]
    manifests = [json.loads((shard.folder(shards_dir) / MANIFEST).read_text()) for shard in shards]
    claimed = [set(manifest["chapters"]) for manifest in manifests]
    executed = {name for manifest in manifests for name, seconds in manifest["seconds"].items()
                if seconds > 0}
    assert executed == {executes}, manifests
    assert all(claimed) and sum(map(len, claimed)) == count
    assert set().union(*claimed) == {chapter.name for chapter in chapters}

    merged_cache = tmp_path / "merged" / ".jupyter_cache"
    done = _merge(capsys, str(count), "--into", str(merged_cache), book=BOOK,
                  shards_dir=shards_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    # jupyter-cache's own command line reads the merged cache.
    listed = subprocess.run([str(Path(sys.executable).parent / "jcache"), "cache", "list"],
                            capture_output=True, text=True,
                            env={**os.environ, "JUPYTERCACHE": str(merged_cache)})
    assert listed.returncode == 0, listed.stderr
    assert all(f"{chapter.name}.md" in listed.stdout for chapter in chapters), listed.stdout

    for edition, one_machine in built.items():
        build = sphinx_build(BOOK, tmp_path / "merged" / edition, merged_cache,
                             *(["instructor"] if edition == "instructor" else []))
        assert build.returncode == 0, build.log[-4000:]
        assert build.executed == 0, build.log[-4000:]
        assert f"expected outputs: {count} chapters compared" in build.log
        assert _shown_outputs(build) == _shown_outputs(one_machine)
    merged_outputs, one_machine_outputs = (_cached_outputs(c) for c in (
        merged_cache, copy_of_built_cache(built, tmp_path / "one-machine")))
    assert merged_outputs and all(one_machine_outputs[key] == outputs
                                  for key, outputs in merged_outputs.items())

    # Bad inputs, each one message: the command once (after it read a book: the tiny one,
    # cheaper to read than the real one), then the checks themselves.
    _one_message(_merge(capsys, "1", "--into", str(tmp_path / "m"), book=tiny_book,
                        shards_dir=tmp_path / "no-shards"),
                 "shard 1/1's cache is missing", "make execute SHARD=1/1")
    first, second = shards[:2]

    def refused(*phrases: str, torch: str = torch, chapters: list[Chapter] = chapters,
                count: int = count) -> None:
        with pytest.raises(ShardError) as error:
            merge_shards(chapters, torch, count, shards_dir, tmp_path / "refused")
        assert all(phrase in str(error.value) for phrase in phrases), error.value

    refused(f"shard {count + 1}/{count + 1}'s cache is missing",
            f"make execute SHARD={count + 1}/{count + 1}", count=count + 1)

    claims = second.folder(shards_dir) / MANIFEST
    saved = claims.read_text()
    claims.write_text(json.dumps({**manifests[1], "chapters": {**manifests[1]["chapters"],
                                                               **manifests[0]["chapters"]}}))
    refused("two shards executed chapter", f"shard {first}")
    claims.write_text(saved)
    refused("with torch", "this build has torch 9.9.9", torch="9.9.9")
    # A chapter edited since its shard ran: the build prepares notebooks of other keys.
    edited = next(chapter for chapter in chapters if chapter.name in claimed[0])
    refused(f"shard {first} executed another version of chapter {edited.name}",
            f"make execute SHARD={first}",
            chapters=[replace(chapter, notebooks={"0" * 32: None}) if chapter is edited
                      else chapter for chapter in chapters])
    shutil.rmtree(shards[-1].cache(shards_dir))
    refused(f"shard {shards[-1]}'s cache is missing")


def test_a_chapter_executed_without_a_build_keeps_its_own_time_limit(tiny_book, tmp_path,
                                                                    monkeypatch):
    """A chapter that raised its limit in its top matter (`mystnb: {execution_timeout: …}`,
    as a timed-out build advises) runs under it in shards and `pytest book` too: the limit
    reaches jupyter-cache's executor (stood in for here: no kernel starts)."""
    import jupyter_cache.executors.utils as executor

    asked = []

    def execution(notebook, **options):
        asked.append(options)
        return executor.ExecutionResult(notebook, options["cwd"], 0.01)

    monkeypatch.setattr(executor, "single_nb_execution", execution)
    chapter = tiny_book / "chapter.md"
    chapter.write_text(SMALL_CHAPTER.format(name="chapter", number=1).replace(
        "---\n", "---\nmystnb:\n  execution_timeout: 30\n", 1))
    read = read_book(tiny_book, book_conf_with(tmp_path / "conf", "nb_execution_timeout = 1"),
                     Edition.STUDENT)
    run = read.runs[chapter.resolve()]
    assert run.settings.execution_timeout == 30
    executed, seconds = execute_into_cache(tmp_path / "cache", run)
    assert seconds == 0.01 and [options["timeout"] for options in asked] == [30]


def test_a_run_that_fails_without_a_build_is_not_cached(tmp_path, monkeypatch):
    """A failed run in a shard or `pytest book` raises without ever being cached: caching it
    (then removing it) lets jupyter-cache trim a good record from a cache at its limit."""
    import jupyter_cache.executors.utils as executor
    from myst_nb.core.config import NbParserConfig

    monkeypatch.setattr(executor, "single_nb_execution", lambda notebook, **options: (
        executor.ExecutionResult(notebook, options["cwd"], 0.01, RuntimeError("stopped"))))
    good, failing = (nbformat.v4.new_notebook(cells=[code_cell(source)])
                     for source in ("print(1)", "print(2)"))
    cache = tmp_path / "cache"
    create_cache(cache)
    cache_run(cache, good, "good.md", {})
    open_cache(cache).change_cache_limit(1)
    with pytest.raises(ExecutionFailed, match="failed to execute: RuntimeError"):
        execute_into_cache(cache, Run(tmp_path / "failing.md", failing, NbParserConfig()))
    assert [record.uri for record in open_cache(cache).list_cache_records()] == ["good.md"]


def test_the_cache_filled_is_the_one_myst_nb_reads_even_by_a_deprecated_name(tiny_book,
                                                                           tmp_path):
    """myst-nb takes the deprecated ``jupyter_cache`` for ``nb_execution_cache_path``: a
    chapter run without a build goes into the cache the build's myst-nb reads."""
    conf = book_conf_with(tmp_path / "conf", "nb_execution_cache_path = ''",
                          f"jupyter_cache = {str(tmp_path / 'named')!r}")
    assert read_book(tiny_book, conf, Edition.STUDENT).cache_path == str(tmp_path / "named")


def _top_matter(chapter: Path, lines: str) -> None:
    """Add ``lines`` to the chapter's top matter (YAML)."""
    chapter.write_text(chapter.read_text().replace("---\n", "---\n" + lines, 1))


# What keeps a build from executing a chapter: conf.py (myst-nb's settings, Sphinx's pages);
# a chapter's own top matter may not (test_book_markup: its execution_mode is refused).
NOT_EXECUTED = {
    "nb_execution_mode off": ("", ["nb_execution_mode = 'off'"]),
    "nb_execution_excludepatterns": ("", ["nb_execution_excludepatterns = ['chapter.md']"]),
    "exclude_patterns": ("", ["exclude_patterns.append('chapter.md')"]),
}


@pytest.mark.parametrize("top_matter, conf_lines", NOT_EXECUTED.values(), ids=NOT_EXECUTED)
def test_shards_execute_only_what_the_build_executes(tiny_book, tmp_path, top_matter, conf_lines):
    reads = book_reads(tiny_book, book_conf_with(tmp_path / "conf"))
    assert [(c.name, len(c.notebooks)) for c in chapters_to_execute(reads)] == [("chapter", 2)]
    _top_matter(tiny_book / "chapter.md", top_matter)
    reads = book_reads(tiny_book, book_conf_with(tmp_path / "changed", *conf_lines))
    assert chapters_to_execute(reads) == []


def test_a_page_one_edition_leaves_out_is_executed_for_the_other(tiny_book, tmp_path):
    """conf.py is read with each edition's tags, as its build reads it."""
    reads = book_reads(tiny_book, book_conf_with(
        tmp_path / "conf", "if tags.has('instructor'): exclude_patterns.append('chapter.md')"))
    chapter = tiny_book / "chapter.md"
    student = reads[Edition.STUDENT]
    assert chapter.resolve() not in reads[Edition.INSTRUCTOR].runs
    assert list(chapters_to_execute(reads)[0].notebooks) == [
        cache_key(student.cache_path, student.runs[chapter.resolve()].notebook)]


ALLOWED = {"top matter": ("mystnb:\n  execution_allow_errors: true\n", []),
           "conf.py": ("", ["nb_execution_allow_errors = True"])}


@pytest.mark.slow  # executes a chapter
@pytest.mark.parametrize("top_matter, conf_lines", ALLOWED.values(), ids=ALLOWED)
def test_a_shard_allows_the_errors_the_build_allows(tiny_book, tmp_path, top_matter, conf_lines):
    """A cell that raises untagged, errors allowed: executed and cached, as a build does."""
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text().replace(":tags: [raises-exception]\n", ""))
    _top_matter(chapter, top_matter)
    reads = book_reads(tiny_book, book_conf_with(tmp_path / "conf", *conf_lines))
    shards = tmp_path / "shards"
    versions = reads[Edition.STUDENT].book.execution_versions
    seconds = execute_shard(chapters_to_execute(reads), versions, Shard(1, 1), shards,
                            tmp_path / "none")
    assert list(seconds) == ["chapter"]
    cached = _cached_outputs(Shard(1, 1).cache(shards))
    assert len(cached) == 2 and all(
        any(output.get("ename") == "RuntimeError" for cell in cells for output in cell)
        for cells in cached.values())


def test_an_execution_package_not_installed_is_one_line(tiny_book, tmp_path, monkeypatch, capsys):
    shards = load_tool("shards")
    monkeypatch.setattr(shards, "ROOT", book_conf_with(
        tmp_path / "conf", "coursebook_execution_packages.append('no-such-package-here')"))
    assert shards.main(["--book", str(tiny_book), "--shards-dir", str(tmp_path / "shards"),
                        "execute", "1/1"]) == 1
    printed = capsys.readouterr().err
    assert printed.count("\n") == 1 and printed.startswith("shards: "), printed
    assert ("coursebook_execution_packages names 'no-such-package-here', which this Python "
            "does not have: run `make venv`") in printed


def _draft_that_fails_to_prepare(book: Path) -> None:
    """A draft beside the chapter, whose preparation stops (a raises cell hiding its error)."""
    (book / "draft.md").write_text((book / "chapter.md").read_text().replace(
        ":tags: [raises-exception]", ":tags: [raises-exception, remove-output]"))


def test_a_page_the_build_does_not_read_is_not_prepared(tiny_book, tmp_path):
    """A draft left out (exclude_patterns) is never read by the build, so never prepared:
    its faults stop neither the build nor the shards."""
    _draft_that_fails_to_prepare(tiny_book)
    reads = book_reads(tiny_book, book_conf_with(tmp_path / "conf",
                                                 "exclude_patterns.append('draft.md')"))
    assert [c.name for c in chapters_to_execute(reads)] == ["chapter"]


def test_a_page_that_does_not_prepare_is_one_line_naming_its_place(tiny_book, tmp_path, capsys):
    """As the build reports it: the fault and its file and line, no traceback."""
    _draft_that_fails_to_prepare(tiny_book)
    shards = load_tool("shards")
    assert shards.main(["--book", str(tiny_book), "--shards-dir", str(tmp_path / "shards"),
                        "execute", "1/1"]) == 1
    printed = capsys.readouterr().err
    assert printed.count("\n") == 1 and printed.startswith("shards: "), printed
    assert "draft.md:" in printed and "Traceback" not in printed


def test_each_page_that_does_not_prepare_is_named_at_its_own_place(tiny_book, tmp_path):
    """Two drafts failing alike: each is named by the error logged while it was read (the
    build's log shows an error once, however many pages meet it)."""
    _draft_that_fails_to_prepare(tiny_book)
    shutil.copy(tiny_book / "draft.md", tiny_book / "second.md")
    failed = read_book(tiny_book, book_conf_with(tmp_path / "conf"), Edition.STUDENT).failed
    assert sorted(path.name for path in failed) == ["draft.md", "second.md"]
    for path, message in failed.items():
        assert f"{path.name}:" in message and "ERROR: " in message, message


# Pages that a build of one edition executes or not, each for another reason: conf.py's
# exclude_patterns for the instructor's tag, myst-nb's patterns.
EDITION_BOOK = {"runs": "", "student-only": "", "skipped": ""}
EDITION_CONF = ["if tags.has('instructor'): exclude_patterns.append('student-only.md')",
                "nb_execution_excludepatterns = ['*skipped.md']"]


@pytest.mark.slow  # builds each edition, executing its chapters
@pytest.mark.parametrize("edition", list(Edition), ids=lambda edition: edition.value)
def test_shards_and_pytest_book_execute_what_a_build_executes(tmp_path, edition):
    """By construction (they ask Sphinx's read of the book); held against a cold build's
    own count of the notebooks it executed."""
    from test_pytest_book import _pytest_book

    book = tmp_path / "src"
    book.mkdir()
    (book / "index.md").write_text("# Edition book\n\n```{toctree}\n" + "".join(
        f"{name}\n" for name in EDITION_BOOK) + "```\n")
    for number, (name, top_matter) in enumerate(EDITION_BOOK.items(), 1):
        (book / f"{name}.md").write_text(SMALL_CHAPTER.format(name=name, number=number).replace(
            "---\n", "---\n" + top_matter, 1))
    conf = book_conf_with(tmp_path / "build-conf", *EDITION_CONF)
    command = sphinx_command(book, tmp_path / "out" / "html", tmp_path / "out" / "doctrees",
                             instructor=edition is Edition.INSTRUCTOR, strict=False, conf=conf,
                             settings=ACCEPT)
    built = run_sphinx(command)
    assert built.returncode == 0, built.stdout + built.stderr
    executed = set(re.findall(r"(\w[\w-]*)\.md: Executing notebook", built.stdout + built.stderr))
    assert executed == ({"runs", "student-only"} if edition is Edition.STUDENT else {"runs"})
    # what it does not run is said, never left to pass for verified
    assert set(re.findall(r"(\w[\w-]*)\.md \(\w+\): not run by this build",
                          built.stdout + built.stderr)) == {"skipped"}

    reads = {edition: read_book(book, conf, edition)}
    assert {chapter.name for chapter in chapters_to_execute(reads)} == executed
    collected = _pytest_book(book, *EDITION_CONF, collect_only=True)
    assert collected.returncode == 0, collected.stdout
    assert set(re.findall(rf"(\w[\w-]*)\.md::{edition.value}::", collected.stdout)) == executed


def test_a_read_of_the_book_leaves_its_process_as_it_was(tiny_book, tmp_path):
    """pytest reads the book in its own process: a build's signal handling (which blocks
    SIGTERM, also for every program started after it) and frozen collector stay out."""
    import gc
    import signal

    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    read_book(tiny_book, book_conf_with(tmp_path / "conf"), Edition.STUDENT)
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == blocked
    assert gc.isenabled()


def test_a_history_cache_whose_creation_was_stopped_is_no_history(tmp_path):
    """A cache left with a 0-byte database (a build stopped as it created it) holds no recorded
    times: the shard is dealt by count, not stopped by jupyter-cache's RuntimeError."""
    history = tmp_path / "history"
    history.mkdir()
    (history / "global.db").touch()
    seconds = execute_shard([], {}, Shard(1, 1), tmp_path / "shards", history, reuse=history)
    assert seconds == {}
    assert (Shard(1, 1).cache(tmp_path / "shards") / "__version__.txt").is_file()
