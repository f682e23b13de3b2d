"""The course book's Sphinx extension.

Three runtimes use this package: Sphinx, through :mod:`coursebook.extension` and the stage
subpackages; a chapter's kernel, which imports the top-level modules ``exhibit_checks``,
``figures``, ``outputs`` and ``worddiff`` (no Sphinx); and the recorder
(``tools/record_chapter.py``), which imports ``model``. Importing the package imports
nothing else, so that a kernel starts quickly.
"""

from __future__ import annotations


def setup(app) -> dict:
    # First of conf.py's extensions, the collector waits from here while the extension's
    # imports (myst-nb) and the others load: process/__init__.py.
    from .process import hold_collector, resume_collector

    hold_collector()
    # A read of the book that runs nothing (execute/fill_cache.py) may share its process
    # with others (pytest): it leaves the collector and the signals as they were.
    from .execute.fill_cache import ChapterRuns

    build = not app.tags.has(ChapterRuns.tag)
    if not build:
        resume_collector()
    # myst-nb's execution clients (jupyter-cache, SQLAlchemy, nbclient) are imported once a
    # build has pages to read, not as myst-nb loads: execute/myst_nb_clients.py.
    from .execute.myst_nb_clients import defer

    defer()
    # The book's settings (coursebook_*), registered before the kernel server reads one.
    from .config import BookConfig

    BookConfig.register(app)
    # Install cells refused, declared packages checked, and this environment first on PATH
    # before the kernel server starts: its kernels inherit PATH (prepare/chapter_packages.py).
    from .prepare.chapter_packages import setup as setup_chapter_packages

    setup_chapter_packages(app)
    # On a cold cache, the server that forks the chapters' kernels starts importing torch
    # on the other core while the other extensions load: execute/kernel_pool.py.
    from .execute.kernel_pool import start_kernel_server

    start_kernel_server(app)
    from .extension import setup as setup_extension

    return setup_extension(app, build)
