"""Notebooks as chapters: an `.ipynb` in the book is refused in one line (it would run and be
published unverified); `make chapter FROM=…` brings a notebook, a sphinx-gallery or jupytext
script, or a MyST lecture in as a chapter the build verifies."""

from __future__ import annotations

import nbformat
import pytest

from conftest import sphinx_build


def _notebook(*cells) -> str:
    return nbformat.writes(nbformat.v4.new_notebook(cells=list(cells), metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}))


@pytest.mark.slow
def test_a_notebook_in_the_book_stops_the_build_in_one_line_and_runs_nothing(tiny_book, tmp_path):
    (tiny_book / "lesson.ipynb").write_text(_notebook(
        nbformat.v4.new_markdown_cell("# A lesson"),
        nbformat.v4.new_code_cell("import not_a_module_anywhere"),
        nbformat.v4.new_code_cell("print('ran unverified')")))
    (tiny_book / "index.md").write_text((tiny_book / "index.md").read_text().replace(
        "chapter\n", "chapter\nlesson\n"))
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert build.returncode != 0
    [line] = [line for line in build.log.splitlines() if "ERROR" in line]
    assert "lesson.ipynb:1: ERROR: a notebook in this format would be executed and published " \
           "unverified" in line and "make chapter FROM=" in line and "lesson.ipynb`" in line
    assert "Traceback" not in build.log and build.executed == 1  # the tiny chapter only
    page = (tmp_path / "out" / "html" / "lesson.html").read_text()
    assert "ran unverified" not in page and "ModuleNotFoundError" not in page
