#!/usr/bin/env python3
"""Count the private names of other libraries that the book's extension touches.

A private name is one its library does not promise to keep: an attribute, method or module
whose name starts with one underscore (``app._warncount``, ``myst_nb.core.execute._x``), a
module global of another library rebound (``module.name = ...``, ``setattr(module, ...)``),
a module put in ``sys.modules`` in another's place, a private method of another library's
class overridden in a subclass, an attribute another library sets on its own objects
replaced (:data:`REPLACED`), or one of a subclassed class's attributes given an object of
the book's own class (a duck-typed stand-in). Each is what an upgrade of that library may
break without notice. A module imported ahead by name (a conf.py list ending in
``_imports``) counts as an import. Names the extension defines itself do not count, nor the
standard library's documented underscore names (``os._exit``, ``sys._getframe``) and
namedtuple's ``_replace``/``_asdict``/``_fields``.

Prints each use (file:line, kind, name), then the count. docs/performance.md lists those
that stay, with their payoff and their test.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The extension, conf.py, and the preview (which runs sphinx-autobuild with the extension's
# forked builds).
DEFAULT_PATHS = [ROOT / "book" / "_ext" / "coursebook", ROOT / "conf.py",
                 ROOT / "tools" / "preview.py"]
OWN_PACKAGES = {"coursebook"}
# Underscore names the standard library documents as public.
DOCUMENTED = {"_exit", "_getframe", "_replace", "_asdict", "_fields", "_make", "_thread",
              "_xoptions", "_current_frames"}
# Attributes without an underscore that their library does not document either.
UNDOCUMENTED = {"listeners"}  # Sphinx's EventManager.listeners
# What another extension declares about itself (Sphinx's Extension record).
OTHERS_RECORDS = {"parallel_read_safe", "parallel_write_safe"}
# Globals of the standard library that programs set by design (runpy's `python -m`).
WRITABLE = {"sys.argv"}
# Attributes another library sets on its own objects, replaced here though no setting
# offers it: Sphinx's env.config, and the bytecode cache of the Jinja environment inside
# Sphinx's template loader.
REPLACED = {"config", "bytecode_cache"}


@dataclass(frozen=True)
class Use:
    path: Path
    line: int
    kind: str
    name: str

    def __str__(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}: {self.kind}: {self.name}"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in DOCUMENTED


def _python_files(paths: list[Path]) -> Iterator[Path]:
    for path in paths:
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def _own_names(trees: dict[Path, ast.Module]) -> set[str]:
    """Every name the scanned code defines: its functions, classes, attributes it assigns,
    parameters and keyword names."""
    names: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}:
                    names.add(node.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return names


def _foreign(module: str | None) -> bool:
    root = (module or "").split(".")[0]
    return bool(root) and root not in OWN_PACKAGES


def _imported_modules(tree: ast.Module) -> dict[str, str]:
    """Local name -> module, for names bound to another library's module or object."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _foreign(alias.name):
                    bound[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _foreign(node.module):
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _resolve(dotted: str):
    """The object a dotted name of another library names (None: not importable here)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001, S112 - any import failure: not resolvable here
            continue
        for part in parts[cut:]:
            target = getattr(target, part, None)
        return target
    return None


def uses_in(path: Path, tree: ast.Module, own: set[str]) -> Iterator[Use]:
    bound = _imported_modules(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _foreign(node.module):
            if any(_private(part) for part in node.module.split(".")):
                yield Use(path, node.lineno, "private module imported", node.module)
            for alias in node.names:
                if _private(alias.name):
                    yield Use(path, node.lineno, "private name imported",
                              f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _foreign(alias.name) and any(_private(p) for p in alias.name.split(".")):
                    yield Use(path, node.lineno, "private module imported", alias.name)
        elif isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own:
            yield Use(path, node.lineno, "private attribute", node.attr)
        elif isinstance(node, ast.Attribute) and node.attr in UNDOCUMENTED:
            yield Use(path, node.lineno, "undocumented attribute", node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in {"getattr", "setattr", "hasattr", "delattr"} \
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and _private(node.args[1].value) \
                and node.args[1].value not in own:
            yield Use(path, node.lineno, "private attribute (by name)", node.args[1].value)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List) and any(
                isinstance(t, ast.Name) and t.id.endswith("_imports") for t in node.targets):
            # conf.py's modules imported ahead, by name (coursebook_kernel_imports, ...)
            for item in node.value.elts:
                if isinstance(item, ast.Constant) and isinstance(item.value, str) \
                        and any(_private(part) for part in item.value.split(".")):
                    yield Use(path, item.lineno, "private module imported ahead", item.value)
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in [t for group in targets for t in (
                    group.elts if isinstance(group, ast.Tuple) else [group])]:
                yield from _rebinding(path, target, bound, own)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "setattr" and node.args \
                and isinstance(node.args[0], ast.Name) and node.args[0].id not in {"self", "cls"}:
            yield Use(path, node.lineno, "attribute set on another object",
                      ast.unparse(node.args[0]))
        if isinstance(node, ast.ClassDef):
            yield from _private_overrides(path, node, bound)


def _rebinding(path: Path, target: ast.expr, bound: dict[str, str],
               own: set[str]) -> Iterator[Use]:
    if isinstance(target, ast.Subscript) and ast.unparse(target.value) == "sys.modules":
        yield Use(path, target.lineno, "sys.modules entry replaced", ast.unparse(target.slice))
    elif isinstance(target, ast.Attribute):
        base = target.value
        if target.attr in REPLACED and not (isinstance(base, ast.Name)
                                            and base.id in {"self", "cls"}):
            yield Use(path, target.lineno, "another library's attribute replaced",
                      ast.unparse(target))
        elif isinstance(base, ast.Name) and base.id in bound and base.id not in {"self", "cls"} \
                and f"{bound[base.id]}.{target.attr}" not in WRITABLE:
            yield Use(path, target.lineno, "another library's global rebound",
                      f"{bound[base.id]}.{target.attr}")
        elif isinstance(base, ast.Name) and base.id not in {"self", "cls"} \
                and target.attr in OTHERS_RECORDS:
            yield Use(path, target.lineno, "another extension's record rewritten",
                      ast.unparse(target))
        elif isinstance(base, ast.Subscript) and "modules" in ast.unparse(base.value):
            yield Use(path, target.lineno, "another library's global rebound",
                      ast.unparse(target))


def _private_overrides(path: Path, node: ast.ClassDef, bound: dict[str, str]) -> Iterator[Use]:
    bases = [_resolve(bound[b.id]) for b in node.bases
             if isinstance(b, ast.Name) and b.id in bound]
    # An attribute the other library's class has, given an object of a class of ours
    # (a duck-typed stand-in, such as a process inside jupyter_client's LocalProvisioner).
    for item in ast.walk(node):
        if isinstance(item, ast.Assign) and isinstance(item.value, ast.Call) \
                and isinstance(item.value.func, ast.Name) and item.value.func.id not in bound:
            for target in item.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == "self" \
                        and item.value.func.id.lstrip("_")[:1].isupper() \
                        and any(base is not None and hasattr(base, target.attr) for base in bases):
                    yield Use(path, item.lineno, "another library's attribute given a stand-in",
                              f"{node.name}.{target.attr} = {item.value.func.id}(...)")
    for item in node.body:
        names = []
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = [item.name]
        elif isinstance(item, ast.Assign):
            names = [t.id for t in item.targets if isinstance(t, ast.Name)]
        for name in names:
            if _private(name) and any(base is not None and hasattr(base, name) for base in bases):
                yield Use(path, item.lineno, "private method overridden", f"{node.name}.{name}")


def private_uses(paths: list[Path]) -> list[Use]:
    trees = {path: ast.parse(path.read_text(encoding="utf8"), str(path))
             for path in _python_files(paths)}
    own = _own_names(trees)
    return [use for path, tree in trees.items() for use in uses_in(path, tree, own)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="With no path: the extension, conf.py and "
                                     "tools/preview.py.")
    parser.add_argument("paths", nargs="*", type=Path, help="files or folders to scan")
    parser.add_argument("--count", action="store_true", help="print only the count")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    uses = private_uses([p.resolve() for p in args.paths] or DEFAULT_PATHS)
    if not args.count:
        for use in uses:
            print(use)
    print(f"{len(uses)} private names of other libraries touched")
    return 0


if __name__ == "__main__":
    sys.exit(main())
