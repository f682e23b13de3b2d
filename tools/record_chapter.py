#!/usr/bin/env python3
"""Run a recorded chapter (the TPU bridges) on this builder and write its recording.

On a TPU VM, `--kind tpu` runs every cell; `--kind cpu` is the CPU stand-in
(PJRT_DEVICE=CPU, JAX_PLATFORMS=cpu), which leaves out cells tagged `tpu-only`. The kernel
is the bridges environment's Python (--python). The recording, book/recordings/NAME-KIND.ipynb,
holds the outputs and their provenance: the device the runtime reports, the versions, the
date and a hash of the code. A run whose device disagrees with --kind writes nothing.
With --check, nothing is written: the fresh outputs must equal the committed recording's
(after normalising addresses and paths), or the command fails with a diff.
"""

from __future__ import annotations

import argparse
import datetime
import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

from book_environment import use_book_environment

use_book_environment()

import nbformat
import torch
from nbclient import NotebookClient

from coursebook.chapters import edition_chapter
from coursebook.editions import Edition
from coursebook.notebooks import TPU_ONLY_TAG, cell_tags, is_answer
from coursebook.exhibit_checks import SIDE_ENVIRONMENTS
from coursebook.outputs import normalise
from coursebook.recordings import (PROVENANCE_KEY, RecordingError, check_label, code_hash,
                                   load_recording, recording_name, recording_path)

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("torch", "torch_xla", "torchax", "jax", "jaxlib", "libtpu")
PROBE = """
import json, jax
from importlib import metadata
def version(name):
    if name == "torch":  # its build string (2.9.0+cu128), the one the fix lines print
        import torch
        return torch.__version__
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
device = jax.devices()[0]
print(json.dumps({"device_platform": device.platform, "device_kind": device.device_kind,
                  "versions": {n: v for n in %r if (v := version(n))}}))
"""


def kernel_environment(kind: str, sides: Path | None) -> dict[str, str]:
    env = {"PYTHONPATH": str(ROOT / "book" / "_ext"), "TF_CPP_MIN_LOG_LEVEL": "3"}
    if kind == "cpu":
        env.update(PJRT_DEVICE="CPU", JAX_PLATFORMS="cpu")
    else:
        env.update(PJRT_DEVICE="TPU")
    if sides is not None:
        env[SIDE_ENVIRONMENTS] = str(sides.resolve())
    return env


def install_kernel(name: str, python: str, env: dict[str, str]) -> None:
    """A kernelspec for the bridges Python, found through JUPYTER_PATH."""
    root = ROOT / "_build" / "jupyter"
    spec = root / "kernels" / name
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python ({name})", "language": "python", "env": env}, indent=1))
    os.environ["JUPYTER_PATH"] = str(root)


def shown(notebook: nbformat.NotebookNode) -> list[str]:
    """Each code cell's outputs as text, normalised: what --check compares."""
    texts = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        parts = [out.get("text") or "\n".join(out.get("traceback", []))
                 or (out.get("data") or {}).get("text/markdown")
                 or (out.get("data") or {}).get("text/plain", "") for out in cell.outputs]
        texts.append(normalise("".join(parts)))
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapter", type=Path, help="the chapter file, e.g. book/bridges.md")
    parser.add_argument("--kind", choices=("tpu", "cpu"), required=True)
    parser.add_argument("--python", required=True, help="the bridges environment's python")
    parser.add_argument("--sides", type=Path, help="folder of side environments (exhibit 08)")
    parser.add_argument("--check", action="store_true", help="compare with the committed recording")
    parser.add_argument("--recordings", type=Path, default=ROOT / "book" / "recordings")
    args = parser.parse_args(argv)
    args.python = os.path.abspath(args.python)  # not resolve(): a venv's python is a link
    text = args.chapter.read_text(encoding="utf8")
    notebook = edition_chapter(text, str(args.chapter), Edition.STUDENT, ROOT / "exhibits",
                               torch.__version__)
    name = recording_name(notebook)
    if name is None or any(is_answer(cell) for cell in notebook.cells):
        sys.exit(f"record: {args.chapter} is not a recorded chapter without answers")
    if args.kind == "cpu":
        notebook.cells = [c for c in notebook.cells if TPU_ONLY_TAG not in cell_tags(c)]
    env = kernel_environment(args.kind, args.sides)
    install_kernel(notebook.metadata.kernelspec.name, args.python, env)
    probe = subprocess.run([args.python, "-c", PROBE % (PACKAGES,)], capture_output=True,
                           text=True, env={**os.environ, **env}, check=True)
    provenance = json.loads(probe.stdout.strip().splitlines()[-1])
    provenance.update(date=datetime.date.today().isoformat(), code_hash=code_hash(notebook))
    target = recording_path(args.recordings, name, args.kind)
    try:
        check_label(args.kind, provenance, target)
    except RecordingError as error:
        sys.exit(f"record: {error}")
    NotebookClient(notebook, timeout=600, kernel_name=notebook.metadata.kernelspec.name,
                   resources={"metadata": {"path": str(args.chapter.parent)}}).execute()
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
    notebook.metadata[PROVENANCE_KEY] = provenance
    if args.check:
        committed = load_recording(target, args.kind).notebook
        diff = list(difflib.unified_diff("\n\n".join(shown(committed)).splitlines(),
                                         "\n\n".join(shown(notebook)).splitlines(),
                                         "committed", "fresh run", lineterm=""))
        if committed.metadata[PROVENANCE_KEY]["code_hash"] != provenance["code_hash"]:
            diff.insert(0, "the chapter's code changed since the recording was made")
        if diff:
            print("\n".join(diff))
            print(f"record: {target} does not match a fresh run; re-record with "
                  f"`make tpu-cache KIND={args.kind}` and review the diff", file=sys.stderr)
            return 1
        print(f"record: {target} matches a fresh {args.kind} run")
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    print(f"record: wrote {target} ({provenance['device_platform']}, {provenance['device_kind']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
