"""Registers the course book's hooks with Sphinx."""

from __future__ import annotations

from docutils import nodes
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.application import Sphinx

from coursebook.audit.answer_leaks import check_answer_overlaps
from coursebook.config import BookConfig, book_config, check_runtimes_file
from coursebook.execute.cache_check import check_execution_cache
from coursebook.execute.cache_key import extension_version, set_execution_versions
from coursebook.execute.cached_chapters import enter_cache, forget_failed_run
from coursebook.execute.fill_cache import ChapterRuns, chapter_runs
from coursebook.execute.kernel_pool_start import check_kernel_server, stop_kernel_server
from coursebook.execute.myst_nb_clients import import_for_reading
from coursebook.execute.shared_cache import release_notebook_lock
from coursebook.page_state import PageStateCollector
from coursebook.prepare.answer_space import setup_answer_space
from coursebook.prepare.chapters import (
    edition_of,
    name_the_authors_lines,
    prepare_edition_source,
    spread_chapters_over_readers,
)
from coursebook.prepare.editions import Edition, box_code_answers
from coursebook.prepare.source_files import check_source_encodings
from coursebook.process.config_as_given import (
    keep_config_as_given,
    pickle_config_as_given,
    restore_config,
)
from coursebook.process.interrupt import stop_cleanly_on_interrupt
from coursebook.process.long_lived import freeze_long_lived_objects
from coursebook.process.preview import keep_last_good_pages
from coursebook.process.quiet_log import quiet_config_dumps
from coursebook.process.unfinished_builds import mark_finished, mark_unfinished, pages_to_write
from coursebook.render.build_stamp import add_build_stamp
from coursebook.render.compiled_templates import keep_compiled_templates
from coursebook.render.downloads import (
    add_colab_button,
    offer_edition_notebook,
    replace_copied_sources,
)
from coursebook.render.exhibit_marks import quiet_exhibit_checks
from coursebook.render.handouts import setup_handouts
from coursebook.render.latex_epilog import name_only_the_latex_folder
from coursebook.render.offline_mathjax import copy_mathjax
from coursebook.render.output_blocks import normalise_output_nodes
from coursebook.reporting import count_warnings
from coursebook.verify.chapter_checks import (
    check_executed_chapter,
    clear_execution_reports,
    compare_expected_outputs,
    fail_build_on_failed_chapters,
    keep_cell_outputs,
    keep_execution_reports,
    log_output_summary,
)
from coursebook.verify.answer_checks import check_what_checks_ask
from coursebook.verify.claims import check_claims, log_claim_counts
from coursebook.verify.torch_versions import (
    TorchVersionChanges,
    add_verified_versions,
    highlight_changed_boxes,
)

__all__ = ["setup"]


def _read_edition_source(app: Sphinx, docname: str, source: list[str]) -> None:
    """``source-read``: myst-nb reads this edition's chapter, prepared, instead of the
    file's text; the execute stage has keyed, locked, and (if the cache lacked it) run and
    cached it, so myst-nb takes its outputs from the cache."""
    prepared = prepare_edition_source(app, docname, source)
    if prepared is not None:
        source[0] = enter_cache(app, prepared)


def _read_chapter_done(app: Sphinx, doctree: nodes.document) -> None:
    # First: the chapter is executed and cached (a failed run's record removed), so the
    # other edition may take it.
    forget_failed_run(app)
    release_notebook_lock(app)
    if chapter_runs(app) is not None:
        return  # a read that runs nothing has nothing to check
    normalise_output_nodes(doctree)
    name_the_authors_lines(app, doctree)
    check_executed_chapter(app, doctree)
    keep_cell_outputs(app, doctree)
    check_claims(app, doctree)  # after: a claim that fails leaves the outputs compared
    highlight_changed_boxes(doctree)
    quiet_exhibit_checks(app, doctree)
    if NbMetadataCollector.get_exec_data(app.env, app.env.docname) is not None:
        add_verified_versions(app, doctree, app.env.docname, book_config(app.config).torch)
    if edition_of(app) is Edition.INSTRUCTOR:
        box_code_answers(doctree)


