"""The museum's exhibits: valid data, one source, errors and fixes as recorded."""

import re
import shutil

import nbformat
import pytest

from conftest import BOOK, EXHIBITS, MACHINE_KINDS_FILE, TORCH_VERSION, book_museum
from coursebook.exhibit_checks import ExhibitMismatch, check_raised
from coursebook.model.cell_notes import noted
from coursebook.model.machine_kinds import load_machine_kinds
from coursebook.museum.model import ExhibitError, load_exhibit
from coursebook.museum.prepare import (
    ERROR_SUMMARY,
    REVEAL,
    REVEAL_CLASS,
    cell_origins,
    exhibit_cells,
    origin_of,
    place_museum,
)

SEED = "museum-pytorch-wing.txt"  # in the course material
MUSEUM = book_museum()
ALL = [e for wing in MUSEUM.values() for e in wing.exhibits]
CPU = [e for e in ALL if e.runs_in_every_build]


@pytest.mark.parametrize("wing", MUSEUM.values(), ids=lambda wing: wing.name)
def test_each_wing_numbers_its_exhibits_and_uses_its_own_rooms(wing):
    assert [e.number for e in wing.exhibits] == list(range(1, len(wing.exhibits) + 1))
    assert {e.room for e in wing.exhibits} == set(wing.rooms)  # every room shows something


def _as_run(code: str) -> re.Pattern:
    """The code's lines, each with any comment of its own: the program the museum ran, whose
    comments the book may reword (a comment naming the cause would answer before the reveal)."""
    lines = [re.escape(re.sub(r"[ \t]*#.*$", "", line)) for line in code.strip().splitlines()]
    return re.compile("\n".join(line + r"(?:[ \t]*#[^\n]*)?" for line in lines))


@pytest.mark.parametrize("exhibit", ALL, ids=lambda e: e.key)
def test_the_museum_record_is_the_seed_verbatim(exhibit, seeds):
    seed = (seeds / SEED).read_text(encoding="utf8")
    record = exhibit.museum_record
    assert f"{record.type}: {record.message}" in seed
    assert _as_run(exhibit.failing_code).search(seed), exhibit.failing_code


def test_the_museum_code_is_the_seeds_with_comments_reworded_only():
    museum = "x = torch.ones(3)\nx += 1  # in-place on the leaf\n"
    assert _as_run("x = torch.ones(3)\nx += 1  # one update step\n").search(museum)
    assert _as_run("x = torch.ones(3)\nx += 1\n").search(museum)
    assert not _as_run("x = torch.ones(3)\nx += 2  # in-place on the leaf\n").search(museum)


@pytest.mark.parametrize("exhibit", CPU, ids=lambda e: e.key)
def test_the_failing_code_raises_its_record_for_this_torch(exhibit):
    from accept_exhibit_records import raised_by

    record = exhibit.record_for(TORCH_VERSION)
    assert record is not None, f"no record for torch {TORCH_VERSION}: make accept-outputs"
    assert raised_by(exhibit) == (record.type, record.message)


@pytest.mark.parametrize("exhibit", CPU, ids=lambda e: e.key)
def test_the_fix_runs(exhibit):
    exec(compile(exhibit.fix_code, str(exhibit.path), "exec"), {"__name__": "exhibit"})


def test_no_exhibit_is_copied_into_a_chapter():
    chapters = "\n".join(p.read_text() for p in BOOK.rglob("*.md"))
    for exhibit in ALL:
        assert exhibit.failing_code.strip() not in chapters, exhibit.key
        assert exhibit.lesson.strip()[:80] not in chapters, exhibit.key


def test_exhibit_cells_run_the_failing_code_then_check_it():
    exhibit = CPU[1]
    failing, check = exhibit_cells(exhibit, len(ALL), "2.13.0+cpu")[1:3]
    assert failing.source == exhibit.failing_code
    assert failing.metadata.tags == ["raises-exception", "hide-output"]  # the error: a click away
    assert failing.metadata.mystnb["code_prompt_show"] == "Show the error"
    assert repr(exhibit.record_for("2.13.0").message) in check.source  # part of the cache key


