"""The course book's Sphinx extension: editions, execution checks and downloads.

Importing the package imports nothing else, so that a chapter's kernel (which may run in
another environment, such as the TPU bridges') can use ``coursebook.exhibit_checks``.
"""

from __future__ import annotations


def setup(app) -> dict:
    from .extension import setup as setup_extension

    return setup_extension(app)
