"""`make test` checks the system packages the suite needs before any test
(tools/system_tools.py): the lists .ci/run installs, installed as root, else one line
naming the command."""

from __future__ import annotations

import subprocess

import pytest

from conftest import ROOT, load_tool

system_tools = load_tool("system_tools")


def test_ci_installs_the_same_lists_and_make_test_checks_them_first():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "$(cat tools/pdf-packages.txt tools/test-packages.txt)" in ci
    make = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True,
                          text=True).stdout.splitlines()
    check = next(n for n, line in enumerate(make) if line.endswith("tools/system_tools.py"))
    assert all("pytest" not in line and "test-suite" not in line for line in make[:check]), make
    assert {"chromium", "zbar-tools", "poppler-utils", "latexmk"} <= set(system_tools.packages())


@pytest.mark.skipif(subprocess.run(["which", "dpkg-query"], capture_output=True).returncode,
                    reason="no dpkg on this machine")
def test_a_missing_package_is_named_with_the_command_for_a_user(monkeypatch, tmp_path, capsys):
    listed = tmp_path / "packages.txt"
    listed.write_text("make\nno-such-package-here\n")
    monkeypatch.setattr(system_tools, "LISTS", [listed])
    monkeypatch.setattr(system_tools.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(system_tools, "disk_problem", lambda root: None)  # any disk's free space
    assert system_tools.main([]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "`sudo sh -c 'apt-get update && apt-get install -y " \
        "--no-install-recommends no-such-package-here'`" in error
    listed.write_text("make\n")
    assert system_tools.main([]) == 0


def test_a_disk_too_full_for_the_suite_stops_it_with_one_line(monkeypatch, tmp_path, capsys):
    usage = system_tools.shutil.disk_usage(tmp_path)
    monkeypatch.setattr(system_tools.shutil, "disk_usage",
                        lambda path: usage._replace(free=int(10e9)))
    assert system_tools.disk_problem(tmp_path) == (
        f"make test writes about 13 GB (environments, built books) but {tmp_path} has 10.0 GB "
        "free: free some space (`make clean`, old worktrees), then make test again")
    (tmp_path / ".venv-lesson-cpu-both").mkdir()  # the stand-in is installed: builds only
    assert system_tools.disk_problem(tmp_path) is None
    monkeypatch.setattr(system_tools, "TOOLS", tmp_path / "tools")
    monkeypatch.setattr(system_tools.shutil, "disk_usage",
                        lambda path: usage._replace(free=int(1e9)))
    assert system_tools.main([]) == 1
    assert capsys.readouterr().err.count("\n") == 1


def test_ci_installs_without_a_wheel_cache():
    assert "export PIP_NO_CACHE_DIR=1" in (ROOT / ".ci" / "run").read_text()
