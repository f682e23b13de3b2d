"""Stage 1, ``source-read``: a chapter file becomes the notebook its edition executes."""
