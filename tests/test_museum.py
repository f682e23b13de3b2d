"""The museum's exhibits: valid data, one source, errors and fixes as recorded."""

import pytest
import torch

from conftest import BOOK, EXHIBITS, MACHINE_KINDS_FILE, book_museum
from coursebook.exhibit_checks import ExhibitMismatch, check_raised
from coursebook.model.machine_kinds import load_machine_kinds
from coursebook.model.museum import ExhibitError, exhibit_cells, load_exhibit, raised_by

SEED = "museum-pytorch-wing.txt"  # in the course material
MUSEUM = book_museum()
ALL = [e for wing in MUSEUM.values() for e in wing.exhibits]
CPU = [e for e in ALL if e.runs_in_every_build]


@pytest.mark.parametrize("wing", MUSEUM.values(), ids=lambda wing: wing.name)
def test_each_wing_numbers_its_exhibits_and_uses_its_own_rooms(wing):
    assert [e.number for e in wing.exhibits] == list(range(1, len(wing.exhibits) + 1))
    assert {e.room for e in wing.exhibits} == set(wing.rooms)  # every room shows something


@pytest.mark.parametrize("exhibit", ALL, ids=lambda e: e.key)
def test_the_museum_record_is_the_seed_verbatim(exhibit, seeds):
    seed = (seeds / SEED).read_text(encoding="utf8")
    record = exhibit.museum_record
    assert f"{record.type}: {record.message}" in seed
    assert exhibit.title in seed and exhibit.failing_code.strip() in seed


@pytest.mark.parametrize("exhibit", CPU, ids=lambda e: e.key)
def test_the_failing_code_raises_its_record_for_this_torch(exhibit):
    record = exhibit.record_for(torch.__version__)
    assert record is not None, f"no record for torch {torch.__version__}: make accept-outputs"
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
    assert failing.source == exhibit.failing_code and failing.metadata.tags == ["raises-exception"]
    assert repr(exhibit.record_for("2.13.0").message) in check.source  # part of the cache key


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace('title = "', 'titel = "', 1), "field 'title' is missing"),
    (lambda t: t.replace("number = 3", 'number = "three"', 1), "field 'number' must be a non-empty int"),
    (lambda t: t.replace('room = "eager"', 'room = "attic"', 1), "field 'room' is 'attic'"),
    (lambda t: t.replace("number = 3", "number = 4", 1), "file name must start with the same number"),
    (lambda t: t.replace("message = ", "mesage = ", 1), "records[0]: field 'message' is missing"),
    (lambda t: t + "\n[[records]\n", "not valid TOML"),
])
def test_a_malformed_exhibit_names_its_file_and_field(tmp_path, edit, message):
    source = next(EXHIBITS.glob("pytorch/03-*.toml"))
    broken = tmp_path / source.name
    broken.write_text(edit(source.read_text()))
    with pytest.raises(ExhibitError) as error:
        load_exhibit(broken, MUSEUM["pytorch"].rooms, load_machine_kinds(MACHINE_KINDS_FILE))
    assert str(broken) in str(error.value) and message in str(error.value)


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


HISTORY = [e for e in ALL if e.museum_fix is not None]


@pytest.mark.parametrize("exhibit", HISTORY, ids=lambda e: e.key)
def test_a_fix_changed_since_the_museum_keeps_the_museums_below_it(exhibit, seeds):
    """Today's fix is the one a student copies; the museum's stays, verbatim, as history."""
    from coursebook.model.museum import captured_exhibit_cells

    assert exhibit.museum_fix.code.strip() in (seeds / SEED).read_text(encoding="utf8")
    shown = "\n".join(c.source for c in captured_exhibit_cells(exhibit, len(ALL)))
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
    broken.write_text(source.read_text().replace("[museum_fix]\n", "[museum_fix]\ncoed = 1\n", 1)
                      .replace("\ncode = '''", "\nunused = '''", 1))
    with pytest.raises(ExhibitError) as error:
        load_exhibit(broken, MUSEUM["pytorch"].rooms, load_machine_kinds(MACHINE_KINDS_FILE))
    assert str(broken) in str(error.value) and "museum_fix: field 'code' is missing" in str(error.value)


