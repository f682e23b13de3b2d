"""The error museum as data: ``exhibits/<wing>/NN-*.toml``, the one source of the exhibits'
code and text."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import ClassVar, Literal

from coursebook.claims.model import Claim, toml_claim
from coursebook.model.faults import BookError
from coursebook.model.machine_kinds import MachineKind
from coursebook.model.runtimes import Runtime
from coursebook.model.toml_files import NOT_READ, TomlFile, line_of, read_toml, table_lines
from coursebook.model.versions import release


class ExhibitError(BookError):
    """An exhibit or museum marker that cannot be placed."""


@dataclass(frozen=True)
class ErrorRecord:
    torch: str
    source: Literal["museum", "build"]
    where: str
    date: str = field(default="", kw_only=True)  # "": the museum did not say
    type: str
    message: str


@dataclass(frozen=True)
class CpuReproduction:
    """How a TPU exhibit's failure (and fix) is reproduced on a CPU, in a fresh process."""

    note: str
    reproduction: str = ""  # "": the failure does not arise on a CPU; the note says why
    fix_note: str = ""
    fix: str = ""
    # Older packages it needs, pinned, installed apart (pip --target, no dependencies) there.
    side_environment: str = ""
    side_packages: tuple[str, ...] = ()
    fix_in_fresh_runtime: bool = False  # as Exhibit's, for the CPU fix and its reproduction


@dataclass(frozen=True)
class MuseumRerun:
    """The set-up the museum's failing code needs to run again in a new Python process."""

    note: str  # what the page says about the run
    setup: str  # the imports and data the failing code uses
    # The failing code runs again on the stand-in only (the note says why); its fix on all.
    stand_in_only: bool = False
    GONE: ClassVar[dict[str, str]] = {"fix_setup": "the fix is checked after the failing code, "
                                      "in its process, or alone with fix_in_fresh_runtime = "
                                      "true: remove it"}


@dataclass(frozen=True)
class MuseumFix:
    """The museum's own fix, kept as history where the book now shows another one."""

    note: str
    code: str
    changed: str  # why the book's fix differs from it


@dataclass(frozen=True)
class Exhibit:
    path: Path = field(metadata=NOT_READ)
    wing: str = field(metadata=NOT_READ)
    number: int
    title: str
    room: str
    runs_on: str
    runs_in_every_build: bool = field(metadata=NOT_READ)  # runs_on is the stand-in
    lesson: str
    fix_note: str
    failing_code: str
    fix_code: str
    records: tuple[ErrorRecord, ...]
    taught_in: tuple[str, ...] = ()  # labels of the sections that teach what it breaks
    cpu: CpuReproduction | None = None
    # The records of the runtimes readers use, each with its page name: "Colab (torch 2.11.0)".
    reader_records: tuple[tuple[str, ErrorRecord], ...] = field(default=(), metadata=NOT_READ)
    museum_fix: MuseumFix | None = None  # None: fix_code is the museum's own fix
    museum_rerun: MuseumRerun | None = None
    # True: the fix is checked in a new process, else after the failing code, in its process.
    fix_in_fresh_runtime: bool = False
    # Its [[claim]] tables: what its prose says, checked or cited.
    claims: tuple[Claim, ...] = field(default=(), metadata={"toml": "claim"})
    # Where each field is, read with the file: messages name a cell's exhibit field.
    file: TomlFile | None = field(default=None, metadata=NOT_READ, compare=False, repr=False)

    @property
    def key(self) -> str:
        return f"{self.wing}/{self.number:02d}"

    @property
    def label(self) -> str:
        return f"museum-{self.wing}-{self.number:02d}"

    def record_for(self, torch_version: str) -> ErrorRecord | None:
        """The record for a torch release (local build tags such as ``+cpu`` ignored)."""
        return next((r for r in self.records if r.torch == release(torch_version)), None)

    @property
    def museum_record(self) -> ErrorRecord:
        return next(r for r in self.records if r.source == "museum")


def write_records(exhibit: Exhibit, records: list[ErrorRecord]) -> None:
    """Rewrite an exhibit's file with these records last, everything else kept."""
    text = exhibit.path.read_text(encoding="utf8")
    lines, starts = text.splitlines(keepends=True), table_lines(text)
    first = line_of(exhibit.path, "records") - 1
    head = "".join(lines[:first]).rstrip() + "\n"
    tables = ["".join(lines[a - 1:b - 1]) for a, b in zip(starts, [*starts[1:], len(lines) + 1])]
    others = [table.rstrip() + "\n" for table in tables[starts.index(first + 1):]
              if not table.startswith("[[records]]")]
    # A JSON string is a valid TOML basic string.
    blocks = ["[[records]]\n" + "".join(f"{name} = {json.dumps(value, ensure_ascii=False)}\n"
                                       for name, value in asdict(record).items())
              for record in records]
    exhibit.path.write_text("\n".join([head, *others, *blocks]), encoding="utf8")


