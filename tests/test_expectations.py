"""Expected outputs: the file format, the comparison, and what the book commits."""

from dataclasses import replace

import nbformat
import pytest
from test_pytest_book import pytest_session

from conftest import BOOK, ROOT, TORCH_VERSION
from coursebook.execute.shared_cache import READS, book_code_digest, in_key
from coursebook.model.cell_notes import cell_key, source_line
from coursebook.model.notebooks import is_chapter_source, note_output_keys, read_chapter
from coursebook.model.recordings import recording_name
from coursebook.model.versions import release
from coursebook.verify.expectations import (
    EDITIONS,
    UNVERIFIED_KEY,
    Expectations,
    accept,
    cell_outputs,
    compare,
    expectations_path,
    keyed_cells,
    read_expectations,
    shown_text,
    write_expectations,
)
from coursebook.worddiff import changed_words, changes

EXPECTED = BOOK / "expected"
EXECUTED = [p for p in sorted(BOOK.glob("*.md")) if is_chapter_source(p.read_text())
            and recording_name(read_chapter(p.read_text())) is None]


def _notebook(*cells):
    """A notebook of these cells, keyed as a chapter's are when it is prepared."""
    notebook = nbformat.v4.new_notebook(cells=list(cells))
    note_output_keys(notebook)
    return notebook


def _code(source, outputs=(), **metadata):
    cell = nbformat.v4.new_code_cell(source, metadata=metadata)
    cell.outputs = [nbformat.from_dict(o) for o in outputs]
    return cell


def _stream(text):
    return {"output_type": "stream", "name": "stdout", "text": text}


def test_shown_text_covers_streams_results_errors_markdown_and_figures():
    cell = _code("x", [
        _stream("printed at 0x7f00aa\n"),
        {"output_type": "execute_result", "execution_count": 1, "metadata": {},
         "data": {"text/plain": "tensor([1.])"}},
        {"output_type": "display_data", "metadata": {},
         "data": {"text/markdown": "✓ checked"}},
        {"output_type": "display_data", "metadata": {},
         "data": {"image/png": "iVBOR", "text/plain": "Figure drawing:\n1\n2"}},
        {"output_type": "error", "ename": "RuntimeError", "evalue": "boom", "traceback": []},
    ])
    assert shown_text(cell) == ("printed at 0x…\ntensor([1.])\n✓ checked\n"
                                "[image/png] Figure drawing:\n1\n2\nRuntimeError: boom")


def test_a_value_glued_unshown_is_compared_by_its_text():
    """myst-nb's glue(..., display=False) prefixes its types; a page pastes it ({glue:})."""
    prefix = "application/papermill.record/"
    glued = {"output_type": "display_data", "data": {f"{prefix}text/plain": "3.5"},
             "metadata": {"scrapbook": {"name": "mean", "mime_prefix": prefix}}}
    assert shown_text(_code("glue('mean', m, display=False)", [glued])) == "3.5"
    # myst-nb takes it out of the cell as it reads the notebook, after the build took it: the
    # build compared nothing (HL3: '7 of 8 verified', the value pasted but not in the file)
    from myst_nb.ext.glue import extract_glue_data_cell

    from coursebook.execute.cached_chapters import as_run

    executed = _notebook(_code("glue('mean', m, display=False)", [glued]))
    kept = as_run(executed)
    extract_glue_data_cell(executed.cells[0])
    assert executed.cells[0].outputs == [] and shown_text(kept.cells[0]) == "3.5"


def test_keys_ignore_prose_and_change_with_code():
    one = _notebook(nbformat.v4.new_markdown_cell("prose"), _code("a = 1"), _code("a = 1"))
    two = _notebook(nbformat.v4.new_markdown_cell("other prose"), _code("a = 1"), _code("a = 1"))
    keys = [key for key, _ in keyed_cells(one)]
    assert keys == [key for key, _ in keyed_cells(two)]
    assert keys[1] == keys[0] + ".2"  # the same code twice: numbered
    assert keyed_cells(_notebook(_code("a = 2")))[0][0] != keys[0]


