#!/usr/bin/env python3
"""Check, before `make test`, the system packages the test suite needs; install them as root.

The suite builds the PDF handouts (TeX and poppler: tools/pdf-packages.txt), drives
Chromium and decodes the handouts' QR codes with zbar (tools/test-packages.txt, with make
and venv). The two lists are what .ci/run installs on a fresh CI machine. A package that is
missing is installed with apt-get when this runs as root; otherwise this stops with one
line naming the command that installs them. Debian and Ubuntu name these packages; where
dpkg is missing, the programs the tests run are looked for instead. It also stops, with one
line, where the disk is too full for what the suite writes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
LISTS = [TOOLS / "pdf-packages.txt", TOOLS / "test-packages.txt"]
# Without dpkg: the programs the tests run, by what provides them.
# What the suite writes, in GB: the CPU stand-in's environments where none is installed yet
# (Makefile: test-recording; pip's cache is off in CI) and the books and test folders it builds.
STAND_IN_GB, BUILDS_GB = 9, 4
PROGRAMS = {"chromium": "Chromium", "latexmk": "TeX (latexmk)", "lualatex": "TeX (LuaTeX)",
            "pdftotext": "poppler", "zbarimg": "zbar"}


def packages() -> list[str]:
    return [name for path in LISTS for name in path.read_text().split()]


def missing_packages(names: list[str]) -> list[str]:
    """The packages of ``names`` dpkg does not list as installed."""
    listed = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\\n", *names],
                            capture_output=True, text=True).stdout
    installed = {line.split()[0] for line in listed.splitlines() if line.endswith(" installed")}
    return [name for name in names if name not in installed]


def install_command(names: list[str]) -> str:
    return f"apt-get update && apt-get install -y --no-install-recommends {' '.join(names)}"


def disk_problem(root: Path) -> str | None:
    """One line when the disk holding ``root`` has less room than the suite writes."""
    need = BUILDS_GB + (0 if any(root.glob(".venv-*-cpu-*")) else STAND_IN_GB)
    free = shutil.disk_usage(root).free / 1e9
    if free >= need:
        return None
    return (f"make test writes about {need} GB (environments, built books) but {root} has "
            f"{free:.1f} GB free: free some space (`make clean`, old worktrees), "
            "then make test again")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    problem = disk_problem(TOOLS.parent)
    if problem:
        print(problem, file=sys.stderr)
        return 1
    if shutil.which("dpkg-query") is None:
        absent = [what for program, what in PROGRAMS.items() if shutil.which(program) is None]
        if absent:
            print(f"make test needs {', '.join(absent)}: install them (Debian and Ubuntu "
                  f"name the packages in tools/pdf-packages.txt and tools/test-packages.txt)",
                  file=sys.stderr)
            return 1
        return 0
    missing = missing_packages(packages())
    if not missing:
        return 0
    if os.geteuid() != 0:
        print(f"make test needs system packages that are missing: run `sudo sh -c "
              f"'{install_command(missing)}'`, then make test again", file=sys.stderr)
        return 1
    print(f"installing the system packages the tests need: {' '.join(missing)}", flush=True)
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=True, env=environment)
    subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
                   check=True, env=environment)
    return 0


if __name__ == "__main__":
    sys.exit(main())
