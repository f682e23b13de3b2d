"""The extension's layout keeps its promises: what a kernel or the recorder imports
needs no Sphinx (README: Architecture)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT

KERNEL_MODULES = ["exhibit_checks", "figures", "outputs", "worddiff"]
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


@pytest.mark.parametrize("module", [f"coursebook.{name}" for name in KERNEL_MODULES]
                         + ["coursebook.model"])
def test_what_a_kernel_or_the_recorder_imports_needs_no_sphinx(module):
    done = _import_without_sphinx(module)
    assert done.returncode == 0, done.stderr


def test_the_check_sees_a_sphinx_import():
    done = _import_without_sphinx("coursebook.extension")
    assert done.returncode != 0 and "imports Sphinx" in done.stderr
