"""Machine kinds and recording environments, both data.

A *machine kind* (``tools/machine-kinds.toml``) is a kind of machine a recorded chapter runs
on: a TPU, a GPU, or the CPU stand-in. A *recording environment*
(``book/recordings/NAME-environments.toml``) is one Python environment, run as a Jupyter
kernel, that a chapter's cells execute in on one kind; a kind may have several (one per
bridge), each running the cells tagged for it. Both name a *runtime*
(``tools/runtimes.toml``, ``coursebook.model.runtimes``) rather than repeating its pins. Adding a
kind or a recorded chapter is a matter of data, not of code.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from coursebook.model.faults import BookError
from coursebook.model.runtimes import runtime_named
from coursebook.model.versions import package_key


class MachineKindError(BookError):
    """A machine kinds or environments file that cannot be used; names the file and field."""


@dataclass(frozen=True)
class MachineKind:
    """One machine kind, as ``tools/machine-kinds.toml`` describes it."""

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

    def describe(self, device_kind: str) -> str:
        """The label with the device's kind, which is the whole label where it names the
        machine's kind already ("TPU v6 lite", not "TPU (TPU v6 lite)")."""
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
    """Every platform tag pip accepts on a Linux with this glibc: ``manylinux_2_<glibc>``
    down to 2_5 (x86_64's oldest), each with its legacy alias, then ``linux_<arch>``."""
    major, minor = (int(part) for part in glibc.split("."))
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    tags = []
    for version in range(minor, 4, -1):
        tags.append(f"manylinux_{major}_{version}_{arch}")
        if version in legacy:
            tags.append(f"{legacy[version]}_{arch}")
    return (*tags, f"linux_{arch}")


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise MachineKindError(f"{path}: {error}") from None


def _need(path: Path, where: str, table: dict, key: str, kind: type):
    value = table.get(key)
    if not isinstance(value, kind):
        raise MachineKindError(f"{path}: {where}field '{key}' must be a {kind.__name__}")
    return value


@functools.lru_cache(maxsize=None)
def load_machine_kinds(path: Path, runtimes_file: Path | None = None) -> dict[str, MachineKind]:
    """Every machine kind, in order of preference (read once per file).

    A kind's Pythons are its runtime's and those it declares besides; its platforms are
    every tag of its ``glibc`` and ``arch``.
    """
    machines: dict[str, MachineKind] = {}
    for index, table in enumerate(_read(path).get("kind", [])):
        where = f"[[kind]] {index + 1}: "
        need = functools.partial(_need, path, where, table)
        runtime = table.get("runtime", "")
        pythons = tuple(table.get("pythons", ()))
        if runtime:
            python = runtime_named(runtime, f"{path}: {where}field 'runtime'", runtimes_file).python
            pythons = tuple(sorted({python, *pythons}, key=lambda v: tuple(map(int, v.split(".")))))
        platforms = tuple(table.get("platforms", ()))
        if "glibc" in table:
            platforms = manylinux_platforms(need("glibc", str), need("arch", str))
        machine = MachineKind(
            name=need("name", str), label=need("label", str),
            platform=need("platform", str), probe=need("probe", str),
            device_kind=table.get("device_kind", ""),
            stand_in=bool(table.get("stand_in", False)),
            environment=dict(table.get("environment", {})),
            device_files=tuple(table.get("device_files", ())),
            pythons=pythons, platforms=platforms, runtime=runtime,
            system_packages=bool(table.get("system_packages", False)),
            extra_index=table.get("extra_index", ""))
        machines[machine.name] = machine
    if not any(machine.stand_in for machine in machines.values()):
        raise MachineKindError(
            f"{path}: no kind has 'stand_in = true'; an ordinary build needs one")
    return machines


def stand_in_kind(kinds: dict[str, MachineKind]) -> MachineKind:
    """The CPU stand-in (:func:`load_machine_kinds` makes sure there is one)."""
    return next(kind for kind in kinds.values() if kind.stand_in)


@dataclass(frozen=True)
class RecordingEnvironment:
    """One kernel's environment for one kind: what pip installs, which cells it runs."""

    name: str
    requirements: tuple[str, ...]
    cells_tagged: str = ""  # "": the kind's main environment, which runs every other cell
    pythons: tuple[str, ...] = ()  # narrows the kind's list (a package's own floor)
    runtime: str = ""  # the runtime its requirements come from
    shares: str = ""  # a kernel of its own, in the environment of that name (no install)
    probe: str = ""  # proves the device from inside its kernel ("": the kind's probe)
    # False: the kernel runs its probe in a new Python of its environment, so it proves the
    # device and then holds none (its cells start fresh Pythons that take the device).
    holds_device: bool = True
    # What the book adds to the runtime (part of ``requirements``), laid down again after
    # everything else: another package may ship files of the same name (torch_xla 2.9.0
    # ships a torchax of its own, pytorch/xla#9363), and the added package's must win.
    adds: tuple[str, ...] = ()

    def pins(self) -> dict[str, str]:
        """``name==version`` requirements as {normalised name: version}."""
        pins = {}
        for requirement in self.requirements:
            match = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*==\s*([^\s;]+)\s*",
                                 requirement)
            if match:
                pins[package_key(match.group(1))] = match.group(2)
        return pins


def environments_path(recordings_dir: Path, name: str) -> Path:
    return recordings_dir / f"{name}-environments.toml"


def load_environments(path: Path, machines: dict[str, MachineKind],
                      runtimes_file: Path | None = None) -> dict[str, list[RecordingEnvironment]]:
    """A recorded chapter's environments, per kind; each kind's first one is its main one.

    An environment's requirements are its runtime's pins and additions (``runtime``), or
    its own list (``requirements``); one that ``shares`` another is a second kernel of it.
    """
    environments: dict[str, list[RecordingEnvironment]] = {}
    for kind, tables in _read(path).items():
        if kind not in machines:
            raise MachineKindError(f"{path}: [[{kind}]] is not a machine kind in the machine "
                                   f"kinds file (have {', '.join(machines)})")
        found = []
        for index, table in enumerate(tables):
            where = f"[[{kind}]] {index + 1}: "
            runtime, shares = table.get("runtime", ""), table.get("shares", "")
            if shares:
                shared = next((e for e in found if e.name == shares), None)
                if shared is None:
                    raise MachineKindError(f"{path}: {where}field 'shares' names '{shares}', "
                                           "not an environment listed above it")
                requirements, adds = shared.requirements, shared.adds
            elif runtime:
                named = runtime_named(runtime, f"{path}: {where}field 'runtime'", runtimes_file)
                requirements = tuple(named.requirements())
                adds = tuple(f"{name}=={version}" for name, version in named.adds.items())
            else:
                requirements = tuple(_need(path, where, table, "requirements", list))
                adds = ()
            found.append(RecordingEnvironment(
                name=_need(path, where, table, "name", str),
                requirements=requirements,
                cells_tagged=table.get("cells_tagged", ""),
                pythons=tuple(table.get("pythons", ())),
                runtime=runtime or (shared.runtime if shares else ""), shares=shares,
                probe=table.get("probe", ""),
                holds_device=_need(path, where, table, "holds_device", bool)
                if "holds_device" in table else True,
                adds=adds))
        if not found or found[0].cells_tagged:
            raise MachineKindError(f"{path}: the first [[{kind}]] environment is the main one "
                                   "and takes no 'cells_tagged'")
        environments[kind] = found
    return environments
