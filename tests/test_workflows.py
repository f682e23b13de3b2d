"""The GitHub Actions workflows pass the workflow schema and zizmor, the Actions security linter.

Both validators come with the test extra (check-jsonschema carries GitHub's workflow schema;
zizmor runs offline here). Each is also seen failing on a planted bad workflow.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (it comes with `pip install -e '.[test]'`)")
    return path


def schema_check(*paths: Path) -> subprocess.CompletedProcess:
    """GitHub's workflow schema, as vendored in check-jsonschema: no network needed."""
    return subprocess.run([_tool("check-jsonschema"), "--builtin-schema",
                           "vendor.github-workflows", *map(str, paths)],
                          capture_output=True, text=True)


def zizmor(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([_tool("zizmor"), "--offline", "--no-progress", *map(str, paths)],
                          capture_output=True, text=True)


def test_there_is_a_publishing_workflow():
    assert ROOT / ".github" / "workflows" / "publish.yml" in WORKFLOWS


def test_workflows_match_the_github_workflow_schema():
    done = schema_check(*WORKFLOWS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_workflows_pass_zizmor():
    done = zizmor(*WORKFLOWS)
    assert done.returncode == 0, done.stdout + done.stderr


PLANTED = """\
name: planted
on: pull_request_target
jobs:
  bad:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
        with:
          ref: ${{ github.event.pull_request.head.sha }}
      - run: echo "${{ github.event.pull_request.title }}"
"""


def test_the_validators_fail_on_planted_workflows(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(PLANTED)
    found = zizmor(bad)
    assert found.returncode != 0 and "template-injection" in found.stdout + found.stderr
    broken = tmp_path / "broken.yml"
    broken.write_text(PLANTED.replace("    runs-on: ubuntu-24.04\n", ""))
    assert schema_check(broken).returncode != 0
