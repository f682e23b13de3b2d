"""A build stopped at any moment: Ctrl-C, SIGTERM or SIGKILL, in each phase (reading,
executing, writing the pages, writing the book-wide pages), leaves no process behind and
a state from which the next build writes every page and a complete search index.

Each case takes a copy of the tiny book as one build left it (its chapter and a few prose
pages, each with a word of its own), changes every page's word, builds again on a cold
cache and stops that build at the phase (tests/fixtures/stop_build.py: at a Sphinx event,
or from a cell, not after a delay); then no process of that build may be alive 5 seconds
after its main process ended, and the next build must pass and show the new words only, on
the pages and in the search index.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from conftest import (BOOK, ROOT, TINY_BOOK, Build, imported_ahead, load_tool, sphinx_build,
                      sphinx_command)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
from stop_build import STOP_CELL  # noqa: E402

PAGES = 5  # prose pages beside the chapter: -j readers and writers get several each
STATUS = {"SIGINT": 130, "SIGTERM": 143, "SIGKILL": -9}
TOKEN_ENV = "COURSEBOOK_TEST_BUILD"  # in every process of the stopped build, and no other
GRACE = 5.0  # seconds a process of a stopped build may outlive its main process
CRASH_SIGNS = ("Traceback", "Extension error", "Exception occurred", "please report",
               "The full traceback has been saved", "Event loop is closed")


def _word(version: str, page: str) -> str:
    """A made-up word found on one page only (digits: no stemmer shortens it)."""
    return f"qz{version}{page.replace('page', 'p')}x7"


def _pages() -> list[str]:
    """The tiny book's pages as :func:`_write_book` writes it."""
    return ["chapter", *(f"page{n}" for n in range(1, PAGES + 1))]


def _write_book(source: Path, version: str) -> list[str]:
    """The tiny book at ``version``: each page says its own word; from version "v2" on the
    chapter has the cell that stops a build (it does nothing in another build). Its pages."""
    if not source.exists():
        shutil.copytree(TINY_BOOK, source)
    pages = _pages()[1:]
    for page in pages:
        (source / f"{page}.md").write_text(f"# Page {page}\n\nIt says {_word(version, page)}.\n")
    chapter = (TINY_BOOK / "chapter.md").read_text().replace(
        "A worked example.", f"A worked example says {_word(version, 'chapter')}.")
    if version != "v1":
        chapter = chapter.replace("A cell whose error is the lesson.", (
            "```{code-cell} ipython3\n---\nunverified: it stops a test's build\n---\n"
            f"{STOP_CELL}\n```\n\nA cell whose error is the lesson."))
    (source / "chapter.md").write_text(chapter)
    (source / "index.md").write_text("# Fixture\n\n```{toctree}\nchapter\n"
                                     + "".join(f"{page}\n" for page in pages) + "```\n")
    return _pages()


def _search(outdir: Path) -> dict[str, set[str]]:
    """The search index: each stemmed term and the pages it finds."""
    text = (outdir / "html" / "searchindex.js").read_text()
    index = json.loads(text[text.index("(") + 1:text.rindex(")")])
    found: dict[str, set[str]] = {}
    for term, documents in index["terms"].items():
        numbers = documents if isinstance(documents, list) else [documents]
        found[term] = {index["docnames"][number] for number in numbers}
    return found


def _stem(word: str) -> str:
    from sphinx.search.en import SearchEnglish

    return SearchEnglish({}).stem(word)


def _processes_of(token: str) -> list[psutil.Process]:
    """The live processes started under ``token`` (what they inherited from the build,
    kernels and the kernel server included; a zombie runs nothing)."""
    found = []
    for process in psutil.process_iter():
        try:
            if (process.status() != psutil.STATUS_ZOMBIE
                    and process.environ().get(TOKEN_ENV) == token):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


@pytest.fixture(scope="module", autouse=True)
def stop_build_importable() -> None:
    """Every build of these tests loads the stopping extension (stopping only where told):
    a build with other extensions than the last would read and write every page anyway."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join(
            filter(None, [str(FIXTURES), os.environ.get("PYTHONPATH")])))
        yield


@functools.cache
def _extensions() -> str:
    return ",".join([*load_tool("preview").edition_configuration("student", BOOK, {})[
        "extensions"], "stop_build"])


def _settings(at: str = "") -> dict[str, str]:
    # stop_build_at is no setting a page depends on: the next build reads nothing for it.
    return {"extensions": _extensions(), "stop_build_at": at}


def _build(source: Path, outdir: Path, cache: Path, kernels: dict[str, str] | None = None
           ) -> Build:
    """A build not stopped, whose processes no test looks for: forked (conftest), unlike
    :func:`_stopped_build`'s; ``kernels``: the session's kernel server's (conftest), from
    which it forks its chapters' kernels."""
    return sphinx_build(source, outdir, cache, settings=_settings(), forked=True, env=kernels)


