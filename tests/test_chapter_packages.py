"""A chapter installs nothing during a build: an install cell stops the build at its line;
the packages it needs are declared in its top matter, installed by `make chapter-packages`,
and installed by a download's first cell where it runs."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import nbformat
import pytest

from conftest import sphinx_build
from coursebook.model.faults import BookError
from coursebook.model.notebooks import chapter_settings
from coursebook.prepare.chapter_packages import (
    chapter_package_errors,
    decoded,
    install_cell,
    put_environment_first_on_path,
)
from test_faults import _plant_cell, assert_one_clear_message

TOP = ("---\njupytext:\n  text_representation:\n    format_name: myst\n"
       "kernelspec:\n  name: python3\n  display_name: Python 3\n{extra}---\n\n# A chapter\n\n")


def _chapter(*cells: str, extra: str = "") -> str:
    return TOP.format(extra=extra) + "".join(f"```{{code-cell}} ipython3\n{cell}\n```\n\n"
                                             for cell in cells)


INSTALLS = ["!pip install d2l", "%pip install -q d2l", "!python -m pip install d2l",
            "!python3 -m pip install d2l", "!{sys.executable} -m pip install d2l",
            "%conda install d2l", "!conda install -y d2l", "!apt install graphviz",
            "!apt-get install -y graphviz", "!sudo apt-get install graphviz",
            "!uv pip install d2l", "%mamba install d2l", "! pip3 install d2l",
            "    %pip install d2l", '!"{sys.executable}" -m pip install d2l',
            "os.system('pip install d2l')", "get_ipython().system('pip install d2l')",
            "subprocess.run('conda install -y d2l', shell=True)",
            # a list (review F23); pip's, however written, is refused as it runs (below)
            'subprocess.run(["conda", "install", "-y", "d2l"])',
            "subprocess.check_call(['sudo', 'apt-get', 'install', '-y', 'graphviz'])",
            'subprocess.run(["uv", "pip", "install", "d2l"])']


@pytest.mark.parametrize("install", INSTALLS)
def test_an_install_line_is_refused_at_its_line(install):
    text = _chapter("import torch", f"print(1)\n\n{install}\nprint(2)")
    [error] = chapter_package_errors(Path("lesson.md"), text)
    assert error.line == text.splitlines().index(install) + 1
    assert f"(`{install.strip()}`)" in error.message and "`make chapter-packages`" in error.message
    assert "\n" not in error.message and "coursebook: {packages: [NAME]}" in error.message


def test_an_install_in_a_shell_cell_is_refused():
    text = _chapter("%%bash\necho start\npip install d2l")
    [error] = chapter_package_errors(Path("lesson.md"), text)
    assert error.line == text.splitlines().index("pip install d2l") + 1


@pytest.mark.parametrize("code", ['print("!pip install d2l")', "# !pip install d2l",
                                  "!pipx list", "!ls", "%time pip_version = 1",
                                  "import pip", 'subprocess.run(["pip", "list"])',
                                  "subprocess.run([sys.executable, 'train.py'])",
                                  "!pip show torch", "%pip list", "!pip freeze | grep torch",
                                  "!python -m pip --version", 'subprocess.run(["conda", "list"])'])
def test_code_that_installs_nothing_passes(code, tmp_path, monkeypatch):
    (tmp_path / "pipx").write_text("#!/bin/sh\n")  # on PATH, as a command a lesson runs
    (tmp_path / "pipx").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert chapter_package_errors(Path("lesson.md"), _chapter(code)) == []


MISSING = "coursebook-no-such-command"


@pytest.mark.parametrize("cell, command_line", [
    (f"print(1)\n!{MISSING} -L", f"!{MISSING} -L"),
    (f"found = !{MISSING} --list", f"found = !{MISSING} --list"),
    (f"if True:\n    !!{MISSING} --list", f"    !!{MISSING} --list")])
def test_a_command_this_machine_lacks_is_refused_at_its_line(cell, command_line):
    """`!nvidia-smi` on a machine without it printed the shell's 'command not found', which
    the build accepted as the cell's expected output."""
    text = _chapter("import torch", cell)
    [error] = chapter_package_errors(Path("lesson.md"), text)
    assert error.line == text.splitlines().index(command_line) + 1
    assert error.message.startswith(f"a cell runs `{MISSING}`, which the machine that builds "
                                    "the book lacks (not on PATH)"), error.message
    assert "\n" not in error.message and "Take the line out" in error.message


