"""Stage 2, myst-nb and jupyter-cache: the cache key, the shared cache's locks and
repair, each chapter's run (the cell it stopped in, outputs cut to what a page shows),
and what each read chapter leaves for the stages after it."""