@pytest.mark.parametrize("exhibit", CPU, ids=lambda e: e.key)
def test_an_exhibit_shows_its_code_before_its_error_cause_and_fix(exhibit):
    cells = exhibit_cells(exhibit, len(ALL), "2.13.0+cpu")
    sources = [cell.source for cell in cells]
    failing = sources.index(exhibit.failing_code)
    lesson = next(i for i, source in enumerate(sources) if exhibit.lesson in source)
    fix = next(i for i, cell in enumerate(cells) if cell.cell_type == "code"
               and cell.source == exhibit.fix_code)
    assert failing < lesson < fix
    before = "\n".join(sources[:failing])  # what a reader sees before the code
    assert exhibit.lesson not in before and exhibit.fix_note not in before
    note = next(cell for cell in cells if "download-only" in cell.metadata.get("tags", []))
    assert note.source.startswith(f"````{{dropdown}} {ERROR_SUMMARY}\n")  # collapsed
    assert exhibit.record_for("2.13.0").message in note.source


@pytest.mark.parametrize("exhibit", [e for e in ALL if not e.runs_in_every_build],
                         ids=lambda e: e.key)
def test_a_captured_exhibit_shows_its_code_before_its_error_and_cause(exhibit):
    cells = exhibit_cells(exhibit, len(ALL), TORCH_VERSION)
    first = cells[0].source
    code, error = first.index(exhibit.failing_code), first.index("{dropdown} Show the error")
    assert code < error < first.index(exhibit.museum_record.message) < first.index(exhibit.lesson)
    raising = [c for c in cells if "raises-exception" in c.metadata.get("tags", [])]
    assert all("hide-output" in c.metadata.tags for c in raising)  # each run's error a click away


@pytest.mark.parametrize("exhibit", ALL, ids=lambda e: e.key)
def test_the_cause_waits_behind_a_click_after_the_error(exhibit):
    """Predict, then reveal: the title asks "what goes wrong, and why?"; the cause (and a
    running exhibit's fix note) is in *The cause and the fix*, collapsed, after the error."""
    cells = exhibit_cells(exhibit, len(ALL), "2.13.0+cpu")
    sources = [cell.source for cell in cells]
    [reveal] = [i for i, source in enumerate(sources) if f"{{dropdown}} {REVEAL}\n" in source]
    before, _, inside = sources[reveal].partition(f"{{dropdown}} {REVEAL}\n")
    shown = "\n".join(sources[:reveal] + [before])
    assert exhibit.lesson in inside and exhibit.lesson not in shown
    assert exhibit.failing_code in shown  # and the error before it (the tests above)
    if exhibit.runs_in_every_build:  # its fix's code cell comes next: the page folds it in
        assert exhibit.fix_note in inside and sources[reveal + 1] == exhibit.fix_code


def test_a_pages_reveal_takes_in_the_rest_of_its_exhibit():
    """A Markdown dropdown holds no code cell: on the page, the fix's cell and all else after
    *The cause and the fix* in the exhibit's section go into it; the next exhibit stays."""
    from docutils import nodes

    from coursebook.museum.render import fold_reveals

    def cell(text):
        return nodes.container("", nodes.literal_block(text, text), nb_element="cell_code")

    reveal = nodes.container("", nodes.rubric("", REVEAL), nodes.paragraph("", "The cause."),
                             design_component="dropdown",
                             container_classes=["sd-mb-3", REVEAL_CLASS])
    fix, history = cell("fix_code"), nodes.paragraph("", "The museum's fix.")
    exhibit = nodes.section("", nodes.title("", "01"), cell("failing_code"), reveal, fix,
                            history)
    following = nodes.section("", nodes.title("", "02"), cell("failing_code"))
    page = nodes.section("", exhibit, following)
    fold_reveals(page)
    assert exhibit.children[-1] is reveal and reveal.children[-2:] == [fix, history]
    assert fix.parent is reveal and len(following.children) == 2


def test_each_fix_of_the_eager_room_prints_what_it_computes(capsys):
    for exhibit in CPU:
        exec(compile(exhibit.fix_code, str(exhibit.path), "exec"), {"__name__": "exhibit"})
        assert capsys.readouterr().out.strip(), exhibit.key  # the reader sees the fix work


def _fix_checks(exhibit) -> list[nbformat.NotebookNode]:
    """The cells that run a captured exhibit's fix again: each is followed by the mark that
    says the fix ran."""
    cells = exhibit_cells(exhibit, len(ALL), TORCH_VERSION)
    return [before for before, cell in zip(cells, cells[1:])
            if cell.source == "from coursebook.exhibit_checks import fix_ran\nfix_ran()"]


