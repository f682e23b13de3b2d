#!/usr/bin/env python3
"""Serve an edition of the book on localhost, rebuilt and reloaded on every save.

sphinx-autobuild builds the edition (sphinx-build's arguments as `make html` gives them,
warnings as errors, pages read in one process: a save changes one page) into
_build/preview/EDITION/ and serves it; the open page reloads after each build. It watches
the chapters, their expected outputs and recordings (book/), the exhibits and the machine
kinds. A build that fails prints its message here and writes no page: the browser keeps
the last good ones (coursebook.process.preview). Chapters execute into the book's cache
(_build/.jupyter_cache), so a preview after `make html` starts without executing anything.
Each build is a process of its own, forked from this one, which imported Sphinx and the
extensions once (coursebook.process.forked_builds). A code edit runs its chapter in a
kernel started ahead of need, conf.py's coursebook_preview_kernel_imports (torch, ...)
already imported into its process (coursebook.execute.kernel_pool); each kernel runs one
chapter, from the top, as in any build.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from book_environment import (
    BUILD,
    EXHIBITS_DIR,
    MACHINE_KINDS_FILE,
    RECORDINGS_DIR,
    ROOT,
    sphinx_arguments,
    use_book_environment,
)

use_book_environment("sphinx_autobuild")

from sphinx_autobuild import __main__ as autobuild
from sphinx_autobuild.build import Builder
from sphinx_autobuild.utils import show_message

from coursebook.config import book_config
from coursebook.execute.fill_cache import BookReadError, read_only_app
from coursebook.execute.kernel_pool import (
    make_pool,
    offer_waiting_kernels,
    start_kernel_forkserver,
    stop_kernel_forkserver,
)
from coursebook.prepare.editions import Edition
from coursebook.process.forked_builds import (
    Forked,
    build_modules,
    import_modules,
    sphinx_build,
)

# Editors' swap and backup files, Python's bytecode (the kernels import book/_ext),
# Jupyter's checkpoints and expected outputs being written (``.pt01.txt.24294``, renamed
# into place when whole: execute/kernel_forkserver.write_whole) are no edits of the book.
NOT_EDITS = [r"__pycache__", r"\.pyc$", r"\.ipynb_checkpoints", r"~$", r"\.sw[a-z]$",
             r"(^|/)\.#", r"(^|/)4913$", r"(^|/)\.[^/]+\.txt\.\d+$"]


class ForkedBuilder(Builder):
    """sphinx-autobuild's builder, each build forked rather than started.

    sphinx-autobuild runs the first build in this process and every later one in a
    worker it forks from this process: after the first, this process imports what that
    build imported, and the workers inherit it."""

    preview_pid = os.getpid()

    def __call__(self, *, changed_paths: Sequence[Path]) -> None:
        if changed_paths:
            show_message(f"Detected changes ({', '.join(p.name for p in changed_paths[:5])})")
            show_message("Rebuilding...")
        status, imported = Forked(sphinx_build, self.sphinx_args).result()
        if os.getpid() == self.preview_pid:
            import_modules(imported or [])
        if status:
            print(f"Sphinx exited with exit code: {status}", flush=True)
        show_message(f"Serving on {self.uri}")


def fork_rebuilds() -> None:
    """sphinx-autobuild calls its builder in a worker of a process pool of the default
    start method: the imports done here reach the builds only if it forks (Python 3.14's
    default, forkserver, starts workers afresh)."""
    multiprocessing.set_start_method("fork", force=True)


def _send_configuration(sender, edition: str, source: Path, settings: dict[str, str]) -> None:
    try:
        with read_only_app(source, ROOT, Edition(edition), settings) as app:
            sender.send({"extensions": list(app.config.extensions),
                         "html_theme": app.config.html_theme,
                         "kernel_imports": book_config(app.config).preview_kernel_imports})
    except BookReadError as error:
        sender.send(str(error))


def edition_configuration(edition: str, source: Path, settings: dict[str, str]) -> dict | str:
    """What the preview needs of the edition's configuration, as Sphinx makes it for its
    builds (conf.py with their tags and -D ``settings``); or the one line saying why Sphinx
    could not. Sphinx sets the book up in a forked process: this one stays as it was."""
    return (Forked(_send_configuration, edition, source, settings).result()[1]
            or "preview: Sphinx could not set up the book (the message above)")


def autobuild_arguments(edition: str, source: Path, out: Path, host: str, port: int,
                        settings: dict[str, str]) -> list[str]:
    """sphinx-autobuild's arguments: the edition's sphinx-build arguments, in preview
    mode, and what to watch."""
    arguments = sphinx_arguments(source, out / edition / "html", out / edition / "doctrees",
                                 instructor=edition == "instructor", jobs=None,
                                 settings=settings)
    watched = [EXHIBITS_DIR, RECORDINGS_DIR, MACHINE_KINDS_FILE]
    return [*arguments, "--host", host,
            "--port", str(port), *(f"--watch={path}" for path in watched),
            f"--ignore={BUILD}", *(f"--re-ignore={pattern}" for pattern in NOT_EDITS)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="\n".join(
        __doc__.splitlines()[2:]), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edition", choices=["student", "instructor"], default="student",
                        help="the edition to serve (default: student)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to serve on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to serve on (default: 8000)")
    parser.add_argument("--source", type=Path, default=ROOT / "book",
                        help="the book's sources (default: book/)")
    parser.add_argument("--out", type=Path, default=BUILD / "preview",
                        help="where the served editions are built (default: _build/preview/)")
    parser.add_argument("--no-warm-kernels", action="store_true",
                        help="start each kernel when needed (the bench's comparison)")
    parser.add_argument("-D", dest="settings", action="append", default=[], metavar="NAME=VALUE",
                        help="a Sphinx setting, as sphinx-build's -D "
                        "(e.g. nb_execution_cache_path=...)")
    args = parser.parse_args(argv)
    settings = {"coursebook_preview": "1",
                **dict(setting.split("=", 1) for setting in args.settings)}
    arguments = autobuild_arguments(args.edition, args.source.resolve(), args.out.resolve(),
                                     args.host, args.port, settings)
    conf = edition_configuration(args.edition, args.source.resolve(), settings)
    if isinstance(conf, str):
        print(conf, file=sys.stderr)
        return 1
    import_modules(build_modules(conf))
    pool = args.out.resolve() / args.edition / "kernels"
    make_pool(pool)
    server = None  # a kernel kept waiting, imports done (it moves into its run's folder)
    if not args.no_warm_kernels:
        offer_waiting_kernels(pool)
        server = start_kernel_forkserver(pool, conf["kernel_imports"], keep=args.source.resolve())
    print(f"preview: the {args.edition} edition at http://{args.host}:{args.port}/ "
          "(Ctrl-C stops it)", flush=True)
    # sphinx-autobuild's own server, watcher and command line, with this builder (its
    # main makes its builder by this name; tests/test_build_processes.py checks it does).
    autobuild.Builder = ForkedBuilder
    fork_rebuilds()
    try:
        autobuild.main(arguments)
        return 0
    finally:
        if server is not None:
            stop_kernel_forkserver(pool, server)


if __name__ == "__main__":
    sys.exit(main())
