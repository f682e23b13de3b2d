#!/usr/bin/env python3
"""Smoke-test a TPU before a first recording: each step in a new Python, under a timeout;
one JSON report.

Run it on the machine that will record (a Colab TPU runtime, through tools/tpu_smoke.ipynb,
or a Cloud TPU VM), before `make recording KIND=tpu`. The steps, in order, each in a new
process that is stopped (with its children) when it runs past its timeout:

  environment     make the chapter's environments as `make recording` will
                  (`make recording-environments`); skipped with --python
  versions        the versions of the bridges and libtpu in that environment, and the
                  release the imported torchax says (another package may ship its files)
  jax             JAX alone: its device, the device's kind, one small computation
  torch_xla       torch_xla alone: its device, xla_device_kind, one small computation
  jax+torch_xla   both in one process, JAX first
  torch_xla+jax   both in one process, torch_xla first
  kernel: jax     as the recording runs: a JAX cell in a Jupyter kernel of the environment,
                  started and stopped by the recorder's own run_kernel (a shutdown request,
                  a kill only when the kernel has not exited in time; the report says which)
  kernel: torch_xla  then a torch_xla cell in a second kernel, after the first has ended

After each device step, "free after STEP" takes the device with JAX in a new Python: a
process that ended without giving the TPU back shows there. Each point a step passes is
printed to stderr as it comes, with the children's own output; stdout gets one JSON
report (paste it into an issue). A step stopped at its timeout names the last point it
reached.

Without the kind's device (a TPU's /dev/accel* or /dev/vfio/*) the device steps are
skipped and the report says that no TPU was found. With --kind cpu they run on the CPU
with the stand-in's variables: that shows the steps work, and nothing about a TPU.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))

from book_environment import use_book_environment

use_book_environment("packaging")  # the model's one need; Colab's Python has it

from coursebook.model.machine_kinds import MachineKind, load_machine_kinds
from coursebook.model.provenance import source_commit, today

MACHINE_KINDS_FILE = ROOT / "tools" / "machine-kinds.toml"
REPORT_FORMAT = 1
MARK = "SMOKE "  # a step prints MARK + JSON at each point it passes

# The process's own stdout: in a kernel's cell too, where sys.stdout is the cell's output.
PRELUDE = f'''
import json, sys
def mark(at, **found):
    print({MARK!r} + json.dumps({{"at": at, **found}}), file=sys.__stdout__, flush=True)
'''
VERSIONS = '''
import platform
from importlib import metadata
versions = {"python": platform.python_version()}
for name in ("jax", "jaxlib", "libtpu", "torch", "torch_xla", "torchax"):
    try:
        versions[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
try:  # the release the imported code says: torch_xla 2.9.0 ships a torchax of its own
    import torchax
    versions["torchax imported"] = torchax.__version__
except ImportError:
    pass
mark("versions", versions=versions)
'''
JAX = '''
mark("importing jax")
import jax
import jax.numpy as jnp
device = jax.devices()[0]
mark("jax has its device", jax_platform=device.platform, jax_device_kind=device.device_kind,
     jax_devices=len(jax.devices()))
mark("jax computed", jax_sum=float(jnp.arange(4.0).sum()))
'''
# xla_device_kind: torch_xla 2.9.0, torch_xla/core/xla_model.py ("a vendor-dependent string
# that uniquely identifies the kind of device").
TORCH_XLA = '''
mark("importing torch_xla")
import torch
import torch_xla
import torch_xla.core.xla_model as xm
device = torch_xla.device()
mark("torch_xla has its device", torch_xla_platform=xm.xla_device_hw(device).lower(),
     torch_xla_device_kind=xm.xla_device_kind(device))
mark("torch_xla computed", torch_xla_sum=float(torch.arange(4.0, device=device).sum().item()))
'''


@dataclass(frozen=True)
class Step:
    name: str
    code: str
    timeout: float


# Each pair a device step and the check after it that the device is free again.
DEVICE_STEPS = (Step("jax", JAX, 180), Step("torch_xla", TORCH_XLA, 180),
                Step("jax+torch_xla", JAX + TORCH_XLA, 240),
                Step("torch_xla+jax", TORCH_XLA + JAX, 240))
# The recording's own order: the JAX (torchax) kernel, then the torch_xla kernel, each a
# kernel of the chapter's environment that the recorder's run_kernel starts and stops.
KERNEL_STEPS = (Step("kernel: jax", JAX, 180), Step("kernel: torch_xla", TORCH_XLA, 180))
FREE_TIMEOUT = 120
ENVIRONMENT_TIMEOUT = 900
# Seconds a kernel step may take beyond its cell's timeout: to start the kernel, and to stop
# it (record_chapter.KERNEL_SHUTDOWN_WAIT, a minute at most, before a kill).
KERNEL_MARGIN = 180


def run_step(name: str, command: list[str], timeout: float, env: dict[str, str],
             cwd: Path = ROOT) -> dict:
    """Run one step's process; echo its lines to stderr as they come; stop it (and its
    children) at ``timeout``. What it reached, found and printed last."""
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env, cwd=cwd, start_new_session=True)
    marks: list[dict] = []
    last: dict[str, list[str]] = {"stdout": [], "stderr": []}

    def read(stream, kind: str) -> None:
        for line in stream:
            if kind == "stdout" and line.startswith(MARK):
                marks.append(json.loads(line[len(MARK):]))
                print(f"[{name}] {marks[-1]['at']}", file=sys.stderr, flush=True)
                continue
            print(f"[{name}] {line}", end="", file=sys.stderr, flush=True)
            last[kind] = (last[kind] + [line.rstrip()])[-20:]

    readers = [threading.Thread(target=read, args=(process.stdout, "stdout"), daemon=True),
               threading.Thread(target=read, args=(process.stderr, "stderr"), daemon=True)]
    for reader in readers:
        reader.start()
    try:
        process.wait(timeout=timeout)
        status = "ok" if process.returncode == 0 else "failed"
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the whole group: a hung TPU client may fork
        process.wait()
        status = "timeout"
    for reader in readers:
        reader.join(timeout=5)
    result = {"name": name, "status": status, "seconds": round(time.monotonic() - started, 1),
              "timeout": timeout, "reached": marks[-1]["at"] if marks else None,
              "found": {key: value for mark in marks for key, value in mark.items() if key != "at"}}
    if status == "failed":
        result["exit"] = process.returncode
        result["error"] = next((line for line in reversed(last["stderr"]) if line.strip()),
                               f"exit status {process.returncode}, nothing on stderr")
    result["last_stdout"] = last["stdout"][-1] if last["stdout"] else ""
    return result


def in_kernel(step_name: str, python: str, kind: str, timeout: float,
              machine_kinds: Path) -> int:
    """One kernel step, in this process: the step's code as a cell in a kernel of
    ``python``'s environment, run and stopped by the recorder's own run_kernel."""
    import nbformat
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    from record_chapter import install_kernel, kernel_environment, run_kernel

    step = next(s for s in KERNEL_STEPS if s.name == step_name)
    machine = load_machine_kinds(machine_kinds)[kind]
    env = kernel_environment(machine, Path(python).parent.parent / "sides", timeout)
    # What this step's own process imports from (PYTHONPATH), the kernel imports from too.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"),
                                                      env["PYTHONPATH"]]))
    name = f"smoke-{kind}"
    install_kernel(name, Path(python), env)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PRELUDE + step.code)])
    ran = {}
    exec(PRELUDE, globals())  # mark(), for this process's own points
    try:
        ended = run_kernel(notebook, name, ROOT, timeout,
                           on_cell_executed=lambda **_: ran.setdefault("at", time.monotonic()))
    except CellTimeoutError:
        print(f"the cell ran past its {timeout:g} s timeout; its kernel was killed (the "
              "recorder stops a kernel so)", file=sys.stderr)
        return 1
    except (CellExecutionError, DeadKernelError) as error:
        print(str(error).strip().splitlines()[-1], file=sys.stderr)
        return 1
    mark("kernel stopped", kernel_ended=ended,  # noqa: F821 (defined by PRELUDE)
         kernel_stop_seconds=round(time.monotonic() - ran.get("at", time.monotonic()), 1))
    return 0


def skipped(name: str, why: str) -> dict:
    return {"name": name, "status": "skipped", "why": why}


def make_environments(recording: str, kind: str, timeout: float | None,
                      env: dict[str, str]) -> tuple[dict, str | None]:
    """`make recording-environments`: the step, and the main environment's Python."""
    command = ["make", "-s", "recording-environments", f"RECORDING={recording}",
               f"KIND={kind}", f"PYTHON={sys.executable}"]
    step = run_step("environment", command, timeout or ENVIRONMENT_TIMEOUT, env)
    if step["status"] != "ok":
        return step, None
    try:
        pythons = json.loads(step["last_stdout"])["environments"]
    except (json.JSONDecodeError, KeyError, TypeError):
        step.update(status="failed", error="`make recording-environments` printed no "
                                           "environments (a last line of JSON)")
        return step, None
    step["found"] = {"environments": sorted(pythons)}
    return step, next(iter(pythons.values()))