@pytest.mark.parametrize("exhibit",
                         [e for e in ALL if not e.runs_in_every_build and _fix_checks(e)],
                         ids=lambda e: e.key)
def test_each_fix_a_tpu_exhibit_runs_again_prints_on_its_recordings(exhibit):
    """Predict, then reveal (issue 44): where the book runs a TPU exhibit's fix again, the
    recorded output the page shows under it is not empty, so the reader sees the fix work."""
    recorded = [{cell.source: cell for cell in nbformat.read(path, as_version=4).cells}
                for path in sorted((BOOK / "recordings").glob("*.ipynb"))]
    for fix in _fix_checks(exhibit):
        runs = [cells[fix.source] for cells in recorded if fix.source in cells]
        assert runs, f"{exhibit.key}: no recording runs its fix as the book has it (re-record)"
        assert all("".join(output.get("text", "") for output in run.outputs).strip()
                   for run in runs), f"{exhibit.key}: its fix prints nothing"


@pytest.mark.parametrize("number, edit, message", [
    ("03", lambda t: t.replace('title = "', 'titel = "', 1),
     "field titel: is no field of this table"),
    ("03", lambda t: re.sub(r'\ntitle = "[^\n]*', "", t, count=1), "field title: is missing"),
    ("03", lambda t: t.replace("number = 3", 'number = "three"', 1),
     "field number: is 'three' (make it a whole number)"),
    ("03", lambda t: t.replace('room = "eager"', 'room = "attic"', 1),
     "field room: is 'attic' (make it one of"),
    ("03", lambda t: t.replace("number = 3", "number = 4", 1),
     "file name must start with the same number"),
    ("03", lambda t: t.replace("message = ", "mesage = ", 1),
     "field records[0].mesage: is no field"),
    ("03", lambda t: t + "\n[[records]\n", "not valid TOML"),
    ("08", lambda t: t.replace('source = "museum"', 'source = "build"', 1),
     "field records: needs exactly one record with source 'museum'"),
    ("08", lambda t: t.replace('side_environment = "old-torchax"\n', "", 1),
     "field cpu.side_environment: and side_packages come together"),
    ("08", lambda t: t.replace('"torchax==0.0.5"', '"torchax>=0.0.5"', 1),
     "field cpu.side_packages: holds a requirement without a version"),
    ("08", lambda t: t.replace("mutable_array yet", 'mutable_array yet """', 1),
     'field cpu.reproduction: contains """'),
])
def test_a_malformed_exhibit_names_its_file_and_field(tmp_path, number, edit, message):
    source = next(EXHIBITS.glob(f"pytorch/{number}-*.toml"))
    broken = tmp_path / source.name
    broken.write_text(edit(source.read_text()))
    with pytest.raises(ExhibitError) as error:
        load_exhibit(broken, MUSEUM["pytorch"].rooms, load_machine_kinds(MACHINE_KINDS_FILE))
    assert str(broken) in str(error.value) and message in str(error.value)


@pytest.mark.parametrize("marker, message", [
    ("{museum-room} pytorch", "a museum marker reads `{museum-room} WING ROOM`, got ['pytorch']"),
    ("{museum-introduction} jax", f"no wing 'jax' under exhibits/ (have {sorted(MUSEUM)})"),
    ("{museum-room} pytorch attic", "wing 'pytorch' has no exhibit in room 'attic'"),
])
def test_a_museum_marker_that_places_nothing_says_why(marker, message):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"```{marker}\n```")])
    with pytest.raises(ExhibitError) as error:
        place_museum(notebook, MUSEUM, TORCH_VERSION)
    assert str(error.value) == message


def test_a_wing_whose_exhibits_skip_a_number_is_refused(tmp_path):
    wing = tmp_path / "pytorch"
    shutil.copytree(EXHIBITS / "pytorch", wing)
    count = len(list(wing.glob("[0-9]*.toml")))
    next(wing.glob("01-*.toml")).unlink()
    with pytest.raises(ExhibitError) as refused:
        book_museum(tmp_path)
    assert f"exhibits must be numbered 1..{count - 1}, got {list(range(2, count + 1))}" \
        in str(refused.value) and str(wing) in str(refused.value)


def _raise(error: Exception) -> None:
    import sys
    sys.last_value = error


