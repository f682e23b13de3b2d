#!/usr/bin/env python3
"""Check that this Python can create virtual environments with pip, before anything is installed.

The recorder creates its own environment and one per chapter kernel, each from this Python.
A distribution's Python without its venv package (Debian and Ubuntu split it out, as
`python3.X-venv`; Colab's Python 3.13 comes without it) fails there after partial work. This
check tries it in a temporary folder and, if it fails, stops with one line naming the package
of the running Python. It needs nothing but the standard library.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import venv
from pathlib import Path


def venv_works() -> bool:
    """Whether a virtual environment with pip can be made here (in a temporary folder)."""
    try:  # Debian and Ubuntu ship ensurepip in the venv package
        import ensurepip  # noqa: F401
    except ImportError:
        return False
    with tempfile.TemporaryDirectory() as folder:
        try:
            venv.EnvBuilder(with_pip=True).create(Path(folder) / "probe")
        except (subprocess.CalledProcessError, OSError):
            return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    if venv_works():
        return 0
    print(f"check_venv: Python {version} ({sys.executable}) cannot create a virtual environment "
          f"with pip: its venv package is missing. Install it (`apt-get install "
          f"python{version}-venv`) and run again; nothing was installed or written.",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
