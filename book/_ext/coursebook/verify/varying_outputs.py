"""Outputs that vary from run to run: an entry marked ``(varies)`` is a pattern, as doctest's
ELLIPSIS makes one (docs/authoring.md, "Outputs that vary"); a time of day read from the
clock is found by comparing it with the clock while the runs ran."""

from __future__ import annotations

import difflib
import re
from datetime import UTC, datetime, timedelta
from functools import lru_cache

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)(?!\w)"
# The units Python and IPython print: timeit's nsec to sec, IPython's ns, us, the micro
# sign µ (U+00B5) and the Greek mu μ (U+03BC), which look alike; and minutes, hours.
_TIME_UNIT = (r"(?:[nuµμm]?s|[nuµμm]?sec|secs|seconds?|min|mins|minutes?|h|hr|hrs|hours?)")
_TIME = rf"(?:{_NUMBER}) ?{_TIME_UNIT}(?![\w/])"
# A rate, as a progress bar prints it (tqdm's "50533.78it/s", "1.50s/it", "3.2MB/s").
_RATE = rf"(?:{_NUMBER}) ?(?:[^\W\d]+/{_TIME_UNIT}|{_TIME_UNIT}/[^\W\d]+)(?![\w/])"
# %timeit's line, all of it varies: "1.23 µs ± 4.5 ns per loop (mean ± std. dev. of 7 runs,
# 100,000 loops each)"; and a mean ± its deviation alone.
_TIMEIT = (rf"{_TIME} ± {_TIME}(?: per loop \(mean ± std\. dev\. of [\d,]+ runs?, "
           rf"[\d,]+ loops? each\))?")
_SIZE_UNIT = r"(?:[KMGTP]i?B|[kKMGTP]B?|B|bytes?)"
_CLOCK = r"\d+(?::\d{2}){1,2}(?:\.\d+)?"
# A date, with its time of day if printed: as `ls -l` ("Dec  5 14:23", an older year's
# "Dec  5  2025"), time.ctime() and `date` ("Sat Dec  5 16:46:04 [UTC ]2026") and ISO 8601,
# as datetime prints it ("2026-12-05 16:46:04.123456", "2026-12-05T16:46:04+00:00") and
# shows it ("datetime.datetime(2026, 12, 5, 16, 46, 4, 123456)", a cell's last value).
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_DATE = (rf"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) {_MONTH}  ?\d{{1,2}} \d{{2}}:\d{{2}}:\d{{2}}"
         rf"(?: [A-Z]{{3,4}})? \d{{4}}|{_MONTH}  ?\d{{1,2}}  ?(?:\d{{2}}:\d{{2}}|\d{{4}})"
         r"|\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
         r"|datetime\.date(?:time)?\(\d{4}(?:, \d{1,6}){2,6}\)")
# What each named pattern matches (a unit ends its word: "5 steps" holds no duration),
# after the spaces that pad it to a width.
_VALUES = {
    "date": rf"(?:{_DATE})(?![\w:])",
    "duration": rf"{_TIMEIT}|{_RATE}|{_TIME}|{_CLOCK}",
    "size": rf"(?:{_NUMBER}) ?{_SIZE_UNIT}(?![\w/])",
    "number": _NUMBER,
}
NAMED = {name: f" *(?:{value})" for name, value in _VALUES.items()}
_CLOCK_ALONE = re.compile(f" *{_CLOCK}")
ELLIPSIS = "..."
MARK = re.compile(r"<(?:" + "|".join(NAMED) + r")>|\.\.\.")
# Tokens of an output, to tell which parts of two outputs differ: a value starts where no
# word or number goes on (``conv2d`` is a word, ``1.5.2`` no number).
_TOKENS = re.compile("|".join(f"(?P<{name}> *(?<![\\w.])(?:{value}))"
                              for name, value in _VALUES.items()) + r"|(?P<other>\w+|\s+|.)")