def test_the_file_round_trips_and_marks_only_what_differs_between_editions(tmp_path):
    shared, answer = _code("print(1)", [_stream("1\n")]), _code("print(2)", [_stream("2\n\n3\n")])
    check_student = _code("check()", [_stream("Write it first.\n")])
    check_instructor = _code("check()", [_stream("passed\n")])
    student = cell_outputs(_notebook(shared, check_student))
    instructor = cell_outputs(_notebook(shared, answer, check_instructor))
    expectations, _ = accept(accept(None, "student", student)[0], "instructor", instructor)
    path = tmp_path / "torch-2.13.0" / "chapter.txt"
    order = [o.key for o in instructor]
    assert write_expectations(path, expectations, lambda: order, ["# header"])
    text = path.read_text()
    assert text.count("(student)") == 1 and text.count("(instructor)") == 2  # answer, check
    again = read_expectations(path)
    assert again.by_edition == expectations.by_edition
    # nothing changed
    assert not write_expectations(path, again, lambda: order, ["# another header"])
    assert compare(again, "student", student) == []


def test_a_changed_output_and_a_new_cell_are_mismatches_with_a_diff(tmp_path):
    before = cell_outputs(_notebook(_code("x = 1", [_stream("Loss: 2.41\n")])))
    expectations, _ = accept(None, "student", before)
    changed = cell_outputs(_notebook(_code("x = 1", [_stream("Loss: 2.55\n")]),
                                     _code("y = 2", [_stream("new\n")])))
    mismatches = compare(expectations, "student", changed)
    assert [m.expected for m in mismatches] == ["Loss: 2.41", None]
    diff = mismatches[0].diff(tmp_path / "pt01.txt")
    assert "-Loss: 2.41" in diff and "+Loss: 2.55" in diff
    assert "has no expected output" in mismatches[1].diff(tmp_path / "pt01.txt")


def test_a_line_the_file_cannot_hold_is_named_with_the_header_it_should_have(tmp_path):
    """`make accept-outputs` reads the file before writing it, so it cannot mend one: the
    message says how the header is written instead of sending there."""
    from coursebook.verify.expectations import ExpectationsError

    path = tmp_path / "chapter.txt"
    path.write_text("# header\n\n=== cell 0000000a (varies) (student) · print(1)\n    1\n")
    with pytest.raises(ExpectationsError) as error:
        read_expectations(path)
    assert str(error.value).startswith(f"{path}:3: ")
    assert "=== cell KEY (student) (varies) · " in str(error.value)
    assert "rewrite it with" not in str(error.value)


def test_a_half_written_runs_line_reads_as_the_runs_it_names(tmp_path):
    """The runs only tell an output that varies: a run a merge left half is none, not a
    traceback; a read file's hash likewise (its torch then stale, as for an edited file)."""
    from coursebook.verify.expectations import _READS, _RUNS

    path = tmp_path / "chapter.txt"
    path.write_text(f"# header\n{_RUNS}student 1234abcd, instructor\n"
                    f"{_READS}names.txt 5678abcd, words.txt\n\n=== cell 0000000a · x\n    1\n")
    assert read_expectations(path).runs == {"student": "1234abcd"}
    assert read_expectations(path).reads == {"names.txt": "5678abcd"}


def test_an_unverified_cell_needs_a_reason_and_is_not_compared():
    outputs = cell_outputs(_notebook(_code("%pip install x", [_stream("varies\n")],
                                           **{UNVERIFIED_KEY: "pip's output varies"})))
    assert outputs[0].unverified == "pip's output varies"
    assert compare(Expectations(), "student", outputs) == []


@pytest.mark.parametrize("path", EXECUTED, ids=lambda p: p.name)
def test_every_executed_chapter_has_expected_outputs_for_this_torch(path):
    expectations = read_expectations(expectations_path(EXPECTED, TORCH_VERSION, path.stem))
    assert expectations is not None, f"run `make accept-outputs` for torch {TORCH_VERSION}"
    for edition in EDITIONS:
        assert expectations.by_edition[edition], (path.name, edition)