def test_a_module_whose_drawings_run_a_missing_program_is_refused_at_its_import(
        tmp_path, monkeypatch):
    """Karpathy's micrograd imports graphviz, which draws by running `dot`: with the package
    declared and installed, the build stopped at the first drawing with `ExecutableNotFound`,
    telling the author to tag it `raises-exception` (then accepted as its output)."""
    monkeypatch.setenv("PATH", str(tmp_path))
    text = _chapter("import math", "x = 1\nfrom graphviz import Digraph",
                    "import pydot.core, graphviz", 'print("graphviz")')
    errors = chapter_package_errors(Path("lesson.md"), text)
    assert [(error.line, error.message.split(", which")[0]) for error in errors] == [
        (text.splitlines().index(line) + 1, "the module imported here draws by running `dot`")
        for line in ("from graphviz import Digraph", "import pydot.core, graphviz")]
    # HR's F2: the import runs, its drawings fail; taking the line out makes them NameErrors
    assert errors[0].message.endswith(
        "Install `dot` where the book is built (apt install graphviz)."), errors[0].message
    (tmp_path / "dot").write_text("#!/bin/sh\n")
    (tmp_path / "dot").chmod(0o755)
    assert chapter_package_errors(Path("lesson.md"), text) == []
    # Each program is told with what installs it, not graphviz's (HR's F5 of 8fa4075)
    from coursebook.prepare import chapter_packages

    monkeypatch.setitem(chapter_packages._PROGRAMS, "turtle", ("xturtle", "apt install turtles"))
    [error] = chapter_package_errors(Path("lesson.md"), _chapter("import graphviz, turtle"))
    assert error.message.endswith("Install `xturtle` where the book is built (apt install "
                                  "turtles)."), error.message


@pytest.mark.parametrize("code", ["!ls -l | head -3", "!cd /tmp && ls", "files = !ls",
                                  "!{sys.executable} -V", "!./run.sh", "!X=1 ls",
                                  "ok = (1\n      != 2)", "%%bash\nX=1\necho $X\nls -l",
                                  f"# !{MISSING}", "%%bash",
                                  # A shell cell's lines are its shell's; a `!` in a string is
                                  # no escape (each was refused once, for a wrong command).
                                  f"%%bash\n{MISSING} --list", "%%script python3\nprint('hi')",
                                  "%%bash\ncat <<EOF\nhello world\nEOF", "%%bash\nls \\\n  -l",
                                  f'note = """\n!{MISSING} here\n"""'])
def test_commands_on_path_builtins_and_expansions_pass(code):
    assert chapter_package_errors(Path("lesson.md"), _chapter(code)) == []


def test_a_recorded_chapters_commands_are_its_machines():
    """Its cells run where it is recorded (`!nvidia-smi` belongs in a GPU chapter)."""
    text = _chapter(f"!{MISSING} -L", extra="coursebook:\n  recording: gpu-lesson\n")
    assert chapter_package_errors(Path("lesson.md"), text) == []


def test_a_page_is_read_once_with_the_newlines_the_build_reads(tmp_path):
    """Read as bytes (a bad byte's place) and as text with universal newlines (the lines of a
    CRLF or CR page as read_text and Sphinx count them)."""
    page = tmp_path / "lesson.md"
    page.write_bytes(b"one\r\ntwo\rthree\n")
    assert decoded(page) == page.read_text(encoding="utf8") == "one\ntwo\nthree\n"
    page.write_bytes(b"one\r\nt\xffo\n")
    assert decoded(page).line == 2


