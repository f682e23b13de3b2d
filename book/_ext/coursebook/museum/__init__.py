"""The error museum: exhibits as data (``exhibits/<wing>/NN-*.toml``), placed into chapters,
each module named by its stage (docs/architecture.md says what each holds). The code an
exhibit's cells import in the kernel stays in ``coursebook.exhibit_checks``: its import path
is part of the cache key and of the expected outputs."""