RERUN = [e for e in ALL if e.museum_rerun is not None]


def _captured(exhibit):
    from coursebook.model.museum import captured_exhibit_cells
    return [c for c in captured_exhibit_cells(exhibit, len(ALL)) if c.cell_type == "code"]


@pytest.mark.parametrize("exhibit", [e for e in ALL if not e.runs_in_every_build],
                         ids=lambda e: e.key)
def test_every_fresh_python_cell_and_its_check_run_in_the_kernel_that_holds_no_device(exhibit):
    """A check reads the error its kernel last saw: it runs where the fresh Python's cell ran."""
    from coursebook.model.notebooks import FRESH_PYTHON_TAG, cell_tags

    cells = _captured(exhibit)
    for index, cell in enumerate(cells):
        if "run_in_fresh_python" in cell.source:
            assert FRESH_PYTHON_TAG in cell_tags(cell)
            check = cells[index + 1]
            assert "check_raised" in check.source or "fix_ran" in check.source
            assert cell_tags(check).count(FRESH_PYTHON_TAG) == 1
            stand_in_only = "stand-in-only" in cell_tags(cell)
            assert ("stand-in-only" in cell_tags(check)) == stand_in_only


@pytest.mark.parametrize("exhibit", RERUN, ids=lambda e: e.key)
def test_the_museums_code_runs_again_verbatim_on_every_kind(exhibit):
    """Its set-up, then the museum's own failing code (checked) and fix, each in a fresh
    Python, tagged for every machine kind: the device is the only difference."""
    from coursebook.model.notebooks import cell_tags

    cells = _captured(exhibit)
    rerun = exhibit.museum_rerun
    failing = next(c for c in cells if f"{rerun.setup}\n\n{exhibit.failing_code}" in c.source)
    fixed = next(c for c in cells if f"{rerun.fix_setup}\n\n{exhibit.fix_code}" in c.source)
    for cell in (failing, fixed):
        assert not {"stand-in-only", "accelerator-only"} & set(cell_tags(cell))
    assert "raises-exception" in cell_tags(failing) and "raises-exception" not in cell_tags(fixed)
    assert exhibit.museum_record.message in cells[cells.index(failing) + 1].source
    assert "fix_ran()" in cells[cells.index(fixed) + 1].source


@pytest.mark.parametrize("exhibit", [e for e in ALL if not e.runs_in_every_build],
                         ids=lambda e: e.key)
def test_a_downloaded_fresh_python_runs_as_the_stand_in_does(exhibit):
    """A download's own kernel may hold the TPU (a device serves one process): the new
    process gets the stand-in's variables, from the machine kinds."""
    from coursebook.model.museum import DOWNLOAD_SOURCE_KEY

    stand_in = next(k for k in load_machine_kinds(MACHINE_KINDS_FILE).values() if k.stand_in)
    for cell in _captured(exhibit):
        if "run_in_fresh_python" in cell.source:
            download = cell.metadata[DOWNLOAD_SOURCE_KEY]
            assert f"cpu = {stand_in.environment!r}\n" in download
            assert "env={**os.environ, **cpu}" in download


def test_a_museum_rerun_without_its_set_up_names_the_field(tmp_path):
    source = RERUN[0].path
    broken = tmp_path / source.name
    broken.write_text(source.read_text().replace("\nfix_setup = '''", "\nfix_set_up = '''", 1))
    with pytest.raises(ExhibitError) as error:
        load_exhibit(broken, MUSEUM["pytorch"].rooms, load_machine_kinds(MACHINE_KINDS_FILE))
    assert str(broken) in str(error.value)
    assert "museum_rerun: field 'fix_setup' is missing" in str(error.value)