def test_a_declared_package_must_be_in_the_books_environment():
    installed = _chapter("import nbformat", extra="coursebook:\n  packages: [nbformat]\n")
    assert chapter_package_errors(Path("lesson.md"), installed) == []
    missing = _chapter("import d2l", extra="coursebook:\n  packages: [no-such-package-here, "
                                           "'nbformat<1', 'jax>>1']\n")
    errors = chapter_package_errors(Path("lesson.md"), missing)
    assert [error.message for error in errors] == [
        "top matter 'coursebook: packages' declares no-such-package-here, which the book's "
        "environment lacks: run `make chapter-packages`.",
        "top matter 'coursebook: packages' declares nbformat<1, and the book's environment "
        f"has nbformat {nbformat.__version__}: run `make chapter-packages`.",
        # no install mends it (it read "declares 'jax>>1' is not ...: run `make chapter-packages`")
        "top matter 'coursebook: packages' declares 'jax>>1', not a pip requirement (NAME, or "
        "NAME>=VERSION): correct it."]
    # at the `packages` line, as YAML's parser places it (it said line 1), in a script's
    # jupytext header too
    line = missing.splitlines().index("coursebook:") + 2
    assert [(str(error.path), error.line) for error in errors] == [("lesson.md", line)] * 3
    script = ("# ---\n# jupyter:\n#   kernelspec: {name: python3, display_name: Python 3}\n"
              "#   coursebook:\n#     packages: [no-such-package-here]\n# ---\n\n"
              "# %%\nimport d2l\n")
    assert [error.line for error in chapter_package_errors(Path("lesson.py"), script)] == [5]


# Shapes an instructor writes: each was a package per letter (`packages: jax`: j, a and x, for
# pip to install), a package "None", or a traceback; now one line at its key, as a TOML file's.
@pytest.mark.parametrize("matter, line, message", [
    ("  packages: jax\n", 2, "field coursebook.packages: is 'jax' (make it a list of strings)"),
    ("  packages: {jax: 1}\n", 2, "field coursebook.packages: is {'jax': 1} (make it a list of "
     "strings)"),
    ("  packages: 3\n", 2, "field coursebook.packages: is 3 (make it a list of strings)"),
    ("  packages:\n  - nbformat\n  -\n", 2,
     "field coursebook.packages[1]: is None (make it a string)"),
    ("  packages: [[jax]]\n", 2, "field coursebook.packages[0]: is ['jax'] (make it a string)"),
    ("  reads: names.txt\n", 2, "field coursebook.reads: is 'names.txt' (make it a list of "
     "strings)"),
    ("  recording: [gpu]\n", 2, "field coursebook.recording: is ['gpu'] (make it a string)"),
    ("  packages: [nbformat]\n  read: [names.txt]\n", 3, "field coursebook.read: is no field "
     "of this table (use one of packages, reads, recording, machine_kinds, or remove it)"),
    ("  2024: [names.txt]\n", 2, "field coursebook.2024: is no field of this table (use one "
     "of packages, reads, recording, machine_kinds, or remove it)"),  # a TypeError (str + int)
    (" jax\n", 1, "field coursebook: is 'jax' (make it a table)")])
def test_a_coursebook_top_matter_of_another_shape_is_one_line(matter, line, message):
    text = _chapter("import nbformat", extra="coursebook:\n" + matter)
    errors = chapter_package_errors(Path("lesson.md"), text)
    at = text.splitlines().index("coursebook:")
    assert [(error.message, str(error.path), error.line) for error in errors] == [
        (message, "lesson.md", at + line)]


def test_a_top_matter_read_without_its_file_names_no_place():
    """A reader that has only the metadata (the cache key, a download's install cell) says the
    fault without a made-up place (it was `.:1:`)."""
    with pytest.raises(BookError) as raised:
        chapter_settings({"coursebook": "jax"})
    assert str(raised.value) == "field coursebook: is 'jax' (make it a table)"


def test_a_key_given_nothing_is_as_if_not_written():
    """`packages:` alone declares none, as it did; `machine_kinds:` alone is then told by the
    recording's own check (which kinds to list), not as a null of the wrong type."""
    text = _chapter("import nbformat", extra="coursebook:\n  packages:\n  recording: r\n"
                                              "  machine_kinds:\n")
    assert chapter_package_errors(Path("lesson.md"), text) == []


def test_a_download_installs_the_declared_packages_first():
    notebook = nbformat.v4.new_notebook(metadata={"coursebook": {"packages": [
        "d2l", "einops>=0.8"]}})
    assert install_cell(notebook).source.splitlines()[-1] == "%pip install -q d2l 'einops>=0.8'"
    assert install_cell(nbformat.v4.new_notebook()) is None


