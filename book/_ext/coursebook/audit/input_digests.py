"""Digests of a step's inputs, remembered beside the doctrees: a warm build skips a step
whose inputs did not change.

Kept in files of the doctree folder, not in the environment: Sphinx saves the environment
only when it read a page, and a step whose inputs changed while no page did (an edit of
this extension, say) would then run again on every build.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from sphinx.application import Sphinx


def _file(app: Sphinx, step: str) -> Path:
    return Path(app.doctreedir, f"coursebook-{step}.sha256")


def digest(*parts: str | bytes) -> str:
    """One hash of the parts, each kept apart from the next."""
    hashed = hashlib.sha256()
    for part in parts:
        hashed.update(part.encode("utf8") if isinstance(part, str) else part)
        hashed.update(b"\0")
    return hashed.hexdigest()


def unchanged(app: Sphinx, step: str, inputs: str) -> bool:
    """Whether ``step`` last ran, and passed, on these inputs."""
    path = _file(app, step)
    return path.is_file() and path.read_text(encoding="ascii") == inputs


def remember(app: Sphinx, step: str, inputs: str) -> None:
    """``step`` ran, and passed, on these inputs."""
    path = _file(app, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(inputs, encoding="ascii")
