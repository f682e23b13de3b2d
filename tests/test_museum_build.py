"""The wing proves itself while the book builds: one build names every broken exhibit."""

import re
import shutil

import pytest

from conftest import BOOK, ROOT, copy_of_built_cache, sphinx_build

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cache(tmp_path_factory, built):
    """One execution cache for the module, from the built books: each broken wing runs."""
    return copy_of_built_cache(built, tmp_path_factory.mktemp("museum") / "cache")


@pytest.fixture(scope="module")
def _wing_built(tmp_path_factory, cache):
    """The instructor's book (its check lines shown) built once with a copy of the exhibits
    (their folder a setting: the same for every build here, or each would read every page
    again)."""
    root = tmp_path_factory.mktemp("wing")
    _restore(root)
    build = sphinx_build(BOOK, root / "out", cache, "instructor", settings=_settings(root))
    assert build.returncode == 0, build.log[-3000:]
    return root


def _restore(wing) -> None:
    """The wing's exhibits as the book's."""
    shutil.rmtree(wing / "exhibits", ignore_errors=True)
    shutil.copytree(ROOT / "exhibits", wing / "exhibits")


@pytest.fixture
def wing(_wing_built):
    """:func:`_wing_built`'s folder, its exhibits as the book's again after the test."""
    yield _wing_built
    _restore(_wing_built)


def _settings(wing) -> dict[str, str]:
    return {"coursebook_exhibits_dir": str(wing / "exhibits")}


def _edit(wing, exhibit_glob: str, old: str, new: str, after: str = ""):
    """One exhibit edited: ``old`` becomes ``new`` (past ``after``)."""
    exhibit = next((wing / "exhibits").glob(exhibit_glob))
    text = exhibit.read_text()
    start = text.index(after)
    assert old in text[start:], exhibit
    exhibit.write_text(text[:start] + text[start:].replace(old, new, 1))
    return exhibit


def _build_again(tmp_path, cache, wing, whole: bool = False):
    """Build the book again, into a copy of :func:`_wing_built`'s output: only the wing page
    is read again (``whole``: into a folder of its own, every page read)."""
    if not whole:
        shutil.copytree(wing / "out", tmp_path / "out")
    return sphinx_build(BOOK, tmp_path / "out", cache, "instructor", settings=_settings(wing))


@pytest.fixture(scope="module")
def broken(tmp_path_factory, cache, _wing_built):
    """Faults planted in three exhibits, the book built once again: what an author reads.
    The exhibits' edited texts, by number, and the build."""
    faults = [("03", "y.backward(retain_graph=True)", "y.backward()", ""),  # the fix raises
              ("04", "(x * 2).backward()\n", "(x * 2).sum().backward()\n", ""),  # no error
              ("05", 'message = "mat1 and mat2', 'message = "matrix1 and mat2',  # reworded
               'torch = "2.13.0"'),
              ("05", "layer = nn.Linear(16, 4)", "layer = nn.Linear(15, 4)", "")]  # the fix raises
    edited = {number: _edit(_wing_built, f"pytorch/{number}-*.toml", old, new, after)
              for number, old, new, after in faults}
    build = _build_again(tmp_path_factory.mktemp("broken"), cache, _wing_built)
    texts = {number: (path, path.read_text()) for number, path in edited.items()}
    _restore(_wing_built)
    assert build.returncode != 0
    return texts, build


def _at(exhibit, text: str) -> str:
    """``file:line`` of the line of ``exhibit`` (a path and its text) holding ``text``."""
    path, whole = exhibit
    return f"{path}:{next(n for n, line in enumerate(whole.splitlines(), 1) if text in line)}"


def test_one_build_names_every_broken_exhibit_once(broken):
    exhibits, build = broken
    errors = [re.sub(r" \[coursebook\.\w+\]$", "", line) for line in build.log.splitlines()
              if ": ERROR: " in line]
    assert errors == [
        f"{_at(exhibits['03'], 'fix_code =')}: ERROR: exhibit pytorch/03: the fix (field "
        "'fix_code') raised an error:",
        f"{_at(exhibits['04'], 'failing_code =')}: ERROR: exhibit pytorch/04: the failing code "
        "(field 'failing_code') did not raise. Make it fail as the exhibit teaches, then check "
        "its record with `make accept-outputs`.",
        _at(exhibits["05"], 'message = "matrix1') + ": ERROR: exhibit pytorch/05, field "
        "'records':",
        f"{_at(exhibits['05'], 'fix_code =')}: ERROR: exhibit pytorch/05: the fix (field "
        "'fix_code') raised an error:"], build.log[-5000:]
    assert "Traceback" not in build.log


def test_a_changed_recorded_message_is_named_with_its_diff(broken):
    _, build = broken
    assert "exhibit pytorch/05: the error differs from its record for torch 2.13.0" in build.log
    assert "raises-exception" not in build.log  # not the advice for a generated cell
    assert "- RuntimeError: matrix1 and mat2" in build.log
    assert "+ RuntimeError: mat1 and mat2" in build.log
    assert "make accept-outputs" in build.log


def test_a_fix_that_raises_is_named_with_its_error(broken):
    _, build = broken
    assert "code cell `import torch`" not in build.log
    assert "mat1 and mat2 shapes cannot be multiplied (32x16 and 15x4)" in build.log
    assert "Trying to backward through the graph a second time" in build.log
    assert build.log.count("A fix must run: correct field 'fix_code'.") == 2


def test_a_fix_that_raises_is_not_ticked(broken):
    _, build = broken
    page = (build.outdir / "html" / "museum-pytorch.html").read_text()
    # Each exhibit's part of the page, by number: from its label's anchor to the next one's.
    parts = re.split(r'id="museum-pytorch-(\d\d)"', page)
    ticked = {number for number, part in zip(parts[1::2], parts[2::2])
              if "The fix ran without an error" in part}
    assert {"01", "02", "04", "06"} <= ticked  # the fixes that ran
    assert not ticked & {"03", "05"}  # the fixes that raised


def test_a_malformed_exhibit_stops_the_build(tmp_path, cache, wing):
    exhibit = _edit(wing, "pytorch/03-*.toml", "fix_code = ", "fixcode = ")
    build = _build_again(tmp_path, cache, wing, whole=True)
    assert build.returncode != 0
    assert build.log.count("field fixcode: is no field") == 1  # not once per chapter
    assert (f"{_at((exhibit, exhibit.read_text()), 'fixcode = ')}: ERROR: field fixcode: is no "
            "field of this table (use one of number, title") in build.log
    assert "Extension error" not in build.log and "Traceback" not in build.log


def test_an_exhibit_edit_rebuilds_the_wing_page(tmp_path, cache, wing):
    """Editing data, not the chapter file, still refreshes the page on an incremental build."""
    _edit(wing, "pytorch/01-*.toml", 'lesson = """\n', 'lesson = """\nA planted sentence. ')
    again = _build_again(tmp_path, cache, wing)
    assert again.returncode == 0
    assert "A planted sentence." in (tmp_path / "out" / "html" / "museum-pytorch.html").read_text()