def test_kernels_find_the_books_python_first_on_path(monkeypatch):
    monkeypatch.setenv("PATH", os.pathsep.join(["/usr/bin", str(Path(sys.executable).parent)]))
    put_environment_first_on_path()
    assert os.environ["PATH"].split(os.pathsep) == [str(Path(sys.executable).parent), "/usr/bin"]


@pytest.mark.slow
def test_a_build_stops_at_an_install_cell_with_one_line(tiny_book, tmp_path):
    chapter = tiny_book / "chapter.md"
    text = chapter.read_text()
    anchor = "A worked example.\n"
    chapter.write_text(text.replace(anchor, anchor + "\n```{code-cell} ipython3\nimport sys\n"
                                    "!pip install d2l\n```\n", 1))
    line = chapter.read_text().splitlines().index("!pip install d2l") + 1
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert_one_clear_message(build, f"{chapter}:{line}: ERROR: a cell installs packages "
                                    "(`!pip install d2l`): a build installs nothing")
    assert build.executed == 0


@pytest.mark.slow
def test_a_chapters_kernel_finds_the_books_python_first(tiny_book, tmp_path, monkeypatch):
    """`!python` or `!pip` in a cell is the book's environment's, whatever PATH the build
    started with."""
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    chapter = tiny_book / "chapter.md"
    anchor = "A worked example.\n"
    chapter.write_text(chapter.read_text().replace(
        anchor, f"{anchor}\n```{{code-cell}} ipython3\nimport shutil\n"
                "print(shutil.which('python'))\n```\n", 1))
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache",
                         settings={"coursebook_accept_outputs": "1"})
    assert build.returncode == 0, build.log[-3000:]
    expected = (tiny_book / "expected" / "torch-2.13.0" / "chapter.txt").read_text()
    assert f"\n    {Path(sys.executable).parent / 'python'}\n" in expected


def _wheel(folder: Path, name: str, version: str, *requires: str) -> None:
    """A wheel of nothing but its metadata, for pip to resolve (never installed)."""
    import zipfile

    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: "
                       f"{version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires))
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: "
                       "py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")


def test_a_declared_package_that_moves_a_pin_is_refused_at_its_declaration(tmp_path, capsys):
    """d2l==1.0.3 requires numpy==1.23.5: `make chapter-packages` (pip, unheld) took the book's
    numpy 2.4.6 down to it under every chapter. Held to pyproject.toml's pins, pip refuses, and
    the chapter is named at its declaration (a dry run from a local folder: nothing installed)."""
    from conftest import load_tool

    _wheel(tmp_path, "lessonlib", "1.0", "numpy==1.23.5")
    _wheel(tmp_path, "numpy", "1.23.5")
    chapter = tmp_path / "lesson.md"
    chapter.write_text(_chapter("import lessonlib", extra="coursebook: {packages: [lessonlib]}\n"))
    options = ("--dry-run", "--no-index", "--find-links", str(tmp_path))
    assert load_tool("chapter_packages").install({chapter: ["lessonlib"]}, *options) == 1
    said = capsys.readouterr().err
    line = chapter.read_text().splitlines().index("coursebook: {packages: [lessonlib]}") + 1
    assert said.endswith(  # at the declaration, as the build's check names it
        f"lesson.md:{line}: pip could not install lessonlib (its lines above say why: a pin of the "
        "book's it would move, pyproject.toml's dependencies, or a name it cannot find): change "
        "the declaration (`coursebook: {packages}`), or take out the cells that import them; "
        "then `make chapter-packages`\n"), said


def _local_package(folder: Path) -> str:
    """A package in ``folder``/pkg that pip installs offline (no index, no build isolation);
    the name of its distribution, which the book's environment lacks."""
    (folder / "pkg" / "hplocal").mkdir(parents=True)
    (folder / "pkg" / "hplocal" / "__init__.py").write_text("X = 1\n")
    (folder / "pkg" / "pyproject.toml").write_text(
        '[project]\nname = "hplocal"\nversion = "0.1"\n[build-system]\nrequires = '
        '["setuptools"]\nbuild-backend = "setuptools.build_meta"\n')
    return "hplocal"


