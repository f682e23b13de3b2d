"""The wing proves itself while the book builds: each planted fault stops the build."""

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
    """The book built once with a copy of the exhibits (its folder a setting: the same for
    every build here, or each would read every page again)."""
    root = tmp_path_factory.mktemp("wing")
    shutil.copytree(ROOT / "exhibits", root / "exhibits")
    build = sphinx_build(BOOK, root / "out", cache, settings=_settings(root))
    assert build.returncode == 0, build.log[-3000:]
    return root


@pytest.fixture
def wing(_wing_built):
    """:func:`_wing_built`'s folder, its exhibits as the book's again after the test."""
    yield _wing_built
    shutil.rmtree(_wing_built / "exhibits")
    shutil.copytree(ROOT / "exhibits", _wing_built / "exhibits")


def _settings(wing) -> dict[str, str]:
    return {"coursebook_exhibits_dir": str(wing / "exhibits")}


def _build_with(tmp_path, cache, wing, exhibit_glob: str, old: str, new: str, after: str = "",
                whole: bool = False):
    """Build the book again, into a copy of :func:`_wing_built`'s output, with one exhibit
    edited: ``old`` becomes ``new`` (past ``after``); only the wing page is read again
    (``whole``: into a folder of its own, every page read)."""
    exhibit = next((wing / "exhibits").glob(exhibit_glob))
    text = exhibit.read_text()
    start = text.index(after)
    assert old in text[start:], exhibit
    exhibit.write_text(text[:start] + text[start:].replace(old, new, 1))
    if not whole:
        shutil.copytree(wing / "out", tmp_path / "out")
    return exhibit, sphinx_build(BOOK, tmp_path / "out", cache, settings=_settings(wing))


def _line_of(path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_changed_recorded_message_stops_the_build(tmp_path, cache, wing):
    exhibit, build = _build_with(tmp_path, cache, wing, "pytorch/05-*.toml",
                                 'message = "mat1 and mat2', 'message = "matrix1 and mat2',
                                 after='torch = "2.13.0"')
    assert build.returncode != 0
    line = _line_of(exhibit, 'message = "matrix1')
    assert f"{exhibit}:{line}: ERROR: exhibit pytorch/05, field 'records'" in build.log
    assert "exhibit pytorch/05: the error differs from its record for torch 2.13.0" in build.log
    assert "raises-exception" not in build.log  # not the advice for a generated cell
    assert "- RuntimeError: matrix1 and mat2" in build.log
    assert "+ RuntimeError: mat1 and mat2" in build.log
    assert "make accept-outputs" in build.log


def test_a_fix_that_raises_stops_the_build(tmp_path, cache, wing):
    exhibit, build = _build_with(tmp_path, cache, wing, "pytorch/05-*.toml",
                                 "layer = nn.Linear(16, 4)", "layer = nn.Linear(15, 4)")
    assert build.returncode != 0
    assert (f"{exhibit}:{_line_of(exhibit, 'fix_code =')}: ERROR: exhibit pytorch/05: the fix "
            "(field 'fix_code') raised an error") in build.log
    assert "code cell `import torch`" not in build.log
    assert "mat1 and mat2 shapes cannot be multiplied (32x16 and 15x4)" in build.log


def test_a_failing_snippet_that_no_longer_raises_stops_the_build(tmp_path, cache, wing):
    exhibit, build = _build_with(tmp_path, cache, wing, "pytorch/04-*.toml",
                                 "(x * 2).backward()\n", "(x * 2).sum().backward()\n")
    assert build.returncode != 0
    assert build.log.count("did not raise") == 1
    assert (f"{exhibit}:{_line_of(exhibit, 'failing_code =')}: ERROR: exhibit pytorch/04: the "
            "failing code (field 'failing_code') did not raise") in build.log


def test_a_malformed_exhibit_stops_the_build(tmp_path, cache, wing):
    exhibit, build = _build_with(tmp_path, cache, wing, "pytorch/03-*.toml", "fix_code = ",
                                 "fixcode = ", whole=True)
    assert build.returncode != 0
    assert build.log.count("field fixcode: is no field") == 1  # not once per chapter
    assert (f"{exhibit}:{_line_of(exhibit, 'fixcode = ')}: ERROR: field fixcode: is no field of "
            "this table (use one of number, title") in build.log
    assert "Extension error" not in build.log and "Traceback" not in build.log


def test_an_exhibit_edit_rebuilds_the_wing_page(tmp_path, cache, wing):
    """Editing data, not the chapter file, still refreshes the page on an incremental build."""
    _, again = _build_with(tmp_path, cache, wing, "pytorch/01-*.toml", 'lesson = """\n',
                           'lesson = """\nA planted sentence. ')
    assert again.returncode == 0
    assert "A planted sentence." in (tmp_path / "out" / "html" / "museum-pytorch.html").read_text()
