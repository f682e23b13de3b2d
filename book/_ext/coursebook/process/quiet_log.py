"""A quiet build log: what an author must act on stands out.

myst-parser and myst-nb print their whole configuration (two lines of some thousand
characters) at the start of every build; nothing in them asks for action. A filter on
their loggers drops exactly those records: an info message carrying a configuration
object. Their warnings and everything else pass.
"""

from __future__ import annotations

import logging

# Sphinx's loggers are Python loggers under "sphinx.", named after their modules.
_CONFIG_LOGGERS = ("sphinx.myst_parser.sphinx_ext.main", "sphinx.myst_nb.sphinx_ext")
_CONFIG_CLASSES = frozenset({"MdParserConfig", "NbParserConfig"})


def _drop_config_dumps(record: logging.LogRecord) -> bool:
    """False (drop) for an info message that carries a configuration object."""
    return not (record.levelno == logging.INFO and any(
        type(arg).__name__ in _CONFIG_CLASSES for arg in record.args or ()))


def quiet_config_dumps() -> None:
    """Drop the configuration dumps (a filter added twice is kept once)."""
    for name in _CONFIG_LOGGERS:
        logging.getLogger(name).addFilter(_drop_config_dumps)
