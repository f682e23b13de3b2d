"""Pure data, no Sphinx: chapters as notebooks, exhibits, machine kinds, recordings,
versions and provenance. The recorder imports it on a TPU VM or Colab (Python 3.11+:
``datetime.UTC``, ``tomllib``)."""
