"""The extension's layout keeps its promises: its stages import only downward, with no
circles, and what a kernel or the recorder imports needs no Sphinx (docs/architecture.md)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

KERNEL_MODULES = ["exhibit_checks", "figures", "worddiff"]
# Refuses any import of Sphinx, as a chapter's kernel or the recorder on a TPU VM lacks it.
WITHOUT_SPHINX = """
import importlib, pkgutil, sys
class NoSphinx:
    def find_spec(self, name, path=None, target=None):
        if name == "sphinx" or name.startswith("sphinx."):
            raise ImportError("imports Sphinx: " + name)
sys.meta_path.insert(0, NoSphinx())
sys.path.insert(0, {ext!r})
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    for sub in pkgutil.iter_modules(getattr(module, "__path__", [])):
        importlib.import_module(name + "." + sub.name)
"""


def _import_without_sphinx(*modules: str) -> subprocess.CompletedProcess:
    code = WITHOUT_SPHINX.format(ext=str(ROOT / "book" / "_ext"))
    return subprocess.run([sys.executable, "-c", code, *modules], capture_output=True, text=True)


def test_what_a_kernel_or_the_recorder_imports_needs_no_sphinx():
    # One Python for all: a module that imports Sphinx fails wherever it is first imported
    # (a Python per module cost ~1-3 s of CPU each).
    done = _import_without_sphinx(*[f"coursebook.{name}" for name in KERNEL_MODULES],
                                  "coursebook.model", *[f"coursebook.{feature}.model" for feature
                                                        in ("answer_checks", "claims", "museum",
                                                            "torch_versions")])
    assert done.returncode == 0, done.stderr


def test_the_check_sees_a_sphinx_import():
    done = _import_without_sphinx("coursebook.extension")
    assert done.returncode != 0 and "imports Sphinx" in done.stderr


# --- Stages import downward ------------------------------------------------------------

PACKAGE = ROOT / "book" / "_ext" / "coursebook"
# The pipeline's stages, lowest first; a module may import from its own stage or a lower
# one. Modules at the package's top (configuration, page state, reporting, code a kernel
# imports) and process/ serve every stage: they import only the model and each other.
# The entry points (the extension, the pytest plugin) import from anywhere.
STAGES = ["model", "shared", "prepare", "execute", "verify", "render", "audit", "entry"]
ENTRY_POINTS = {"__init__", "extension", "pytest_plugin"}
# A feature's package (answer_checks/, say) names each module by the stage it belongs to,
# which ranks it; the package's __init__ (its setup) is an entry point.
FEATURES = {path.parent.name for path in PACKAGE.glob("*/__init__.py")} - {*STAGES, "process"}


def _module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _stage(module: str) -> str:
    parts = module.split(".")[1:]
    if not parts or parts[0] in ENTRY_POINTS:
        return "entry"
    if len(parts) > 1 and parts[0] in STAGES:
        return parts[0]
    if parts[0] in FEATURES:
        if len(parts) == 1:
            return "entry"
        if parts[1] not in STAGES:
            raise ValueError(f"{module}: a feature's module is named by its stage ({STAGES})")
        return parts[1]
    return "shared"  # a top-level module, or process/


def _imports(path: Path, package: Path, known: set[str]) -> set[str]:
    """The book's own modules (``known``) a file imports, at any depth of its code."""
    module = _module_name(path, package)
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[:len(module.split(".")) - node.level
                                           + (path.name == "__init__.py")]
                base = ".".join(anchor + ([base] if base else []))
            # `from package import module` imports the module; otherwise the names are the
            # base module's own.
            modules = {f"{base}.{alias.name}" for alias in node.names} & known
            found |= modules or {base}
    return {name for name in found if name in known and name != module}


def import_graph(package: Path) -> dict[str, set[str]]:
    paths = sorted(package.rglob("*.py"))
    known = {_module_name(path, package) for path in paths}
    return {_module_name(path, package): _imports(path, package, known) for path in paths}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    rank = STAGES.index
    return sorted(f"{module} ({_stage(module)}) imports {target} ({_stage(target)})"
                  for module, targets in graph.items() for target in targets
                  if rank(_stage(target)) > rank(_stage(module)))


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each import circle once, as the modules on it (Tarjan's strongly connected parts)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph.get(module, ()):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            part = []
            while True:
                top = stack.pop()
                part.append(top)
                if top == module:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_stages_import_only_downward():
    assert upward_imports(import_graph(PACKAGE)) == []


def test_no_module_imports_itself_back_through_others():
    assert circles(import_graph(PACKAGE)) == []


def _planted_copy(tmp_path: Path, plants: dict[str, str]) -> Path:
    copy = tmp_path / "coursebook"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for file, line in plants.items():
        with (copy / file).open("a") as planted:
            planted.write(f"\n{line}  # planted\n")
    return copy


def test_the_layering_check_sees_an_upward_import(tmp_path):
    copy = _planted_copy(tmp_path, {"model/faults.py": "from coursebook.render import downloads"})
    assert upward_imports(import_graph(copy)) == [
        "coursebook.model.faults (model) imports coursebook.render.downloads (render)"]


def test_the_layering_check_ranks_a_feature_module_by_its_stage(tmp_path):
    copy = _planted_copy(tmp_path, {"claims/model.py": "from coursebook.claims import verify"})
    assert upward_imports(import_graph(copy)) == [
        "coursebook.claims.model (model) imports coursebook.claims.verify (verify)"]


def test_the_circle_check_sees_a_circle(tmp_path):
    copy = _planted_copy(tmp_path, {"reporting.py": "import coursebook.page_state",
                                    "page_state.py": "from coursebook import reporting"})
    assert [circle for circle in circles(import_graph(copy))
            if {"coursebook.page_state", "coursebook.reporting"} <= set(circle)]


def _imported_roots(folder: Path) -> dict[str, str]:
    """Each top-level module the code in ``folder`` imports, with a file that imports it."""
    roots: dict[str, str] = {}
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and not node.level else [])
            for name in names:
                roots.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return roots


def _undeclared(roots: dict[str, str], pyproject: dict) -> list[str]:
    """The imported modules no distribution that pyproject.toml depends on provides."""
    import re
    from importlib.metadata import packages_distributions

    project = pyproject["project"]
    specs = [*project["dependencies"], *(spec for extra in project.get(
        "optional-dependencies", {}).values() for spec in extra)]  # pytest: the plugin's
    declared = {re.split(r"[=<>\[; ]", spec)[0].lower().replace("_", "-") for spec in specs}
    providers = packages_distributions()
    return [f"{root} ({where})" for root, where in sorted(roots.items())
            if root not in sys.stdlib_module_names and root not in {"coursebook", "__future__"}
            and not {d.lower().replace("_", "-") for d in providers.get(root, [])} & declared]


def test_every_module_the_extension_imports_is_a_declared_dependency():
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert _undeclared(_imported_roots(ROOT / "book" / "_ext" / "coursebook"), pyproject) == []
    # The check sees a dependency the extension imports but pyproject.toml leaves out.
    dependencies = [d for d in pyproject["project"]["dependencies"] if "filelock" not in d]
    assert _undeclared({"filelock": "x.py"}, {"project": {"dependencies": dependencies}}) == [
        "filelock (x.py)"]
