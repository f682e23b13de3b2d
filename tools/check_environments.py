#!/usr/bin/env python3
"""Check that each recording environment installs on its machines, without one at hand.

For every book/recordings/*-environments.toml and every accelerator kind in it, pip's
resolver is asked (--dry-run, --only-binary=:all:, --python-version and the kind's
--platform tags from tools/machine-kinds.toml) whether the environment's requirements form one
consistent set, for each Python version the kind and the environment allow. A conflict
such as two libtpu pins is caught here, before anyone reaches a TPU. It needs the package
registry; a registry that cannot be reached, or that has no such packages, is reported as
"not checked", never as a pass.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))

from book_environment import MACHINE_KINDS_FILE, use_book_environment

use_book_environment("packaging")

from packaging.requirements import Requirement

from coursebook.model.machine_kinds import (MachineKind, RecordingEnvironment,
                                 load_machine_kinds, load_environments)

# pip's words for "the registry could not answer" (unreachable, or it lacks the packages).
_UNREACHABLE = ("from versions: none", "Could not fetch URL", "Failed to establish a new "
                "connection", "Network is unreachable", "Temporary failure in name resolution")


@dataclass(frozen=True)
class Case:
    recording: str
    machine: MachineKind
    environment: RecordingEnvironment
    python: str

    @property
    def name(self) -> str:
        return f"{self.recording}-{self.machine.name}-{self.environment.name}-py{self.python}"


@dataclass(frozen=True)
class Resolution:
    status: str  # "resolves", "conflict" or "not checked"
    detail: str


def cases(recordings_dir: Path = ROOT / "book" / "recordings",
          kinds_file: Path = MACHINE_KINDS_FILE) -> list[Case]:
    """Each accelerator environment, for each Python its kind and itself allow."""
    machines = load_machine_kinds(kinds_file)
    found = []
    for path in sorted(recordings_dir.glob("*-environments.toml")):
        recording = path.name.removesuffix("-environments.toml")
        for kind, environments in load_environments(path, machines).items():
            machine = machines[kind]
            if machine.stand_in or not machine.platforms:
                continue
            for environment in environments:
                if environment.shares:  # a second kernel of an environment checked already
                    continue
                pythons = [p for p in machine.pythons
                           if not environment.pythons or p in environment.pythons]
                found += [Case(recording, machine, environment, p) for p in pythons]
    return found


def for_python(requirements, python: str) -> list[str]:
    """The requirements whose markers hold on that Python, markers dropped.

    pip evaluates markers for the Python it runs on, whatever --python-version says.
    """
    chosen = []
    for line in requirements:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(
                {"python_version": python, "python_full_version": f"{python}.0"}):
            requirement.marker = None
            chosen.append(str(requirement))
    return chosen


def resolve(requirements: list[str] | tuple[str, ...], python: str,
            platforms: tuple[str, ...]) -> Resolution:
    """What pip's resolver says about these requirements on that Python and platform."""
    with tempfile.TemporaryDirectory() as target:
        # fast-deps: the resolver needs each wheel's metadata only, which pip then reads
        # with HTTP range requests instead of downloading the wheels (torch's CUDA wheels
        # are gigabytes per Python; 27 s to 8 s for one environment here).
        command = [sys.executable, "-m", "pip", "install", "--dry-run", "--use-feature=fast-deps",
                   "--ignore-installed", "--only-binary=:all:", "--target", target,
                   "--python-version", python]
        for platform in platforms:
            command += ["--platform", platform]
        done = subprocess.run([*command, *for_python(requirements, python)],
                              capture_output=True, text=True)
    if done.returncode == 0:
        return Resolution("resolves", "")
    if any(word in done.stderr for word in _UNREACHABLE):
        reason = next((line for line in done.stderr.splitlines()
                       if "from versions: none" in line), None)
        return Resolution("not checked", reason or "the package registry cannot be reached")
    said = [line for line in done.stderr.splitlines()
            if line.strip() and not line.startswith("WARNING")]
    cause = done.stdout.partition("The conflict is caused by:")[2].strip()  # pip's own words
    if cause:
        said.insert(1, "The conflict is caused by:\n" + cause.split("\n\n")[0])
    return Resolution("conflict", "\n".join(said[-20:]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recordings", type=Path, default=ROOT / "book" / "recordings")
    parser.add_argument("--machine-kinds", type=Path, default=MACHINE_KINDS_FILE)
    args = parser.parse_args(argv)
    failed = False
    for case in cases(args.recordings, args.machine_kinds):
        result = resolve(case.environment.requirements, case.python, case.machine.platforms)
        print(f"{case.name:40} {result.status}" + (f": {result.detail}" if result.detail else ""))
        failed |= result.status == "conflict"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