Piece = tuple[re.Pattern[str], re.Pattern[str], str]


@lru_cache(maxsize=1024)
def _line_pieces(line: str) -> list[Piece] | None:
    """A marked line's parts between ``...``s, each as its regex ended where a character
    follows, the same ended at the line's end, and its literal end; None: a line of ``...``."""
    if line.strip() == ELLIPSIS:
        return None
    parts = line.split(ELLIPSIS)  # a named pattern holds no dot: these are MARK's ``...``
    patterns = [MARK.sub(lambda mark: f"(?:{NAMED[mark[0][1:-1]]})", re.escape(part))
                for part in parts]
    patterns[0] = r"\A" + patterns[0]
    return [(re.compile(f"(?:{pattern})(?=(?s:.))"), re.compile(f"(?:{pattern})\n"),
             MARK.split(part)[-1]) for pattern, part in zip(patterns, parts)]


def _earliest_end(piece: Piece, text: str, start: int) -> int | None:
    """Where the piece's earliest-ending match after ``start`` ends (None: no match): what
    follows it can hold only grows as it ends earlier."""
    found, _, tail = piece
    if (hit := found.search(text, start)) is None:
        return None
    ends = [end for end in range(hit.start(), hit.end() + 1)
            if text.endswith(tail, hit.start(), end)]
    # Bisect on "a match ends by ends[i]" (ends[-1] does), first asking whether any ends
    # before the one found: most often none does, and a failed search is the slow kind.
    low, high = 0, len(ends) - 1
    while low < high:
        middle = high - 1 if high == len(ends) - 1 else (low + high) // 2
        if found.search(text, hit.start(), ends[middle] + 1):
            high = middle
        else:
            low = middle + 1
    return ends[low]


def _line_matches(pieces: list[Piece], line: str) -> bool:
    """Each piece ends as early as it can after the one before, the last one at the line's
    end: no ``...`` backtracks over another (one regex took seconds on a long line)."""
    text, start = line + "\n", 0  # a "\n" reads to the values' lookaheads as the end
    for piece in pieces[:-1]:
        if (start := _earliest_end(piece, text, start)) is None:
            return False
    return pieces[-1][1].search(text, start) is not None


