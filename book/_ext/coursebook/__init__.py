"""The course book's Sphinx extension, also imported by chapters' kernels and the recorder
(docs/architecture.md, "Three runtimes run this code"): importing it imports nothing else."""

from __future__ import annotations


def setup(app) -> dict:
    # Each import where it is needed, the slow ones last.
    from .execute.fill_cache import ChapterRuns

    build = not app.tags.has(ChapterRuns.name)
    if not build:
        # A read that runs nothing may share its process (pytest): the collector, which
        # conf.py held, as it was.
        import gc

        gc.enable()
    from .execute.myst_nb_clients import defer

    defer()  # myst-nb's execution clients imported once a build has pages to read
    from .config import BookConfig
    from .execute.kernel_pool import start_kernel_server
    from .prepare.chapter_packages import setup as setup_chapter_packages

    BookConfig.register(app)  # before the kernel server reads a setting
    setup_chapter_packages(app)  # before the kernel server starts: kernels inherit PATH
    # On a cold cache, the server that forks the kernels imports torch on the other core
    # while the other extensions load.
    start_kernel_server(app)
    from .extension import setup as setup_extension

    return setup_extension(app, build)
