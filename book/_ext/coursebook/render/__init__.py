"""Stage 4, writing: footer, downloads, Colab button, handouts, PDF checks."""
