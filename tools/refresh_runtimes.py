#!/usr/bin/env python3
"""Refresh the pins of tools/runtimes.toml from their sources, read from local files.

A Colab runtime's pins come from a local copy of the lists Colab publishes
(googlecolab/backend-info: pip-freeze*.txt, os-info*.txt and a SOURCE.md naming the commit
and its date); the book's own runtime's from pyproject.toml. Each declared package gets the
version its list names, the Python its os-info names (major.minor), and the source and date
of the list. Each Colab runtime's whole list is also kept, as Colab publishes it, in
runtime-images/NAME.txt beside the runtimes file: the recorder resolves with its versions
and names every package where a recording's environment differs from the image. Nothing is
fetched: bring a newer copy of the lists to refresh. With --check, nothing is written: it
lists what differs and fails when anything does.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))

from book_environment import RUNTIMES_FILE, use_book_environment

use_book_environment("packaging")  # the model's one need (the recorder's environment has it)

from coursebook.model.runtimes import RuntimeFileError, load_runtimes
from coursebook.model.toml_files import TomlFile, field_lines
from coursebook.model.versions import package_key

COLAB_LISTS = ROOT.parent / "shared" / "colab-runtimes"
_COLAB_SOURCE = re.compile(r"^googlecolab/backend-info@(?P<commit>[0-9a-f]{40}):(?P<file>[\w.-]+)$")
_WHEEL = re.compile(r"/(?P<name>[^/-]+)-(?P<version>[^/-]+)-[^/]+\.whl$")


class RefreshError(Exception):
    """A list that cannot give a runtime its pins; the message names the file and the fix."""


def freeze_versions(text: str) -> dict[str, str]:
    """``pip freeze`` output as {normalised name: version}; a ``name @ URL`` line gives the
    version of its wheel's file name (``torch-2.11.0%2Bcpu-…whl``: 2.11.0+cpu)."""
    versions = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "==" in line:
            name, _, version = line.partition("==")
            versions[package_key(name)] = version.strip()
        elif " @ " in line:
            name, _, url = line.partition(" @ ")
            wheel = _WHEEL.search(unquote(url))
            if wheel:
                versions[package_key(name)] = wheel["version"]
    return versions


def colab_source(lists: Path) -> tuple[str, str]:
    """The commit and date SOURCE.md gives for the copied lists."""
    path = lists / "SOURCE.md"
    try:
        text = path.read_text(encoding="utf8")
    except OSError:
        raise RefreshError(f"{path}: missing; the copy of Colab's lists must say which commit "
                           "of googlecolab/backend-info it holds, and its date") from None
    commit = re.search(r"commit `([0-9a-f]{40})`", text)
    date = re.search(r"\((\d{4}-\d\d-\d\d)\b", text)
    if not commit or not date:
        raise RefreshError(f"{path}: names no commit (`<40 hex digits>`) or no date "
                           "((YYYY-MM-DD, …)) of googlecolab/backend-info")
    return commit.group(1), date.group(1)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf8")
    except OSError:
        raise RefreshError(f"{path}: missing; pass the folder holding a copy of Colab's lists "
                           "(default ../shared/colab-runtimes)") from None


def colab_fields(source_file: str, lists: Path) -> tuple[dict[str, str], str, str, str]:
    """A Colab list's versions, Python (major.minor), source and date."""
    commit, date = colab_source(lists)
    versions = freeze_versions(_read(lists / source_file))
    # pip-freeze.txt goes with os-info.txt, pip-freeze.tpu.txt with os-info-tpu.txt.
    kind = re.fullmatch(r"pip-freeze(?:\.([\w-]+))?\.txt", source_file)
    os_info = lists / (f"os-info-{kind.group(1)}.txt" if kind and kind.group(1) else "os-info.txt")
    python = re.search(r"^Python (\d+\.\d+)", _read(os_info), re.M)
    if not python:
        raise RefreshError(f"{os_info}: names no Python version (a line 'Python 3.X.Y')")
    return versions, python.group(1), f"googlecolab/backend-info@{commit}:{source_file}", date


def pyproject_fields(path: Path) -> tuple[dict[str, str], str]:
    """pyproject.toml's ``name==version`` dependencies and its lowest Python (major.minor)."""
    project = tomllib.loads(_read(path))["project"]
    versions = {package_key(name): version for name, _, version in
                (d.partition("==") for d in project["dependencies"]) if version}
    python = re.search(r">=\s*(\d+\.\d+)", project.get("requires-python", ""))
    return versions, python.group(1) if python else ""


