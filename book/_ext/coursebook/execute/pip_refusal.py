#!/usr/bin/env python3
"""pip in a build's chapter: the kernel names this file in PIP_PYTHON (pip's ``--python``), so
any pip it or a program it starts runs, runs ``THIS RUNNER ARGUMENTS``: reads go on; a change
is refused and noted for the kernel to tell the build at the cell."""

import os
import shlex
import sys

PYTHON, REFUSED = "COURSEBOOK_PIP_PYTHON", "COURSEBOOK_PIP_REFUSED"
# pip's commands that change nothing; none: `pip --version`, or `pip` (its help).
READS = {"", "check", "completion", "debug", "freeze", "hash", "help", "index", "inspect",
         "list", "search", "show"}

if __name__ == "__main__":
    runner, *arguments = sys.argv[1:]
    # an option's value taken for the command (`--log FILE install`) is refused: the safe side
    command = next((word for word in arguments if not word.startswith("-")), "")
    if command in READS:
        os.execv(os.environ[PYTHON], [os.environ[PYTHON], runner, *arguments])
    line = shlex.join(["pip", *arguments])
    with open(os.environ[REFUSED], "a", encoding="utf8") as refused:
        refused.write(line + "\n")
    sys.exit(f"`{line}` refused: a chapter's code changes no environment in a build.")
