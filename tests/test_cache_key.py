"""What decides whether a chapter executes again: the book's code its cells import."""

from __future__ import annotations

import copy

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


def test_a_record_an_earlier_book_cached_is_not_taken(tmp_path):
    """A cache filled before 4513859 holds the widget state an .ipynb chapter saved from its
    author's run (an Output widget holding what an answer printed), which jupyter-cache
    merges into the page it takes the record for: no key of this book is such a record's."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")],
                                        metadata={"kernelspec": {"name": "python3",
                                                                 "display_name": "Python 3"}})
    cache_key.key_execution_versions(notebook, {"python": "3.11.7", "torch": "2.13.0"})
    earlier = nbformat.from_dict(copy.deepcopy(notebook))
    earlier.cells[0].metadata[cache_key.VERSIONS_KEY].pop("runs", None)  # as it was keyed then
    earlier.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    cache_key.create_cache(tmp_path / "cache")
    cache_key.cache_run(tmp_path / "cache", earlier, "lesson.ipynb", {})
    assert cache_key.cached_record(tmp_path / "cache", earlier) is not None
    assert cache_key.cached_record(tmp_path / "cache", notebook) is None
