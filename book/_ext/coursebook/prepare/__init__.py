"""Stage 1, ``source-read``: a chapter file (UTF-8, or the build stops at its bad byte)
becomes the notebook its edition executes."""
