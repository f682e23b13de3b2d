"""Spoilers in a built edition: a predict-then-reveal cell (``hide-output``) given away by
its output in view, by a link before it to a place showing the error it reveals, or by a
figure without its code right after it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from urllib.parse import urldefrag

from bs4 import BeautifulSoup, Tag

from coursebook.model.notebooks import first_line

_HIDDEN_CLASS, _NO_INPUT_CLASS = "tag_hide-output", "tag_remove-input"
# An error or warning as Python prints it, anywhere on a line; the first words after it
# identify it (not the whole message: a page's text, whitespace collapsed, is one line).
_ERROR = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Warning))\s*:\s+")
SIGNATURE_WORDS = 6


def error_signatures(text: str) -> set[str]:  # each error's type and first words
    found = set()
    for match in _ERROR.finditer(text):
        # Words, not characters: a page's markup may space out punctuation.
        words = re.findall(r"\w+", text[match.end():].partition("\n")[0])
        if len(words) >= SIGNATURE_WORDS:
            found.add(f"{match[1]}: {' '.join(words[:SIGNATURE_WORDS])}")
    return found


def shown_outputs(cell: Tag) -> list[Tag]:  # those not inside a closed ``<details>``
    return [output for output in cell.select("div.cell_output")
            if not any(details.name == "details" and not details.has_attr("open")
                       for details in output.parents)]


def _first_line(cell: Tag) -> str:
    code = cell.select_one("div.cell_input")
    return first_line(code.get_text())[:60] if code else ""


def spoilers(pages: Iterable[Path]) -> list[tuple[Path, str]]:
    named = {path.resolve(): path for path in pages}
    soups = {resolved: BeautifulSoup(path.read_text(encoding="utf8", errors="replace"),
                                     "html.parser") for resolved, path in named.items()}
    found: list[tuple[Path, str]] = []
    target_errors = cache(lambda page, href: error_signatures(_target_text(page, href, soups)))
    for resolved, soup in soups.items():
        path = named[resolved]
        links: list[Tag] = []
        hidden_before: Tag | None = None  # the predict-then-reveal cell just above, if any
        # The page's own text: the theme's navigation (which links every section) left out.
        for element in (soup.find("article") or soup).select("a[href], div.cell"):
            if element.name == "a":
                links.append(element)
                continue
            classes = element.get("class", [])
            if _HIDDEN_CLASS not in classes:
                if hidden_before is not None and _NO_INPUT_CLASS in classes and any(
                        output.select("img, svg") for output in shown_outputs(element)):
                    found.append((path, f"a figure without its code is in view right after "
                                        f"`{_first_line(hidden_before)}`, whose output is "
                                        "hidden: it shows what that cell reveals (hide-output)"))
                hidden_before = None
                continue
            hidden_before = element
            if shown_outputs(element):
                found.append((path, f"the output of `{_first_line(element)}` is in view before "
                                    "the student asks for it (hide-output, not collapsed)"))
            revealed = error_signatures(" ".join(o.get_text(" ") for o in element.select(
                "div.cell_output")))
            for link in links if revealed else []:
                for signature in sorted(revealed & target_errors(resolved, link["href"])):
                    found.append((path, f"the link to {link['href']!r} comes before "
                                        f"`{_first_line(element)}` and shows the error it "
                                        f"reveals: {signature}..."))
    return found


def _target_text(page: Path, href: str, soups: dict[Path, BeautifulSoup]) -> str:
    """What a student sees where an in-book link with an anchor leads, or ""."""
    address, anchor = urldefrag(href)
    if not anchor or "://" in address:
        return ""
    target = (page.parent / address).resolve() if address else page
    element = soups[target].find(id=anchor) if target in soups else None
    if element is None:
        return ""
    element = BeautifulSoup(str(element), "html.parser")
    for hidden in element.select("details:not([open])"):  # closed: not seen
        hidden.decompose()
    return re.sub(r"\s+", " ", element.get_text(" "))
