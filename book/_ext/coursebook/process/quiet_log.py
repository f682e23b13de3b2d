"""A quiet build log: myst-parser's and myst-nb's configuration dumps (two lines of some
thousand characters on every build) dropped; their other records pass."""

from __future__ import annotations

import logging

# Sphinx's loggers are Python loggers under "sphinx.", named after their modules.
_CONFIG_LOGGERS = ("sphinx.myst_parser.sphinx_ext.main", "sphinx.myst_nb.sphinx_ext")
_CONFIG_CLASSES = frozenset({"MdParserConfig", "NbParserConfig"})


def _drop_config_dumps(record: logging.LogRecord) -> bool:
    return not (record.levelno == logging.INFO and any(
        type(arg).__name__ in _CONFIG_CLASSES for arg in record.args or ()))


def quiet_config_dumps() -> None:
    """(A filter added twice is kept once.)"""
    for name in _CONFIG_LOGGERS:
        logging.getLogger(name).addFilter(_drop_config_dumps)