def unstated_reasons(text: str) -> list[str]:
    """The cells of a chapter marked ``unverified`` without their reason, in words."""
    return [cell.source.strip().splitlines()[0] for cell in read_chapter(text).cells
            if cell.cell_type == "code" and UNVERIFIED_KEY in cell.metadata
            and not (isinstance(cell.metadata[UNVERIFIED_KEY], str)
                     and len(cell.metadata[UNVERIFIED_KEY].split()) >= 3)]


@pytest.mark.parametrize("path", EXECUTED, ids=lambda p: p.name)
def test_only_cells_with_a_stated_reason_go_unverified(path):
    """Any code cell may go unverified, its reason stated in its metadata (the build lists
    each with it); an output that only varies in parts is a pattern, not unverified
    (docs/authoring.md, "Outputs that cannot be verified")."""
    assert unstated_reasons(path.read_text()) == [], \
        f"{path.name}: give each `unverified:` the reason its output cannot be verified"


def test_an_unverified_cell_without_its_reason_is_named():
    chapter = ("---\njupytext:\n  text_representation:\n    format_name: myst\n"
               "kernelspec:\n  name: python3\n  display_name: Python 3\n---\n\n"
               "```{code-cell} ipython3\n---\nunverified: true\n---\nimport time\n```\n\n"
               "```{code-cell} ipython3\n---\nunverified: the clock differs on each run\n---\n"
               "print(time.time())\n```\n")
    assert unstated_reasons(chapter) == ["import time"]


def test_expected_outputs_hold_no_machine_path():
    for path in EXPECTED.rglob("*.txt"):
        text = path.read_text()
        for marker in (str(ROOT), "/home/", "/root/", "site-packages/"):
            assert marker not in text, (path, marker)


def test_older_torch_versions_stay_as_history():
    versions = {p.name for p in EXPECTED.glob("torch-*")}
    assert f"torch-{release(TORCH_VERSION)}" in versions and len(versions) >= 2


def test_changed_words_mark_what_differs_and_keep_the_text():
    old, new = "output 0 of ExpBackward0, is at version 1", "output 0 of Exp, is at version 1"
    old_runs, new_runs = changed_words(old, new)
    assert "".join(t for t, _ in old_runs) == old and "".join(t for t, _ in new_runs) == new
    assert [t for t, changed in old_runs if changed] == ["ExpBackward0"]
    assert changes(old, new) == [("ExpBackward0", "Exp")]


def test_the_book_code_a_chapter_imports_is_part_of_its_cache_key():
    figures = _notebook(_code("from coursebook.figures import strides"))
    assert book_code_digest(figures) is not None
    assert book_code_digest(_notebook(_code("import torch"))) is None
    checks = _notebook(_code("from coursebook.exhibit_checks import check_raised"))
    assert book_code_digest(checks) != book_code_digest(figures)


@pytest.fixture(scope="module")
def book_items() -> list[str]:
    """The items `pytest book` collects: Sphinx reads the whole book for each edition,
    about 4 s of CPU (the tests that use it are slow)."""
    collected = pytest_session("--rootdir", str(ROOT), "--collect-only", str(BOOK))
    return [line for line in collected.stdout.splitlines() if line.startswith("book/")]


@pytest.mark.slow  # reads the book with Sphinx (book_items)
def test_pytest_collects_each_verified_cell_per_edition(book_items):
    items = [item for item in book_items if item.startswith("book/pt01.md::")]
    chapter = read_chapter((BOOK / "pt01.md").read_text())
    code = [c for _, c in keyed_cells(chapter) if UNVERIFIED_KEY not in c.metadata]
    answers = [c for c in code if "answer" in c.metadata.get("tags", [])]
    # Each edition adds a cell of checks per answer cell that lists some, and their table.
    checked = sum(1 for c in answers if c.metadata.get("checks"))
    added = 2 * (checked + 1) if checked else 0
    assert len(items) == 2 * len(code) - len(answers) + added, items
    first = "X = torch.tensor([[1., 2.], [3., 1.], [2., 4.]])"
    [line] = [source_line(c) for c in chapter.cells if c.source.startswith(first + "\n")]
    assert f"book/pt01.md::student::L{line} {first}" in items
    assert not [item for item in items if "::L0 " in item], items