def load_exhibit(path: Path, rooms: tuple[str, ...], kinds: dict[str, MachineKind],
                 readers: tuple[Runtime, ...] = ()) -> Exhibit:
    """One exhibit of a wing with these rooms; ``readers``: the runtimes whose records it shows."""
    exhibit, file = read_toml(path, Exhibit, ExhibitError, path=path, wing=path.parent.name,
                              runs_in_every_build=False)
    for name, allowed in (("room", rooms), ("runs_on", tuple(kinds))):
        if getattr(exhibit, name) not in allowed:
            raise file.fault(name, f"is {getattr(exhibit, name)!r}",
                             f"make it one of {', '.join(map(repr, allowed))}")
    prefix = re.match(r"(\d+)-", path.name)
    if not prefix or int(prefix.group(1)) != exhibit.number:
        raise file.fault("number", f"is {exhibit.number}",
                         "the file name must start with the same number")
    if sum(r.source == "museum" for r in exhibit.records) != 1:
        raise file.fault("records", "needs exactly one record with source 'museum'",
                         "mark the museum's own capture, and only it")
    stand_in, cpu = kinds[exhibit.runs_on].stand_in, exhibit.cpu
    runnable = {f"cpu.{name}": getattr(cpu, name) for name in ("reproduction", "fix") if cpu}
    if exhibit.museum_rerun:
        runnable |= {"museum_rerun.setup": exhibit.museum_rerun.setup,
                     "failing_code": exhibit.failing_code, "fix_code": exhibit.fix_code}
    if not stand_in:  # its checks run in fresh Pythons
        runnable |= {f"claim[{i}].check": claim.check for i, claim in enumerate(exhibit.claims)}
    # Code run in a fresh Python is a raw string: each cell's r""" inside the program's r'''.
    for name, quotes in ((name, quotes) for name in runnable for quotes in ("'''", '"""')):
        if quotes in runnable[name]:
            raise file.fault(name, f"contains {quotes}",
                             "code run in a fresh Python may not: use the other quotes")
    if cpu and bool(cpu.side_environment) != bool(cpu.side_packages):
        raise file.fault("cpu.side_environment", "and side_packages come together",
                         "give its folder and what it holds, or neither")
    if cpu and not all("==" in p for p in cpu.side_packages):
        raise file.fault("cpu.side_packages", "holds a requirement without a version",
                         "pin each one: name==version")
    return replace(exhibit, runs_in_every_build=stand_in, claims=_claims(file, exhibit),
                   file=file, reader_records=tuple((runtime.reader_label, record)
                                                   for runtime in readers
                                                   for record in exhibit.records
                                                   if record.torch == runtime.torch))


def _claims(file: TomlFile, owner: Exhibit | Wing) -> tuple[Claim, ...]:
    prose = [text for _, text in prose_fields(owner)]
    return tuple(toml_claim(claim, prose, file, f"claim[{index}]")
                 for index, claim in enumerate(owner.claims))


def prose_fields(owner: Exhibit | Wing) -> list[tuple[str, str]]:
    """The prose fields of an exhibit or wing (which its claims quote): path and text."""
    fields = [(name, getattr(owner, name, "")) for name in
              ("title", "lesson", "fix_note", "tagline", "introduction")]
    for section, names in (("cpu", ("note", "fix_note")), ("museum_rerun", ("note",)),
                           ("museum_fix", ("note", "changed"))):
        part = getattr(owner, section, None)
        fields += [(f"{section}.{name}", getattr(part, name)) for name in names if part]
    return [(name, text) for name, text in fields if text]


@dataclass(frozen=True)
class Wing:
    path: Path = field(metadata=NOT_READ)  # its wing.toml
    name: str
    title: str
    tagline: str
    introduction: str
    rooms: tuple[str, ...]
    exhibits: tuple[Exhibit, ...] = field(default=(), metadata=NOT_READ)
    # What its introduction says, checked or cited.
    claims: tuple[Claim, ...] = field(default=(), metadata={"toml": "claim"})


def load_museum(exhibits_dir: Path, kinds: dict[str, MachineKind],
                readers: tuple[Runtime, ...] = ()) -> dict[str, Wing]:
    """Every folder of ``exhibits/`` holding a ``wing.toml``, its exhibits numbered 1..n."""
    if not exhibits_dir.is_dir():
        raise ExhibitError("the exhibits folder does not exist (coursebook_exhibits_dir, "
                           "or --exhibits)", exhibits_dir)
    museum = {}
    for path in sorted(exhibits_dir.glob("*/wing.toml")):
        wing, file = read_toml(path, Wing, ExhibitError, path=path)
        exhibits = tuple(load_exhibit(p, wing.rooms, kinds, readers)
                         for p in sorted(path.parent.glob("[0-9]*.toml")))
        numbers = [exhibit.number for exhibit in exhibits]
        if numbers != list(range(1, len(numbers) + 1)):
            raise ExhibitError(f"exhibits must be numbered 1..{len(numbers)}, got {numbers}",
                               path.parent)
        museum[path.parent.name] = replace(wing, exhibits=exhibits, claims=_claims(file, wing))
    return museum