def setup(app: Sphinx, build: bool = True) -> dict:
    """``build``: False for a read that runs nothing (:class:`ChapterRuns`), in a process
    that goes on after it: no signal handling, no frozen objects."""
    # --- Configuration (coursebook_*, registered in __init__.py) and per-page objects -----
    app.add_directive("torch-version-changes", TorchVersionChanges.of_edition(edition_of(app)))
    # What each chapter's read leaves for later phases; it also asks, at env-get-outdated,
    # for the pages that failed to be read again.
    app.add_env_collector(PageStateCollector)
    # Shards and `pytest book` learn what a build executes from a read of the book by this
    # builder, which notes each run instead of running it.
    app.add_builder(ChapterRuns)
    quiet_config_dumps()
    count_warnings(app)  # the preview stops a build that warned (process/preview.py)

    # --- Events, in the order Sphinx emits them -------------------------------------------
    # 1. config-inited: the execution versions join the cache key.
    app.connect("config-inited", set_execution_versions)
    app.connect("config-inited", BookConfig.build)  # once, checked, the versions in it
    # Last: the configuration as conf.py and config-inited gave it, kept for the pickle.
    app.connect("config-inited", keep_config_as_given, priority=1000)
    # 2. builder-inited: a broken runtimes file reported; last build's failure reports
    #    cleared; Ctrl-C or SIGTERM ends the build in one line, and every process it
    #    started; the output folder marked unfinished (an earlier build's mark found: every
    #    page written again, step 7a); compiled templates kept between
    #    builds; what the build keeps to its end (extensions, environment) set aside from
    #    the garbage collector.
    #    The LaTeX build's closing line names its folder, not a `make latexpdf` the book lacks.
    for hook in (check_runtimes_file, clear_execution_reports,
                 *([stop_cleanly_on_interrupt] if build else []), mark_unfinished,
                 keep_compiled_templates, name_only_the_latex_folder):
        app.connect("builder-inited", hook)
    if build:
        app.connect("builder-inited", freeze_long_lived_objects, priority=900)  # after the others'
    # 3. env-get-outdated: Sphinx itself re-reads a chapter whose noted inputs changed
    #    (step 5), and every page when this extension's code changed (env_version below);
    #    the collector adds the pages that failed.
    # 4. env-before-read-docs, when there are pages to read: a page that is not UTF-8 stops
    #    the build; myst-nb's execution clients are imported (before the readers fork;
    #    speed only: coursebook/execute/myst_nb_clients.py); the
    #    shared cache is created (once, however many builds start) and repaired or
    #    refused; on a cold cache, the kernel forkserver (started at setup,
    #    coursebook/__init__.py) kept if a page to read executes; chapters that execute
    #    are dealt across the parallel readers.
    for hook in (check_source_encodings, import_for_reading, check_execution_cache,
                 check_kernel_server, spread_chapters_over_readers):
        app.connect("env-before-read-docs", hook)
    # 5. source-read, per page: the chapter is prepared once (its inputs noted as
    #    dependencies); the execute stage keys and locks it and, when the cache lacks it,
    #    runs it (a hung cell or a dead kernel named, a flood of output cut) and caches it;
    #    this edition's notebook replaces the page's text, which myst-nb reads, taking the
    #    outputs from the cache.
    app.connect("source-read", _read_edition_source)
    # 6. doctree-read, per page: a failed run leaves the cache, the lock is released;
    #    outputs normalised, checked and kept with the page; its claims checked.
    app.connect("doctree-read", _read_chapter_done)
    # 7. env-updated, once all pages are read: outputs against their expectations,
    #    answers against visible text, each answer check against the sections before it;
    #    myst-nb's failure logs kept out of the HTML.
    for hook in (compare_expected_outputs, check_answer_overlaps, check_what_checks_ask,
                 keep_execution_reports):
        app.connect("env-updated", hook)
    # 7a. env-get-updated: every page written again after a build that stopped early;
    #     last, just before Sphinx pickles the environment: the configuration as given
    #     stands in for the one the theme and extensions added to (restored at 7b).
    app.connect("env-get-updated", pages_to_write)
    app.connect("env-get-updated", pickle_config_as_given, priority=1000)
    app.connect("env-check-consistency", restore_config, priority=0)
    # 7b. write-started, before any page is written: the summary of the expected outputs,
    #     after the errors Sphinx held back while reading, and the claims each chapter
    #     checked and cited; in the preview, a failed build then stops, and the server
    #     keeps the pages of the last good one.
    app.connect("write-started", restore_config, priority=0)
    app.connect("write-started", log_output_summary, priority=400)
    app.connect("write-started", log_claim_counts, priority=450)
    app.connect("write-started", keep_last_good_pages)
    # 8. html-page-context, per page written: the edition's notebook download, the Colab
    #    button (after the theme's own download menu), the build stamp.
    app.connect("html-page-context", offer_edition_notebook, priority=400)
    app.connect("html-page-context", add_colab_button, priority=600)
    app.connect("html-page-context", add_build_stamp)
    # 9. build-finished: student sources replace Sphinx's copies; MathJax copied where it
    #    changed; a failed chapter sets the exit status; the kernel forkserver stopped.
    for hook in (replace_copied_sources, copy_mathjax, fail_build_on_failed_chapters,
                 stop_kernel_server):
        app.connect("build-finished", hook)
    #    Last: the output folder is finished (no exception).
    app.connect("build-finished", mark_finished, priority=1000)
    # Lab handouts (-t handout): answer boxes, one LaTeX document per chapter, covers; each
    # registers its own hooks.
    setup_answer_space(app)
    setup_handouts(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "0.1",
            "env_version": extension_version()}
