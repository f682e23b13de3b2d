"""Stage 5: no answer in the student edition (its sources checked at
``env-before-read-docs``, a built tree by ``make audit``), and the book's prose in its own
words."""