TOP = ("---\njupytext:\n  text_representation:\n    format_name: myst\n"
       "kernelspec:\n  name: python3\n  display_name: Python 3\n---\n")


def test_each_cell_is_noted_at_its_own_line_a_repeated_one_too():
    # A short cell that recurs far below, after a mention of it in prose: each copy is
    # named at its own line (text search named the first for both).
    chapter = (TOP + "\n# T\n\nThe shape, `t.shape`, comes next.\n\n```{code-cell} ipython3\n"
               "t.shape\n```\n" + "\nProse.\n" * 40
               + "\n```{code-cell} ipython3\n:tags: [hide-input]"
               "\n\nt.shape\n```\n\n+++ {\"k\": 1}\n\nLast words.\n")
    lines = chapter.splitlines()
    notebook = read_chapter(chapter)
    note_output_keys(notebook)
    for cell in notebook.cells:
        assert lines[source_line(cell) - 1] == cell.source.strip().splitlines()[0]
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [source_line(cell) for cell in code] == [15, 101]
    assert [cell_key(cell) for cell in code] == [cell_key(code[0]), cell_key(code[0]) + ".2"]
    # The expected-outputs comparison names the repeated cell at its line.
    for cell, text in zip(code, ("torch.Size([2])", "torch.Size([3])")):
        cell.outputs = [nbformat.from_dict(_stream(text + "\n"))]
    outputs = cell_outputs(notebook)
    expectations, _ = accept(None, "student", outputs, run="r1")
    expectations.by_edition["student"][cell_key(code[1])] = "torch.Size([4])"
    # The same run printed the expected output: "varies between runs", at the cell's line.
    [mismatch] = compare(expectations, "student", outputs, run="r1")
    assert mismatch.varies
    assert mismatch.cell.line == 101 and mismatch.cell.key == cell_key(code[1])


def test_a_chapter_that_ran_but_whose_outputs_are_not_found_is_an_error(caplog):
    # Such a chapter was skipped silently: nothing compared, and the build succeeded.
    from types import SimpleNamespace

    from myst_nb.sphinx_ import NbMetadataCollector

    from coursebook.page_state import PREPARED, page_state_of
    from coursebook.prepare.chapters import PreparedChapter
    from coursebook.execute.cached_chapters import EXECUTED
    from coursebook.verify.chapter_checks import keep_cell_outputs

    env = SimpleNamespace(docname="chapter", temp_data={})
    # Its run succeeded, and the chapter client took no notebook from the cache.
    NbMetadataCollector.set_doc_data(env, "chapter", "exec_data", {"succeeded": True})
    env.temp_data.update({PREPARED: PreparedChapter(_notebook(_code("x = 1"))),
                          EXECUTED: None})
    keep_cell_outputs(SimpleNamespace(env=env), None)
    state = page_state_of(env, "chapter")
    assert state.failed and state.outputs is None
    assert "this chapter ran, but its outputs are not in the execution cache" in caplog.text


def test_versions_sort_as_releases_and_a_text_that_names_none_goes_first():
    from coursebook.model.versions import is_release, release, version_key

    versions = ["2.13.0", "unrecorded", "2.9.0+cu128", "2.14.1"]
    assert sorted(versions, key=version_key) == ["unrecorded", "2.9.0+cu128", "2.13.0", "2.14.1"]
    assert release("2.13.0+cpu") == "2.13.0"
    assert is_release("2.9.0+cu128") and not is_release("unrecorded")


def _torch_file(folder, torch, entries):
    path = folder / f"torch-{torch}" / "chapter.txt"
    path.parent.mkdir(parents=True)
    path.write_text("# header\n\n" + "".join(f"=== cell {key} · {first}\n    out\n"
                                           for key, first in entries.items()))


