"""Stage 3, ``doctree-read`` and ``env-updated``: every cell did what its tags promise
and printed its expected output; the torch-version changes shown on the page."""