def device_report(machine: MachineKind, steps: list[dict]) -> dict:
    """What the probes reported, and whether any of it is a result of this kind's device."""
    reported = sorted({(step["found"][f"{bridge}_platform"], step["found"][f"{bridge}_device_kind"])
                       for step in steps if "found" in step for bridge in ("jax", "torch_xla")
                       if f"{bridge}_device_kind" in step.get("found", {})})
    proven = bool(reported) and all(machine.ran_here(p, k) for p, k in reported)
    return {"kind": machine.name, "reported": [f"{p} ({k})" for p, k in reported],
            "proven": proven}


def summary(machine: MachineKind, files: list[str], device: dict, steps: list[dict]) -> str:
    """One line: the device each probe reported (or why none of it is a TPU result), then
    each step's outcome."""
    reported = ", ".join(device["reported"]) or "no device reported"
    if device["proven"] and not machine.stand_in:
        where = reported
    elif machine.stand_in:
        where = (f"no TPU found: this ran on the {machine.short_label} ({reported}); nothing "
                 "here is a TPU result")
    elif not files:
        where = (f"no TPU found ({', '.join(machine.device_files)} absent): nothing here is a "
                 "TPU result")
    else:
        where = (f"no probe proved a {machine.name} device ({reported}): nothing here is a "
                 "TPU result")
    outcomes = []
    for step in steps:
        if step["status"] == "skipped":
            continue
        outcome = f"{step['name']} {step['status']}"
        if step["status"] == "timeout":
            outcome += f" after {step['timeout']:g} s at {step['reached']!r}"
        elif step["status"] == "failed":
            outcome += f" ({step['error']})"
        outcomes.append(outcome)
    left_out = [step["name"] for step in steps if step["status"] == "skipped"]
    if left_out:
        outcomes.append(f"skipped: {', '.join(left_out)}")
    return f"{where}. " + "; ".join(outcomes)


