"""The book's TOML data read into typed records (docs/architecture.md): a dataclass per file,
a field the key of its name or its metadata's ``toml``, optional with a default."""

from __future__ import annotations

import dataclasses
import re
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, Literal, TypeVar

from coursebook.model.faults import BookError

T = TypeVar("T")
NOT_READ = {"toml": None}  # a field's metadata: the caller gives it, the file does not
_POSITION = re.compile(r"\(at line (\d+), column \d+\)")
_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]\s]+)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"^\s*([\w.\"'-]+?)\s*=")


def field_lines(text: str) -> dict[str, int]:
    """Each table's and key's path (``records[1].message``, ``cpu.note``) and its line."""
    found: dict[str, int] = {}
    table, counts, opened = "", {}, ""
    for number, line in enumerate(text.splitlines(), 1):
        if opened:
            opened = "" if line.count(opened) % 2 else opened
            continue
        if header := _HEADER.match(line):
            name = header[2].replace('"', "")
            if header[1] == "[[":
                found.setdefault(name, number)
                counts[name] = counts.get(name, -1) + 1
                name = f"{name}[{counts[name]}]"
            table = name
            found.setdefault(table, number)
        elif key := _KEY.match(line):
            found.setdefault(f"{table}.{key[1]}" if table else key[1], number)
            opened = next((q for q in ('"""', "'''") if line.count(q) % 2), "")
    return found


def table_lines(text: str) -> list[int]:
    lines = text.splitlines()
    return sorted(n for n in set(field_lines(text).values()) if _HEADER.match(lines[n - 1]))


@dataclasses.dataclass(frozen=True)
class TomlFile:
    path: Path
    lines: dict[str, int]
    error: type[BookError] = BookError

    def line(self, field: str) -> int:
        """The line of ``field``, or of the nearest table holding it (1: the file's top)."""
        while field and field not in self.lines:
            field = re.sub(r"(\.[^.\[]*|\[\d+\])$", "", field) if re.search(r"[.\[]", field) else ""
        return self.lines.get(field, 1)

    def fault(self, field: str, what: str, fix: str) -> BookError:
        return self.error(f"field {field}: {what} ({fix})", self.path, self.line(field))


def line_of(path: Path, field: str) -> int:
    return TomlFile(path, field_lines(path.read_text(encoding="utf8"))).line(field)


def read_toml(path: Path, schema: type[T], error: type[BookError] = BookError, /,
              **given: Any) -> tuple[T, TomlFile]:
    """The file as ``schema`` (``given``: its fields the file does not hold), and the file."""
    try:
        text = path.read_text(encoding="utf8")
        data = tomllib.loads(text)
    except (OSError, tomllib.TOMLDecodeError) as problem:
        at = _POSITION.search(str(problem))
        what = "cannot be read" if isinstance(problem, OSError) else "is not valid TOML"
        raise error(f"{what}: {problem} (correct the file)", path,
                    int(at.group(1)) if at else 1) from None
    file = TomlFile(path, field_lines(text), error)
    return typed(file, "", data, schema, given), file


def _describe(kind: Any) -> str:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is Literal:
        return "one of " + ", ".join(map(repr, args))
    if origin is tuple:
        return f"a list of {_describe(args[0]).removeprefix('a ')}s"
    if origin in (types.UnionType, typing.Union):
        return _describe(args[0])
    return {str: "a string", int: "a whole number", bool: "true or false",
            dict: "a table of strings"}.get(origin or kind, "a table")


def typed(file: TomlFile, where: str, value: Any, kind: Any, given: dict | None = None) -> Any:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (types.UnionType, typing.Union):  # X | None: an optional table
        return typed(file, where, value, args[0])
    if dataclasses.is_dataclass(kind) and isinstance(value, dict):
        return _table(file, where, value, kind, given or {})
    if origin is dict and args[1] is not str and isinstance(value, dict):  # named tables
        named = dataclasses.is_dataclass(args[1]) and any(
            f.name == "name" and f.metadata == NOT_READ for f in dataclasses.fields(args[1]))
        return {name: typed(file, f"{where}.{name}".lstrip("."), item, args[1],
                            {"name": name} if named else None) for name, item in value.items()}
    if origin is tuple and isinstance(value, list):
        return tuple(typed(file, f"{where}[{i}]", item, args[0]) for i, item in enumerate(value))
    fits = {Literal: lambda: value in args,
            dict: lambda: (isinstance(value, dict)
                           and all(isinstance(v, str) for v in value.values())),
            int: lambda: isinstance(value, int) and not isinstance(value, bool)}.get(
        origin or kind, lambda: isinstance(value, origin or kind))
    if not fits():
        raise file.fault(where, f"is {value!r}", f"make it {_describe(kind)}")
    return value.strip("\n") if isinstance(value, str) else value


def _table(file: TomlFile, where: str, table: dict, schema: type, given: dict) -> Any:
    hints = typing.get_type_hints(schema)
    keys = {f.metadata.get("toml", f.name): f for f in dataclasses.fields(schema)
            if f.name not in given and f.metadata != NOT_READ}
    at = f"{where}." if where else ""
    values, missing = dict(given), []
    for key, field in keys.items():
        required = field.default is field.default_factory is dataclasses.MISSING
        if key in table:
            values[field.name] = typed(file, at + key, table[key], hints[field.name])
            if required and values[field.name] in ("", ()):
                raise file.fault(at + key, "is empty", f"make it {_describe(hints[field.name])}")
        elif required:
            missing.append(key)
    gone = getattr(schema, "GONE", {})  # fields a later version dropped: why
    # A misspelt field is named before the field it then misses.
    for key in (key for key in table if key not in keys):
        raise file.fault(at + key, "is gone" if key in gone else "is no field of this table",
                         gone.get(key, f"use one of {', '.join(keys)}, or remove it"))
    if missing:
        raise file.fault(at + missing[0], "is missing",
                         f"add it: {_describe(hints[keys[missing[0]].name])}")
    return schema(**values)
