"""A recorded chapter's set-up cell is made from its runtime and the machine kinds, never typed.

That it runs (installs nothing where every pin is met, sets the stand-in's variables where
there is no device) is checked by `make test-recording`, in the stand-in's environment.
"""

import ast

import nbformat
import pytest

from conftest import book_machine_kinds
from coursebook.model.runtimes import load_runtimes
from coursebook.prepare.runtime_setup import RuntimeSetupError, place_runtime_setup, setup_code

KINDS = book_machine_kinds()
RUNTIMES = sorted({kind.runtime for kind in KINDS.values() if kind.runtime and kind.device_files})


def _assigned(code: str, name: str):
    """The literal assigned to ``name`` in the generated code."""
    for node in ast.parse(code).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == name:
            return ast.literal_eval(node.value)
    raise AssertionError(f"no {name} = … in the set-up code")


@pytest.mark.parametrize("name", RUNTIMES)
def test_the_set_up_cell_pins_the_runtime_and_what_the_book_adds(name):
    runtime = load_runtimes()[name]
    code = setup_code(name, KINDS)
    assert _assigned(code, "pins") == {**runtime.packages, **runtime.adds}
    kinds = [kind for kind in KINDS.values() if kind.runtime == name]
    for kind in kinds:  # the variables of the accelerator and of the stand-in, from the data
        assert repr(kind.environment) in code
    for pattern in next(k for k in kinds if k.device_files).device_files:
        assert f"glob.glob({pattern!r})" in code
    compile(code, "set-up cell", "exec")


def _chapter(marker: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"Intro.\n\n```{{runtime-setup}} {marker}\n```\n\nAfter.")])


def test_a_marker_becomes_a_code_cell_hidden_on_the_page():
    notebook = _chapter(RUNTIMES[0])
    place_runtime_setup(notebook, KINDS, "chapter.md")
    assert [c.cell_type for c in notebook.cells] == ["markdown", "code", "markdown"]
    assert notebook.cells[1].metadata.tags == ["remove-cell"]


@pytest.mark.parametrize("marker, kinds, message", [
    ("colab-abacus", KINDS, "names runtime 'colab-abacus', not one of tools/runtimes.toml"),
    (RUNTIMES[0], None, "is made from the machine kinds, and none were given"),
])
def test_a_marker_that_cannot_be_made_names_the_chapter(marker, kinds, message):
    with pytest.raises(RuntimeSetupError) as error:
        place_runtime_setup(_chapter(marker), kinds, "book/chapter.md")
    assert message in str(error.value) and str(error.value.path) == "book/chapter.md"


def test_the_set_up_cell_comes_from_the_books_runtimes_file(tmp_path):
    """conf.py's coursebook_runtimes_file, not tools/runtimes.toml, makes the cell."""
    from coursebook.model.runtimes import RUNTIMES_FILE

    name = RUNTIMES[0]
    pin = next(iter(load_runtimes()[name].packages.items()))
    moved = f'{pin[0]} = "{pin[1]}"'
    text = RUNTIMES_FILE.read_text()
    assert moved in text
    other = tmp_path / "runtimes.toml"
    other.write_text(text.replace(moved, f'{pin[0]} = "0.0.1"'))
    notebook = _chapter(name)
    place_runtime_setup(notebook, KINDS, "chapter.md", str(other))
    assert _assigned(notebook.cells[1].source, "pins")[pin[0]] == "0.0.1"
