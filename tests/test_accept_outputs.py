"""`make accept-outputs` runs each chapter whose outputs changed a second time, so that an
output that varies between runs is found when it is accepted, not on a later cold build."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

RANDOM_CELL = "\n```{code-cell} ipython3\nprint(torch.rand(2))\n```\n"


def accept(book: Path, root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "accept_outputs.py"),
                           "--book", str(book), "--out", str(root / "out"),
                           "--cache", str(root / "cache")],
                          capture_output=True, text=True, cwd=ROOT)


@pytest.mark.parametrize("seed", ["", "torch.manual_seed(0)\n"])
def test_an_unseeded_random_output_is_refused_when_accepted(tiny_book, tmp_path, seed):
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text() + RANDOM_CELL.replace("print", seed + "print"))
    done = accept(tiny_book, tmp_path)
    log = done.stdout + done.stderr
    expected = (tiny_book / "expected").rglob("chapter.txt")
    assert "    tensor([0." in "".join(p.read_text() for p in expected), log[-3000:]
    assert "chapter changed; running it a second time" in log, log[-3000:]
    if seed:
        assert done.returncode == 0, log[-3000:]
        assert "the second run printed the same" in log
    else:  # the accept builds alone pass; the second run finds the cell, and offers both fixes
        assert done.returncode == 1, log[-3000:]
        assert "varies between runs" in log and "torch.manual_seed(0)" in log
        assert "`(varies)`" in log


def test_an_output_that_holds_the_time_it_ran_is_refused_though_both_runs_agree(tiny_book,
                                                                                tmp_path):
    """Two runs in one minute print the same time of day, and the second run passed: the
    cell prints the first run's time in both, as such two runs do. The clock during the
    accept tells it; the message offers a fixed time and the entry marked."""
    first = tmp_path / "first-run"
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text() + (
        "\n```{code-cell} ipython3\nimport pathlib, time\n"
        f"_first = pathlib.Path({str(first)!r})\n"
        "_first.exists() or _first.write_text(time.strftime('%H:%M'))\n"
        "print('started at', _first.read_text())\n```\n"))
    done = accept(tiny_book, tmp_path)
    log = done.stdout + done.stderr
    assert "the second run printed the same" not in log and done.returncode == 1, log[-3000:]
    assert f"holds the time it ran ({first.read_text()}), which a later run changes: print a " \
        "fixed time instead" in log, log[-3000:]
    assert " (varies) · import pathlib, time\n        started at <duration>\n" in log, log[-3000:]
