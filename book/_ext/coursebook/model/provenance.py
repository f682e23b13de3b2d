"""Where and when something was built: the source commit and the date (UTC), said one way."""

from __future__ import annotations

import datetime
import functools
import os
import subprocess
from pathlib import Path

NOT_IN_GIT = "a copy outside git"


def today() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")


@functools.lru_cache(maxsize=None)
def source_commit(folder: Path, *paths: str) -> str:
    """The commit ``folder`` is checked out at, marked when tracked files (under ``paths``,
    or anywhere) differ from it; ``GITHUB_SHA`` on GitHub Actions. Asked once per process."""
    if os.environ.get("GITHUB_SHA"):
        return os.environ["GITHUB_SHA"][:12]

    def git(*arguments: str) -> str:
        done = subprocess.run(["git", "-C", str(folder), *arguments], capture_output=True,
                              text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short=12", "HEAD")
    if not commit:
        return NOT_IN_GIT
    changed = git("status", "--porcelain", "--untracked-files=no", "--", *paths)
    return commit + (" + local changes" if changed else "")
