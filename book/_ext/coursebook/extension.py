"""Registers the course book's hooks with Sphinx."""

from __future__ import annotations

from docutils import nodes
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.application import Sphinx

from .cache_locks import create_cache, release_notebook_lock
from .chapters import (edition_of, render_edition_source, reread_changed_chapters,
                       spread_chapters_over_readers)
from .editions import Edition, box_code_answers
from .execution_key import reread_failed_chapters, set_execution_environment
from .downloads import add_colab_button, offer_edition_notebook, replace_copied_sources
from .outputs import normalise_output_nodes
from .torch_versions import TorchVersionChanges, add_verified_versions, highlight_changed_boxes
from .verify import (check_executed_chapter, compare_expected_outputs,
                     fail_build_on_failed_chapters)

__all__ = ["setup"]


def _create_execution_cache(app: Sphinx, config) -> None:
    """Create the shared jupyter-cache before parallel readers (or editions) race to."""
    if config.nb_execution_mode == "cache" and config.nb_execution_cache_path:
        create_cache(config.nb_execution_cache_path)


def _read_chapter_done(app: Sphinx, doctree: nodes.document) -> None:
    # First: the chapter is executed and cached, so the other edition may take it.
    release_notebook_lock(app)
    _clean_and_check(app, doctree)


def _clean_and_check(app: Sphinx, doctree: nodes.document) -> None:
    normalise_output_nodes(doctree)
    check_executed_chapter(app, doctree)
    highlight_changed_boxes(doctree)
    if NbMetadataCollector.get_exec_data(app.env, app.env.docname) is not None:
        add_verified_versions(app, doctree, app.env.docname,
                              app.config.coursebook_execution_environment["torch"])
    if edition_of(app) is Edition.INSTRUCTOR:
        box_code_answers(doctree)


def setup(app: Sphinx) -> dict:
    app.add_config_value("coursebook_environment_packages", ["torch"], "env", list)
    app.add_config_value("coursebook_execution_environment", {}, "env", dict)
    app.add_config_value("coursebook_exhibits_dir", "exhibits", "env", str)
    app.add_config_value("coursebook_recordings_dir", "book/recordings", "env", str)
    app.add_config_value("coursebook_allow_stale_recordings", False, "env", bool)
    app.add_config_value("coursebook_expected_dir", "expected", "", str)
    # "": changing it re-reads nothing; the comparison runs on every build anyway.
    app.add_config_value("coursebook_accept_outputs", False, "", bool)
    # Off: no comparison (the bench measures its cost); the build is then unverified.
    app.add_config_value("coursebook_verify_outputs", True, "", bool)
    # Off only to show what the locks prevent (tests/test_concurrency.py).
    app.add_config_value("coursebook_cache_locks", True, "", bool)
    app.connect("config-inited", set_execution_environment)
    app.connect("config-inited", _create_execution_cache)
    app.connect("source-read", render_edition_source)
    app.connect("doctree-read", _read_chapter_done)
    app.add_config_value("coursebook_repository_url", "", "html", str)
    app.add_config_value("coursebook_published_branch", "gh-pages", "html", str)
    app.connect("html-page-context", offer_edition_notebook, priority=400)
    app.connect("html-page-context", add_colab_button, priority=600)
    app.connect("env-get-outdated", reread_failed_chapters)
    app.connect("env-get-outdated", reread_changed_chapters)
    app.connect("env-before-read-docs", spread_chapters_over_readers)
    app.connect("build-finished", replace_copied_sources)
    app.connect("env-updated", compare_expected_outputs)
    app.add_directive("torch-version-changes", TorchVersionChanges)
    app.connect("build-finished", fail_build_on_failed_chapters)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "0.1"}
