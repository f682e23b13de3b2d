"""myst-nb's execution clients, imported only by builds that read pages, the cache client then
the book's (docs/performance.md); ``COURSEBOOK_DEFER_IMPORTS=0`` defers nothing."""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

PACKAGE = "myst_nb.core.execute"
# Each client module of PACKAGE, by the one name PACKAGE imports from it.
CLIENTS = {"cache": "NotebookClientCache", "direct": "NotebookClientDirect",
           "inline": "NotebookClientInline"}


class _DeferredModule(ModuleType):
    pass  # what sys.modules holds for a client module until it is imported


class _Placeholder:
    def __new__(cls, *args, **kwargs):  # a client made before the import: myst-nb's own
        import_now()
        return getattr(sys.modules[cls.__module__], cls.__name__)(*args, **kwargs)


def defer() -> None:
    """A placeholder in each client module's place, unless imported already (a preview's
    build, forked from a process that imported it)."""
    if os.environ.get("COURSEBOOK_DEFER_IMPORTS") == "0":
        return
    for module, name in CLIENTS.items():
        full_name = f"{PACKAGE}.{module}"
        if full_name not in sys.modules:
            sys.modules[full_name] = _DeferredModule(full_name, __doc__)
            setattr(sys.modules[full_name], name,
                    type(name, (_Placeholder,), {"__module__": full_name}))


def import_now(app: Sphinx | None = None) -> None:
    """Import the client modules, for ``create_client``; with ``app``, this build's chapter
    client in place of myst-nb's cache client."""
    package = importlib.import_module(PACKAGE)
    for module, name in CLIENTS.items():
        full_name = f"{PACKAGE}.{module}"
        placeholder = sys.modules[full_name]
        if isinstance(placeholder, _DeferredModule):
            del sys.modules[full_name]
            try:
                importlib.import_module(full_name)
            except BaseException:
                sys.modules[full_name] = placeholder  # as a failed import leaves nothing behind
                raise
        setattr(package, name, getattr(sys.modules[full_name], name))
    if app is not None:
        from coursebook.execute.cached_chapters import chapter_client

        setattr(package, CLIENTS["cache"], chapter_client(app))


def import_for_reading(app: Sphinx, env: BuildEnvironment, docnames: list[str]) -> None:
    """``env-before-read-docs``: a build with pages to read imports them."""
    if docnames:
        import_now(app)
