"""A newcomer's clone: the tests that need the course material skip without it (and fail
where it is required, as CI requires it), and a tool started with a Python that lacks the
book's packages says in one line how to start it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

import conftest
from conftest import ROOT, plant_distribution

TOOLS = sorted(p.name for p in (ROOT / "tools").glob("*.py") if p.read_text().startswith("#!"))


# Each folder beside the checkout: its fixture, the name conftest gives its path, its words.
BESIDE = [("seeds", "SEEDS", "course material"),
          ("colab_lists", "COLAB_LISTS", "copy of Colab's published lists")]


@pytest.mark.parametrize("fixture,name,what", BESIDE)
def test_without_the_course_material_its_tests_skip_with_one_line(monkeypatch, tmp_path,
                                                                  request, fixture, name, what):
    monkeypatch.setattr(conftest, name, tmp_path / "nowhere")
    monkeypatch.delenv(conftest.REQUIRE_SEEDS, raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        request.getfixturevalue(fixture)
    assert str(skipped.value) == f"no {what} beside this checkout ({tmp_path / 'nowhere'})"


@pytest.mark.parametrize("fixture,name,what", BESIDE)
def test_where_the_course_material_is_required_its_absence_fails(monkeypatch, tmp_path,
                                                                request, fixture, name, what):
    monkeypatch.setattr(conftest, name, tmp_path / "nowhere")
    monkeypatch.setenv(conftest.REQUIRE_SEEDS, "1")
    with pytest.raises(pytest.fail.Exception, match=f"the {what} is missing"):
        request.getfixturevalue(fixture)


def test_ci_requires_the_course_material():
    assert f"export {conftest.REQUIRE_SEEDS}=1" in (ROOT / ".ci" / "run").read_text()


@pytest.fixture(scope="module")
def bare_clone(tmp_path_factory):
    """The tools of a clone with no book environment beside them, and a ``python3`` on PATH
    that has only the standard library, plus a lone nbclient (as a machine's Python may)."""
    root = tmp_path_factory.mktemp("clone")
    shutil.copytree(ROOT / "tools", root / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "book").symlink_to(ROOT / "book")
    packages = root / "packages"
    plant_distribution(packages, "nbclient", "0.11.0")
    bin_dir = root / "bin"
    bin_dir.mkdir()
    # -S: no site-packages (the venv's included); PYTHONPATH still holds the lone nbclient.
    (bin_dir / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    environment = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    return root, dict(environment, PATH=f"{bin_dir}{os.pathsep}/usr/bin:/bin",
                      PYTHONPATH=str(packages))


@pytest.mark.parametrize("tool", TOOLS)
def test_a_tool_without_the_book_environment_says_how_to_start_it(bare_clone, tool):
    """It runs on the standard library, or stops with one line and no traceback."""
    root, environment = bare_clone
    done = subprocess.run([str(root / "tools" / tool), "--help"], capture_output=True,
                          text=True, env=environment, cwd=root)
    if done.returncode == 0:
        assert done.stdout.startswith("usage:"), done.stdout
        return
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, \
        done.stderr
    assert done.stderr.startswith(f"{tool}: this Python (") and " lacks " in done.stderr


def test_the_recorder_in_a_python_with_nbclient_alone_names_the_rest(bare_clone):
    root, environment = bare_clone
    done = subprocess.run([str(root / "tools" / "record_chapter.py"), "--help"],
                          capture_output=True, text=True, env=environment, cwd=root)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "lacks myst-nb, myst-parser, nbformat" in done.stderr and "nbclient" not in \
        done.stderr.split(" lacks ")[1]
    assert "`make recording`" in done.stderr
