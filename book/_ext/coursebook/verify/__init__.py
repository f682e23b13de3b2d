"""Stage 3: every cell did what its tags promise and printed its expected output."""
