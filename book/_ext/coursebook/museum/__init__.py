"""The error museum: exhibits as data (``exhibits/<wing>/NN-*.toml``), placed into chapters.
Each module is named by the stage it belongs to (docs/architecture.md): ``model`` (the
exhibits and their records; no Sphinx), ``prepare`` (an exhibit's cells in its chapter),
``render`` (its check lines on a page). The code an exhibit's cells import in the kernel
stays in ``coursebook.exhibit_checks``: its import path is part of the cache key and of the
expected outputs."""
