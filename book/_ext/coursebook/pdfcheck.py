"""Checks of a built PDF and its LaTeX log: what a printed handout must not do.

- no word outside the page minus its margins (``pdftotext -bbox``): sideways the text
  block's 2 cm margins (conf.py's ``hmargin``), up and down the 5 mm no printer reaches
  (running headers and footers live in the vertical margins);
- no ``Overfull \\hbox`` wider than :data:`OVERFULL_LIMIT_PT`, no ``Missing character``;
- every font embedded (``pdffonts``).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

OVERFULL_LIMIT_PT = 2.0
SIDE_MARGIN_PT = 2 / 2.54 * 72 - 1.0  # the 2 cm hmargin of conf.py, less 1 pt of rounding
TOP_BOTTOM_MARGIN_PT = 5 / 25.4 * 72  # 5 mm
POPPLER = ("pdftotext", "pdffonts")


@dataclass(frozen=True)
class Problem:
    what: str

    def __str__(self) -> str:
        return self.what


def overflowing_words(pdf: Path, side: float = SIDE_MARGIN_PT,
                      top_bottom: float = TOP_BOTTOM_MARGIN_PT) -> list[Problem]:
    """Words whose box crosses into the page's margins."""
    xhtml = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], check=True,
                           capture_output=True, text=True).stdout
    tree = ElementTree.fromstring(re.sub(r"<!DOCTYPE[^>]*>", "", xhtml))
    problems = []
    for number, page in enumerate(tree.iter("{http://www.w3.org/1999/xhtml}page"), start=1):
        width, height = float(page.get("width")), float(page.get("height"))
        for word in page.iter("{http://www.w3.org/1999/xhtml}word"):
            x0, y0, x1, y1 = (float(word.get(k)) for k in ("xMin", "yMin", "xMax", "yMax"))
            if x0 < side or x1 > width - side or y0 < top_bottom or y1 > height - top_bottom:
                problems.append(Problem(f"page {number}: {word.text!r} runs into the margin "
                                        f"(x {x0:.0f}-{x1:.0f} of {width:.0f} pt)"))
    return problems


# Sphinx prefixes every label with the document it is in: ``\label{\detokenize{pt01:id}}``.
_DOC_LABEL = re.compile(r"\\label\{\\detokenize\{([^:}]+):")
_TEX_LINES = re.compile(r"at lines (\d+)--")


def tex_documents(tex: Path) -> list[tuple[int, str]]:
    """The source document of each label in Sphinx's ``.tex``: (line, docname), in order."""
    return [(number, match.group(1))
            for number, line in enumerate(tex.read_text(encoding="utf8").splitlines(), start=1)
            for match in _DOC_LABEL.finditer(line)]


def _chapter_of(message: str, documents: list[tuple[int, str]]) -> str:
    """``message`` with the chapter file its ``.tex`` line belongs to, when known."""
    found = _TEX_LINES.search(message)
    if not found or not documents:
        return message
    line = int(found.group(1))
    names = [name for start, name in documents if start <= line]
    return f"{names[-1]}.md: {message}" if names else message


def log_problems(log: Path, limit: float = OVERFULL_LIMIT_PT, tex: Path | None = None) -> list[Problem]:
    """Overfull boxes wider than ``limit`` and missing glyphs, from a LaTeX log; with the
    ``.tex``, each overfull box is placed in its chapter file."""
    text = log.read_text(encoding="utf8", errors="replace")
    documents = tex_documents(tex) if tex is not None and tex.is_file() else []
    problems = [Problem(_chapter_of(f"{log.name}: {m.group(0)}", documents))
                for m in re.finditer(r"Overfull \\hbox \((\d+(?:\.\d+)?)pt too wide\)[^\n]*", text)
                if float(m.group(1)) > limit]
    problems += [Problem(f"{log.name}: {m.group(0)}")
                 for m in re.finditer(r"Missing character[^\n]*", text)]
    return problems


def unembedded_fonts(pdf: Path) -> list[Problem]:
    table = subprocess.run(["pdffonts", str(pdf)], check=True, capture_output=True,
                           text=True).stdout.splitlines()[2:]
    # Columns: name type [type...] encoding emb sub uni object ID; emb is 5th from the end.
    return [Problem(f"font not embedded: {row.split()[0]}") for row in table
            if row.split() and row.split()[-5] != "yes"]


def pdf_text(pdf: Path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(pdf), "-"], check=True,
                          capture_output=True, text=True).stdout


def check_pdf(pdf: Path, log: Path, tex: Path | None = None) -> list[Problem]:
    return overflowing_words(pdf) + log_problems(log, tex=tex) + unembedded_fonts(pdf)