MUSEUM_RECORD = {"torch": "2.2.2", "where": "the course machine, CPU", "date": "",
                 "type": "RuntimeError", "message": "old text", "source": "museum"}
THIS_RECORD = dict(MUSEUM_RECORD, torch="2.13.0", source="build", message="new text")


def test_check_raised_accepts_the_recorded_error_and_notes_a_change(monkeypatch):
    import coursebook.exhibit_checks as checks
    displayed = []
    monkeypatch.setattr(checks, "display", lambda markdown: displayed.append(markdown.data))
    _raise(RuntimeError("new text"))
    check_raised("pytorch/99", THIS_RECORD, MUSEUM_RECORD)
    shown = "".join(displayed)
    assert "Changed since torch 2.2.2" in shown and "RuntimeError: old text" in shown


@pytest.mark.parametrize("raised, expected, message", [
    (RuntimeError("other text"), THIS_RECORD, "differs from its record"),
    (ValueError("new text"), THIS_RECORD, "differs from its record"),
    (RuntimeError("new text"), None, "has no record for the running torch"),
    (None, THIS_RECORD, "did not raise"),
])
def test_check_raised_stops_on_a_mismatch(raised, expected, message):
    import sys
    if raised is None:
        sys.__dict__.pop("last_value", None)
    else:
        _raise(raised)
    with pytest.raises(ExhibitMismatch) as error:
        check_raised("pytorch/99", expected, MUSEUM_RECORD)
    assert message in str(error.value)
    if expected is not None and raised is not None:
        assert "make accept-outputs" in str(error.value)


def _edition_text(cells, *tags: str) -> str:
    """The markdown of ``cells`` as an edition reads it (``tags``: its Sphinx tags)."""
    from myst_parser.config.main import MdParserConfig
    from sphinx.util.tags import Tags

    from coursebook.render.plain_markdown import PlainMarkdown

    reader = PlainMarkdown(lambda role, target: None,
                           md_config=MdParserConfig(enable_extensions={"colon_fence"}),
                           only=Tags(["html", "format_html", *tags]).eval_condition)
    return "\n".join(reader.convert(c.source) for c in cells if c.cell_type == "markdown")


@pytest.mark.parametrize("exhibit", [e for e in ALL if not e.runs_in_every_build],
                         ids=lambda e: e.key)
def test_a_captured_exhibits_provenance_is_the_instructors_only(exhibit):
    """Where and when the museum captured it, and what the book ran, is the instructor's to
    read; a student's page and download speak of the error and its fix."""
    cells = exhibit_cells(exhibit, len(ALL), TORCH_VERSION)
    record = exhibit.museum_record
    student, instructor = _edition_text(cells), _edition_text(cells, "instructor")
    for provenance in (record.where, record.date, "ran without error", "by this book",
                       "run again in a new Python", "run again where"):
        assert provenance not in student, provenance
    assert record.where in instructor and record.date in instructor
    assert "**The fix, run again**" not in student  # a heading over a cell that may show nothing


HISTORY = [e for e in ALL if e.museum_fix is not None]


@pytest.mark.parametrize("exhibit", HISTORY, ids=lambda e: e.key)
def test_a_fix_changed_since_the_museum_keeps_the_museums_below_it(exhibit, seeds):
    """Today's fix is the one a student copies; the museum's stays, verbatim, as history."""

    assert exhibit.museum_fix.code.strip() in (seeds / SEED).read_text(encoding="utf8")
    shown = "\n".join(c.source for c in exhibit_cells(exhibit, len(ALL), TORCH_VERSION))
    assert shown.index(exhibit.fix_code) < shown.index(exhibit.museum_fix.code)
    assert exhibit.museum_fix.changed in shown


@pytest.mark.parametrize("exhibit", [e for e in HISTORY if e.cpu and e.cpu.fix],
                         ids=lambda e: e.key)
def test_the_stand_in_runs_the_python_of_the_fix_shown(exhibit):
    """The shown fix, less its shell lines (`!pip`), is what the stand-in's recording runs."""
    python = [line for line in exhibit.fix_code.splitlines() if not line.startswith("!")]
    assert "\n".join(python).strip() == exhibit.cpu.fix.strip()


