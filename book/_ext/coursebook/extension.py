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
from coursebook.execute.cached_chapters import check_execution_cache, enter_cache, report_failed_run
from coursebook.execute.fill_cache import ChapterRuns, chapter_runs
from coursebook.execute.kernel_pool import plan_reading, stop_kernel_server
from coursebook.execute.myst_nb_clients import import_for_reading
from coursebook.execute.shared_cache import extension_version, release_notebook_lock
from coursebook.model.solutions import use_book_markdown
from coursebook.museum.render import fold_reveals, quiet_exhibit_checks
from coursebook.page_state import PageStateCollector
from coursebook.prepare.chapters import (edition_of, leave_out_plain_scripts,
                                         name_the_authors_lines, prepare_edition_source,
                                         refuse_shown_solutions)
from coursebook.prepare.editions import Edition, box_code_answers
from coursebook.prepare.proofs import setup_proofs
from coursebook.process import freeze_long_lived_objects
from coursebook.process.interrupt import stop_cleanly_on_interrupt
from coursebook.process.next_build import (keep_config_as_given, mark_finished, mark_unfinished,
                                           own_source_suffix, pages_to_write,
                                           pickle_config_as_given, restore_config)
from coursebook.process.preview import keep_last_good_pages
from coursebook.render.downloads import (add_colab_button, offer_edition_notebook,
                                         replace_copied_sources)
from coursebook.render.handouts import setup_handouts
from coursebook.render.html_pages import (BookHTMLBuilder, NestedRules, add_build_stamp,
                                          note_removed_pages)
from coursebook.render.pdf_fonts import name_only_the_latex_folder
from coursebook.reporting import count_warnings, name_notebook_cells, quiet_config_dumps
from coursebook.torch_versions import setup as setup_torch_versions
from coursebook.torch_versions.verify import add_verified_versions, highlight_changed_boxes
from coursebook.verify.chapter_checks import (check_executed_chapter, clear_execution_reports,
                                              compare_expected_outputs,
                                              fail_build_on_failed_chapters, keep_cell_outputs,
                                              keep_execution_reports, log_output_summary,
                                              normalise_output_nodes)


def _read_edition_source(app: Sphinx, docname: str, source: list[str]) -> None:
    """``source-read``: myst-nb reads this edition's prepared, cached chapter instead."""
    prepared = prepare_edition_source(app, docname, source)
    if prepared is not None:
        source[0] = enter_cache(app, prepared)


def _read_chapter_done(app: Sphinx, doctree: nodes.document) -> None:
    # First, so the other edition may take the cached chapter.
    report_failed_run(app)
    release_notebook_lock(app)
    if chapter_runs(app) is not None:
        return  # a read that runs nothing has nothing to check
    normalise_output_nodes(doctree)
    name_the_authors_lines(app, doctree)
    refuse_shown_solutions(app, doctree)  # after: at the author's line
    check_executed_chapter(app, doctree)
    keep_cell_outputs(app, doctree)
    check_claims(app, doctree)  # after: a claim that fails leaves the outputs compared
    highlight_changed_boxes(doctree)
    quiet_exhibit_checks(app, doctree)
    fold_reveals(doctree)
    if NbMetadataCollector.get_exec_data(app.env, app.env.docname) is not None:
        add_verified_versions(app, doctree)
    if edition_of(app) is Edition.INSTRUCTOR:
        box_code_answers(doctree)


def setup(app: Sphinx, build: bool = True) -> dict:
    """``build``: False for a read that runs nothing (:class:`ChapterRuns`), in a process
    that goes on after it: no signal handling, no frozen objects."""
    setup_torch_versions(app)  # its directive
    app.add_env_collector(PageStateCollector)  # also re-reads the pages that failed
    app.add_builder(ChapterRuns)  # what a build executes, for shards and `pytest book`
    app.add_builder(BookHTMLBuilder, override=True)  # a no-op keeps the search page and index
    app.add_transform(NestedRules)
    quiet_config_dumps()
    name_notebook_cells()  # MyST's messages in an .ipynb: its cell and line
    count_warnings(app)  # the preview stops a build that warned (process/preview.py)

    # --- Events, in the order Sphinx emits them -------------------------------------------
    app.connect("config-inited", own_source_suffix, priority=100)
    app.connect("config-inited", BookConfig.build)
    app.connect("config-inited", leave_out_plain_scripts)  # a .py page is a percent script
    app.connect("config-inited", keep_config_as_given, priority=1000)  # last, for the pickle
    for hook in (clear_execution_reports, *([stop_cleanly_on_interrupt] if build else []),
                 mark_unfinished, name_only_the_latex_folder):
        app.connect("builder-inited", hook)
    app.connect("builder-inited", use_book_markdown, priority=600)  # after myst-parser's
    if build:
        app.connect("builder-inited", freeze_long_lived_objects, priority=900)  # after the others'
    # Sphinx re-reads a chapter whose noted inputs changed, and every page when this
    # extension changed (env_version below).
    app.connect("env-get-outdated", note_removed_pages)
    # Only when there are pages to read.
    for hook in (import_for_reading, check_execution_cache, plan_reading):
        app.connect("env-before-read-docs", hook)
    app.connect("source-read", _read_edition_source)
    app.connect("doctree-read", _read_chapter_done)
    # An accepted output may not hold the time of a run this build started.
    for hook in (partial(compare_expected_outputs, since=datetime.now(UTC)),
                 check_answer_overlaps):
        app.connect("env-updated", hook)
    setup_answer_checks(app)  # here: its env-updated hook runs before the reports are kept
    app.connect("env-updated", keep_execution_reports)
    # Last, the configuration as given is pickled (restored below).
    app.connect("env-get-updated", pages_to_write)
    app.connect("env-get-updated", pickle_config_as_given, priority=1000)
    app.connect("env-check-consistency", restore_config, priority=0)
    app.connect("write-started", restore_config, priority=0)
    app.connect("write-started", log_output_summary, priority=400)
    setup_claims(app)  # its claim counts, after the outputs' summary
    app.connect("write-started", keep_last_good_pages)
    # The Colab button after the theme's download menu.
    app.connect("html-page-context", offer_edition_notebook, priority=400)
    app.connect("html-page-context", add_colab_button, priority=600)
    app.connect("html-page-context", add_build_stamp)
    for hook in (replace_copied_sources, fail_build_on_failed_chapters, stop_kernel_server):
        app.connect("build-finished", hook)
    app.connect("build-finished", use_book_markdown, priority=1000)  # after each hook's reads
    app.connect("build-finished", mark_finished, priority=1000)  # last: after the hooks above
    setup_proofs(app)
    setup_handouts(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "0.1",
            "env_version": extension_version()}
