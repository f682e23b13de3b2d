"""The torch releases a chapter is verified on (those with its expected outputs), oldest first."""

from __future__ import annotations

from pathlib import Path

from coursebook.model.versions import version_key


def verified_versions(expected_dir: Path, chapter: str) -> list[str]:
    found = [p.parent.name.removeprefix("torch-")
             for p in expected_dir.glob(f"torch-*/{chapter}.txt")]
    return sorted(found, key=version_key)
