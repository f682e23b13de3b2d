"""Registers the course book's hooks with Sphinx."""

from __future__ import annotations

from docutils import nodes
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.application import Sphinx

from .answer_space import setup_answer_space
from .audit import check_answer_overlaps
from .builders import BUILDERS_FILE
from .cache_locks import release_notebook_lock
from .chapters import (edition_of, remember_chapter_inputs, render_edition_source,
                       report_unpreparable_chapters, reread_changed_chapters,
                       spread_chapters_over_readers)
from .compiled_templates import keep_compiled_templates
from .editions import Edition, box_code_answers
from .execution_cache import check_execution_cache
from .interrupt import stop_cleanly_on_interrupt
from .long_lived import freeze_long_lived_objects
from .notebook_runs import run_chapters_here
from .quiet_log import quiet_config_dumps
from .source_files import check_source_encodings
from .execution_key import reread_failed_chapters, set_execution_environment
from .handouts import setup_handouts
from .downloads import add_colab_button, offer_edition_notebook, replace_copied_sources
from .outputs import normalise_output_nodes
from .stamp import add_build_stamp, set_build_stamp
from .torch_versions import TorchVersionChanges, add_verified_versions, highlight_changed_boxes
from .verify import (check_executed_chapter, clear_execution_reports, compare_expected_outputs,
                     fail_build_on_failed_chapters, keep_cell_outputs, keep_execution_reports)

__all__ = ["setup"]


def _read_chapter_done(app: Sphinx, doctree: nodes.document) -> None:
    # First: the chapter is executed and cached, so the other edition may take it.
    release_notebook_lock(app)
    _clean_and_check(app, doctree)


def _clean_and_check(app: Sphinx, doctree: nodes.document) -> None:
    normalise_output_nodes(doctree)
    check_executed_chapter(app, doctree)
    keep_cell_outputs(app, app.env.docname)
    highlight_changed_boxes(doctree)
    if NbMetadataCollector.get_exec_data(app.env, app.env.docname) is not None:
        add_verified_versions(app, doctree, app.env.docname,
                              app.config.coursebook_execution_environment["torch"])
    if edition_of(app) is Edition.INSTRUCTOR:
        box_code_answers(doctree)


def setup(app: Sphinx) -> dict:
    # --- Configuration ------------------------------------------------------------------
    app.add_config_value("coursebook_environment_packages", ["torch"], "env", list)
    app.add_config_value("coursebook_execution_environment", {}, "env", dict)
    app.add_config_value("coursebook_exhibits_dir", "exhibits", "env", str)
    app.add_config_value("coursebook_recordings_dir", "book/recordings", "env", str)
    app.add_config_value("coursebook_allow_stale_recordings", False, "env", bool)
    app.add_config_value("coursebook_builders_file", str(BUILDERS_FILE), "env", str)
    app.add_config_value("coursebook_expected_dir", "expected", "", str)
    # "": changing it re-reads nothing; the comparison runs on every build anyway.
    app.add_config_value("coursebook_accept_outputs", False, "", bool)
    # Off: no comparison (the bench measures its cost); the build is then unverified.
    app.add_config_value("coursebook_verify_outputs", True, "", bool)
    # Off only to show what the locks prevent (tests/test_concurrency.py).
    app.add_config_value("coursebook_cache_locks", True, "", bool)
    app.add_config_value("coursebook_repository_url", "", "html", str)
    app.add_config_value("coursebook_published_branch", "gh-pages", "html", str)
    # The student book's public address (https://…/): downloads link to its pages, handouts
    # print it. "" while the book is unpublished: links become the targets' titles.
    app.add_config_value("coursebook_published_url", "", "html", str)
    app.add_directive("torch-version-changes", TorchVersionChanges)
    # myst-nb runs chapters through coursebook.notebook_runs: a hung cell or a dead kernel
    # is named, a flood of output is cut before it is cached.
    run_chapters_here()
    quiet_config_dumps()

    # --- Events, in the order Sphinx emits them -------------------------------------------
    # 1. config-inited: the execution environment joins the cache key.
    app.connect("config-inited", set_execution_environment)
    # 2. builder-inited: the stamp's commit and date; last build's failure reports cleared;
    #    Ctrl-C ends the build in one line; compiled templates kept between builds; what
    #    the build keeps to its end (extensions, environment) set aside from the collector.
    app.connect("builder-inited", set_build_stamp)
    app.connect("builder-inited", clear_execution_reports)
    app.connect("builder-inited", stop_cleanly_on_interrupt)
    app.connect("builder-inited", keep_compiled_templates)
    app.connect("builder-inited", freeze_long_lived_objects)
    # 3. env-get-outdated: chapters that failed, or whose exhibits or recordings changed,
    #    are read (executed) again (looked for only when those inputs changed).
    app.connect("env-get-outdated", reread_failed_chapters)
    app.connect("env-get-outdated", reread_changed_chapters)
    # 4. env-before-read-docs, when there are pages to read: a page that is not UTF-8 stops
    #    the build; the shared cache is created (once, however many builds start) and
    #    repaired or refused; chapters that cannot be prepared are reported (once, before
    #    -j forks the readers); chapters that execute are dealt across the parallel readers.
    app.connect("env-before-read-docs", check_source_encodings)
    app.connect("env-before-read-docs", check_execution_cache)
    app.connect("env-before-read-docs", report_unpreparable_chapters)
    app.connect("env-before-read-docs", spread_chapters_over_readers)
    # 5. source-read, per page: the edition's notebook replaces the chapter's text (and its
    #    cache key is locked until myst-nb has executed and cached it).
    app.connect("source-read", render_edition_source)
    # 6. doctree-read, per page: the lock is released; outputs normalised and checked.
    app.connect("doctree-read", _read_chapter_done)
    # 7. env-updated, once all pages are read: the chapters' inputs remembered (step 3);
    #    outputs against their expectations, answers against visible text; myst-nb's
    #    failure logs kept out of the HTML.
    app.connect("env-updated", remember_chapter_inputs)
    app.connect("env-updated", compare_expected_outputs)
    app.connect("env-updated", check_answer_overlaps)
    app.connect("env-updated", keep_execution_reports)
    # 8. html-page-context, per page written: the edition's notebook download, the Colab
    #    button (after the theme's own download menu), the build stamp.
    app.connect("html-page-context", offer_edition_notebook, priority=400)
    app.connect("html-page-context", add_colab_button, priority=600)
    app.connect("html-page-context", add_build_stamp)
    # 9. build-finished: student sources replace Sphinx's copies; any failure sets the status.
    app.connect("build-finished", replace_copied_sources)
    app.connect("build-finished", fail_build_on_failed_chapters)
    # Lab handouts (-t handout): answer boxes, one LaTeX document per chapter, covers; each
    # registers its own hooks.
    setup_answer_space(app)
    setup_handouts(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "0.1"}
