"""A quiet build log: the configuration dumps go, warnings and messages stay."""

import logging
import re

import pytest
from myst_nb.core.config import NbParserConfig

from coursebook.reporting import filter_the_log


def _record(level: int, *args) -> logging.LogRecord:
    return logging.LogRecord("sphinx.myst_nb.sphinx_ext", level, __file__, 1, "myst-nb: %s",
                             args, None)


def empty_app(tmp_path, log=None, **settings):
    """A Sphinx app of its own (a dummy builder, no build): this build's handlers."""
    import io

    from sphinx.application import Sphinx

    (tmp_path / "src").mkdir()
    return Sphinx(tmp_path / "src", None, tmp_path / "out", tmp_path / "doctrees", "dummy",
                  confoverrides=settings, status=None, warning=log or io.StringIO())


def test_the_configuration_dump_is_dropped_and_nothing_else(tmp_path):
    filter_the_log(empty_app(tmp_path))
    logger = logging.getLogger("sphinx.myst_nb.sphinx_ext")
    assert not logger.filter(_record(logging.INFO, NbParserConfig()))
    assert logger.filter(_record(logging.INFO, "Using jupyter-cache at: _build"))
    assert logger.filter(_record(logging.WARNING, NbParserConfig()))


@pytest.mark.slow  # three builds (of one page: no kernel)
def test_a_build_with_nothing_to_do_says_no_configuration_changed(tiny_book, tmp_path):
    """The theme and extensions add to some values when the builder starts: the pickled
    configuration is the one they were given, so a second build finds it unchanged, and a
    real change is still said. (The book's conf.py on a page without code: no kernel.)"""
    from conftest import sphinx_build

    (tiny_book / "chapter.md").unlink()
    (tiny_book / "index.md").write_text("# Fixture\n\nNo chapter.\n")
    def build(**settings):
        return sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache", settings=settings)

    first = build()
    assert first.returncode == 0, first.log[-3000:]
    again = build()
    assert again.returncode == 0 and "loading pickled environment... done" in again.log
    assert "configuration has changed" not in again.log, again.log[:2000]
    changed = build(html_title="Another title")
    said = [line for line in changed.log.splitlines() if "The configuration has changed" in line]
    assert len(said) == 1 and "'html_title'" in said[0], changed.log[:2000]


def test_the_warning_count_counts_each_warning_once_as_sphinx_shows_it(tmp_path):
    """The preview's stop asks it (a public count: Sphinx keeps its own in a private name).
    A warning held back while pages are read is counted once; a suppressed one not at all."""
    from sphinx.util import logging

    from coursebook.reporting import warnings_logged

    app = empty_app(tmp_path, suppress_warnings=["planted.suppressed"])
    filter_the_log(app)
    logger = logging.getLogger("planted")
    with logging.pending_warnings():  # as while pages are read
        logger.warning("held back")
        logger.warning("suppressed", type="planted", subtype="suppressed")
    logger.error("an error")
    assert warnings_logged(app) == 2


def test_an_error_is_logged_once_at_each_of_its_places(tmp_path):
    """Sphinx's `once` keys on the text alone: the same fault on a second page (a heading in an
    `{only}` block of each of two chapters) went unnamed until the first was fixed. Readers
    meeting it at one place still log it once, a parallel reader's records too (sent to the
    main process with their text made and their node made a place)."""
    import io

    from docutils import nodes
    from sphinx.util import logging

    from coursebook.reporting import report

    log = io.StringIO()
    filter_the_log(empty_app(tmp_path, log))  # as the book's setup does
    node = nodes.paragraph()
    node.source, node.line = str(tmp_path / "src" / "b.md"), 7
    places = ["a.md:3", node, "a.md:3", ("index", 5), node, ("index", 5)]
    for place in places:
        report("a heading inside an `{only}` block: 100%", place, "source")
    collector = logging.LogCollector()
    with collector.collect():  # as a parallel reader
        for place in places:
            report("a heading inside an `{only}` block: 100%", place, "source")
    logging.convert_serializable(collector.logs)
    for record in collector.logs:
        logging.getLogger("coursebook").handle(record)
    said = re.sub(r"\x1b\[[\d;]*m", "", log.getvalue()).splitlines()  # its colours
    assert [line.split(": ERROR: ")[0].rsplit("/", 1)[-1] for line in said if "ERROR" in line] == [
        "a.md:3", "b.md:7", "index.rst:5"], said
