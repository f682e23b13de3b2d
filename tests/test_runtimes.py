"""The runtimes the book targets (tools/runtimes.toml): pins from their sources, and each
runtime's committed expectations; the Colab replica's comparisons, each seen failing once."""

from __future__ import annotations

import json
import re
import shutil
import sys
import warnings
from pathlib import Path

import nbformat
import pytest

from conftest import BOOK, ROOT, RUNTIMES_FILE, TORCH_VERSION, book_museum, load_tool
from coursebook.model.notebooks import is_chapter_source, read_chapter
from coursebook.model.recordings import PROVENANCE_KEY
from coursebook.model.runtimes import (
    Runtime,
    RuntimeFileError,
    load_runtimes,
    reader_runtimes,
    release,
)
from coursebook.museum.model import write_records
from coursebook.page_state import CellOutput
from coursebook.prepare.editions import Edition
from coursebook.torch_versions.verify import (
    OtherTorch,
    Standing,
    State,
    check_digests,
    other_torch,
    standing,
)
from coursebook.verify.expectations import Expectations, expectations_path, read_expectations

BUILD_TORCH = release(TORCH_VERSION)
refresh = load_tool("refresh_runtimes")
verify = load_tool("verify_runtime")

COLAB_LISTS = refresh.COLAB_LISTS
needs_lists = pytest.mark.skipif(not (COLAB_LISTS / "SOURCE.md").is_file(),
                                 reason=f"no copy of Colab's lists at {COLAB_LISTS}")


# --- Refreshing the pins ----------------------------------------------------------------

@needs_lists
def test_the_committed_pins_are_those_of_their_sources():
    _, changes = refresh.refreshed(RUNTIMES_FILE, COLAB_LISTS, ROOT / "pyproject.toml")
    assert changes == []


@needs_lists
def test_the_check_fails_on_a_planted_wrong_pin(tmp_path, capsys):
    planted = tmp_path / "runtimes.toml"
    colab = next(r for r in load_runtimes(RUNTIMES_FILE).values()
                 if r.source.startswith("googlecolab/"))
    pin = f'numpy = "{colab.packages["numpy"]}"'
    planted.write_text(RUNTIMES_FILE.read_text().replace(pin, 'numpy = "1.0.0"'))
    assert refresh.main([str(COLAB_LISTS), "--runtimes", str(planted), "--check"]) == 1
    assert f"[{colab.name}] numpy 1.0.0 -> {colab.packages['numpy']}" in capsys.readouterr().out
    assert refresh.main([str(COLAB_LISTS), "--runtimes", str(planted)]) == 0  # refreshed
    assert planted.read_text() == RUNTIMES_FILE.read_text()  # comments and order kept


def _lists(tmp_path: Path, torch: str) -> Path:
    """A copy of Colab's lists as the refresh reads them, with this torch."""
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "SOURCE.md").write_text(f"At commit `{'b' * 40}` (2027-01-05, a newer image).\n")
    (lists / "pip-freeze.txt").write_text(
        "# generated\nnumpy==2.2.0\nipykernel==6.17.1\nipython==7.34.0\nmatplotlib==3.10.1\n"
        f"torch @ https://download.pytorch.org/whl/cpu/torch-{torch.replace('+', '%2B')}"
        "-cp314-cp314-manylinux_2_28_x86_64.whl\n")
    (lists / "os-info.txt").write_text("# generated\nUbuntu 24.04 LTS\nPython 3.14.2\n")
    return lists


def test_a_newer_list_refreshes_pins_python_source_and_date(tmp_path):
    runtimes = tmp_path / "runtimes.toml"
    text = RUNTIMES_FILE.read_text()
    colab = next(r for r in load_runtimes(RUNTIMES_FILE).values()
                 if r.source.endswith(":pip-freeze.txt"))
    # Only the CPU runtime's list is in this copy.
    runtimes.write_text("\n\n".join(part for part in text.split("\n\n")
                                    if part.startswith(("#", "[book]", f"[{colab.name}]"))))
    updated, changes = refresh.refreshed(runtimes, _lists(tmp_path, "2.12.0+cpu"),
                                         ROOT / "pyproject.toml")
    runtimes.write_text(updated)
    load_runtimes.cache_clear()
    fresh = load_runtimes(runtimes)[colab.name]
    assert fresh.packages["torch"] == "2.12.0+cpu" and fresh.packages["numpy"] == "2.2.0"
    assert (fresh.python, fresh.listed) == ("3.14", "2027-01-05")
    assert fresh.source == f"googlecolab/backend-info@{'b' * 40}:pip-freeze.txt"
    assert f"[{colab.name}] torch {colab.packages['torch']} -> 2.12.0+cpu" in changes
    assert updated.startswith(text.split("\n\n")[0])  # the file's comments are kept


