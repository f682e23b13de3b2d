"""Outputs that vary from run to run: the varying part marked in the expected output.

An entry marked ``(varies)`` (a timing, an unseeded random number, a memory size) is a
pattern, as doctest's ELLIPSIS option makes an expected output one: ``<number>``,
``<duration>`` (or a clock time), ``<size>``, each taking the spaces that pad its value;
``...`` within a line; a line of only ``...`` for any number of lines. Everything else is
compared as written, and a literal ``...`` in an unmarked entry is never a pattern
(docs/authoring.md, "Outputs that vary"; nbval's output sanitizers are the same idea).
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)(?!\w)"
_TIME_UNIT = r"(?:ns|[uµ]s|ms|s|sec|secs|seconds?|min|mins|minutes?|h|hours?)"
_SIZE_UNIT = r"(?:[KMGTP]i?B|[kKMGTP]B?|B|bytes?)"
_CLOCK = r"\d+(?::\d{2}){1,2}(?:\.\d+)?"
# What each named pattern matches (a unit ends its word: "5 steps" holds no duration),
# after the spaces that pad it to a width.
_VALUES = {
    "duration": rf"(?:{_NUMBER}) ?{_TIME_UNIT}(?![\w/])|{_CLOCK}",
    "size": rf"(?:{_NUMBER}) ?{_SIZE_UNIT}(?![\w/])",
    "number": _NUMBER,
}
NAMED = {name: f" *(?:{value})" for name, value in _VALUES.items()}
ELLIPSIS = "..."
_MARK = re.compile(r"<(?:" + "|".join(NAMED) + r")>|\.\.\.")
# Tokens of an output, to tell which parts of two outputs differ: a value starts where no
# word or number goes on (``conv2d`` is a word, ``1.5.2`` no number).
_TOKENS = re.compile("|".join(f"(?P<{name}> *(?<![\\w.])(?:{value}))"
                              for name, value in _VALUES.items()) + r"|(?P<other>\w+|\s+|.)")


def _line_pattern(line: str) -> str:
    parts, last = [], 0
    for mark in _MARK.finditer(line):
        parts.append(re.escape(line[last:mark.start()]))
        parts.append("[^\n]*" if mark[0] == ELLIPSIS else f"(?:{NAMED[mark[0][1:-1]]})")
        last = mark.end()
    return "".join(parts) + re.escape(line[last:])


@lru_cache(maxsize=1024)
def _line_regex(line: str) -> re.Pattern[str] | None:
    """A line of a marked expected output as a regular expression; None: a line of ``...``."""
    return None if line.strip() == ELLIPSIS else re.compile(_line_pattern(line))


def matches(expected: str, shown: str) -> bool:
    """Whether an output matches a marked expected output. Line by line: one regular
    expression would try every way several lines of ``...`` share a long output's lines."""
    lines = shown.split("\n")
    taken = [True] + [False] * len(lines)  # taken[j]: the lines so far can take j lines
    for pattern in map(_line_regex, expected.split("\n")):
        if pattern is None:
            for j in range(len(lines)):
                taken[j + 1] = taken[j + 1] or taken[j]
        else:
            taken = [False] + [taken[j] and pattern.fullmatch(line) is not None
                               for j, line in enumerate(lines)]
    return taken[-1]


def _tokens(line: str) -> list[tuple[str, str]]:
    """(kind, text) of each token: a named pattern's kind, or "other"."""
    return [(found.lastgroup, found[0]) for found in _TOKENS.finditer(line)]


def _key(token: tuple[str, str]) -> str:
    kind, text = token
    return text if kind == "other" else f"<{kind}>"


def _marked_line(one: str, two: str) -> str:
    """A line marking where ``one`` and ``two`` differ: values by their named pattern
    (with the padding both have), anything else by ``...``."""
    a, b = _tokens(one), _tokens(two)
    matcher = difflib.SequenceMatcher(None, [_key(t) for t in a], [_key(t) for t in b],
                                      autojunk=False)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            if not out or out[-1] != ELLIPSIS:
                out.append(ELLIPSIS)
            continue
        for (kind, text), (_, other) in zip(a[i1:i2], b[j1:j2]):
            if kind == "other" or text == other:
                out.append(text)
            else:
                pad = min(len(text) - len(text.lstrip(" ")), len(other) - len(other.lstrip(" ")))
                out.append(" " * pad + f"<{kind}>")
    return "".join(out)


def suggest(accepted: str, shown: str) -> str | None:
    """A marked expected output that both outputs match, marking only where they differ;
    None if none is found."""
    one, two = accepted.split("\n"), shown.split("\n")
    line_keys = [["".join(map(_key, _tokens(line))) for line in lines] for lines in (one, two)]
    matcher = difflib.SequenceMatcher(None, *line_keys, autojunk=False)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            out += [_marked_line(a, b) for a, b in zip(one[i1:i2], two[j1:j2])]
        elif not out or out[-1] != ELLIPSIS:
            out.append(ELLIPSIS)
    marked = "\n".join(out)
    return marked if matches(marked, accepted) and matches(marked, shown) else None