def test_a_stale_other_torch_counts_two_missing_cells_with_one_first_line_as_two(tmp_path):
    from coursebook.torch_versions.verify import State, other_torch, standing

    # The same code twice (keys numbered), then code changed since: none has an entry there.
    _torch_file(tmp_path, "2.13.0", {"0000000a.1": "print(x)", "0000000a.2": "print(x)",
                                     "0000000c": "y = 1"})
    _torch_file(tmp_path, "2.14.1", {"0000000c": "y = 1", "0000000b": "print(x)"})
    found = standing("chapter", other_torch("2.14.1", ()), tmp_path, "2.13.0", set(),
                     nbformat.v4.new_notebook())
    assert found.state is State.STALE
    assert "2 cell(s) without an entry (`print(x)`)" in found.message(), found.message()
    assert "1 entry(ies) for code the chapter no longer has" in found.message()
    assert "stale (2 cell(s) changed since)" in found.page_note()


def test_one_changed_cell_is_one_cell_changed_on_the_instructor_page(tmp_path):
    """A changed cell has a new key here and its old one there: one change, not two."""
    from coursebook.torch_versions.verify import other_torch, standing

    _torch_file(tmp_path, "2.13.0", {"0000000a": "x = 2", "0000000c": "y = 1"})
    _torch_file(tmp_path, "2.14.1", {"0000000b": "x = 1", "0000000c": "y = 1"})
    found = standing("chapter", other_torch("2.14.1", ()), tmp_path, "2.13.0", set(),
                     nbformat.v4.new_notebook())
    assert "stale (1 cell(s) changed since)" in found.page_note(), found.page_note()


def test_an_edit_of_a_file_the_cells_read_makes_another_torchs_outputs_stale(tmp_path):
    """`coursebook: {reads: [names.txt]}`: an edit runs the chapter again here, and the
    accepted outputs of another torch, run on the old file, are stale, not verified; a
    runtime's (the student download, which holds no such file) go by their code."""
    from coursebook.execute.shared_cache import key_execution_versions
    from coursebook.torch_versions.verify import State, other_torch, standing
    from coursebook.verify.expectations import accept_into

    names = tmp_path / "names.txt"
    names.write_text("emma\n")
    notebook = _notebook(_code("print(open('names.txt').read())", [_stream("emma\n")]))
    key_execution_versions(notebook, {"torch": "2.14.1"}, {"names.txt": names})
    outputs = cell_outputs(notebook)
    expected = tmp_path / "expected"
    for version in ("2.13.0", "2.14.1"):  # each accepted from a run on names.txt as it was
        path = expectations_path(expected, version, "chapter")
        for edition in EDITIONS:
            accept_into(path, read_expectations(path), edition, outputs,
                        lambda: [o.key for o in outputs], ["# header"],
                        reads=in_key(notebook, READS))
    other, runtime = other_torch("2.14.1", ()), other_torch("2.11.0", ())
    runtime = replace(runtime, downloads=True)
    assert standing("chapter", other, expected, "2.13.0", set(), notebook).state is State.VERIFIED
    names.write_text("emma\nolivia\n")
    key_execution_versions(notebook, {"torch": "2.13.0"}, {"names.txt": names})
    found = standing("chapter", other, expected, "2.13.0", set(), notebook)
    assert found.state is State.STALE and found.edited == ("names.txt",), found
    assert "1 file(s) its cells read changed since (`names.txt`)" in found.message()
    assert "stale (names.txt changed since)" in found.page_note(), found.page_note()
    copied = expectations_path(expected, "2.11.0", "chapter")
    copied.parent.mkdir()
    copied.write_text(expectations_path(expected, "2.13.0", "chapter").read_text())
    assert standing("chapter", runtime, expected, "2.13.0", set(), notebook).state \
        is State.VERIFIED
    # Accepted again here with the same outputs, the file takes the new hash.
    path = expectations_path(expected, "2.13.0", "chapter")
    accept_into(path, read_expectations(path), "student", outputs, list, ["# header"],
                reads=in_key(notebook, READS))
    assert read_expectations(path).reads == in_key(notebook, READS) != {}


@pytest.mark.slow  # reads the book with Sphinx (book_items)
def test_every_chapter_cell_item_has_its_own_name(book_items):
    # Two items of one name run once under `make test-suite`'s pytest-xdist, silently.
    repeated = sorted({item for item in book_items if book_items.count(item) > 1})
    assert book_items and not repeated, repeated
