"""The course book's Sphinx extension, also imported by chapters' kernels and the recorder
(docs/architecture.md, "Three runtimes run this code"): importing it imports nothing else,
so a kernel starts quickly."""

from __future__ import annotations


def setup(app) -> dict:
    # Each import where it is needed, in this order (the slow ones last).
    from .execute.fill_cache import ChapterRuns

    build = not app.tags.has(ChapterRuns.tag)
    if not build:
        # A read of the book that runs nothing (execute/fill_cache.py) may share its process
        # with others (pytest): it leaves the collector (conf.py held it) and the signals as
        # they were.
        import gc

        gc.enable()  # as before, nothing frozen
    # myst-nb's execution clients are imported once a build has pages to read, not as
    # myst-nb loads: execute/myst_nb_clients.py.
    from .execute.myst_nb_clients import defer

    defer()
    from .config import BookConfig
    from .execute.kernel_pool import start_kernel_server
    from .prepare.chapter_packages import setup as setup_chapter_packages

    BookConfig.register(app)  # before the kernel server reads a setting
    setup_chapter_packages(app)  # before the kernel server starts: kernels inherit PATH
    # On a cold cache, the server that forks the kernels imports torch on the other core
    # while the other extensions load: execute/kernel_pool.py.
    start_kernel_server(app)
    from .extension import setup as setup_extension

    return setup_extension(app, build)
