#!/usr/bin/env python3
"""Check that this Python can run the recorder and create virtual environments with pip,
before anything is installed.

The recorder needs Python 3.11 or newer (it uses datetime.UTC and tomllib; a Cloud TPU VM's
image ships 3.10). It creates its own environment and one per chapter kernel, each from this
Python. A distribution's Python without its venv package (Debian and Ubuntu split it out, as
`python3.X-venv`; Colab's Python 3.13 comes without it) fails there after partial work. This
check tries it in a temporary folder and, if either fails, stops with one line naming what to
install. It needs nothing but the standard library, and runs on older Pythons to say so.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

FLOOR = (3, 11)  # datetime.UTC and tomllib, in the recorder and coursebook.model


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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    if sys.version_info[:2] < FLOOR:
        floor = ".".join(map(str, FLOOR))
        print(f"check_venv: Python {version} ({sys.executable}) is older than the recorder's "
              f"floor, {floor}: run with a newer one (`make recording PYTHON=python{floor}`, "
              "docs/recording.md); nothing was installed or written.", file=sys.stderr)
        return 1
    if venv_works():
        return 0
    print(f"check_venv: Python {version} ({sys.executable}) cannot create a virtual environment "
          f"with pip: its venv package is missing. Install it (`apt-get install "
          f"python{version}-venv`) and run again; nothing was installed or written.",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