def _lacks(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return True
    subprocess.run([sys.executable, "-m", "pip", "uninstall", "-q", "-y", name], check=True)
    return False


@pytest.mark.slow
@pytest.mark.own_kernels
def test_a_cell_that_runs_pip_to_install_is_refused_at_the_cell(tiny_book, tmp_path):
    """An install no pattern read finds (review F23: a list with "python" first) installed a
    package into the book's environment, and the build went on: the kernel's pip refuses to
    change anything, and the build names the cell, from a kernel forked from the build's
    server (a cold cache) and from one started (a warm one); the import that fails after it
    is not blamed."""
    chapter = tiny_book / "chapter.md"
    name = _local_package(tiny_book)
    install = ["python", "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation",
               "./pkg"]
    line = _plant_cell(chapter, f"import subprocess\nsubprocess.run({install!r})\n"
                                f"import {name}")
    for run in ("cold", "warm"):
        build = sphinx_build(tiny_book, tmp_path / run, tmp_path / "cache")
        assert _lacks(name)
        assert (run == "cold") == ("chapter kernels forked from one server" in build.log)
        assert_one_clear_message(build, (
            f"{chapter}:{line}: ERROR: code cell `import subprocess` runs `pip "
            f"{' '.join(install[3:])}`, which pip refused: a build changes no environment, as "
            "a chapter's code runs with the builder's rights. Take it out, declare the package "
            "in its top matter: `coursebook: {packages: [NAME]}` and run "
            "`make chapter-packages`."))
        assert "error it was not tagged for" not in build.log, build.log[-3000:]


# A cell that runs pip, each way no read of the chapter refuses (review F23): the command
# pip was given.
PIP_RUNS = {
    'import pip\npip.main(["install", "./pkg"])': "pip install ./pkg",
    'import runpy, sys\nsys.argv = ["pip", "uninstall", "-y", "hplocal"]\n'
    'runpy.run_module("pip", run_name="__main__")': "pip uninstall -y hplocal",
    'import subprocess, sys\nsubprocess.check_call([sys.executable, "-m", "pip", "install", '
    '"./pkg"])': "pip install ./pkg",
    "import os, sys\nos.system(f\"bash -c '{sys.executable} -m pip --log pip.log install "
    "./pkg'\")": "pip --log pip.log install ./pkg",
}


@pytest.mark.slow
def test_every_way_a_cell_runs_pip_is_refused_but_to_read(tmp_path):
    """pip in the kernel (pip.main, runpy) and in a program it starts, the book's or the
    machine's, is refused; what only reads the environment runs."""
    from coursebook.execute.notebook_runs import run_notebook

    _local_package(tmp_path)

    def run(code: str):
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)], metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
        return notebook, run_notebook(notebook, cwd=str(tmp_path), timeout=120,
                                      allow_errors=False)[1]

    for code, command in PIP_RUNS.items():
        assert (run(code)[1] or None).command == command, code
    assert _lacks("hplocal")
    notebook, stopped = run("import sys\n!{sys.executable} -m pip show pip\n%pip --version")
    assert stopped is None
    shown = "".join(output.get("text", "") for output in notebook.cells[0].outputs)
    assert "Name: pip" in shown and f"{Path(sys.executable).parents[1]}" in shown, shown


@pytest.mark.slow
def test_a_kernel_kept_waiting_as_the_preview_keeps_one_refuses_pip_too(tmp_path, monkeypatch):
    """The preview's kernel, forked ahead of need in the chapter's folder, is the one a run
    takes, and its pip is refused as a forked or started kernel's."""
    import time

    from coursebook.execute.kernel_pool import (POOL_ENV, make_pool, offer_waiting_kernels,
                                                start_kernel_forkserver, stop_kernel_forkserver)
    from coursebook.execute.notebook_runs import run_notebook

    pool = tmp_path / "pool"
    make_pool(pool)
    for name in ("JUPYTER_PATH", POOL_ENV):  # as they were, after the test
        monkeypatch.setenv(name, os.environ.get(name, ""))
    offer_waiting_kernels(pool)
    server = start_kernel_forkserver(pool, [], keep=tmp_path)
    try:
        while not any((pool / "ready").glob("*.json")):
            time.sleep(0.05)
        code = 'import pip\npip.main(["install", "./pkg"])'
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)], metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
        stopped = run_notebook(notebook, cwd=str(tmp_path), timeout=120, allow_errors=False)[1]
    finally:
        stop_kernel_forkserver(pool, server)
    assert list((pool / "taken").glob("*.json")) and stopped.command == "pip install ./pkg"
