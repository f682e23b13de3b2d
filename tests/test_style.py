"""The code keeps the style pyproject.toml names ([tool.ruff]): pyflakes' findings (unused
imports and names, undefined names) and lines over 100 characters fail the suite."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT

PATHS = ["book/_ext", "tools", "tests", "conf.py"]


def test_ruff_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config",
                           str(ROOT / "pyproject.toml"), "--output-format", "concise", *PATHS],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
