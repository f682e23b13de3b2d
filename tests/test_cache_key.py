"""What decides whether a chapter executes again: the book's code its cells import."""

from __future__ import annotations

import nbformat

from coursebook.execute import shared_cache as cache_key


def test_an_edit_of_a_module_the_imported_one_imports_from_a_subpackage_reexecutes(
        tmp_path, monkeypatch):
    # As exhibit_checks.py imports model/outputs.py (a kernel runs both).
    package = tmp_path / cache_key._PACKAGE.name
    (package / "model").mkdir(parents=True)
    (package / "checks.py").write_text("from .model.outputs import normalise\n")
    outputs = package / "model" / "outputs.py"
    outputs.write_text("from ..words import split\ndef normalise(text): return text\n")
    (package / "words.py").write_text("def split(text): return text.split()\n")
    monkeypatch.setattr(cache_key, "_PACKAGE", package)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"from {package.name}.checks import normalise")])
    before = cache_key.book_code_digest(notebook)
    outputs.write_text("from ..words import split\ndef normalise(text): return text.strip()\n")
    edited = cache_key.book_code_digest(notebook)
    (package / "words.py").write_text("def split(text): return text.split(' ')\n")
    assert before != edited != cache_key.book_code_digest(notebook)


def test_a_cell_importing_a_subpackage_module_has_it_in_its_key(tmp_path, monkeypatch):
    package = tmp_path / cache_key._PACKAGE.name
    (package / "model").mkdir(parents=True)
    (package / "model" / "faults.py").write_text("LINE = 1\n")
    monkeypatch.setattr(cache_key, "_PACKAGE", package)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"from {package.name}.model.faults import LINE")])
    assert cache_key.book_code_digest(notebook) is not None
