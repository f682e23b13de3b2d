"""The TPU smoke test's steps, run here with stand-ins for JAX and torch_xla on the CPU:
the report's shape, a hung step cut at its timeout, and never a TPU claimed without one."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import ROOT

SCRIPT = ROOT / "tools" / "tpu_smoke.py"
STEPS = ["environment", "versions", "jax", "free after jax", "torch_xla", "free after torch_xla",
         "jax+torch_xla", "free after jax+torch_xla", "torch_xla+jax", "free after torch_xla+jax",
         "kernel: jax", "free after kernel: jax", "kernel: torch_xla",
         "free after kernel: torch_xla"]

# Stand-ins that run on the CPU and report it. torch_xla's hangs when JAX is in the process
# and FAKE_HANG_AFTER_JAX is set: the hang torch_xla's own code warns of on a TPU
# (torch_xla/_internal/jax_workarounds.py), planted here.
FAKES = {
    "jax/__init__.py": "class _Device:\n    platform = 'cpu'\n    device_kind = 'cpu'\n\n\n"
                       "def devices():\n    return [_Device()]\n",
    # Neither numpy nor torch imported: torch can take longer than a step's timeout on a busy
    # machine, numpy costs 0.1 s of CPU in each of 22 steps; the steps need only a device
    # and a sum.
    "jax/numpy.py": "class _Range(list):\n    def sum(self):\n"
                    "        return float(sum(self))\n\n\n"
                    "def arange(end):\n    return _Range(range(int(end)))\n",
    "torch/__init__.py": "class device:\n    def __init__(self, kind):\n"
                         "        self.type = kind\n\n\n"
                         "class _Sum(float):\n    def item(self):\n        return float(self)\n\n\n"
                         "class _Range(list):\n    def sum(self):\n"
                         "        return _Sum(sum(self))\n\n\n"
                         "def arange(end, device=None):\n    return _Range(range(int(end)))\n",
    "torch_xla/__init__.py": "import os, sys, time\nimport torch\n\n\ndef device():\n"
                             "    if os.environ.get('FAKE_HANG_AFTER_JAX')"
                             " and 'jax' in sys.modules:\n"
                             "        time.sleep(3600)\n"
                             "    if os.environ.get('FAKE_HANG_IN_KERNEL')"
                             " and 'ipykernel' in sys.modules:\n"
                             "        time.sleep(3600)\n"
                             "    return torch.device('cpu')\n",
    "torch_xla/core/__init__.py": "",
    "torchax/__init__.py": "__version__ = '0.0.13'\n",
    "torch_xla/core/xla_model.py": "def xla_device_hw(device):\n    return 'CPU'\n\n\n"
                                   "def xla_device_kind(device):\n    return 'cpu'\n",
}
# A stand-in `make`: `make recording-environments` names this Python as the environment.
FAKE_MAKE = f"""#!/bin/sh
echo "pip: installing (a stand-in)"
echo '{{"environments": {{"both": "{sys.executable}"}}}}'
"""


def _smoke(folder: Path, *arguments: str, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    for name, text in FAKES.items():
        (folder / "fakes" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "fakes" / name).write_text(text)
    (folder / "bin").mkdir(parents=True, exist_ok=True)
    (folder / "bin" / "make").write_text(FAKE_MAKE)
    (folder / "bin" / "make").chmod(0o755)
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(SCRIPT), *arguments], capture_output=True,
                          text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(folder / "fakes"),
                               "PATH": f"{folder / 'bin'}{os.pathsep}{os.environ['PATH']}",
                               **env})
    return done, time.monotonic() - started


def test_the_smoke_test_explains_itself():
    done = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("usage:")


@pytest.mark.slow  # its steps run in kernels, some until a 6 s timeout; two runs at once
def test_each_step_reports_and_a_hung_step_or_kernel_cell_is_cut_at_its_timeout(tmp_path):
    """Two runs at once (their timeouts overlap): one whose torch_xla hangs after JAX
    (FAKE_HANG_AFTER_JAX) reports every step, the hung one cut at its timeout; one whose
    torch_xla cell hangs in its kernel (FAKE_HANG_IN_KERNEL): the cell's timeout stops it,
    the kernel is killed at once, the step says where it was."""
    with ThreadPoolExecutor(2) as pool:
        every = pool.submit(_smoke, tmp_path / "every", "--kind", "cpu", "--timeout", "6",
                            "--output", str(tmp_path / "report.json"), FAKE_HANG_AFTER_JAX="1")
        in_kernel = pool.submit(_smoke, tmp_path / "in-kernel", "--kind", "cpu", "--timeout", "6",
                                "--python", sys.executable, FAKE_HANG_IN_KERNEL="1")
        (done, seconds), (hung_in_kernel, _) = every.result(), in_kernel.result()
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # stdout is the one JSON report, nothing else
    assert json.loads((tmp_path / "report.json").read_text()) == report
    assert {"report", "format", "summary", "tpu", "device", "recording", "date", "commit",
            "machine", "versions", "steps"} <= set(report)
    assert [step["name"] for step in report["steps"]] == STEPS
    status = {step["name"]: step["status"] for step in report["steps"]}
    assert status == {**{name: "ok" for name in STEPS}, "jax+torch_xla": "timeout"}
    hung = next(step for step in report["steps"] if step["name"] == "jax+torch_xla")
    assert hung["reached"] == "importing torch_xla" and 6 <= hung["seconds"] < 300
    assert seconds < 1800  # the hung process (an hour's sleep) did not hold the run up
    # The release the imported code says (torch_xla 2.9.0 ships a torchax of its own).
    assert report["versions"]["torchax imported"] == "0.0.13"
    jax = next(step for step in report["steps"] if step["name"] == "jax")
    assert jax["found"]["jax_device_kind"] == "cpu" and jax["found"]["jax_sum"] == 6.0
    torch_xla = next(step for step in report["steps"] if step["name"] == "torch_xla")
    assert torch_xla["found"]["torch_xla_device_kind"] == "cpu"  # the chip's name, as JAX's
    # On a CPU: said plainly, never a TPU result.
    assert report["tpu"] is False and report["device"]["reported"] == ["cpu (cpu)"]
    assert report["summary"].startswith("no TPU found: this ran on the CPU stand-in")
    assert "jax+torch_xla timeout after 6 s at 'importing torch_xla'" in report["summary"]
    assert "[jax+torch_xla] importing torch_xla" in done.stderr  # progress, as it came
    assert "pip: installing (a stand-in)" in done.stderr
    # The recording's way: a JAX cell, then a torch_xla cell, each in a kernel of the
    # environment, stopped as the recorder stops its kernels; the device free after each.
    for bridge in ("jax", "torch_xla"):
        kernel = next(step for step in report["steps"] if step["name"] == f"kernel: {bridge}")
        assert kernel["reached"] == "kernel stopped", kernel
        assert kernel["found"][f"{bridge}_device_kind"] == "cpu"
        assert kernel["found"]["kernel_ended"] == "shut down"  # asked, not killed
    assert "[kernel: torch_xla] torch_xla has its device" in done.stderr
    report = json.loads(hung_in_kernel.stdout)
    kernel = next(step for step in report["steps"] if step["name"] == "kernel: torch_xla")
    assert kernel["status"] == "failed" and kernel["reached"] == "importing torch_xla"
    assert kernel["error"] == ("the cell ran past its 6 s timeout; its kernel was killed "
                               "(the recorder stops a kernel so)")
    after = next(step for step in report["steps"] if step["name"] == "free after kernel: torch_xla")
    assert after["status"] == "ok"


@pytest.mark.skipif(bool(glob.glob("/dev/accel*") + glob.glob("/dev/vfio/[0-9]*")),
                    reason="this machine has a TPU")
def test_without_a_tpu_the_tpu_steps_are_skipped_and_the_report_says_so(tmp_path):
    done, _ = _smoke(tmp_path)
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["tpu"] is False and report["device"]["files"] == []
    assert report["summary"].startswith("no TPU found (/dev/accel*")
    assert {step["status"] for step in report["steps"]} == {"skipped"}  # nothing installed
