"""The live preview (``make preview``): builds forked from a process that has already
imported them (a new ``sphinx-build`` spends about a second on imports: conf.py's modules,
then every module its first build imported), and the pages of the last build that passed
(a failed build stops before writing any, naming the command its failure needs).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.util
import logging
import multiprocessing
import sys
from collections.abc import Sequence

from sphinx.application import Sphinx, builtin_extensions

from coursebook.config import book_config
from coursebook.reporting import asked_for, warnings_logged

# sphinx-build's own and the extensions Sphinx always loads (the book's: conf.py's).
_ALWAYS = ("sphinx.cmd.build", "sphinx.builders.html", *builtin_extensions)


def build_modules(conf: dict) -> list[str]:
    """The modules a build imports: sphinx-build's, its extensions and theme (``conf``: its
    configuration's ``extensions`` and ``html_theme``)."""
    names = [*_ALWAYS, *conf.get("extensions", [])]
    theme = conf.get("html_theme", "").replace("-", "_")
    if theme and importlib.util.find_spec(theme) is not None:
        names.append(theme)
    return names


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


def in_fork(target, *arguments) -> tuple[int, object]:
    """``target(sender, *arguments)`` in a forked process: its exit status and what it sent
    through ``sender`` (None: nothing, it was killed)."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    # Not daemonic: a build reads its pages in processes of its own (-j).
    process = context.Process(target=target, args=(sender, *arguments), name=target.__name__)
    process.start()
    sender.close()
    try:
        received = receiver.recv()  # before joining: a long list fills the pipe
    except EOFError:
        received = None
    process.join()
    return process.exitcode or 0, received


def _build(imported, arguments: Sequence[str]) -> None:
    from sphinx.cmd.build import build_main

    try:
        status = build_main(list(arguments))
    finally:
        imported.send([name for name in sys.modules if not name.startswith("__")])
    sys.exit(status)


def run_build(arguments: Sequence[str]) -> tuple[int, list[str]]:
    status, imported = in_fork(_build, list(arguments))
    return status, imported or []


FAILED = "preview: the build failed (the message above)"


def failure_message(commands: list[str]) -> str:
    fix = (f"If the new outputs are right, run {' and '.join(f'`{c}`' for c in commands)} in "
           "another terminal: the preview rebuilds when they change. Otherwise save the fix."
           if commands else "Save the fix to rebuild.")
    return f"{FAILED}; no page was written, the server keeps the last good ones. {fix}"


def keep_last_good_pages(app: Sphinx, builder) -> None:
    """``write-started``: in the preview, end a failed build before it writes (-W makes
    each warning fatal, but only at the end of the build)."""
    failed = app.statuscode != 0 or warnings_logged(app) > 0
    if book_config(app.config).preview and failed:
        print(failure_message(asked_for(app.env)), file=sys.stderr, flush=True)
        # SystemExit, not an exception: Sphinx would print a crash report for one.
        sys.exit(1)