def _stopped_build(source: Path, outdir: Path, cache: Path, at: str) -> tuple[int, str, list]:
    """A build stopped at ``at`` (PHASE:SIGNAL): its exit status, its log, and the
    processes of it still alive ``GRACE`` seconds after its main process ended."""
    command = sphinx_command(source, outdir / "html", outdir / "doctrees", settings={
        "nb_execution_cache_path": str(cache), **imported_ahead(source), **_settings(at)})
    token = uuid.uuid4().hex
    (outdir / "tmp").mkdir(parents=True, exist_ok=True)
    environment = {**os.environ, TOKEN_ENV: token, "TMPDIR": str(outdir / "tmp")}
    log = outdir / "stopped.log"
    with log.open("w") as out:
        build = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                 env=environment, start_new_session=True)
        returncode = build.wait(timeout=300)
    deadline = time.monotonic() + GRACE
    while (left := _processes_of(token)) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = [f"{process.pid} {' '.join(process.cmdline())[:150]}" for process in left]
    for process in left:  # not to outlive the test either
        process.kill()
    return returncode, log.read_text(), alive


@pytest.fixture(scope="module")
def built_v1(tmp_path_factory, tiny_cache, stop_build_importable) -> tuple[Path, Path]:
    """The folder each case works in, and a copy of it as the book at "v1" built there
    once (on a copy of the tiny cache) left it: a build's environment names its folders.
    Short: a build's TMPDIR (out/tmp) under 64 bytes holds the kernel server's socket folder
    (else it goes to /tmp), where each case looks for it."""
    work = tmp_path_factory.mktemp("stop") / "c"
    shutil.copytree(tiny_cache, work / "cache")
    _write_book(work / "src", "v1")
    first = _build(work / "src", work / "out", work / "cache")
    assert first.returncode == 0, first.log[-3000:]
    shutil.copytree(work, work.parent / "v1")
    return work, work.parent / "v1"


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["reading", "executing", "writing", "book-wide"])
@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_a_build_stopped_at_any_phase_leaves_no_process_and_the_next_build_is_whole(
        built_v1, phase, signal_name, request):
    work, v1 = built_v1
    shutil.rmtree(work)
    shutil.copytree(v1, work)  # the pages' times too: only what changes below is read again
    source, outdir, cache = work / "src", work / "out", work / "cache"
    pages = _write_book(source, "v2")
    shutil.rmtree(cache)  # cold: the kernel server runs, the chapter executes

    returncode, log, alive = _stopped_build(source, outdir, cache, f"{phase}:{signal_name}")
    assert returncode == STATUS[signal_name], log[-3000:]
    assert not alive, f"alive {GRACE} s after the build stopped: {alive}"
    assert not list((outdir / "tmp").glob("kernels-*"))  # the kernel server's socket folder
    if signal_name != "SIGKILL":
        assert log.count("Interrupted: the build stopped.") == 1, log[-3000:]
        for sign in CRASH_SIGNS:
            assert sign not in log, log[-3000:]

    # A kernel server's file a stopped build left, the next build sets aside and starts the
    # chapter's kernel itself: tried after SIGKILL, at each phase. After SIGINT and SIGTERM
    # it forks that kernel from the session's server (torch imported once): its subject
    # there, the pages and the search index.
    again = _build(source, outdir, cache, None if signal_name == "SIGKILL"
                   else request.getfixturevalue("_kernel_server"))
    assert again.returncode == 0, again.log[-3000:]
    assert not again.crash_reports
    for sign in CRASH_SIGNS:
        assert sign not in again.log, again.log[-3000:]
    found = _search(outdir)
    for page in pages:
        html = (outdir / "html" / f"{page}.html").read_text()
        assert _word("v2", page) in html and _word("v1", page) not in html, page
        assert found.get(_stem(_word("v2", page))) == {page}, (page, again.log[-3000:])
        # (Sphinx keeps a term no page has any more, finding none.)
        assert not found.get(_stem(_word("v1", page))), (page, again.log[-3000:])


@pytest.mark.slow
@pytest.mark.parametrize("removed", [["searchindex.js", ".buildinfo"], ["searchindex.js"]])
def test_a_search_index_removed_after_a_good_build_is_made_whole_again(built_v1, removed):
    """What a build stopped before its last step leaves, made on purpose: the next build
    writes every page (no 'search index couldn't be loaded'), and so does none after it."""
    work, v1 = built_v1
    shutil.rmtree(work)
    shutil.copytree(v1, work)  # the book at "v1" as a good build left it (built_v1's)
    source, outdir, cache, pages = work / "src", work / "out", work / "cache", _pages()
    for name in removed:
        (outdir / "html" / name).unlink()
    logs = []
    for _ in range(2):
        again = _build(source, outdir, cache)
        assert again.returncode == 0 and not again.crash_reports, again.log[-3000:]
        found = _search(outdir)
        assert all(found.get(_stem(_word("v1", page))) == {page} for page in pages), found
        logs.append(again.log)
    [said] = [line for line in logs[0].splitlines() if "every page is written again" in line]
    assert all(name in said for name in removed) and "missing" in said, said
    assert "every page is written again" not in logs[1]
