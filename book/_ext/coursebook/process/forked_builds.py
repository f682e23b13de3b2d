"""Builds forked, not started: a new ``sphinx-build`` spends about 2 s of CPU on imports.
The preview forks each rebuild from itself (tools/preview.py), the tests theirs from one
process per worker (tests/forked_builds.py)."""

from __future__ import annotations

import contextlib
import gc
import importlib
import logging
import multiprocessing
import os
import sys
from collections.abc import Sequence

from sphinx.application import builtin_extensions


def build_modules(conf: dict) -> list[str]:
    """sphinx-build's modules, the extensions Sphinx always loads, conf.py's and its theme's
    (a theme Sphinx holds is no module: :func:`import_modules` passes over it)."""
    return ["sphinx.cmd.build", "sphinx.builders.html", *builtin_extensions,
            *conf.get("extensions", []), conf.get("html_theme", "").replace("-", "_")]


def import_modules(names: Sequence[str]) -> None:
    # Some modules configure logging when imported (a11y_pygments calls basicConfig):
    # this process's logging, which the builds inherit, stays as it was.
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    for name in names:
        with contextlib.suppress(Exception):  # one a build imports in passing: it does again
            importlib.import_module(name)
    root.handlers[:], root.level = handlers, level
    # Out of the collector's sight, a forked build does not walk (and so copy) the pages
    # it shares with this process (the gc module's advice for forking servers).
    gc.freeze()


class Forked:
    """``target(sender, *arguments)`` in a forked process; ``receiver`` is ready (for
    ``multiprocessing.connection.wait``) once it sent or ended."""

    def __init__(self, target, *arguments) -> None:
        context = multiprocessing.get_context("fork")
        self.receiver, sender = context.Pipe(duplex=False)
        # Not daemonic: a build reads its pages in processes of its own (-j).
        self.process = context.Process(target=target, args=(sender, *arguments),
                                       name=target.__name__)
        self.process.start()
        sender.close()

    def result(self) -> tuple[int, object]:
        """Its exit status and what it sent (None: it was killed)."""
        try:
            received = self.receiver.recv()  # before joining: a long list fills the pipe
        except EOFError:
            received = None
        self.receiver.close()
        self.process.join()
        return self.process.exitcode or 0, received


def sphinx_build(imported, arguments: Sequence[str]) -> None:
    """``python -m sphinx ARGUMENTS``, a :class:`Forked` target: sends what it imported."""
    import sphinx
    from sphinx.cmd.build import main

    sys.argv = [os.path.join(os.path.dirname(sphinx.__file__), "__main__.py"), *arguments]
    try:
        status = main(list(arguments))
    finally:
        imported.send([name for name in sys.modules if not name.startswith("__")])
    sys.exit(status)
