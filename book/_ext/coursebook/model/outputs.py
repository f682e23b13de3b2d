"""Machine-dependent details in outputs (memory addresses, ipykernel's cell paths, paths
into site-packages), replaced by stable placeholders: in outputs on the page, in recordings
(no committed output holds a machine's paths) and in an exhibit's compared error."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

# (needle, pattern, placeholder): a rule runs only on text holding its needle, as an
# output can be megabytes on one line.
_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("at 0x", re.compile(r"\bat 0x[0-9a-fA-F]+"), "at 0x…"),
    # Anchored where a path can start: the same matches as unanchored, without a scan
    # from every character of a long line.
    ("ipykernel_", re.compile(r"(?<![^\s:'\"])[^\s:'\"]*ipykernel_\d+[/\\]\d+\.py"), "<cell>"),
    # An ImportError names the file it looked in: in some environment's site-packages, or in
    # a package folder put in front of the import path (a recording's side environment).
    ("site-packages", re.compile(r" \([^()\s]*site-packages[^()\s]*\)"), ""),
    ("__init__.py)", re.compile(r" \(/[^()\s]+/__init__\.py\)"), ""),
    ("/site-packages/", re.compile(r"(?:/[^\s/'\"():,]+)+/site-packages/"), "<site-packages>/"),
)


def normalise(text: str) -> str:
    """Replace what differs from machine to machine, and nothing else."""
    for needle, pattern, placeholder in _RULES:
        if needle in text:
            text = pattern.sub(placeholder, text)
    return text


# An image's text that is only its object's repr (matplotlib's ``<Figure size 350x250 with 1
# Axes>``, IPython's ``<IPython.core.display.Image object>``): nothing of what it draws; a
# widget's, whose page shows its last state (a tqdm.notebook bar's 100% and times).
BARE_REPR = re.compile(r"^\[(?:image/[\w.+-]+|widget)\] <[^<>\n]*>$", re.M)


class _CanonicalHTML(HTMLParser):
    """HTML written back the same way whatever its layout: tags with their attributes in
    order, each run of white space in text as one space, white space alone between tags gone."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs, end=">"):
        attributes = "".join(f' {name}="{html.escape(value or "")}"'
                             for name, value in sorted(attrs))
        self.parts.append(f"<{tag}{attributes}{end}")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs, "/>")

    def handle_endtag(self, tag):
        self.parts.append(f"</{tag}>")

    def handle_data(self, data):
        if data.strip():  # white space alone lays tags out; beside text, it is one space
            self.parts.append(html.escape(re.sub(r"\s+", " ", data), quote=False))


def normalised_html(markup: str) -> str:
    """An HTML display as compared: its markup in one canonical layout."""
    parser = _CanonicalHTML()
    parser.feed(markup)
    parser.close()
    return "".join(parser.parts)