def matches(expected: str, shown: str) -> bool:
    """Whether an output matches a marked expected output. Line by line: one regular
    expression would try every way several lines of ``...`` share a long output's lines."""
    lines = shown.split("\n")
    taken = [True] + [False] * len(lines)  # taken[j]: the lines so far can take j lines
    for pieces in map(_line_pieces, expected.split("\n")):
        if pieces is None:
            for j in range(len(lines)):
                taken[j + 1] = taken[j + 1] or taken[j]
        else:
            taken = [False] + [taken[j] and _line_matches(pieces, line)
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
            # Two runs of one day print the same date, of one minute the same clock time
            # (a time of day, a progress bar's elapsed time): only a later run tells.
            if kind == "other" or (text == other and kind != "date"
                                   and not (kind == "duration" and _CLOCK_ALONE.fullmatch(text))):
                out.append(text)
            else:
                pad = min(len(text) - len(text.lstrip(" ")), len(other) - len(other.lstrip(" ")))
                out.append(" " * pad + f"<{kind}>")
    return "".join(out)


# %timeit's warning of a slow run, which some runs print and others not: a `...` line before
# each timing, printed or not by the two runs compared (neither did: a later run may).
_SLOW_RUN = re.compile(rf"^(?: *The slowest run took [^\n]* being cached\.\n|"
                       rf"(?<!being cached\.\n))(?= *{_TIMEIT})", re.M)


def suggest(accepted: str, shown: str) -> str | None:
    """A marked expected output that both outputs match, marking only where they differ;
    None if none is found."""
    marked = _marked(*(_SLOW_RUN.sub(ELLIPSIS + "\n", text) for text in (accepted, shown)))
    return marked if matches(marked, accepted) and matches(marked, shown) else None


def _marked(accepted: str, shown: str) -> str:
    one, two = accepted.split("\n"), shown.split("\n")
    line_keys = [["".join(map(_key, _tokens(line))) for line in lines] for lines in (one, two)]
    matcher = difflib.SequenceMatcher(None, *line_keys, autojunk=False)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            out += [_marked_line(a, b) for a, b in zip(one[i1:i2], two[j1:j2])]
        elif not out or out[-1] != ELLIPSIS:
            out.append(ELLIPSIS)
    return "\n".join(out)


# A name tempfile draws, by its own generator (no seed of the cells' fixes it): a temporary
# file's or folder's (not the one the cells run in: the run names it, notebook_runs).
_TEMPORARY = re.compile(r"(?<![^\W_])tmp[a-z0-9_]{8}(?![^\W_])")


def what_varies(one: str, two: str) -> str:
    """Where two outputs differ: "made" (only temporary names or dates: no draw), "measured"
    (those, durations or sizes: a clock's, memory's, or simulated), else "" (a drawn value)."""
    one, two = (_TEMPORARY.sub("tmp", _SLOW_RUN.sub("", text)) for text in (one, two))
    marked = _marked(one, two)
    if not (matches(marked, one) and matches(marked, two)) or re.search(r"<number>|\.\.\.",
                                                                        marked):
        return ""
    return "measured" if re.search("<duration>|<size>", marked) else "made"


_SECOND, _MINUTE = timedelta(seconds=1), timedelta(minutes=1)
# A date with its time of day as ctime() and `date` print it, as `ls -l` does (this year's);
# a time of day alone (H:MM:SS, H:MM).
_FORMATS = [("%a %b %d %H:%M:%S %Y", _SECOND), ("%b %d %H:%M", _MINUTE), ("%H:%M:%S", _SECOND),
            ("%H:%M", _MINUTE)]


def _readings(token: str, days: list) -> list[tuple[datetime, timedelta]]:
    """What a printed time of day (alone or a date's) may stand for (naive, unless it names
    its zone), each with its resolution: one without a year or a date takes those of
    ``days``; none for a date alone, nor for an elapsed time (25:00)."""
    try:  # ISO 8601, as datetime prints it (a time of day alone has no dash)
        value = datetime.fromisoformat(token) if "-" in token else None
    except ValueError:
        value = None
    if value is not None:
        return [] if len(token) == 10 else [
            (value, _MINUTE if re.match(r".{10}.\d\d:\d\d(?!:)", token) else _SECOND)]
    # ctime with its zone's name; a time of day's fraction of a second
    token = re.sub(r" [A-Z]{3,4} (?=\d{4}$)", " ", token.partition(".")[0])
    for form, resolution in _FORMATS:
        try:
            value = datetime.strptime(token, form)
        except ValueError:
            continue
        return [(value, resolution)] if "%Y" in form else [
            (value.replace(year=day.year) if "%b" in form else datetime.combine(day, value.time()),
             resolution) for day in days]
    return []


def clock_readings(text: str, start: datetime, end: datetime) -> list[str]:
    """The times of day (a date's, or alone) in ``text`` within ``start`` and ``end``
    (aware), to the resolution each is printed in, in local time or UTC."""
    windows = [(start.astimezone(zone).replace(tzinfo=None),
                end.astimezone(zone).replace(tzinfo=None))
               for zone in (start.astimezone().tzinfo, UTC)]
    days = sorted({moment.date() for window in windows for moment in window})
    tokens = [(kind, token.strip()) for kind, token in _tokens(text)]
    return [token for kind, token in tokens
            if (kind == "date" or (kind == "duration" and _CLOCK_ALONE.fullmatch(token)))
            and any(value <= end and value + resolution > start if value.tzinfo else
                    any(value <= last and value + resolution > first for first, last in windows)
                    for value, resolution in _readings(token, days))]
