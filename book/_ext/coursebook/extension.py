"""Registers the course book's hooks with Sphinx."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

from docutils import nodes
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.application import Sphinx

from coursebook.answer_checks import setup as setup_answer_checks
from coursebook.audit.answer_leaks import check_answer_overlaps
from coursebook.claims import setup as setup_claims
from coursebook.claims.verify import check_claims
from coursebook.config import BookConfig
from coursebook.execute import cached_chapters, kernel_pool
from coursebook.execute.fill_cache import ChapterRuns, chapter_runs
from coursebook.execute.myst_nb_clients import import_for_reading
from coursebook.execute.shared_cache import extension_version, release_notebook_lock
from coursebook.model.solutions import use_book_markdown
from coursebook.museum.render import fold_reveals, quiet_exhibit_checks
from coursebook.page_state import PageStateCollector
from coursebook.prepare import chapters
from coursebook.prepare.editions import Edition, box_code_answers
from coursebook.prepare.proofs import setup_proofs
from coursebook.process import freeze_long_lived_objects, next_build
from coursebook.process.interrupt import stop_cleanly_on_interrupt
from coursebook.process.preview import keep_last_good_pages
from coursebook.render import downloads, html_pages
from coursebook.render.handouts import setup_handouts
from coursebook.render.pdf_fonts import name_only_the_latex_folder
from coursebook.reporting import filter_the_log
from coursebook.torch_versions import setup as setup_torch_versions
from coursebook.torch_versions.verify import add_verified_versions, highlight_changed_boxes
from coursebook.verify import chapter_checks


def _read_edition_source(app: Sphinx, docname: str, source: list[str]) -> None:
    """``source-read``: myst-nb reads this edition's prepared, cached chapter instead."""
    prepared = chapters.prepare_edition_source(app, docname, source)
    if prepared is not None:
        source[0] = cached_chapters.enter_cache(app, prepared)


def _read_chapter_done(app: Sphinx, doctree: nodes.document) -> None:
    # First, so the other edition may take the cached chapter.
    cached_chapters.report_failed_run(app)
    release_notebook_lock(app)
    if chapter_runs(app) is not None:
        return  # a read that runs nothing has nothing to check
    chapter_checks.normalise_output_nodes(doctree)
    chapters.name_the_authors_lines(app, doctree)
    chapters.refuse_shown_solutions(app, doctree)  # after: at the author's line
    chapter_checks.check_executed_chapter(app, doctree)
    chapter_checks.keep_cell_outputs(app, doctree)
    check_claims(app, doctree)  # after: a claim that fails leaves the outputs compared
    highlight_changed_boxes(doctree)
    quiet_exhibit_checks(app, doctree)
    fold_reveals(doctree)
    if NbMetadataCollector.get_exec_data(app.env, app.env.docname) is not None:
        add_verified_versions(app, doctree)
    if chapters.edition_of(app) is Edition.INSTRUCTOR:
        box_code_answers(doctree)


def setup(app: Sphinx, build: bool = True) -> dict:
    """``build``: False for a read that runs nothing (:class:`ChapterRuns`), in a process
    that goes on after it: no signal handling, no frozen objects."""
    setup_torch_versions(app)  # its directive
    app.add_env_collector(PageStateCollector)  # also re-reads the pages that failed
    app.add_builder(ChapterRuns)  # what a build executes, for shards and `pytest book`
    # Its no-op keeps the search page and index.
    app.add_builder(html_pages.BookHTMLBuilder, override=True)
    app.add_transform(html_pages.NestedRules)
    filter_the_log(app)

    # --- Events, in the order Sphinx emits them -------------------------------------------
    app.connect("config-inited", next_build.own_source_suffix, priority=100)
    app.connect("config-inited", BookConfig.build)
    app.connect("config-inited", chapters.leave_out_plain_scripts)  # a .py page: a percent script
    # Last, for the pickle.
    app.connect("config-inited", next_build.keep_config_as_given, priority=1000)
    for hook in (chapter_checks.clear_execution_reports,
                 *([stop_cleanly_on_interrupt] if build else []), next_build.mark_unfinished,
                 name_only_the_latex_folder):
        app.connect("builder-inited", hook)
    app.connect("builder-inited", use_book_markdown, priority=600)  # after myst-parser's
    if build:
        app.connect("builder-inited", freeze_long_lived_objects, priority=900)  # after the others'
    # Sphinx re-reads a chapter whose noted inputs changed, and every page when this
    # extension changed (env_version below).
    app.connect("env-get-outdated", html_pages.note_removed_pages)
    # Every build, before its readers (which wait for a cold build's kernels): not at the end.
    app.connect("env-before-read-docs", check_answer_overlaps)
    # Only when there are pages to read.
    for hook in (import_for_reading, cached_chapters.check_execution_cache,
                 kernel_pool.plan_reading):
        app.connect("env-before-read-docs", hook)
    app.connect("source-read", _read_edition_source)
    app.connect("doctree-read", _read_chapter_done)
    app.connect("env-updated", chapters.refuse_unlisted_pages)
    # An accepted output may not hold the time of a run this build started.
    app.connect("env-updated",
                partial(chapter_checks.compare_expected_outputs, since=datetime.now(UTC)))
    setup_answer_checks(app)  # here: its env-updated hook runs before the reports are kept
    app.connect("env-updated", chapter_checks.keep_execution_reports)
    # Last, the configuration as given is pickled (restored below).
    app.connect("env-get-updated", next_build.pages_to_write)
    app.connect("env-get-updated", next_build.pickle_config_as_given, priority=1000)
    app.connect("env-check-consistency", next_build.restore_config, priority=0)
    app.connect("write-started", next_build.restore_config, priority=0)
    app.connect("write-started", chapter_checks.log_output_summary, priority=400)
    setup_claims(app)  # its claim counts, after the outputs' summary
    app.connect("write-started", keep_last_good_pages)
    # The Colab button after the theme's download menu.
    app.connect("html-page-context", downloads.offer_edition_notebook, priority=400)
    app.connect("html-page-context", downloads.add_colab_button, priority=600)
    app.connect("html-page-context", html_pages.add_build_stamp)
    for hook in (downloads.replace_copied_sources, chapter_checks.fail_build_on_failed_chapters,
                 kernel_pool.stop_kernel_server):
        app.connect("build-finished", hook)
    app.connect("build-finished", use_book_markdown, priority=1000)  # after each hook's reads
    app.connect("build-finished", next_build.mark_finished, priority=1000)  # after those above
    setup_proofs(app)
    setup_handouts(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "0.1",
            "env_version": extension_version()}
