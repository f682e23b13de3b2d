"""The book's configuration (coursebook.config): made once per build, checked, with the
execution cache's folder as myst-nb resolves it; the museum parsed once while its files
stay as they are."""

from __future__ import annotations

import dataclasses
import os

import pytest

from conftest import BOOK, EXHIBITS, ROOT, TINY_BOOK, run_in_python, sphinx_build
from coursebook.config import BookConfig


@pytest.mark.parametrize("setting", ["", "given"])
def test_the_cache_folder_is_the_one_myst_nb_resolves(tmp_path, setting):
    """The kernel server's guess at setup (execute/kernel_pool.py): a myst-nb that resolves
    nb_execution_cache_path another way fails here."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.md").write_text("# Title\n")
    value = str(tmp_path / "cache") if setting else ""
    resolved = run_in_python(
        "import json, os\nfrom sphinx.application import Sphinx\n"
        "from coursebook.execute.kernel_pool import POOL_ENV, cache_at_setup\n"
        "os.environ[POOL_ENV] = 'none'  # no server started: the app is never built\n"
        f"app = Sphinx({str(tmp_path / 'src')!r}, {str(ROOT)!r}, {str(tmp_path / 'out')!r},\n"
        f"    {str(tmp_path / 'doctrees')!r}, 'html', status=None,\n"
        f"    confoverrides={{'nb_execution_cache_path': {value!r}}})\n"
        "print(json.dumps([str(cache_at_setup(app)),\n"
        "    app.env.mystnb_config.execution_cache_path]))")
    assert resolved[0] == resolved[1]
    assert resolved[0] == (value or str(tmp_path / ".jupyter_cache"))


def test_a_setting_of_the_wrong_type_is_one_line_naming_it():
    problem = dataclasses.replace(BookConfig(exhibits_dir=str(EXHIBITS)),
                                  verify_outputs="yes").problem()
    assert problem == ("coursebook_verify_outputs is 'yes', a str; it must be a bool (compare "
                       "outputs with the expected ones), such as coursebook_verify_outputs = True")
    assert BookConfig(exhibits_dir=str(EXHIBITS)).problem() is None


@pytest.mark.slow
def test_a_missing_file_stops_the_build_with_one_line(tmp_path):
    build = sphinx_build(TINY_BOOK, tmp_path / "out", tmp_path / "cache",
                         settings={"coursebook_machine_kinds_file": str(tmp_path / "kinds.toml")})
    line = (f"conf.py (or -D): coursebook_machine_kinds_file is '{tmp_path / 'kinds.toml'}', "
            "and no such file exists; it names the machine kinds recorded chapters run on: "
            "give its path, or fix the path")
    assert build.returncode != 0 and build.log.count(line) == 1, build.log[-3000:]
    assert "Traceback" not in build.log and not build.crash_reports


def test_the_museum_is_parsed_once_while_its_files_are_unchanged(tmp_path):
    import shutil

    from conftest import MACHINE_KINDS_FILE, RUNTIMES_FILE

    shutil.copytree(EXHIBITS, tmp_path / "exhibits")
    config = BookConfig(exhibits_dir=str(tmp_path / "exhibits"),
                        machine_kinds_file=str(MACHINE_KINDS_FILE),
                        runtimes_file=str(RUNTIMES_FILE))
    museum = config.museum()
    assert config.museum() is museum
    exhibit = next((tmp_path / "exhibits").glob("*/*.toml"))
    os.utime(exhibit, ns=(0, 0))  # an edit, as far as a build can tell
    assert config.museum() is not museum and config.museum() == museum


@pytest.mark.slow  # imports what a kernel imports (torch._dynamo, matplotlib): ~6 s of CPU
def test_every_module_the_kernels_import_ahead_still_imports():
    """The kernel server and the preview's waiting kernel ignore an import that fails (a
    chapter importing it meets the error its own way), so a torch that renames a module
    conf.py lists would only make builds slower: this test says so instead."""
    missing = run_in_python(
        "import importlib, json\nfrom pathlib import Path\n"
        "from coursebook.config import book_config\n"
        "from coursebook.execute.fill_cache import read_only_app\n"
        "from coursebook.prepare.editions import Edition\n"
        f"with read_only_app(Path({str(BOOK)!r}), Path({str(ROOT)!r}), Edition.STUDENT) as app:\n"
        "    config = book_config(app.config)\n"
        "names = [*config.kernel_imports, *config.preview_kernel_imports]\n"
        "def imports(name):\n"
        "    try:\n        importlib.import_module(name)\n        return True\n"
        "    except ImportError:\n        return False\n"
        "print(json.dumps([n for n in names if not imports(n)] + (['none'] if not names else [])))")
    assert missing == []
