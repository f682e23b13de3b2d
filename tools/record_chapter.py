#!/usr/bin/env python3
"""Run a recorded chapter on this machine and write its recording.

The chapter's top matter names the machine kinds it accepts (tools/machine-kinds.toml); its
environments file (book/recordings/NAME-environments.toml) lists, per kind, the Python
environments its cells run in, each as its own Jupyter kernel. This tool creates those
environments (.venv-NAME-KIND-ENV/), asks the runtime which device it has, and refuses
to write unless the device is what --kind claims: a CPU run is never labelled TPU. Then
it runs each cell in its environment and writes book/recordings/NAME-KIND.ipynb: the
cells this kind runs, their outputs with machine paths normalised, and the provenance
(device, versions per environment, every installed package of each kernel, the runtime it
stands for and where it differs from it, date, commit, a hash of the code). Each kernel
proves its device before it runs a cell: a kernel that reports another device than --kind
stops the run, and nothing is written. A cell that runs past --cell-timeout is stopped and
nothing is written; a fresh Python a cell starts is stopped at half that. With --check,
nothing is written: a fresh run must equal the committed recording, or it fails with a diff.

An environment of a runtime that has an image list (tools/runtime-images/NAME.txt, Colab's
whole package list) resolves with the image's versions as constraints, where they resolve
on this machine; the provenance names every package that differs from the image. A kind
with an `extra_index` (the TPU's: PyTorch's CPU builds) has pip read it where the machine
reaches it; the provenance names the torch build and where it came from.

It needs Python 3.11 or newer (datetime.UTC, tomllib) and a few small packages
(tools/recorder-requirements.txt), not the book's environment: it runs in Colab as it comes
and on a Cloud TPU VM with a Python brought along (docs/recording.md).
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import copy
import difflib
import functools
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))

from book_environment import (EXHIBITS_DIR, MACHINE_KINDS_FILE, RECORDER_REQUIREMENTS,
                              find_python, requirement_names, use_book_environment)

use_book_environment(*requirement_names(RECORDER_REQUIREMENTS),
                     start="start it with `make recording`, which makes its own environment")

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
from jupyter_core.utils import run_sync
from refresh_runtimes import (
    COLAB_LISTS,
    RefreshError,
    freeze_versions,
    image_path,
    refreshed,
)

from coursebook.exhibit_checks import FRESH_PYTHON_TIMEOUT, SIDE_ENVIRONMENTS
from coursebook.execute.notebook_runs import kernel_manager_class
from coursebook.model.machine_kinds import (
    MachineKind,
    RecordingEnvironment,
    environments_path,
    load_environments,
    load_machine_kinds,
    stand_in_kind,
)
from coursebook.model.cell_notes import without_notes
from coursebook.model.faults import BookError
from coursebook.museum.model import load_museum
from coursebook.model.notebooks import (
    cell_tags,
    first_line,
    is_answer,
    read_chapter,
    short_digest,
    with_stable_ids,
)
from coursebook.model.outputs import normalise
from coursebook.model.provenance import source_commit, today
from coursebook.model.recordings import (
    PROVENANCE_KEY,
    check_machine_kind,
    load_recording,
    recorded_chapter,
    recording_path,
    runs_on,
)
from coursebook.model.runtimes import (
    RUNTIMES_FILE,
    Runtime,
    load_runtimes,
)
from coursebook.model.versions import package_key
from coursebook.prepare.chapters import edition_chapter
from coursebook.prepare.editions import Edition
from coursebook.verify.expectations import shown_text

VERSIONS = """
import importlib, json, os, platform, re, sys
from importlib import metadata
names, _, imported_names = " ".join(sys.argv[1:]).partition("--imported")
versions = {"python": platform.python_version()}
torch_here = None
for name in names.split():
    if name == "torch":  # its build string (2.9.0+cu128), the one the fix lines print
        try:
            import torch
            versions[name] = torch.__version__
            # installed into this environment, or visible from the machine's own packages
            torch_here = torch.__file__.startswith(sys.prefix)
            continue
        except ImportError:
            pass
    try:
        versions[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
# The release the code itself says, for each package named after --imported: the module
# Python imports, which another distribution's files may have replaced.
def key(name):
    return re.sub(r"[-_.]+", "-", name).lower()
modules = metadata.packages_distributions()
imported = {}
for name in imported_names.split():
    for module in sorted(m for m, owners in modules.items() if key(name) in map(key, owners)):
        found = getattr(importlib.import_module(module), "__version__", None)
        if isinstance(found, str):
            imported[name] = found
# Every distribution the kernel can import, as pip freeze would list it, but the book's own
# folder on PYTHONPATH (where an editable install of the book leaves its egg-info): not the
# environment's, and found only in a checkout where the book's venv was made.
book = set(os.environ.get("PYTHONPATH", "").split(os.pathsep))
installed = {dist.metadata["Name"]: dist.version for dist in metadata.distributions()
             if str(dist.locate_file("")) not in book}
print(json.dumps({"versions": versions, "imported": imported,
                  "installed": dict(sorted(installed.items())), "torch_here": torch_here}))
"""
# What the install of an environment did that its provenance names, kept in the environment.
INSTALLED_WITH = ".installed-with.json"
DEFAULT_CELL_TIMEOUT = 600


class Refused(Exception):
    """Nothing is written: one line says why and what to do."""


def what_moved(runtime: Runtime, lists: Path, image: dict[str, str] | None) -> list[str]:
    """Before a recording: where the runtime's pins differ from Colab's published lists (a
    copy at ``lists``, as `make refresh-runtimes` reads them) and from this machine's image
    (``image``: {normalised name: version} of the packages the machine's own Python has,
    where the machine is the runtime's image), one line each."""
    lines = []
    if not (lists / "SOURCE.md").is_file():
        lines.append(f"no copy of Colab's lists at {lists}: [{runtime.name}]'s pins (listed "
                     f"{runtime.listed}) not compared; `make refresh-runtimes` with a newer "
                     "copy compares them")
    else:
        try:
            _, changes = refreshed(RUNTIMES_FILE, lists, ROOT / "pyproject.toml")
        except RefreshError as error:
            changes = [f"[{runtime.name}] (not compared: {error})"]
        mine = [change.removeprefix(f"[{runtime.name}] ") for change in changes
                if change.startswith(f"[{runtime.name}] ")
                and change.split()[1] not in ("source", "listed")]
        if mine:
            lines.append(f"Colab's published list moved since [{runtime.name}]'s pins (listed "
                         f"{runtime.listed}): {'; '.join(mine)}")
        else:
            lines.append(f"[{runtime.name}]'s pins match Colab's published list "
                         f"({runtime.source.split(':')[0]}, {runtime.listed})")
    present = [name for name in runtime.packages if package_key(name) in (image or {})]
    if image is not None and not present:
        # A Python brought along (a Cloud TPU VM's): no image to compare; pip installs the pins.
        lines.append(f"this machine's Python has none of [{runtime.name}]'s pins: it is not the "
                     "runtime's image, and the environments install them")
    elif image is not None:
        moved = [f"{name} {version} -> {image[package_key(name)]}"
                 for name, version in runtime.packages.items()
                 if package_key(name) in image and image[package_key(name)] != version]
        moved += [f"{name} absent (pinned {version})" for name, version in runtime.packages.items()
                  if package_key(name) not in image]
        if moved:
            lines.append(f"this machine's image moved since [{runtime.name}]'s pins: "
                         f"{'; '.join(moved)}")
    return lines


def image_versions() -> dict[str, str] | None:
    """The packages of this machine's own Python (the recorder's base interpreter, whose
    packages a ``system_packages`` kind's environments see), {normalised name: version};
    None where that Python cannot say."""
    base = (Path(sys.base_prefix) / "bin"
            / f"python{sys.version_info.major}.{sys.version_info.minor}")
    done = subprocess.run([str(base), "-c", "import json; from importlib import metadata; "
                           "print(json.dumps({d.metadata['Name']: d.version "
                           "for d in metadata.distributions()}))"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return None
    return {package_key(name): version for name, version in json.loads(done.stdout).items()}


def base_python(machine: MachineKind, environment: RecordingEnvironment) -> str:
    """The interpreter an environment is made from.

    On a kind whose machine is its runtime's image, the recorder's own Python (the image's:
    its packages stay visible); elsewhere the runtime's Python where this machine has it,
    else the recorder's (the provenance then names the difference).
    """
    if environment.runtime and not machine.system_packages:
        found = find_python(load_runtimes()[environment.runtime].python)
        if found is not None:
            return str(found[0])
    return sys.executable


def image_list(runtime: str) -> str | None:
    """A runtime's image list (tools/runtime-images/NAME.txt, pip freeze's form), or None."""
    path = image_path(RUNTIMES_FILE, runtime)
    return path.read_text(encoding="utf8") if runtime and path.is_file() else None


def constraints_of(image: str | None) -> list[str] | None:
    """The image list's ``name==version`` lines: pip takes them as constraints (a
    ``name @ URL`` line, the image's torch, it cannot from a registry)."""
    if image is None:
        return None
    return [line.strip() for line in image.splitlines()
            if "==" in line and not line.lstrip().startswith("#")]


def reachable(index: str) -> str:
    """``index`` where this machine reaches it within ten seconds, else ""."""
    if not index:
        return ""
    try:
        with urllib.request.urlopen(index, timeout=10):
            return index
    except (OSError, urllib.error.URLError):
        return ""


def ensure_environment(path: Path, machine: MachineKind, environment: RecordingEnvironment,
                       image: list[str] | None = None,
                       sides: dict[str, tuple[str, ...]] | None = None) -> Path:
    """Create or update a virtual environment from its requirements; its python.

    With ``image`` (the runtime's ``name==version`` lines), pip resolves with them as
    constraints; where they do not resolve here, it resolves again without them, and the
    environment's INSTALLED_WITH file says so. ``sides``: folders of older packages (the
    museum's CPU reproductions'), each installed apart under ``sides/``.
    """
    sides = sides or {}
    python = path / "bin" / "python"
    base = base_python(machine, environment)
    # The base Python's version too: an environment made from another Python (before the
    # runtime's was installed here, say) is made again.
    version = subprocess.run([base, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True).stdout.strip()
    index = reachable(machine.extra_index)
    wanted = json.dumps({"requirements": environment.requirements, "adds": environment.adds,
                         "sides": sides,
                         "system_packages": machine.system_packages, "python": version,
                         "image": image or [], "extra_index": index},
                        sort_keys=True)
    stamp = path / ".requirements.json"
    if python.exists() and stamp.is_file() and stamp.read_text() == wanted:
        return python
    print(f"record: installing environment {environment.name} into {path} ...", flush=True)
    visible = ["--system-site-packages"] if machine.system_packages else []
    if subprocess.run([base, "-m", "venv", *visible, str(path)]).returncode != 0:
        raise Refused(f"could not create environment {environment.name!r} ({path}) with {base}: "
                      "see the message above; `python3 tools/check_venv.py` says what is missing")
    install = [str(python), "-m", "pip", "install", "--quiet",
               *(["--extra-index-url", index] if index else []), *environment.requirements]
    constrained = False
    if image:
        constraints = path / "image-constraints.txt"
        constraints.write_text("\n".join(image) + "\n")
        constrained = subprocess.run([*install, "--constraint", str(constraints)]).returncode == 0
        if not constrained:
            print(f"record: the image's versions do not resolve here with environment "
                  f"{environment.name}'s requirements; resolving without them (the provenance "
                  "names each package that differs from the image)", flush=True)
    steps = [] if constrained else [install]
    # What the book adds, laid down again without its dependencies (installed above): where
    # another package ships files of the same name, the added package's are the ones imported.
    if environment.adds:
        steps.append([str(python), "-m", "pip", "install", "--quiet", "--no-deps",
                      "--force-reinstall", *environment.adds])
    steps += [[str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--target",
               str(path / "sides" / side), *requirements]
              for side, requirements in sides.items()]
    for step in steps:
        if subprocess.run(step).returncode != 0:
            raise Refused(f"could not install environment {environment.name!r} ({path}): see "
                          "pip's message above; `make recording-ready` checks the pins")
    (path / INSTALLED_WITH).write_text(json.dumps({
        "constrained": constrained if image else None, "extra_index": machine.extra_index,
        "extra_index_reached": bool(index)}))
    stamp.write_text(wanted)
    return python


def installed_with(python: Path) -> dict:
    """How the recorder installed the environment of ``python`` ({} for one it was given)."""
    path = python.parent.parent / INSTALLED_WITH
    return json.loads(path.read_text()) if path.is_file() else {}


def check_imported(environment: str, report: dict) -> None:
    """Each added package's imported module must be its installed release (VERSIONS' report),
    or nothing is written: the provenance would name code that did not run."""
    for name, found in report["imported"].items():
        installed = report["versions"].get(name)
        if installed is not None and found != installed:
            raise Refused(f"environment {environment!r}: `import {name}` runs release {found}, "
                          f"while its installed metadata says {installed}: another package's "
                          "files are in its place (torch_xla 2.9.0 ships a torchax of its own, "
                          "pytorch/xla#9363); delete the environment's folder and run again, "
                          "so that the recorder installs what the book adds last")


def torch_build(version: str, torch_here: bool, install: dict) -> str:
    """The torch of an environment and where it came from, as the provenance names it."""
    if not torch_here:
        return f"{version}: the machine's own packages (not installed by the recorder)"
    if not install:
        return f"{version}: an environment given with --python"
    index = install.get("extra_index", "")
    if index and install.get("extra_index_reached"):
        return f"{version}: installed by pip, with {index} as an extra index"
    if index:
        return (f"{version}: installed by pip from its default index ({index} was not "
                "reachable from this machine)")
    return f"{version}: installed by pip from its default index (this kind names no other)"


def differences(runtime: Runtime, installed: dict[str, str]) -> list[str]:
    """Where an environment made for this runtime is not the runtime, one line each."""
    installed = {package_key(name): version for name, version in installed.items()}
    lines = []
    python = installed.get("python", "")
    if python and ".".join(python.split(".")[:2]) != runtime.python:
        lines.append(f"python {python} (the runtime has {runtime.python})")
    for name, version in {**runtime.packages, **runtime.adds}.items():
        found = installed.get(package_key(name))
        if found is not None and found != version:
            lines.append(f"{name} {found} (the runtime has {version})")
    return lines


def runtime_provenance(runtime: Runtime, installed: dict[str, str], versions: dict[str, str],
                       image: dict[str, str] | None = None,
                       constrained: bool | None = None) -> dict:
    """Which runtime a recording's main environment stands for, and every way it is not it:
    its whole ``image`` ({normalised name: version}) if given, else its pins. ``versions``:
    what its kernel reports (torch's names its build); ``constrained``: whether pip
    resolved with the image's versions as constraints."""
    here = {package_key(name): (name, version) for name, version in installed.items()}
    for name, version in versions.items():
        if name != "python":  # the kernel's view wins: torch's build label
            here[package_key(name)] = (here.get(package_key(name), (name, ""))[0], version)
    entry: dict = {"name": runtime.name, "title": runtime.title}
    python = differences(runtime, {"python": versions.get("python", "")})
    if image is None:
        entry["differences"] = differences(runtime, {**installed, **versions})
        return entry
    entry["image"] = runtime.source
    entry["differences"] = python + [
        f"{name} {version} " + ("(not in the image)" if there is None
                                else f"(the image has {there})")
        for key, (name, version) in sorted(here.items()) if (there := image.get(key)) != version]
    entry["not_installed"] = sorted(set(image) - set(here))
    if constrained is not None:
        entry["constraints"] = ("the image's versions" if constrained else
                                "none: the image's versions did not resolve on this machine")
    return entry


def code_hash(notebook: nbformat.NotebookNode) -> str:
    code = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    return short_digest(json.dumps(code), 64)


def kernel_environment(machine: MachineKind, sides: Path,
                       cell_timeout: float = DEFAULT_CELL_TIMEOUT) -> dict[str, str]:
    # A fresh Python a cell starts is stopped at half the cell's timeout, so that its own
    # error (which names what it ran) reaches the cell before the cell's timeout does.
    env = {"PYTHONPATH": str(ROOT / "book" / "_ext"), "TF_CPP_MIN_LOG_LEVEL": "3",
           FRESH_PYTHON_TIMEOUT: f"{cell_timeout / 2:g}", **machine.environment}
    if sides.is_dir():
        env[SIDE_ENVIRONMENTS] = str(sides.resolve())
    return env


@functools.cache
def kernelspecs() -> Path:
    """This process's folder of kernelspecs, removed when it exits: two runs at once (of one
    chapter, with other timeouts or Pythons) each start their own kernels."""
    folder = Path(tempfile.mkdtemp(prefix="kernelspecs-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def install_kernel(name: str, python: Path, env: dict[str, str]) -> None:
    """A kernelspec for an environment's python, found through JUPYTER_PATH."""
    root = kernelspecs()
    spec = root / "kernels" / name
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python ({name})", "language": "python", "env": env}, indent=1))
    os.environ["JUPYTER_PATH"] = str(root)


def proven(machine: MachineKind, report: dict, where: str) -> None:
    """A probe's report must show the kind's device, or nothing is written."""
    platform, device_kind = report.get("platform", ""), report.get("device_kind", "")
    if not machine.ran_here(platform, device_kind):
        raise Refused(f"{where} reports {platform!r} ({device_kind!r}), not a {machine.name} "
                      "device: nothing written (a run is labelled only with the device every "
                      "kernel ran on)")


def probe_cell(machine: MachineKind, environment: RecordingEnvironment) -> nbformat.NotebookNode:
    """The kernel's first cell; in a kernel that holds no device, the probe runs in a new
    Python of the environment, which reports the device and gives it back by exiting."""
    probe = environment.probe or machine.probe
    if not environment.holds_device:
        probe = ("from coursebook.exhibit_checks import run_in_fresh_python\n"
                 f"run_in_fresh_python({probe!r})")
    return nbformat.v4.new_code_cell(probe)


def run_python(python: Path, code: str, env: dict[str, str], *args: str,
               timeout: float = DEFAULT_CELL_TIMEOUT) -> dict:
    try:
        done = subprocess.run([str(python), "-c", code, *args], capture_output=True, text=True,
                              env={**os.environ, **env}, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Refused(f"the probe in {python} ran past {timeout:g} s and was stopped (a device "
                      "that does not answer?); nothing written") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise Refused(f"the probe failed in {python}: {last}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def normalised(cell: nbformat.NotebookNode) -> None:
    """No machine paths or addresses in a committed output (coursebook.model.outputs' rules)."""
    for output in cell.outputs:
        if "text" in output:
            output.text = normalise(output.text)
        if "evalue" in output:
            output.evalue = normalise(output.evalue)
            output.traceback = [normalise(line) for line in output.traceback]
        for mime in ("text/plain", "text/markdown"):
            if mime in output.get("data", {}):
                output.data[mime] = normalise(output.data[mime])


# Seconds a finished kernel has to exit after its shutdown request (a device client giving
# its device back on the way out) before it is killed.
KERNEL_SHUTDOWN_WAIT = 60.0


def run_kernel(notebook: nbformat.NotebookNode, kernel_name: str, cwd: Path,
               cell_timeout: float, **hooks) -> str:
    """Run a notebook's cells in a new kernel, then stop it as the recorder stops every
    kernel (:func:`stop_kernel`); how it ended. The TPU smoke test runs its kernels so too."""
    client = NotebookClient(notebook, timeout=cell_timeout, kernel_name=kernel_name,
                            kernel_manager_class=kernel_manager_class(),
                            resources={"metadata": {"path": str(cwd)}}, allow_errors=False,
                            **hooks)
    timed_out = False
    try:
        client.execute(cleanup_kc=False)  # the kernel is left running, for stop_kernel
    except CellTimeoutError:
        timed_out = True
        raise
    finally:
        ended = stop_kernel(client, immediately=timed_out)
    return ended


def stop_kernel(client: NotebookClient, immediately: bool = False) -> str:
    """A kernel that finished (or whose cell failed) is asked to shut down, and has
    KERNEL_SHUTDOWN_WAIT seconds to exit (a device client giving its device back on the way
    out) before it is killed; one stopped in a cell that never ends (a timeout) is killed at
    once. "shut down", "killed", or "dead" (it had exited already)."""
    async def stop(km, kc) -> str:
        try:
            if not await km.is_alive():
                return "dead"
            ended = "killed"
            if not immediately:
                await km.request_shutdown()
                deadline = time.monotonic() + KERNEL_SHUTDOWN_WAIT
                while await km.is_alive() and time.monotonic() < deadline:
                    await asyncio.sleep(0.1)
                ended = "killed" if await km.is_alive() else "shut down"
            await km.shutdown_kernel(now=True)  # reaps it; kills it if it is still there
            return ended
        finally:
            await km.cleanup_resources()
            if kc is not None:
                kc.stop_channels()

    return run_sync(stop)(client.km, client.kc) if client.km is not None else "dead"


def check_probe(machine: MachineKind, environment: RecordingEnvironment, cell) -> None:
    """The first cell a kernel runs is its probe: its last printed line is the report."""
    printed = "".join(output.get("text", "") for output in cell.outputs
                      if output.get("name") == "stdout").strip().splitlines()
    try:
        report = json.loads(printed[-1])
    except (IndexError, json.JSONDecodeError):
        raise Refused(f"the kernel of environment {environment.name!r} could not report its "
                      "device: nothing written") from None
    proven(machine, report, f"the kernel of environment {environment.name!r}")


def execute(notebook: nbformat.NotebookNode, machine: MachineKind,
            environments: list[RecordingEnvironment], kernels: dict[str, str],
            chapter_dir: Path, cell_timeout: float = DEFAULT_CELL_TIMEOUT) -> None:
    """Run each code cell in its environment's kernel: the tagged ones, or the main one.

    Each kernel first runs the probe and must report the kind's device, before any cell.
    A cell (the probe included) that runs past ``cell_timeout`` seconds stops the run.
    """
    tagged = {env.cells_tagged: env.name for env in environments if env.cells_tagged}
    main = environments[0].name
    owner = {index: next((tagged[t] for t in cell_tags(cell) if t in tagged), main)
             for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"}
    for environment in environments:
        mine = [i for i, name in owner.items() if name == environment.name]
        if not mine:
            continue
        part = copy.deepcopy(notebook)
        part.cells = [probe_cell(machine, environment), *(part.cells[i] for i in mine)]

        def after(cell, cell_index, execute_reply, environment=environment):
            if cell_index == 0:
                if execute_reply["content"]["status"] != "ok":
                    raise Refused(f"the device probe failed in the kernel of environment "
                                  f"{environment.name!r}: nothing written")
                check_probe(machine, environment, cell)

        running: dict[str, int] = {}

        def started(cell, cell_index):
            running["index"] = cell_index

        try:
            run_kernel(part, kernels[environment.name], chapter_dir, cell_timeout,
                       on_cell_start=started, on_cell_executed=after)
        except CellTimeoutError:
            index = running.get("index", 0)
            where = (f"the device probe of environment {environment.name!r}" if index == 0 else
                     f"cell `{first_line(part.cells[index])}` in environment "
                     f"{environment.name!r}")
            raise Refused(f"{where} ran past its {cell_timeout:g} s timeout and was stopped; "
                          "nothing written") from None
        except CellExecutionError as error:
            failed = next((c for c in part.cells if c.cell_type == "code" and any(
                o.get("output_type") == "error" for o in c.outputs)), None)
            where = f"cell `{first_line(failed)}`" if failed is not None else "a cell"
            raise Refused(f"{where} failed in environment {environment.name!r}: "
                          f"{error.ename}: {error.evalue}; nothing written") from None
        except DeadKernelError:
            raise Refused(f"the kernel of environment {environment.name!r} died; nothing "
                          "written") from None
        for index, cell in zip(mine, part.cells[1:]):
            cell.metadata.pop("execution", None)
            normalised(cell)
            notebook.cells[index] = cell


def shown(notebook: nbformat.NotebookNode) -> list[str]:
    """Each code cell's outputs as the page shows them (the text a build verifies): what
    --check compares."""
    return [shown_text(cell) for cell in notebook.cells if cell.cell_type == "code"]


def parse_pythons(values: list[str]) -> dict[str, Path]:
    pythons = {}
    for value in values:
        name, _, path = value.partition("=")
        if not path:
            raise Refused(f"--python takes ENVIRONMENT=PATH, got {value!r}")
        pythons[name] = Path(os.path.abspath(path))  # not resolve(): a venv's python is a link
    return pythons


def record(args: argparse.Namespace) -> int:
    machines = load_machine_kinds(args.machine_kinds)
    if args.kind not in machines:
        raise Refused(f"no machine kind {args.kind!r} in {args.machine_kinds} "
                      f"(have {', '.join(machines)})")
    machine = machines[args.kind]
    text = args.chapter.read_text(encoding="utf8")
    chapter = recorded_chapter(read_chapter(text), machines, str(args.chapter), text)
    if chapter is None:
        raise Refused(f"{args.chapter} is not a recorded chapter (no 'coursebook: recording')")
    if machine not in chapter.machines:
        raise Refused(f"{args.chapter} is not recorded on {machine.name} (its top matter accepts "
                      f"{', '.join(b.name for b in chapter.machines)})")
    env_file = environments_path(args.recordings, chapter.name)
    environments = load_environments(env_file, machines).get(machine.name)
    if not environments:
        raise Refused(f"{env_file} has no [[{machine.name}]] environment")
    # Before installing gigabytes: does this machine have such a device at all?
    if machine.device_files and not any(glob.glob(p) for p in machine.device_files):
        raise Refused(f"this machine has no {machine.name} device "
                      f"({', '.join(machine.device_files)} absent): nothing written. "
                      f"Run on a {machine.name} machine"
                      + ("" if machine.stand_in else ", or record the stand-in with "
                         f"KIND={stand_in_kind(chapter.machines).name}") + ".")
    # First, what moved since the pins: Colab's lists, this machine's image.
    if environments[0].runtime:
        for line in what_moved(load_runtimes()[environments[0].runtime], args.colab_lists,
                               image_versions() if machine.system_packages else None):
            print(f"record: {line}", flush=True)
    overrides = parse_pythons(args.python)
    museum = load_museum(args.exhibits, machines)
    # The museum's CPU reproductions run on the stand-in, with their older packages apart.
    sides = {e.cpu.side_environment: e.cpu.side_packages for wing in museum.values()
             for e in wing.exhibits if machine.stand_in and e.cpu and e.cpu.side_environment}
    pythons: dict[str, Path] = {}
    for e in environments:  # an environment that shares another comes after it
        pythons[e.name] = overrides.get(e.name) or (pythons[e.shares] if e.shares else
                          ensure_environment(args.venvs / f".venv-{chapter.name}-{machine.name}-"
                                             f"{e.name}", machine, e,
                                             constraints_of(image_list(e.runtime)),
                                             sides if e is environments[0] else None))
    if args.environments_only:
        print(json.dumps({"environments": {name: str(python) for name, python in pythons.items()}}))
        return 0
    main = environments[0]
    env = kernel_environment(machine, pythons[main.name].parent.parent / "sides",
                             args.cell_timeout)
    provenance = run_python(pythons[main.name], machine.probe, env, timeout=args.cell_timeout)
    provenance = {"platform": provenance.get("platform", ""),
                  "device_kind": provenance.get("device_kind", "")}
    target = recording_path(args.recordings, chapter.name, machine.name)
    check_machine_kind(machine, provenance, target)
    found = {e.name: run_python(pythons[e.name], VERSIONS, env, *e.pins(), "--imported",
                                *RecordingEnvironment("", e.adds).pins(),
                                timeout=args.cell_timeout) for e in environments}
    for name, report in found.items():
        check_imported(name, report)
    provenance["environments"] = {name: report["versions"] for name, report in found.items()}
    provenance["installed"] = {name: report["installed"] for name, report in found.items()}
    install = installed_with(pythons[main.name])
    if main.runtime:
        image = image_list(main.runtime)
        provenance["runtime"] = runtime_provenance(
            load_runtimes()[main.runtime], found[main.name]["installed"],
            found[main.name]["versions"], freeze_versions(image) if image else None,
            install.get("constrained"))
    if "torch" in found[main.name]["versions"]:
        provenance["torch_build"] = torch_build(found[main.name]["versions"]["torch"],
                                                found[main.name]["torch_here"], install)
    torch_version = provenance["environments"][main.name].get("torch", "")
    # Ids from the cells, not nbformat's random ones: a new recording diffs where it changed.
    # The book's notes (each cell's line) stay out: moving prose would change the file.
    notebook = with_stable_ids(without_notes(edition_chapter(
        text, str(args.chapter), Edition.STUDENT, museum, torch_version,
        machine_kinds=machines).notebook))
    if any(is_answer(cell) for cell in notebook.cells):
        raise Refused(f"{args.chapter} has answers: a recorded chapter has none")
    provenance.update(date=today(), commit=source_commit(ROOT, "book", "exhibits"),
                      code_hash=code_hash(notebook))
    notebook.cells = [c for c in notebook.cells if c.cell_type != "code" or runs_on(c, machine)]
    kernels = {}
    for e in environments:
        kernels[e.name] = f"{chapter.name}-{machine.name}-{e.name}"
        install_kernel(kernels[e.name], pythons[e.name],
                       kernel_environment(machine, pythons[e.name].parent.parent / "sides",
                                          args.cell_timeout))
    execute(notebook, machine, environments, kernels, args.chapter.parent, args.cell_timeout)
    notebook.metadata[PROVENANCE_KEY] = provenance
    if args.check:
        return compare(load_recording(target, machine).notebook, notebook, chapter.command(machine),
                       target)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    print(f"record: wrote {target} ({machine.describe(provenance['device_kind'])})")
    return 0


def compare(committed: nbformat.NotebookNode, fresh: nbformat.NotebookNode, command: str,
            target: Path) -> int:
    diff = list(difflib.unified_diff("\n\n".join(shown(committed)).splitlines(),
                                     "\n\n".join(shown(fresh)).splitlines(),
                                     "committed", "fresh run", lineterm=""))
    if (committed.metadata[PROVENANCE_KEY]["code_hash"]
            != fresh.metadata[PROVENANCE_KEY]["code_hash"]):
        diff.insert(0, "the chapter's code changed since the recording was made")
    if diff:
        print("\n".join(diff))
        print(f"record: {target} does not match a fresh run; re-record with `{command}` and "
              "review the diff", file=sys.stderr)
        return 1
    print(f"record: {target} matches a fresh run")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapter", type=Path, help="the chapter file, e.g. book/bridges.md")
    parser.add_argument("--kind", required=True, help="a machine kind of tools/machine-kinds.toml")
    parser.add_argument("--check", action="store_true", help="compare with the committed recording")
    parser.add_argument("--recordings", type=Path, default=ROOT / "book" / "recordings")
    parser.add_argument("--exhibits", type=Path, default=EXHIBITS_DIR,
                        help="the error museum's exhibits (default: exhibits/)")
    parser.add_argument("--machine-kinds", type=Path, default=MACHINE_KINDS_FILE,
                        help="the table of machine kinds")
    parser.add_argument("--venvs", type=Path, default=ROOT,
                        help="where the environments are created (default: the repository)")
    parser.add_argument("--python", action="append", default=[], metavar="ENVIRONMENT=PATH",
                        help="use this interpreter for an environment instead of creating one")
    parser.add_argument("--cell-timeout", type=float, default=DEFAULT_CELL_TIMEOUT,
                        metavar="SECONDS", help="stop a cell that runs longer (default: "
                        "%(default)g; a fresh Python a cell starts: half of it)")
    parser.add_argument("--colab-lists", type=Path, default=COLAB_LISTS,
                        help="a copy of Colab's published lists, compared with the pins first "
                        "(default: %(default)s)")
    parser.add_argument("--environments-only", action="store_true",
                        help="create the environments, print their Pythons as JSON, run nothing")
    args = parser.parse_args(argv)
    try:
        return record(args)
    except (Refused, BookError) as error:
        print(f"record: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
