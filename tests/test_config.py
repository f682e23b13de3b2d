"""The book's configuration (coursebook.config): made once per build, checked, with the
execution cache's folder as myst-nb resolves it; the museum parsed once while its files
stay as they are."""

from __future__ import annotations

import dataclasses
import io
import os
from pathlib import Path

import pytest

from conftest import BOOK, EXHIBITS, ROOT, TINY_BOOK, sphinx_build
from coursebook.config import BookConfig
from coursebook.process.forked_builds import Forked


def in_a_fork(function, *arguments):
    """What ``function(*arguments)`` returns, run in a fork of this process: the Sphinx it
    sets up and the modules it imports stay out of the test process, and it imports only
    what this one lacks (a new Python imported Sphinx, the extension and torch again: a
    cache-folder test took 0.8 s of CPU, 0.35 s forked; the kernels' imports 6 s, 3.5 s)."""
    status, sent = Forked(lambda sender: sender.send(function(*arguments))).result()
    assert status == 0 and sent is not None, f"the fork ended with status {status}"
    return sent


def _cache_folders(src: Path, out: Path, value: str) -> list[str]:
    """The kernel server's guess at setup and myst-nb's resolved cache folder."""
    from sphinx.application import Sphinx

    from coursebook.execute.kernel_pool import POOL_ENV, cache_at_setup

    os.environ[POOL_ENV] = "none"  # no server started: the app is never built
    app = Sphinx(str(src), str(ROOT), str(out / "out"), str(out / "doctrees"), "html",
                 status=None, confoverrides={"nb_execution_cache_path": value})
    return [str(cache_at_setup(app)), app.env.mystnb_config.execution_cache_path]


@pytest.mark.parametrize("setting", ["", "given"])
def test_the_cache_folder_is_the_one_myst_nb_resolves(tmp_path, setting):
    """The kernel server's guess at setup (execute/kernel_pool.py): a myst-nb that resolves
    nb_execution_cache_path another way fails here."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.md").write_text("# Title\n")
    value = str(tmp_path / "cache") if setting else ""
    resolved = in_a_fork(_cache_folders, tmp_path / "src", tmp_path, value)
    assert resolved[0] == resolved[1]
    assert resolved[0] == (value or str(tmp_path / ".jupyter_cache"))


def _markdown_read(src: Path, out: Path) -> list[list[str]]:
    """The MyST extensions markdown_parser reads with, during a build given one more (-D)
    and after it."""
    from sphinx.application import Sphinx

    from coursebook.execute.kernel_pool import POOL_ENV
    from coursebook.model.solutions import MYST_EXTENSIONS, markdown_parser

    def extensions() -> list[str]:
        return sorted(markdown_parser().options["myst_config"].enable_extensions)

    os.environ[POOL_ENV] = "none"
    app = Sphinx(str(src), str(ROOT), str(out / "out"), str(out / "doctrees"), "dummy",
                 status=None, warning=io.StringIO(),
                 confoverrides={"myst_enable_extensions": [*MYST_EXTENSIONS, "tasklist"]})
    during = extensions()
    app.build()
    return [during, extensions()]


@pytest.mark.slow  # the extension set up and a dummy build, in a fork: ~6 s under load (H14)
def test_a_builds_markdown_settings_end_with_it(tmp_path):
    """A build's MyST settings (-D too) are how the book reads Markdown while it runs; they
    stayed after it in its process (the `_BOOK` parser), where a tool then read a chapter
    with another build's settings."""
    from coursebook.model.solutions import MYST_EXTENSIONS

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.md").write_text("# Title\n")
    during, after = in_a_fork(_markdown_read, tmp_path / "src", tmp_path)
    assert during == sorted([*MYST_EXTENSIONS, "tasklist"]) and after == sorted(MYST_EXTENSIONS)


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


def _not_importing() -> list[str]:
    """The modules the kernels import ahead (conf.py's, as Sphinx reads it) that no longer
    import; ['none'] if conf.py names none."""
    import importlib

    from coursebook.config import book_config
    from coursebook.execute.fill_cache import read_only_app
    from coursebook.prepare.editions import Edition

    with read_only_app(BOOK, ROOT, Edition.STUDENT) as app:
        config = book_config(app.config)
    names = [*config.kernel_imports, *config.preview_kernel_imports]

    def imports(name):
        try:
            importlib.import_module(name)
            return True
        except ImportError:
            return False

    return [name for name in names if not imports(name)] + (["none"] if not names else [])


@pytest.mark.slow  # imports what a kernel imports (torch._dynamo, matplotlib): ~3 s of CPU
def test_every_module_the_kernels_import_ahead_still_imports():
    """The kernel server and the preview's waiting kernel ignore an import that fails (a
    chapter importing it meets the error its own way), so a torch that renames a module
    conf.py lists would only make builds slower: this test says so instead."""
    missing = in_a_fork(_not_importing)
    assert missing == []

