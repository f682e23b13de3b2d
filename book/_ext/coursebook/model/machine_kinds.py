"""Machine kinds (``tools/machine-kinds.toml``: a TPU, a GPU, the CPU stand-in) a recorded
chapter runs on, and its recording environments (``book/recordings/NAME-environments.toml``:
each a kernel's Python environment on one kind), both naming a runtime for their pins."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from coursebook.model.runtimes import runtime_named
from coursebook.model.toml_files import NOT_READ, read_toml
from coursebook.model.versions import package_key, version_key

_PIN = re.compile(r"\s*([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*==\s*([^\s;]+)\s*")  # name==version


@dataclass(frozen=True)
class MachineKind:
    name: str
    label: str
    platform: str
    probe: str
    device_kind: str = ""
    stand_in: bool = False
    environment: dict[str, str] = field(default_factory=dict)
    device_files: tuple[str, ...] = ()
    pythons: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()
    runtime: str = ""  # the runtime (tools/runtimes.toml) its environments start from
    system_packages: bool = False  # environments see the machine's packages (an image's)
    extra_index: str = ""  # a package index pip also reads, where the machine reaches it
    glibc: str = ""  # with arch: every platform tag pip accepts there (else ``platforms``)
    arch: str = ""

    def describe(self, device_kind: str) -> str:
        """The label with the device's kind ("TPU v6 lite", not "TPU (TPU v6 lite)")."""
        if "{device_kind}" in self.label and device_kind.upper().startswith(
                self.short_label.upper() + " "):
            return device_kind
        return self.label.format(device_kind=device_kind)

    @property
    def short_label(self) -> str:
        """The label without its details: "TPU", "CPU stand-in"."""
        return self.label.split(" (")[0]

    def ran_here(self, platform: str, device_kind: str) -> bool:
        """Whether a probe's report proves this kind (a CPU never passes for a TPU)."""
        return platform == self.platform and device_kind.upper().startswith(
            self.device_kind.upper())


def manylinux_platforms(glibc: str, arch: str) -> tuple[str, ...]:
    """Every platform tag pip accepts on a Linux with this glibc (down to x86_64's oldest)."""
    major, minor = (int(part) for part in glibc.split("."))
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    tags = []
    for version in range(minor, 4, -1):
        tags.append(f"manylinux_{major}_{version}_{arch}")
        if version in legacy:
            tags.append(f"{legacy[version]}_{arch}")
    return (*tags, f"linux_{arch}")


@dataclass(frozen=True)
class _KindsFile:
    kind: tuple[MachineKind, ...] = ()


@functools.lru_cache(maxsize=None)
def load_machine_kinds(path: Path, runtimes_file: Path | None = None) -> dict[str, MachineKind]:
    """Every machine kind, in order of preference."""
    data, file = read_toml(path, _KindsFile)
    machines: dict[str, MachineKind] = {}
    for index, machine in enumerate(data.kind):
        pythons = machine.pythons
        if machine.runtime:
            python = runtime_named(machine.runtime, file, f"kind[{index}].runtime",
                                   runtimes_file).python
            pythons = tuple(sorted({python, *pythons}, key=version_key))
        if bool(machine.glibc) != bool(machine.arch):
            raise file.fault(f"kind[{index}].arch", "and glibc come together",
                             "give both, or list 'platforms'")
        platforms = (manylinux_platforms(machine.glibc, machine.arch) if machine.glibc
                     else machine.platforms)
        machines[machine.name] = replace(machine, pythons=pythons, platforms=platforms)
    if not any(machine.stand_in for machine in machines.values()):
        raise file.fault("kind", "no kind has 'stand_in = true'",
                         "an ordinary build needs one: mark the CPU's kind")
    return machines


def stand_in_kind(kinds: Iterable[MachineKind]) -> MachineKind:
    # load_machine_kinds and recorded_chapter make sure there is one.
    return next(kind for kind in kinds if kind.stand_in)


@dataclass(frozen=True)
class RecordingEnvironment:
    """One kernel's environment for one kind: what pip installs, which cells it runs."""

    name: str
    requirements: tuple[str, ...] = ()  # its own list, where it names no runtime
    cells_tagged: str = ""  # "": the kind's main environment, which runs every other cell
    pythons: tuple[str, ...] = ()  # narrows the kind's list (a package's own floor)
    runtime: str = ""  # the runtime its requirements come from
    shares: str = ""  # a kernel of its own, in the environment of that name (no install)
    probe: str = ""  # proves the device from inside its kernel ("": the kind's probe)
    # False: the probe runs in a new Python; the kernel holds no device (its cells' Pythons do).
    holds_device: bool = True
    # What the book adds to the runtime (in ``requirements``), installed again last: another
    # package may ship files of its name (torch_xla 2.9.0 ships a torchax, pytorch/xla#9363).
    adds: tuple[str, ...] = field(default=(), metadata=NOT_READ)

    def pins(self) -> dict[str, str]:
        found = (_PIN.fullmatch(requirement) for requirement in self.requirements)
        return {package_key(match[1]): match[2] for match in found if match}


def environments_path(recordings_dir: Path, name: str) -> Path:
    return recordings_dir / f"{name}-environments.toml"


def load_environments(path: Path, machines: dict[str, MachineKind],
                      runtimes_file: Path | None = None) -> dict[str, list[RecordingEnvironment]]:
    """A recorded chapter's environments, per kind; each kind's first one is its main one."""
    tables, file = read_toml(path, dict[str, tuple[RecordingEnvironment, ...]])
    environments: dict[str, list[RecordingEnvironment]] = {}
    for kind, listed in tables.items():
        if kind not in machines:
            raise file.fault(kind, "is not a machine kind of the machine kinds file",
                             f"use one of {', '.join(machines)}")
        found: list[RecordingEnvironment] = []
        for index, environment in enumerate(listed):
            where = f"{kind}[{index}]"
            if environment.shares:
                shared = next((e for e in found if e.name == environment.shares), None)
                if shared is None:
                    raise file.fault(f"{where}.shares", f"names '{environment.shares}'",
                                     "name an environment listed above it")
                environment = replace(environment, requirements=shared.requirements,
                                      adds=shared.adds,
                                      runtime=environment.runtime or shared.runtime)
            elif environment.runtime:
                named = runtime_named(environment.runtime, file, f"{where}.runtime", runtimes_file)
                environment = replace(environment, requirements=tuple(named.requirements()),
                                      adds=tuple(f"{n}=={v}" for n, v in named.adds.items()))
            elif not environment.requirements:
                raise file.fault(f"{where}.requirements", "is missing",
                                 "list its pins, or name a 'runtime' or an environment it 'shares'")
            found.append(environment)
        if not found or found[0].cells_tagged:
            raise file.fault(f"{kind}[0].cells_tagged", "is set on the main environment",
                             "the first one runs every other cell: remove it")
        environments[kind] = found
    return environments
