"""A recorded chapter's set-up and restart cells are made from its runtime and the machine
kinds, never typed.

What each does is run here against the runtimes' image lists, with and without the device;
that the set-up cell runs in the stand-in's environment (installs nothing where every pin is
met, sets the stand-in's variables where there is no device) is checked by
`make test-recording`.
"""

import ast
import os

import nbformat
import pytest

from conftest import book_machine_kinds
from coursebook.model.runtimes import load_runtimes
from coursebook.model.versions import package_key
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


# --- What the cells do where they run: each generated cell run here, as on a machine with
# a runtime's image list installed, with or without the device ----------------------------

def _run(code: str, monkeypatch, installed: dict[str, str], device: bool,
         colab: bool = True) -> list[list[str]]:
    """Run a generated cell as on a machine with ``installed`` ({name: version}), with or
    without the device, on Colab or elsewhere; the commands it started (pip's install)."""
    import glob
    import subprocess
    import sys
    import types
    from importlib import metadata

    def version(name: str) -> str:
        if package_key(name) not in installed:
            raise metadata.PackageNotFoundError(name)
        return installed[package_key(name)]

    started: list[list[str]] = []
    monkeypatch.setattr(metadata, "version", version)
    monkeypatch.setattr(glob, "glob", lambda pattern: ["/dev/device0"] if device else [])
    monkeypatch.setattr(subprocess, "run", lambda command, **options: started.append(command))
    if colab:  # Colab's kernel imports its own module before any cell
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    for kind in KINDS.values():
        for name in kind.environment:
            monkeypatch.delenv(name, raising=False)
    exec(compile(code, "cell", "exec"), {"__name__": "__main__"})
    return started


def _image(runtime: str) -> dict[str, str]:
    from refresh_runtimes import freeze_versions, image_path

    from coursebook.model.runtimes import RUNTIMES_FILE
    return freeze_versions(image_path(RUNTIMES_FILE, runtime).read_text())


def _installs(started: list[list[str]]) -> set[str]:
    return {argument.split("==")[0] for command in started for argument in command
            if "==" in argument}


@pytest.mark.parametrize("name", [n for n in RUNTIMES if load_runtimes()[n].device_only])
def test_without_the_device_the_set_up_cell_installs_no_device_only_pin(name, monkeypatch):
    """On another runtime's image (Colab's CPU one, say) it installs each pin that differs,
    but not the device's own library; on the runtime's own image with the device, only what
    the image lacks."""
    runtime = load_runtimes()[name]
    pins = {**runtime.packages, **runtime.adds}
    code = setup_code(name, KINDS)
    others = [r for r in load_runtimes().values() if r.name != name and r.source.startswith(
        "googlecolab/")]
    for other in others:
        image = _image(other.name)
        installs = _installs(_run(code, monkeypatch, image, device=False))
        differ = {n for n, v in pins.items() if image.get(package_key(n), "").split("+")[0]
                  != v.split("+")[0]}
        assert installs == differ - set(runtime.device_only), other.name
        assert set(runtime.device_only) & differ  # planted: a CPU image lacks the device's library
        with_device = _installs(_run(code, monkeypatch, image, device=True))
        assert set(runtime.device_only) <= with_device
    own = _image(name)
    assert _installs(_run(code, monkeypatch, own, device=True)) == {
        n for n in pins if package_key(n) not in own}


@pytest.mark.parametrize("name", RUNTIMES)
def test_what_the_book_adds_is_installed_last_in_a_pip_run_of_its_own(name, monkeypatch):
    """Another package may ship files of the same name (torch_xla 2.9.0 ships a torchax):
    the added packages are laid down again after every other install, without dependencies."""
    runtime = load_runtimes()[name]
    started = _run(setup_code(name, KINDS), monkeypatch, {}, device=False)
    assert len(started) == 2
    last = started[-1]
    assert "--force-reinstall" in last and "--no-deps" in last
    assert [a for a in last if "==" in a] == [f"{n}=={v}" for n, v in runtime.adds.items()]
    assert _run(setup_code(name, KINDS), monkeypatch, _image(name) | {
        package_key(n): v for n, v in runtime.adds.items()}, device=True) == []


@pytest.mark.parametrize("name", RUNTIMES)
def test_away_from_colab_the_set_up_cell_installs_nothing_and_says_what_it_would(
        name, monkeypatch, capsys):
    """A student's own Jupyter is not changed: the cell prints the pip commands instead."""
    code = setup_code(name, KINDS)
    assert _run(code, monkeypatch, {}, device=False, colab=False) == []
    printed = capsys.readouterr().out
    assert printed.startswith("Not on Colab")
    runtime = load_runtimes()[name]
    for pin, version in {**runtime.packages, **runtime.adds}.items():
        if pin not in runtime.device_only:
            assert f"{pin}=={version.split('+')[0]}" in printed
    assert "-q" not in printed.split()


def _restart(holder: str) -> str:
    from coursebook.prepare.runtime_setup import restart_code
    return restart_code(RUNTIMES[0], holder, KINDS)


def test_the_restart_cell_stops_only_where_the_module_holds_the_device(monkeypatch):
    import sys
    import types

    code = _restart("planted_holder")
    accelerator = next(k for k in KINDS.values() if k.runtime == RUNTIMES[0] and k.device_files)
    stand_in = next(k for k in KINDS.values() if k.runtime == RUNTIMES[0] and k.stand_in)
    monkeypatch.delitem(sys.modules, "planted_holder", raising=False)
    _run(code, monkeypatch, {}, device=True)  # the device, the module never imported: on
    assert all(os.environ[n] == v for n, v in accelerator.environment.items())
    _run(code, monkeypatch, {}, device=False)
    assert all(os.environ[n] == v for n, v in stand_in.environment.items())
    monkeypatch.setitem(sys.modules, "planted_holder", types.ModuleType("planted_holder"))
    _run(code, monkeypatch, {}, device=False)  # imported, but no device to hold: on
    with pytest.raises(RuntimeError) as error:
        _run(code, monkeypatch, {}, device=True)
    assert str(error.value) == (f"planted_holder holds the {accelerator.short_label} in this "
                                "process: restart the runtime, then run this cell and the ones "
                                "after it")


def test_a_restart_marker_becomes_a_hidden_cell_with_its_tags():
    from coursebook.prepare.runtime_setup import place_runtime_setup

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        f"Before.\n\n```{{runtime-restart}} {RUNTIMES[0]} jax\n:tags: [second-kernel]\n```\n\n"
        "After.")])
    place_runtime_setup(notebook, KINDS, "chapter.md")
    assert [c.cell_type for c in notebook.cells] == ["markdown", "code", "markdown"]
    assert notebook.cells[1].metadata.tags == ["remove-cell", "runtime-restart", "second-kernel"]
    assert notebook.cells[1].source == _restart("jax")
