"""Pure data, no Sphinx: the recorder imports it on a TPU VM or Colab (Python 3.11+)."""
