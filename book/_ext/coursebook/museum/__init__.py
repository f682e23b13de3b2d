"""The error museum: exhibits as data, placed into chapters. The code its cells import stays in
``coursebook.exhibit_checks``: that import path is in the cache key and the expected outputs."""
