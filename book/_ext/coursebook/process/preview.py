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
from pathlib import Path

from sphinx.application import Sphinx, builtin_extensions

from coursebook.config import book_config
from coursebook.process import resume_collector
from coursebook.reporting import asked_for, warnings_logged

# sphinx-build's own and the extensions Sphinx always loads (the book's: conf.py's).
_ALWAYS = ("sphinx.cmd.build", "sphinx.builders.html", *builtin_extensions)


def read_conf(conf_dir: Path) -> dict:
    """conf.py's names, as Sphinx evaluates the file (no tags), before any build; the
    collector, which conf.py holds for a build, left as it was."""
    from sphinx.config import eval_config_file
    from sphinx.util.tags import Tags

    collecting = gc.isenabled()
    conf = eval_config_file(Path(conf_dir) / "conf.py", Tags())
    if collecting:
        resume_collector()
    return conf


def build_modules(conf: dict) -> list[str]:
    """The modules a build imports: sphinx-build's, conf.py's extensions and theme."""
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


def _build(arguments: Sequence[str], imported) -> None:
    from sphinx.cmd.build import build_main

    try:
        status = build_main(list(arguments))
    finally:
        imported.send([name for name in sys.modules if not name.startswith("__")])
    sys.exit(status)


def run_build(arguments: Sequence[str]) -> tuple[int, list[str]]:
    """sphinx-build in a forked process: its exit status and the modules it imported."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    # Not daemonic: a build reads its pages in processes of its own (-j).
    process = context.Process(target=_build, args=(list(arguments), sender), name="sphinx-build")
    process.start()
    sender.close()
    try:
        imported = receiver.recv()  # before joining: a long list fills the pipe
    except EOFError:  # it ended without a word (killed)
        imported = []
    process.join()
    return process.exitcode or 0, imported


FAILED = "preview: the build failed (the message above)"


def failure_message(commands: list[str]) -> str:
    fix = (f"If the new outputs are right, run {' and '.join(f'`{c}`' for c in commands)} in "
           "another terminal: the preview rebuilds when they change. Otherwise save the fix."
           if commands else "Save the fix to rebuild.")
    return f"{FAILED}; no page was written, the server keeps the last good ones. {fix}"


def keep_last_good_pages(app: Sphinx, builder) -> None:
    """``write-started``: in the preview, end a failed build before it writes."""
    # -W makes each warning fatal, but only at the end of the build.
    failed = app.statuscode != 0 or warnings_logged(app) > 0
    if book_config(app.config).preview and failed:
        print(failure_message(asked_for(app.env)), file=sys.stderr, flush=True)
        # SystemExit, not an exception: Sphinx would print a crash report for one.
        sys.exit(1)
