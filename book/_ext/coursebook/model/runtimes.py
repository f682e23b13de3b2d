"""Runtimes as data: the Python environments the book targets (``tools/runtimes.toml``).

A runtime is what a student or a machine kind starts from: its Python and its pinned
packages, copied from the list it was published in (Colab's, for Colab's runtimes), and
what the book installs on top of it (``adds``). Machine kinds and recording environments
name a runtime instead of repeating its pins.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from coursebook.model.faults import BookError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the recorder may run there
    import tomli as tomllib

RUNTIMES_FILE = Path(__file__).resolve().parents[4] / "tools" / "runtimes.toml"


def package_key(name: str) -> str:
    """A distribution name as pip compares them (torch_xla and torch-xla are one)."""
    return re.sub(r"[-_.]+", "-", name).lower()


class RuntimeFileError(BookError):
    """A runtimes file that cannot be used; names the file and the field."""


@dataclass(frozen=True)
class Runtime:
    name: str
    title: str
    python: str
    packages: dict[str, str]
    adds: dict[str, str] = field(default_factory=dict)

    def requirements(self) -> tuple[str, ...]:
        """pip requirements for the image's pins and what the book adds.

        A local label (``+cpu``) is dropped: ``torch==2.9.0`` is met by the image's
        2.9.0+cpu, and where pip installs it from the registry, by the registry's build
        (the recording's provenance names the difference).
        """
        return tuple(f"{name}=={version.split('+')[0]}"
                     for name, version in {**self.packages, **self.adds}.items())

    def differences(self, installed: dict[str, str]) -> list[str]:
        """Where an environment made for this runtime is not the runtime, one line each."""
        lines = []
        installed = {package_key(name): version for name, version in installed.items()}
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
    """Every runtime of the file, by name (read once per file)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise RuntimeFileError(f"{path}: {error}") from None
    runtimes = {}
    for name, table in data.items():
        for key, kind in (("title", str), ("python", str), ("packages", dict)):
            if not isinstance(table.get(key), kind):
                raise RuntimeFileError(f"{path}: [{name}] field '{key}' must be a {kind.__name__}")
        runtimes[name] = Runtime(name, table["title"], table["python"], dict(table["packages"]),
                                 dict(table.get("adds", {})))
    return runtimes


def runtime_named(name: str, where: str, path: Path = RUNTIMES_FILE) -> Runtime:
    """The runtime a machine kind or an environment names, or one line saying what is wrong."""
    runtimes = load_runtimes(path)
    if name not in runtimes:
        raise RuntimeFileError(f"{where}: runtime '{name}' is not in {path.name} "
                               f"(have {', '.join(runtimes)})")
    return runtimes[name]
