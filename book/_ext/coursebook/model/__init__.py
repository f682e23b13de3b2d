"""Pure data, no Sphinx: chapters as notebooks, TOML data, machine kinds, runtimes,
recordings, versions and provenance (exhibits: coursebook.museum.model). The recorder
imports it on a TPU VM or Colab (Python 3.11+: ``datetime.UTC``, ``tomllib``)."""
