"""A quiet build log: the configuration dumps go, warnings and messages stay."""

import logging

from myst_nb.core.config import NbParserConfig

from coursebook.process.quiet_log import quiet_config_dumps


def _record(level: int, *args) -> logging.LogRecord:
    return logging.LogRecord("sphinx.myst_nb.sphinx_ext", level, __file__, 1, "myst-nb: %s",
                             args, None)


def test_the_configuration_dump_is_dropped_and_nothing_else():
    quiet_config_dumps()
    logger = logging.getLogger("sphinx.myst_nb.sphinx_ext")
    assert not logger.filter(_record(logging.INFO, NbParserConfig()))
    assert logger.filter(_record(logging.INFO, "Using jupyter-cache at: _build"))
    assert logger.filter(_record(logging.WARNING, NbParserConfig()))
