"""Stage 2, myst-nb and jupyter-cache: the cache key, the shared cache's locks and
repair, and what each read chapter leaves for the stages after it."""