def test_a_museum_fix_without_its_code_names_the_field(tmp_path):
    source = next(EXHIBITS.glob("pytorch/08-*.toml"))
    broken = tmp_path / source.name
    broken.write_text(re.sub(r"(\[museum_fix\].*?)\ncode = '''.*?'''", r"\1", source.read_text(),
                             count=1, flags=re.S))
    with pytest.raises(ExhibitError) as error:
        load_exhibit(broken, MUSEUM["pytorch"].rooms, load_machine_kinds(MACHINE_KINDS_FILE))
    assert str(broken) in str(error.value)
    assert "field museum_fix.code: is missing" in str(error.value)


RERUN = [e for e in ALL if e.museum_rerun is not None]


def _captured(exhibit):
    return [c for c in exhibit_cells(exhibit, len(ALL), TORCH_VERSION) if c.cell_type == "code"]


@pytest.mark.parametrize("exhibit", [e for e in ALL if not e.runs_in_every_build],
                         ids=lambda e: e.key)
def test_every_fresh_python_cell_and_its_check_run_in_the_kernel_that_holds_no_device(exhibit):
    """A check reads the error its kernel last saw: it runs where the fresh Python's cell ran."""
    from coursebook.model.notebooks import FRESH_PYTHON_TAG, cell_tags, is_claim

    cells = [c for c in _captured(exhibit) if not is_claim(c)]
    for index, cell in enumerate(cells):
        if "run_in_fresh_python" in cell.source:
            assert FRESH_PYTHON_TAG in cell_tags(cell)
            check = cells[index + 1]
            assert "check_raised" in check.source or "fix_ran" in check.source
            assert cell_tags(check).count(FRESH_PYTHON_TAG) == 1
            stand_in_only = "stand-in-only" in cell_tags(cell)
            assert ("stand-in-only" in cell_tags(check)) == stand_in_only


def _program(cell) -> str:
    """The code a fresh-Python cell runs in its new process."""
    return cell.source.split("r'''\n", 1)[1].rsplit("\n'''", 1)[0]


@pytest.mark.parametrize("exhibit", RERUN, ids=lambda e: e.key)
def test_the_museums_code_runs_again_verbatim(exhibit):
    """Its set-up, then the museum's own failing code, in a fresh Python, checked against the
    museum's record: on every kind, or on the stand-in only where the exhibit says so."""
    from coursebook.model.notebooks import cell_tags

    cells = _captured(exhibit)
    rerun = exhibit.museum_rerun
    failing = next(c for c in cells if _program(c) == f"{rerun.setup}\n\n{exhibit.failing_code}")
    assert "raises-exception" in cell_tags(failing)
    assert ("stand-in-only" in cell_tags(failing)) == rerun.stand_in_only
    assert "accelerator-only" not in cell_tags(failing)
    assert exhibit.museum_record.message in cells[cells.index(failing) + 1].source


@pytest.mark.parametrize("exhibit", ALL, ids=lambda e: e.key)
def test_each_fix_is_checked_after_the_failing_code_in_its_process_unless_it_restarts(exhibit):
    """The fix check runs the program the page shows: the failing code (with what it needs
    first), then the fix, in one process; a fix that starts a fresh runtime runs alone, in a
    new process that never ran the failing code."""
    from coursebook.museum.prepare import in_one_process
    from coursebook.model.notebooks import FRESH_PYTHON_TAG, cell_tags

    if exhibit.runs_in_every_build:
        code = [c for c in exhibit_cells(exhibit, len(ALL), "2.13.0") if c.cell_type == "code"]
        failing = next(i for i, c in enumerate(code) if c.source == exhibit.failing_code)
        if exhibit.fix_in_fresh_runtime:
            fix = next(i for i, c in enumerate(code) if "run_in_fresh_python" in c.source)
            assert _program(code[fix]) == exhibit.fix_code
        else:  # the chapter's own kernel runs both, the fix after the failing code
            fix = next(i for i, c in enumerate(code) if c.source == exhibit.fix_code)
            assert FRESH_PYTHON_TAG not in cell_tags(code[fix])
        assert failing < fix
        return
    checks = {_program(c) for c in exhibit_cells(exhibit, len(ALL), TORCH_VERSION)
              if c.cell_type == "code" and "run_in_fresh_python" in c.source}
    rerun, cpu = exhibit.museum_rerun, exhibit.cpu
    if rerun is not None:
        assert (exhibit.fix_code if exhibit.fix_in_fresh_runtime else in_one_process(
            [(rerun.setup, False), (exhibit.failing_code, True),
             (exhibit.fix_code, False)])) in checks
    if cpu is not None and cpu.reproduction and cpu.fix:
        assert (cpu.fix if cpu.fix_in_fresh_runtime else in_one_process(
            [(cpu.reproduction, True), (cpu.fix, False)])) in checks