def smoke(args: argparse.Namespace) -> tuple[dict, int]:
    machine = load_machine_kinds(args.machine_kinds)[args.kind]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **machine.environment}
    files = sorted({path for pattern in machine.device_files for path in glob.glob(pattern)})
    has_device = bool(files) or not machine.device_files
    steps: list[dict] = []
    python = args.python
    if python:
        steps.append(skipped("environment", "--python names the Python to probe"))
    elif not has_device:
        steps.append(skipped("environment", f"no {machine.name} device"))
    else:
        step, python = make_environments(args.recording, machine.name, args.timeout, env)
        steps.append(step)
    if python:
        steps.append(run_step("versions", [python, "-c", PRELUDE + VERSIONS],
                              args.timeout or FREE_TIMEOUT, env))
    for step in DEVICE_STEPS:
        if not python or not has_device:
            why = "no environment" if has_device else f"no {machine.name} device found"
            steps += [skipped(step.name, why), skipped(f"free after {step.name}", why)]
            continue
        steps.append(run_step(step.name, [python, "-c", PRELUDE + step.code],
                              args.timeout or step.timeout, env))
        steps.append(run_step(f"free after {step.name}", [python, "-c", PRELUDE + JAX],
                              args.timeout or FREE_TIMEOUT, env))
    # The kernels run from the recorder's own environment (nbclient), made by the
    # environment step; a Python given with --python runs them itself.
    recorder = ROOT / ".venv-recorder" / "bin" / "python"
    runner = str(recorder) if recorder.is_file() else sys.executable
    for step in KERNEL_STEPS:
        if not python or not has_device:
            why = "no environment" if has_device else f"no {machine.name} device found"
            steps += [skipped(step.name, why), skipped(f"free after {step.name}", why)]
            continue
        timeout = args.timeout or step.timeout
        steps.append(run_step(step.name, [runner, str(Path(__file__).resolve()), "--in-kernel",
                                          step.name, "--python", python, "--kind", machine.name,
                                          "--timeout", f"{timeout:g}",
                                          "--machine-kinds", str(args.machine_kinds)],
                              timeout + KERNEL_MARGIN, env))
        steps.append(run_step(f"free after {step.name}", [python, "-c", PRELUDE + JAX],
                              args.timeout or FREE_TIMEOUT, env))
    for step in steps:
        step.pop("last_stdout", None)
    device = device_report(machine, steps)
    versions = next((s["found"]["versions"] for s in steps if s["name"] == "versions"
                     and "versions" in s.get("found", {})), {})
    report = {"report": "tpu-smoke", "format": REPORT_FORMAT,
              "summary": summary(machine, files, device, steps),
              "tpu": device["proven"] and machine.platform == "tpu" and not machine.stand_in,
              "device": {**device, "files": files}, "recording": args.recording,
              "date": today(), "commit": source_commit(ROOT),
              "machine": {"python": platform.python_version(), "system": platform.platform()},
              "versions": versions, "steps": steps}
    return report, 0 if has_device else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="The steps: " + ", ".join(s.name for s in DEVICE_STEPS))
    parser.add_argument("--kind", default="tpu",
                        help="the machine kind whose variables the steps get (default: tpu)")
    parser.add_argument("--recording", default="bridges",
                        help="the recorded chapter whose environment is made (default: bridges)")
    parser.add_argument("--python", help="probe this Python instead of making the environment")
    parser.add_argument("--timeout", type=float,
                        help="one timeout in seconds for every step (default: each step's own)")
    parser.add_argument("--output", type=Path, help="write the report to this file as well")
    parser.add_argument("--machine-kinds", type=Path, default=MACHINE_KINDS_FILE,
                        help="the table of machine kinds")
    parser.add_argument("--in-kernel", choices=[s.name for s in KERNEL_STEPS],
                        help="run only this kernel step here, in a kernel of --python's "
                        "environment (the kernel steps start the script so)")
    args = parser.parse_args(argv)
    if args.kind not in load_machine_kinds(args.machine_kinds):
        parser.error(f"no machine kind {args.kind!r} in {args.machine_kinds}")
    if args.in_kernel:
        return in_kernel(args.in_kernel, args.python, args.kind,
                         args.timeout or FREE_TIMEOUT, args.machine_kinds)
    report, status = smoke(args)
    text = json.dumps(report, indent=1)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf8")
    print(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
