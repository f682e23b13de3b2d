"""The torch releases a chapter is verified on (those with its expected outputs), oldest first."""

from __future__ import annotations

from pathlib import Path

from coursebook.model.versions import version_key


def expected_files(expected_dir: Path, chapter: str = "**/*") -> list[Path]:
    """Each torch release's expected outputs of ``chapter`` (by default: of every chapter)."""
    return sorted(expected_dir.glob(f"torch-*/{chapter}.txt"))


def verified_versions(expected_dir: Path, chapter: str) -> list[str]:
    found = [p.relative_to(expected_dir).parts[0].removeprefix("torch-")  # torch-X/part/ch.txt
             for p in expected_files(expected_dir, chapter)]
    return sorted(found, key=version_key)
