"""Stage 4, writing: the page footer, downloads, Colab button, LaTeX handouts and the
PDF checks."""
