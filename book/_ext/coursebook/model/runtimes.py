"""Runtimes: the Python environments the book targets (``tools/runtimes.toml``), each with
its Python, the pins that decide what the chapters print, and how the book verifies it."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from coursebook.model.faults import BookError
from coursebook.model.toml_files import NOT_READ, TomlFile, read_toml
from coursebook.model.versions import release

RUNTIMES_FILE = Path(__file__).resolve().parents[4] / "tools" / "runtimes.toml"


class RuntimeFileError(BookError):
    """The runtimes file cannot be used."""


@dataclass(frozen=True)
class Runtime:
    name: str = field(metadata=NOT_READ)  # its table's name
    title: str
    python: str
    source: str
    listed: str
    packages: dict[str, str]
    verified_by: Literal["build", "downloads", "recording"]
    adds: dict[str, str] = field(default_factory=dict)  # what the book installs on top of it
    # Pins only a machine with the runtime's device uses (libtpu): a set-up cell on a
    # machine without it leaves them out.
    device_only: tuple[str, ...] = ()

    @property
    def torch(self) -> str:
        return release(self.packages.get("torch", ""))

    @property
    def reader_label(self) -> str:
        """How a page names it beside a text it printed: "Colab (torch 2.11.0)"."""
        return f"{self.title.split(' (')[0]} (torch {self.torch})"

    def requirements(self) -> list[str]:
        """pip requirements for a replica, at each pin's release (a registry has no ``+cpu``)."""
        return [f"{name}=={release(version)}"
                for name, version in {**self.packages, **self.adds}.items()]


@functools.lru_cache(maxsize=None)
def load_runtimes(path: Path = RUNTIMES_FILE) -> dict[str, Runtime]:
    runtimes, file = read_toml(path, dict[str, Runtime], RuntimeFileError)
    for name, runtime in runtimes.items():
        if not set(runtime.device_only) <= set(runtime.packages):
            raise file.fault(f"{name}.device_only", f"names {', '.join(runtime.device_only)}",
                             "list names of its packages")
    return runtimes


def reader_runtimes(path: Path) -> tuple[Runtime, ...]:
    """The runtimes readers use, whose texts the book has from running its downloads there."""
    return tuple(r for r in load_runtimes(path).values()
                 if r.verified_by == "downloads" and r.torch)


def runtime_named(name: str, file: TomlFile, field: str, path: Path | None = None) -> Runtime:
    """The runtime that ``field`` of a machine kinds or environments ``file`` names."""
    runtimes = load_runtimes(path or RUNTIMES_FILE)
    if name not in runtimes:
        raise file.fault(field, f"names runtime '{name}', not in {(path or RUNTIMES_FILE).name}",
                         f"use one of {', '.join(runtimes)}")
    return runtimes[name]
