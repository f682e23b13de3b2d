"""Package versions as the book compares them: by release, local build tags ignored.

``2.13.0+cpu`` and ``2.13.0+cu130`` are one torch release: expected outputs, exhibit
records and pins are per release. Versions sort as releases do (``2.9`` before ``2.13``).
"""

from __future__ import annotations

from packaging.version import Version


def release(version: str) -> str:
    """The release of a version: ``2.13.0+cpu`` -> ``2.13.0``."""
    return version.split("+")[0]


def version_key(version: str) -> Version:
    """A sort key: oldest release first."""
    return Version(version)