def test_a_pin_the_list_lacks_stops_with_one_line(tmp_path, capsys):
    runtimes = tmp_path / "runtimes.toml"
    runtimes.write_text(RUNTIMES_FILE.read_text().replace(
        'ipython = "7.34.0",', 'ipython = "7.34.0", jaxtyping = "0.3.11",'))
    assert refresh.main([str(_lists(tmp_path, "2.11.0+cpu")), "--runtimes", str(runtimes),
                         "--check"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "pins jaxtyping, which" in error and "pip-freeze.txt" in error
    line = next(n for n, text in enumerate(runtimes.read_text().splitlines(), 1)
                if 'ipython = "7.34.0", jaxtyping' in text)
    assert f"runtimes.toml:{line}: field colab-cpu.packages: pins jaxtyping, which" in error


def test_a_missing_field_is_placed_in_its_own_table(tmp_path):
    """Not at the same field of a later table: the error points where the field belongs."""
    first, text = next(iter(load_runtimes(RUNTIMES_FILE))), RUNTIMES_FILE.read_text()
    start = text.index(f"[{first}]")
    title = text.index("\ntitle = ", start) + 1
    planted = tmp_path / "runtimes.toml"
    planted.write_text(text[:title] + text[text.index("\n", title) + 1:])
    with pytest.raises(RuntimeFileError) as error:
        load_runtimes(planted)
    header = text[:start].count("\n") + 1
    assert str(error.value) == (
        f"{planted}:{header}: field {first}.title: is missing (add it: a string)")


def test_a_device_only_package_the_runtime_does_not_pin_is_refused(tmp_path):
    planted = tmp_path / "runtimes.toml"
    text = RUNTIMES_FILE.read_text()
    assert 'device_only = ["libtpu"]' in text
    planted.write_text(text.replace('device_only = ["libtpu"]',
                                    'device_only = ["libtpu", "abacus"]'))
    with pytest.raises(RuntimeFileError) as error:
        load_runtimes(planted)
    assert "field colab-tpu.device_only: names libtpu, abacus (list names of its packages)" \
        in str(error.value) and str(planted) in str(error.value)


# --- Every declared runtime has its committed expectations ------------------------------

def _chapters() -> dict[str, str]:
    """Each chapter's name and text."""
    return {p.stem: p.read_text() for p in sorted(BOOK.glob("*.md"))
            if is_chapter_source(p.read_text())}


def _recorded(text: str) -> bool:
    return "recording:" in text.split("---", 2)[1]  # its top matter names a recording


def missing_expectations(runtime: Runtime, recordings: Path = BOOK / "recordings") -> list[str]:
    """What a runtime lacks of the records the book must have for it, by how it is verified.

    A chapter's expected outputs are not among them: a chapter not yet verified on a
    runtime is allowed and reported (:func:`declared_standings`)."""
    if runtime.verified_by == "recording":
        releases = {version.split("+")[0]
                    for path in recordings.glob("*.ipynb")
                    for versions in nbformat.read(path, as_version=4).metadata[PROVENANCE_KEY]
                    ["environments"].values() for name, version in versions.items()
                    if name == "torch"}
        return [] if runtime.torch in releases else [f"a recording with torch {runtime.torch}"]
    return [f"exhibit {e.key}: a record for torch {runtime.torch}"
            for wing in book_museum().values() for e in wing.exhibits
            if e.runs_in_every_build and e.record_for(runtime.torch) is None]


def test_every_declared_runtime_has_its_committed_records():
    runtimes = load_runtimes(RUNTIMES_FILE)
    assert {r.verified_by for r in runtimes.values()} >= {"build", "downloads"}
    for runtime in runtimes.values():
        assert missing_expectations(runtime) == [], runtime.name


# --- Each chapter on the other torches the book targets --------------------------------

def declared_others() -> list[OtherTorch]:
    """The torches besides the build's that the book verifies its chapters on: each
    runtime verified by its downloads, and the Makefile's second torch (`make verify-torch`)."""
    second = re.search(r"^TORCH\s*\?=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M)[1]
    return ([other_torch(r.torch, (r,)) for r in reader_runtimes(RUNTIMES_FILE)]
            + [other_torch(second, ())])


def declared_standings(book: Path = BOOK, others: list[OtherTorch] | None = None) -> list[Standing]:
    """How each executed chapter of ``book`` stands on each of those torches."""
    checks = check_digests(book_museum())
    found = []
    for path in sorted(book.glob("*.md")):
        text = path.read_text()
        if not is_chapter_source(text) or _recorded(text):
            continue
        for other in others or declared_others():
            found += [s for s in [standing(path.stem, other, book / "expected", BUILD_TORCH,
                                           checks, read_chapter(text))] if s is not None]
    return found


def fail_on_stale(found: list[Standing]) -> None:
    """Stale expectations fail, one line each; chapters not yet verified are named."""
    for s in found:
        if s.state is State.NOT_YET:
            warnings.warn(s.message(), NotYetVerified, stacklevel=2)
    stale = [s.message() for s in found if s.state is State.STALE]
    if stale:
        pytest.fail("\n".join(stale), pytrace=False)


class NotYetVerified(UserWarning):
    """A chapter not yet verified on a torch the book targets: allowed, and said."""


def test_no_chapter_is_stale_on_a_torch_the_book_targets():
    fail_on_stale(declared_standings())


def _planted_book(tmp_path: Path) -> tuple[Path, str]:
    """A copy of the book's chapters and expected outputs; a chapter that runs on Colab."""
    book = tmp_path / "book"
    book.mkdir()
    for path in BOOK.glob("*.md"):
        shutil.copy(path, book)
    shutil.copytree(BOOK / "expected", book / "expected")
    chapter = next(p.stem for p in sorted(book.glob("*.md"))
                   if is_chapter_source(p.read_text()) and not _recorded(p.read_text()))
    return book, chapter


def test_a_changed_cell_makes_a_runtimes_expectations_stale(tmp_path):
    book, chapter = _planted_book(tmp_path)
    colab = declared_others()[0]
    expected = expectations_path(book / "expected", BUILD_TORCH, chapter)
    theirs = expectations_path(book / "expected", colab.torch, chapter)
    shutil.copy(expected, theirs)  # as if just recorded on Colab: every cell there
    assert [s.state for s in declared_standings(book, [colab]) if s.chapter == chapter] == \
        [State.VERIFIED]
    # A cell's code changes and the build's outputs are accepted: a new key there.
    build = read_expectations(expected)
    old = next(k for k in build.by_edition[Edition.STUDENT.value] if k in build.by_edition[
        Edition.INSTRUCTOR.value] and not k.startswith(tuple(check_digests(book_museum()))))
    expected.write_text(expected.read_text().replace(f"=== cell {old} ", "=== cell 0badc0de "))
    found = [s for s in declared_standings(book, [colab]) if s.chapter == chapter]
    assert [s.state for s in found] == [State.STALE]
    with pytest.raises(pytest.fail.Exception) as failed:
        fail_on_stale(found)
    message = str(failed.value)
    assert message.count("\n") == 0 and message.startswith(f"{chapter}: stale on {colab.label}")
    assert f"`{build.first_lines[old]}`" in message and str(theirs) in message
    assert "1 cell(s) without an entry" in message and "1 entry(ies) for code" in message
    assert f"`{colab.command}` records it again" in message


def test_a_chapter_without_a_runtimes_expectations_is_not_yet_verified(tmp_path):
    book, chapter = _planted_book(tmp_path)
    colab = declared_others()[0]
    expectations_path(book / "expected", colab.torch, chapter).unlink(missing_ok=True)
    found = [s for s in declared_standings(book, [colab]) if s.chapter == chapter]
    assert [s.state for s in found] == [State.NOT_YET]
    with pytest.warns(NotYetVerified, match=f"{chapter}: not yet verified on "
                                            f"{re.escape(colab.label)}.*{colab.command}"):
        fail_on_stale(found)  # allowed: no failure


def test_a_runtime_without_expectations_is_named():
    colab = reader_runtimes(RUNTIMES_FILE)[0]
    planted = Runtime(**{**colab.__dict__, "packages": {**colab.packages, "torch": "9.9.9+cpu"}})
    assert any(m.startswith("exhibit ") for m in missing_expectations(planted))
    found = declared_standings(others=[other_torch(planted.torch, (planted,))])
    chapters = [n for n, text in _chapters().items() if not _recorded(text)]
    assert [s.chapter for s in found] == chapters
    assert all(s.state is State.NOT_YET and "9.9.9" in s.message() for s in found)
    tpu = next(r for r in load_runtimes(RUNTIMES_FILE).values() if r.verified_by == "recording")
    assert missing_expectations(Runtime(**{**tpu.__dict__, "packages": {"torch": "9.9.9"}}))


# --- The replica's comparisons ----------------------------------------------------------

def _replayed(runtime: Runtime, chapter: str) -> verify.ChapterRun:
    """A run of a download that printed exactly the committed expectations."""
    expected = read_expectations(expectations_path(BOOK / "expected", runtime.torch, chapter))
    run = verify.ChapterRun(chapter)
    for index, (key, text) in enumerate(expected.by_edition[Edition.STUDENT.value].items()):
        run.outputs.append(CellOutput(key, index, expected.first_lines[key], text))
    return run


def test_a_download_cell_that_differs_from_its_expectation_is_named(capsys):
    colab = reader_runtimes(RUNTIMES_FILE)[0]
    # A chapter not yet verified on Colab has nothing to replay.
    chapters = [n for n, text in _chapters().items() if not _recorded(text)
                and expectations_path(BOOK / "expected", colab.torch, n).is_file()]
    for chapter in chapters:
        assert verify.check_chapter(_replayed(colab, chapter), colab, "here", BUILD_TORCH,
                                    False) == 0
    run = _replayed(colab, chapters[0])
    planted = next(i for i, o in enumerate(run.outputs) if o.text)
    run.outputs[planted] = CellOutput(**{**run.outputs[planted].__dict__, "text": "planted"})
    capsys.readouterr()
    assert verify.check_chapter(run, colab, "here", BUILD_TORCH, False) == 1
    out = capsys.readouterr().out
    assert "1 different" in out and f"`{run.outputs[planted].first_line}`" in out
    assert "+planted" in out


def test_accepting_on_a_runtime_refuses_an_output_that_holds_the_time_it_ran(tmp_path,
                                                                             monkeypatch, capsys):
    """`make accept-outputs-runtime` refuses, as `make accept-outputs` does, an output that
    holds the time its run ran at: the run's start is the clock's window."""
    from datetime import UTC, datetime, timedelta

    colab = reader_runtimes(RUNTIMES_FILE)[0]
    monkeypatch.setattr(verify, "EXPECTED", tmp_path)
    now = datetime.now(UTC)
    run = verify.ChapterRun("chapter", [CellOutput("0000000a", 1, "print(6 * 7)", "42"),
                                        CellOutput("0000000b", 2, "print(time.ctime())",
                                                   now.ctime(), line=7)])
    run.started = now - timedelta(seconds=5)
    assert verify.check_chapter(run, colab, "here", BUILD_TORCH, True) == 1
    out = capsys.readouterr().out
    assert "book/chapter.md:7: code cell `print(time.ctime())` is not accepted: its output " \
        f"holds the time it ran ({now.ctime()})" in out, out
    written = read_expectations(expectations_path(tmp_path, colab.torch, "chapter"))
    assert written.by_edition[Edition.STUDENT.value] == {"0000000a": "42"}


def test_accepting_on_a_runtime_says_when_an_output_outgrew_its_pattern(tmp_path, monkeypatch,
                                                                       capsys):
    """As `make accept-outputs` does: the entry is written as it is, unmarked, and said."""
    colab = reader_runtimes(RUNTIMES_FILE)[0]
    monkeypatch.setattr(verify, "EXPECTED", tmp_path)
    path = expectations_path(tmp_path, colab.torch, "chapter")
    path.parent.mkdir(parents=True)
    path.write_text("# header\n\n=== cell 0000000a (varies) · timed()\n    took <duration>\n")
    run = verify.ChapterRun("chapter", [CellOutput("0000000a", 1, "timed()", "took a while")])
    verify.check_chapter(run, colab, "here", BUILD_TORCH, True)
    assert f"{path}:3: the output of `timed()` no longer matches its pattern: written as it " \
        "is, unmarked" in capsys.readouterr().out
    assert read_expectations(path).varying[Edition.STUDENT.value] == set()


def test_the_summary_counts_a_varying_output_by_its_pattern():
    """A ``(varies)`` entry is a pattern in the summary's counts, as in the comparison."""
    student = Edition.STUDENT.value
    expectations = Expectations()
    expectations.by_edition[student] = {"a": "took <duration>", "b": "2"}
    expectations.varying[student] = {"a"}
    outputs = [CellOutput("a", 1, "timed()", "took 1.5 ms"), CellOutput("b", 2, "1 + 1", "2")]
    assert verify._same(expectations, outputs) == (2, 0)
    outputs[0] = CellOutput("a", 1, "timed()", "took a while")
    assert verify._same(expectations, outputs) == (1, 1)


def test_an_exhibit_that_differs_from_its_record_is_named(capsys):
    colab = reader_runtimes(RUNTIMES_FILE)[0]
    exhibits = [e for w in book_museum().values() for e in w.exhibits
                if e.record_for(colab.torch)]
    caught = {e.key: (e, f"{e.record_for(colab.torch).type}: {e.record_for(colab.torch).message}")
              for e in exhibits}
    assert verify.check_exhibits(caught, colab, "here", BUILD_TORCH, False) == 0
    first = exhibits[0]
    caught[first.key] = (first, "RuntimeError: planted")
    assert verify.check_exhibits(caught, colab, "here", BUILD_TORCH, False) == 1
    out = capsys.readouterr().out
    assert f"exhibit {first.key} on {colab.title}" in out and "RuntimeError: planted" in out


def test_accepting_records_the_replica_as_where_it_ran(tmp_path):
    colab = reader_runtimes(RUNTIMES_FILE)[0]
    source = next(e for w in book_museum().values() for e in w.exhibits
                  if e.record_for(colab.torch))
    shutil.copytree(source.path.parent, tmp_path / "pytorch")
    exhibit = next(e for e in book_museum(tmp_path)["pytorch"].exhibits if e.key == source.key)
    write_records(exhibit, [r for r in exhibit.records if r.torch != colab.torch])
    exhibit = next(e for e in book_museum(tmp_path)["pytorch"].exhibits if e.key == source.key)
    assert exhibit.record_for(colab.torch) is None
    assert verify.check_exhibits({exhibit.key: (exhibit, "RuntimeError: new text")}, colab,
                                 "a replica of Colab", BUILD_TORCH, True) == 0
    record = next(e for e in book_museum(tmp_path)["pytorch"].exhibits
                  if e.key == source.key).record_for(colab.torch)
    assert (record.where, record.type, record.message) == (
        "a replica of Colab", "RuntimeError", "new text")


# --- What a reader of the museum sees ----------------------------------------------------

def test_the_museum_shows_colabs_text_where_it_differs_from_the_builds():
    from coursebook.museum.prepare import exhibit_cells, readers_records

    colab = reader_runtimes(RUNTIMES_FILE)[0]
    build = BUILD_TORCH
    differ = 0
    for wing in book_museum().values():
        for exhibit in wing.exhibits:
            if not exhibit.runs_in_every_build:
                continue
            ours, theirs = exhibit.record_for(build), exhibit.record_for(colab.torch)
            cells = exhibit_cells(exhibit, len(wing.exhibits), build)
            check, note = cells[2].source, cells[3].source
            if (ours.type, ours.message) == (theirs.type, theirs.message):
                assert readers_records(exhibit, ours) == [] and "elsewhere=" not in check
                continue
            differ += 1
            assert colab.reader_label in check and json.dumps(theirs.message)[1:-1] in check
            assert f"On {colab.reader_label} it reads:" in note
            assert theirs.message in note and ours.message in note
    assert differ  # Colab's torch words some errors otherwise


def test_the_museum_box_names_colab_and_its_text(monkeypatch):
    import coursebook.exhibit_checks as checks

    shown: list[str] = []
    monkeypatch.setattr(checks, "display", lambda markdown: shown.append(markdown.data))
    sys.last_value = RuntimeError("new text")  # what the cell above raised; the check takes it
    record = {"torch": "2.13.0", "source": "build", "where": "here", "date": "",
              "type": "RuntimeError", "message": "new text"}
    colab = {**record, "torch": "2.11.0", "message": "colab text", "label": "Colab (torch 2.11.0)"}
    checks.check_raised("pytorch/99", record, record, elsewhere=(colab,))
    assert ":::{admonition} On Colab (torch 2.11.0)" in shown[0]
    assert "RuntimeError: colab text" in shown[0] and "Changed: `new` → `colab`." in shown[0]
    sys.last_value = RuntimeError("new text")
    checks.check_raised("pytorch/99", record, record, elsewhere=({**colab, "message": "new text"},))
    assert "On Colab" not in shown[1]  # the same text: nothing to show


# --- The replica itself (slow; its environment is Python 3.13 and a multi-GB torch) --------

def _replica(runtime: Runtime) -> Path:
    return ROOT / f".venv-runtime-{runtime.name}"


@pytest.mark.slow
def test_the_replica_run_passes_and_fails_on_a_planted_expectation(built, tmp_path, monkeypatch,
                                                                   capsys):
    """The student downloads of a real build, run in the replica: every cell and exhibit as
    committed; then one planted expectation and one planted record, each named."""
    colab = reader_runtimes(RUNTIMES_FILE)[0]
    if not (_replica(colab) / ".requirements.json").is_file():
        pytest.skip(f"no replica of {colab.name}: `make verify-runtime RUNTIME={colab.name}` "
                    "creates it (CI leaves it out)")
    downloads = built["student"].outdir / "html" / "_sources"
    assert verify.main([colab.name, "--downloads", str(downloads)]) == 0
    out = capsys.readouterr().out
    chapters = [n for n, text in _chapters().items() if not _recorded(text)
                and expectations_path(BOOK / "expected", colab.torch, n).is_file()]
    compared = re.findall(r"expected outputs: (\d+) same, (\d+) different", out)
    assert len(compared) == len(chapters) and all(d == "0" and int(s) for s, d in compared)
    assert re.search(r"records: [1-9]\d* same, 0 different", out)

    expected = tmp_path / "expected"
    shutil.copytree(BOOK / "expected", expected)
    path = expectations_path(expected, colab.torch, chapters[0])
    lines = path.read_text().splitlines()
    planted = next(i for i, line in enumerate(lines) if line.startswith("    "))
    lines[planted] = "    planted"
    path.write_text("\n".join(lines) + "\n")
    exhibits = tmp_path / "exhibits"
    shutil.copytree(ROOT / "exhibits", exhibits)
    exhibit = next(e for w in book_museum(exhibits).values() for e in w.exhibits
                   if e.record_for(colab.torch))
    record = exhibit.record_for(colab.torch)
    exhibit.path.write_text(exhibit.path.read_text().replace(
        json.dumps(record.message, ensure_ascii=False), '"planted"'))
    monkeypatch.setattr(verify, "EXPECTED", expected)
    monkeypatch.setattr(verify, "EXHIBITS_DIR", exhibits)
    assert verify.main([colab.name, "--downloads", str(downloads)]) == 1
    out = capsys.readouterr().out
    assert out.count("shows a different output") == 1 and "-planted" in out
    assert f"exhibit {exhibit.key} on {colab.title}" in out and "RuntimeError: planted" in out


@pytest.mark.slow  # a build (it stops while loading the data: no kernel)
def test_a_malformed_runtimes_file_stops_the_build_in_one_line(tiny_book, tmp_path):
    from conftest import sphinx_build

    bad = tmp_path / "runtimes.toml"
    bad.write_text(RUNTIMES_FILE.read_text().replace('verified_by = "downloads"',
                                                     'verified_by = "dowloads"'))
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache",
                         settings={"coursebook_runtimes_file": str(bad)})
    line = next(n for n, text in enumerate(bad.read_text().splitlines(), 1) if "dowloads" in text)
    assert build.returncode != 0 and "Traceback" not in build.log
    assert build.log.count(f"{bad}:{line}: ERROR: field ") == 1
    assert ".verified_by: is 'dowloads' (make it one of 'build', 'downloads'" in build.log