def _set(text: str, table: str, field: str, value: str) -> str:
    """``text`` with ``field = …`` of ``[table]`` set to the TOML ``value``; comments kept."""
    header = re.search(rf"^\[{re.escape(table)}\]\s*$", text, re.M)
    end = re.search(r"^\[", text[header.end():], re.M)
    stop = header.end() + end.start() if end else len(text)
    body = re.sub(rf"^{re.escape(field)}\s*=.*$", lambda _: f"{field} = {value}",
                  text[header.end():stop], count=1, flags=re.M)
    return text[:header.end()] + body + text[stop:]


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def refreshed(path: Path, lists: Path, pyproject: Path) -> tuple[str, list[str]]:
    """The runtimes file's text with every pin from its source, and what changed."""
    text = path.read_text(encoding="utf8")
    changes, file = [], TomlFile(path, field_lines(text), RuntimeFileError)
    for runtime in load_runtimes(path).values():
        colab = _COLAB_SOURCE.match(runtime.source)
        if colab:
            versions, python, source, listed = colab_fields(colab["file"], lists)
            where = lists / colab["file"]
        elif runtime.source == pyproject.name:
            (versions, python), source, listed = (pyproject_fields(pyproject), runtime.source,
                                                  runtime.listed)
            where = pyproject
        else:
            raise file.fault(f"{runtime.name}.source", f"is {runtime.source!r}",
                             f"name {pyproject.name} or googlecolab/backend-info@COMMIT:FILE")
        packages = {}
        for name, old in runtime.packages.items():
            if package_key(name) not in versions:
                raise file.fault(f"{runtime.name}.packages", f"pins {name}, which {where} does "
                                 "not list", "remove it, or bring a list that has it")
            packages[name] = versions[package_key(name)]
            if packages[name] != old:
                changes.append(f"[{runtime.name}] {name} {old} -> {packages[name]}")
        for field, old, new in (("python", runtime.python, python),
                                ("source", runtime.source, source),
                                ("listed", runtime.listed, listed)):
            if new and new != old:
                changes.append(f"[{runtime.name}] {field} {old} -> {new}")
                text = _set(text, runtime.name, field, _toml(new))
        inline = ", ".join(f"{name} = {_toml(version)}" for name, version in packages.items())
        text = _set(text, runtime.name, "packages", f"{{ {inline} }}")
    return text, changes


def images_dir(runtimes: Path) -> Path:
    """Where the runtimes file's image lists are kept: runtime-images/ beside it."""
    return runtimes.parent / "runtime-images"


def image_path(runtimes: Path, runtime: str) -> Path:
    return images_dir(runtimes) / f"{runtime}.txt"


def refreshed_images(path: Path, lists: Path) -> tuple[dict[Path, str], list[str]]:
    """Each Colab runtime's whole list as it should be kept, and which kept ones differ."""
    images, changes = {}, []
    for runtime in load_runtimes(path).values():
        colab = _COLAB_SOURCE.match(runtime.source)
        if not colab:
            continue
        target = image_path(path, runtime.name)
        images[target] = _read(lists / colab["file"])
        if not target.is_file() or target.read_text(encoding="utf8") != images[target]:
            changes.append(f"{target.parent.name}/{target.name} differs from {colab['file']}")
    return images, changes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lists", nargs="?", type=Path, default=COLAB_LISTS,
                        help="folder with a copy of Colab's lists (default: %(default)s)")
    parser.add_argument("--runtimes", type=Path, default=RUNTIMES_FILE,
                        help="the runtimes file (default: tools/runtimes.toml)")
    parser.add_argument("--pyproject", type=Path, default=ROOT / "pyproject.toml",
                        help="the book's pins (default: pyproject.toml)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; fail when a pin differs from its source")
    args = parser.parse_args(argv)
    try:
        text, changes = refreshed(args.runtimes, args.lists, args.pyproject)
        images, image_changes = refreshed_images(args.runtimes, args.lists)
    except (RefreshError, RuntimeFileError) as error:
        print(f"refresh-runtimes: {error}", file=sys.stderr)
        return 2
    for change in changes:
        print(f"{args.runtimes.name}: {change}")
    for change in image_changes:
        print(change)
    if not changes and not image_changes:
        print(f"{args.runtimes.name}: every pin and image list matches its source")
    if args.check:
        if changes or image_changes:
            print(f"refresh-runtimes: {args.runtimes} or its image lists differ from their "
                  "sources; run `make refresh-runtimes` and review the diff", file=sys.stderr)
        return 1 if changes or image_changes else 0
    if changes:
        args.runtimes.write_text(text, encoding="utf8")
    for target, image in images.items():
        target.parent.mkdir(exist_ok=True)
        target.write_text(image, encoding="utf8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
