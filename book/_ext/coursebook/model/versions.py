"""Package versions as the book compares them: by release, local build tags (``+cpu``)
ignored; ``2.9`` sorts before ``2.13``."""

from __future__ import annotations

import re
from importlib import metadata

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version


def installed_version(name: str) -> str:
    """``importlib.metadata.version(name)``, read from the Version line alone: that parses the
    whole metadata file as an e-mail (torch's 38 kB: 2 ms; a warm build asks six times)."""
    found = metadata.distribution(name)  # PackageNotFoundError as metadata.version
    text = found.read_text("METADATA") or found.read_text("PKG-INFO") or ""
    return re.search(r"(?m)^Version: *(\S+)", text)[1]


def release(version: str) -> str:
    """The release of a version: ``2.13.0+cpu`` -> ``2.13.0``."""
    return version.split("+")[0]


def is_release(version: str) -> bool:
    """Whether a text names a release at all (a capture's torch may be "unrecorded")."""
    return version_key(version)[0] == 1


def version_key(version: str) -> tuple[int, Version]:
    """A sort key: oldest release first, a text naming none ("unrecorded") before them all."""
    try:
        return 1, Version(version)
    except InvalidVersion:
        return 0, Version("0")


# A distribution name as pip compares them (torch_xla and torch-xla are one): PEP 503's.
package_key = canonicalize_name

