"""A prepared chapter meets the execution cache, while its page is read (``source-read``).

A chapter that executes gets the execution versions in its cache key, and the key's lock
is held until myst-nb has run and cached it; a recorded chapter's outputs are put in the
cache under its key, so myst-nb finds them there and executes nothing.
"""

from __future__ import annotations

from sphinx.application import Sphinx

from coursebook.config import book_config
from coursebook.execute.cache_key import key_execution_versions
from coursebook.execute.shared_cache import hold_notebook_lock, notebook_lock
from coursebook.model.recordings import cache_recorded_outputs
from coursebook.prepare.chapters import PreparedChapter


def enter_cache(app: Sphinx, source_path: str, prepared: PreparedChapter) -> None:
    cache_path = app.config.nb_execution_cache_path
    if prepared.recorded is not None:
        with notebook_lock(cache_path, prepared.recorded):
            cache_recorded_outputs(cache_path, source_path, prepared.recorded)
        return
    key_execution_versions(prepared.notebook, book_config(app.config).execution_versions)
    hold_notebook_lock(app, prepared.notebook)  # until myst-nb has run and cached it
