"""Which words changed between two texts, across torch versions, and Markdown's code span
for them (no Sphinx: kernels use it)."""

from __future__ import annotations

import difflib
import re
from itertools import groupby

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")

Run = tuple[str, bool]  # a piece of text, and whether it changed


def _runs(tokens: list[str], changed: list[bool]) -> list[Run]:
    marked = [(token, flag and not token.isspace()) for token, flag in zip(tokens, changed)]
    return [("".join(token for token, _ in group), flag)
            for flag, group in groupby(marked, key=lambda pair: pair[1])]


def changed_words(old: str, new: str) -> tuple[list[Run], list[Run]]:
    """Both texts as runs, the words that differ marked; joined, each run gives the text back."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    changed_a, changed_b = [True] * len(a), [True] * len(b)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for block in matcher.get_matching_blocks():
        changed_a[block.a:block.a + block.size] = [False] * block.size
        changed_b[block.b:block.b + block.size] = [False] * block.size
    return _runs(a, changed_a), _runs(b, changed_b)


def changes(old: str, new: str) -> list[tuple[str, str]]:
    """The changed passages as (before, after) pairs, in order: a compact summary."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [("".join(a[i1:i2]).strip(), "".join(b[j1:j2]).strip())
            for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def code_span(text: str) -> str:
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
