"""Runtimes: the Python environments the book targets, as data (``tools/runtimes.toml``).

A *runtime* is where a reader (or the build) runs the chapters: the book's own build
environment, Colab's CPU runtime, Colab's TPU runtime. Each names its Python and the pins
that decide what the chapters print, with the source and date of the list they come from,
and says how the book verifies it (``verified_by``):

- ``build``: every build runs the chapters in it;
- ``downloads``: ``make verify-runtime`` runs the student downloads in a replica of it;
- ``recording``: a recorded chapter's committed recordings ran with its pins.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from coursebook.model.faults import BookError, field_line
from coursebook.model.versions import package_key, release

RUNTIMES_FILE = Path(__file__).resolve().parents[4] / "tools" / "runtimes.toml"
VERIFIED_BY = ("build", "downloads", "recording")
_FIELDS = {"title": str, "python": str, "source": str, "listed": str, "packages": dict,
           "verified_by": str}


class RuntimeFileError(BookError):
    """The runtimes file cannot be used; names the file, the table and the field."""


@dataclass(frozen=True)
class Runtime:
    """One table of ``tools/runtimes.toml``."""

    name: str
    title: str
    python: str
    source: str
    listed: str
    packages: dict[str, str]
    verified_by: str
    adds: dict[str, str] = field(default_factory=dict)  # what the book installs on top of it
    # Pins only a machine with the runtime's device uses (libtpu): a set-up cell on a
    # machine without it leaves them out.
    device_only: tuple[str, ...] = ()

    @property
    def torch(self) -> str:
        """Its torch release ("" when it has no torch)."""
        return release(self.packages.get("torch", ""))

    @property
    def reader_label(self) -> str:
        """How a page names it beside a text it printed: "Colab (torch 2.11.0)"."""
        return f"{self.title.split(' (')[0]} (torch {self.torch})"

    def requirements(self) -> list[str]:
        """pip requirements for a replica, with what the book adds: each pin's release (a
        registry has no ``+cpu``; the image's 2.9.0+cpu meets ``torch==2.9.0``)."""
        return [f"{name}=={release(version)}"
                for name, version in {**self.packages, **self.adds}.items()]

    def differences(self, installed: dict[str, str]) -> list[str]:
        """Where an environment made for this runtime is not the runtime, one line each."""
        installed = {package_key(name): version for name, version in installed.items()}
        lines = []
        python = installed.get("python", "")
        if python and ".".join(python.split(".")[:2]) != self.python:
            lines.append(f"python {python} (the runtime has {self.python})")
        for name, version in {**self.packages, **self.adds}.items():
            found = installed.get(package_key(name))
            if found is not None and found != version:
                lines.append(f"{name} {found} (the runtime has {version})")
        return lines


@functools.lru_cache(maxsize=None)
def load_runtimes(path: Path = RUNTIMES_FILE) -> dict[str, Runtime]:
    """Every declared runtime, in the file's order (read once per file)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise RuntimeFileError(f"cannot be read: {error}", path, 1) from None
    runtimes = {}
    for name, table in data.items():
        for key, kind in _FIELDS.items():
            if not isinstance(table.get(key), kind):
                raise RuntimeFileError(f"[{name}]: field '{key}' must be a {kind.__name__}",
                                       path, field_line(path, key, table=name))
        if table["verified_by"] not in VERIFIED_BY:
            raise RuntimeFileError(f"[{name}]: field 'verified_by' is {table['verified_by']!r}, "
                                   f"expected one of {VERIFIED_BY}", path,
                                   field_line(path, "verified_by", table=name))
        device_only = table.get("device_only", [])
        if not isinstance(device_only, list) or not set(device_only) <= set(table["packages"]):
            raise RuntimeFileError(f"[{name}]: field 'device_only' must list names of its "
                                   "packages", path, field_line(path, "device_only", table=name))
        runtimes[name] = Runtime(name=name, packages={k: str(v) for k, v in
                                                      table["packages"].items()},
                                 adds={k: str(v) for k, v in table.get("adds", {}).items()},
                                 device_only=tuple(device_only),
                                 **{f: table[f] for f in _FIELDS if f != "packages"})
    return runtimes


def reader_runtimes(path: Path) -> tuple[Runtime, ...]:
    """The runtimes readers use whose texts the book has from running its downloads there
    (``verified_by = "downloads"``): shown beside the build's texts where they differ."""
    return tuple(r for r in load_runtimes(path).values()
                 if r.verified_by == "downloads" and r.torch)


def runtime_named(name: str, where: str, path: Path | None = None) -> Runtime:
    """The runtime a machine kind or an environment names, or one line saying what is wrong."""
    path = path or RUNTIMES_FILE
    runtimes = load_runtimes(path)
    if name not in runtimes:
        raise RuntimeFileError(f"{where}: runtime '{name}' is not in {path.name} "
                               f"(have {', '.join(runtimes)})")
    return runtimes[name]
