"""The code keeps the style pyproject.toml names ([tool.ruff]): pyflakes' findings (unused
imports and names, undefined names) and lines over 100 characters fail the suite."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from conftest import ROOT

PATHS = ["book/_ext", "tools", "tests", "conf.py"]


def test_ruff_finds_nothing():
    # A venv made before ruff joined the test extra lacks it: say how to get it, in one line.
    assert importlib.util.find_spec("ruff"), "ruff is not installed: make .venv/.installed"
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config",
                           str(ROOT / "pyproject.toml"), "--output-format", "concise", *PATHS],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