# A planted exhibit whose fix works only in a process the failing code never touched: the
# failing code changes the default dtype before it raises.
PLANTED = """number = 7
title = "A planted exhibit"
room = "tpu-bridges"
runs_on = "tpu"
lesson = "The failing code changes the process before it fails."
fix_note = "Make the tensor again."
failing_code = '''
torch.set_default_dtype(torch.float64)   # the process changes before the error
torch.ones(2, dtype=torch.int64).requires_grad_()
'''
fix_code = '''
import torch
x = torch.ones(2, requires_grad=True)
assert x.dtype == torch.float32, f"made as {x.dtype}"   # only where the default is untouched
'''
{fresh}
[museum_rerun]
note = "Its imports are added."
setup = '''
import torch
'''

[[records]]
torch = "unrecorded"
source = "museum"
where = "nowhere"
date = ""
type = "RuntimeError"
message = "only Tensors of floating point dtype can require gradients"
"""


def _planted_fix_check(tmp_path, fresh: bool):

    path = tmp_path / "07-planted.toml"
    path.write_text(PLANTED.replace("{fresh}", "fix_in_fresh_runtime = true" if fresh else ""))
    exhibit = load_exhibit(path, MUSEUM["pytorch"].rooms, load_machine_kinds(MACHINE_KINDS_FILE))
    cells = [c for c in exhibit_cells(exhibit, 9, TORCH_VERSION) if c.cell_type == "code"]
    check = cells[cells.index(next(c for c in cells if "fix_ran()" in c.source)) - 1]
    return exhibit, check.source


def test_a_fix_that_works_only_in_another_set_up_fails_its_check(tmp_path):
    """In a process of its own (the old fix_setup's way) the planted fix runs; checked after
    the failing code, as the page shows it, it fails."""
    from coursebook.exhibit_checks import run_in_fresh_python

    exhibit, book = _planted_fix_check(tmp_path, fresh=False)
    run_in_fresh_python(f"{exhibit.museum_rerun.setup}\n{exhibit.fix_code}")  # another set-up
    with pytest.raises(Exception) as error:
        exec(compile(book, "fix check", "exec"), {"__name__": "__main__"})
    assert type(error.value).__name__ == "AssertionError"
    assert str(error.value) == "made as torch.float64"


def test_a_fix_that_starts_a_fresh_runtime_is_checked_in_a_process_of_its_own(tmp_path):
    exhibit, book = _planted_fix_check(tmp_path, fresh=True)
    assert exhibit.failing_code not in book
    exec(compile(book, "fix check", "exec"), {"__name__": "__main__"})


@pytest.mark.parametrize("exhibit",
                         [e for e in ALL if e.museum_rerun or e.cpu and e.cpu.reproduction],
                         ids=lambda e: e.key)
def test_a_download_shows_the_exhibits_code_not_the_books_harness(exhibit):
    """A new Python process is the book's way to run a bridge's code: its cell is book-only,
    and a download says instead, under the code the page shows, what it does on a CPU."""
    from coursebook.render.downloads import download_notebook
    from coursebook.render.plain_markdown import PlainMarkdown

    cells = exhibit_cells(exhibit, len(ALL), TORCH_VERSION)
    fresh = [c for c in cells
             if "run_in_fresh_python" in c.source and "claim" not in c.metadata.tags]
    assert fresh and all("book-only" in c.metadata.tags for c in fresh)
    notebook = download_notebook(nbformat.v4.new_notebook(cells=cells),
                                 PlainMarkdown(lambda role, target: None))
    text = "\n".join(c.source for c in notebook.cells)
    for harness in ("run_in_fresh_python", "subprocess", "side_environment", "PYTHONPATH"):
        assert harness not in text, harness
    assert text.count("Run in a new runtime on a CPU") == len(fresh)


@pytest.mark.parametrize("exhibit",
                         [e for e in ALL if e.museum_rerun or e.cpu and e.cpu.reproduction],
                         ids=lambda e: e.key)
def test_a_reproductions_collapsed_error_is_the_error_alone(exhibit):
    """Under a captured exhibit's code run again on a CPU, the note above already says what it
    raises, with which packages: the collapsed block holds the error alone, not where the
    museum met it (provenance) nor which torch may word it otherwise (exhibit 08's error is
    an import error about jax; issue 44, R3's read)."""
    from coursebook.museum.prepare import ERROR_SUMMARY

    cells = exhibit_cells(exhibit, len(ALL), TORCH_VERSION)
    notes = [c.source for c in cells if ERROR_SUMMARY in c.source]
    museum = exhibit.museum_record
    assert notes and all(f"{museum.type}: {museum.message}" in note for note in notes)
    for note in notes:
        assert "museum met" not in note and "torch version" not in note, note


def test_a_museum_rerun_with_the_old_fix_setup_names_the_field(tmp_path):
    source = RERUN[0].path
    broken = tmp_path / source.name
    broken.write_text(source.read_text().replace(
        "\nsetup = '''", "\nfix_setup = '''\nimport torch\n'''\nsetup = '''", 1))
    with pytest.raises(ExhibitError) as error:
        load_exhibit(broken, MUSEUM["pytorch"].rooms, load_machine_kinds(MACHINE_KINDS_FILE))
    assert str(broken) in str(error.value)
    assert "field museum_rerun.fix_setup: is gone (the fix is checked after" in str(error.value)


def test_a_prepared_chapters_exhibit_cells_carry_their_field_and_check_in_their_note():
    """The museum page as an edition runs it: each code cell an exhibit adds is named by its
    note (exhibit, field, line), the same as by its source, and each check cell by its
    verdict; no other cell has either note."""
    from coursebook.prepare.chapters import edition_chapter
    from coursebook.prepare.editions import Edition

    path = BOOK / "museum-pytorch.md"
    notebook = edition_chapter(path.read_text(), str(path), Edition.STUDENT, MUSEUM,
                               TORCH_VERSION,
                               machine_kinds=load_machine_kinds(MACHINE_KINDS_FILE)).notebook
    by_source = cell_origins(MUSEUM, TORCH_VERSION)
    by_note = [(cell, origin_of(cell, MUSEUM)) for cell in notebook.cells]
    assert sum(origin is not None for _, origin in by_note) > 10
    for cell, origin in by_note:
        expected = by_source.get(cell.source)
        assert (origin and (origin.exhibit.key, origin.field, origin.line)) == (
            expected and (expected.exhibit.key, expected.field, expected.line)), cell.source
    labels = {noted(cell, "check", "") for cell in notebook.cells}
    assert labels == {"", "fix ran", "same error as recorded"}


def test_a_cells_exhibit_field_is_named_without_reading_the_exhibit_again(monkeypatch):
    """origin_of names the line of the exhibit's file as the museum read it, once a build:
    it read the file again for every cell it named (seen: fails on the code before)."""
    from pathlib import Path

    cells = exhibit_cells(CPU[0], 1, TORCH_VERSION)
    monkeypatch.setattr(Path, "read_text", lambda *_, **__: pytest.fail("the file read again"))
    origins = [origin for cell in cells if (origin := origin_of(cell, MUSEUM))]
    assert origins and all(origin.line > 1 for origin in origins)


def test_an_authors_cell_with_an_exhibits_code_is_named_at_its_own_line():
    """A chapter may show an exhibit's failing code in a cell of its own: an error there
    is the chapter's, named at its line, not the exhibit's (cells are paired with exhibits
    by their note, not by their source)."""
    from docutils import nodes

    from coursebook.model.cell_notes import place_at
    from coursebook.verify.chapter_checks import cell_problems

    exhibit = next(e for wing in MUSEUM.values() for e in wing.exhibits if e.runs_in_every_build)
    cells = [place_at(nbformat.v4.new_code_cell(exhibit.failing_code), 12)]
    doctree = nodes.container()
    shown = nodes.container(nb_element="cell_code", cell_index=0, cell_metadata={"tags": []})
    shown += nodes.literal_block("TypeError: boom", "TypeError: boom", classes=["traceback"])
    doctree += shown
    [problem] = cell_problems(doctree, cells, False, None, MUSEUM)
    assert problem.location is None and problem.line == 12
    assert "raised an error it was not tagged for" in problem.message

