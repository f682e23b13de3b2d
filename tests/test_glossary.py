"""Each glossary term is linked where a reader first meets it, and every term is used.

The terms are the glossary page's own (``{glossary}``); the reading order is the table of
contents of the home page. A use is the term in running text (singular or plural, any
case): code cells, outputs, code blocks, headings, other links and the recorded chapter's
list of package versions are not running text. A term's first use must be a ``{term}``
link to it; a term that no page uses fails too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from bs4 import BeautifulSoup, NavigableString

# Not running text: code, outputs, headings, the verification marks and version lists.
NOT_PROSE = ("div.cell_input, div.cell_output, pre, h1, h2, h3, h4, h5, h6, "
             ".recording-provenance, details.exhibit-mark, script, style")


@dataclass(frozen=True)
class Term:
    name: str
    anchor: str  # the id of its entry on the glossary page

    @property
    def pattern(self) -> re.Pattern:
        return re.compile(rf"(?<!\w){re.escape(self.name)}(?:e?s)?(?!\w)", re.I)


def glossary_terms(glossary_html: str) -> list[Term]:
    soup = BeautifulSoup(glossary_html, "html.parser")
    for link in soup.select("dl.glossary dt a.headerlink"):
        link.decompose()
    return [Term(dt.get_text(" ", strip=True), dt["id"])
            for dt in soup.select("dl.glossary dt[id]")]


def reading_order(html_dir: Path) -> list[str]:
    """The pages in the order the home page's table of contents lists them, home first."""
    soup = BeautifulSoup((html_dir / "index.html").read_text(encoding="utf8"), "html.parser")
    pages = ["index.html"]
    for link in soup.select("div.toctree-wrapper li.toctree-l1 > a[href]"):
        href = link["href"].split("#")[0]
        if href and href not in pages:
            pages.append(href)
    return pages


def _uses(html: str, terms: list[Term]):
    """(term, linked) for each use of a term in a page's running text, in order."""
    soup = BeautifulSoup(html, "html.parser")
    main = soup.select_one("article") or soup.body
    for skipped in main.select(NOT_PROSE):
        skipped.decompose()
    for text in main.find_all(string=True):
        if not isinstance(text, NavigableString):
            continue
        link = text.find_parent("a")
        target = link.get("href", "").partition("#")[2] if link else ""
        for term in terms:
            if target == term.anchor:
                yield term, True
            elif link is None and term.pattern.search(text):
                yield term, False


def glossary_problems(pages: list[tuple[str, str]], terms: list[Term]) -> list[str]:
    """Terms first used without a link, and terms never used: one line each."""
    first: dict[str, tuple[str, bool]] = {}
    for name, html in pages:
        for term, linked in _uses(html, terms):
            first.setdefault(term.name, (name, linked))
    problems = []
    for term in terms:
        if term.name not in first:
            problems.append(f"{term.name}: in the glossary, but no page uses it")
        elif not first[term.name][1]:
            problems.append(f"{term.name}: first used on {first[term.name][0]} without a "
                            "{term} link to the glossary")
    return problems


def _anchor(name: str) -> str:
    return "term-" + name.replace(" ", "-")


def _glossary(*names: str) -> str:
    entries = "".join(f'<dt id="{_anchor(n)}">{n}<a class="headerlink">¶</a></dt><dd>…</dd>'
                      for n in names)
    return f'<dl class="glossary">{entries}</dl>'


def _linked(text: str, name: str) -> str:
    return f'<a class="reference internal" href="glossary.html#{_anchor(name)}">{text}</a>'


TERMS = glossary_terms(_glossary("tape", "PRNG key"))


def test_terms_linked_at_their_first_use_pass():
    assert [(t.name, t.anchor) for t in TERMS] == [("tape", "term-tape"),
                                                   ("PRNG key", "term-PRNG-key")]
    pages = [("a.html", f"<article><p>The {_linked('tape', 'tape')} records; the tape frees."
                        "</p><pre>PRNG key</pre></article>"),
             ("b.html", f"<article><p>Two {_linked('PRNG keys', 'PRNG key')}, one key.</p>"
                        "</article>")]
    assert glossary_problems(pages, TERMS) == []


def test_a_term_used_before_its_link_fails():
    pages = [("a.html", "<article><p>Autograd's Tape is freed.</p></article>"),
             ("b.html", f"<article><p>The {_linked('tape', 'tape')}.</p></article>")]
    assert glossary_problems(pages, TERMS[:1]) == [
        "tape: first used on a.html without a {term} link to the glossary"]


def test_a_term_never_used_fails():
    pages = [("a.html", "<article><h2>tape</h2><div class='cell_input'>tape</div>"
                        "<p>See <a href='#x'>the tape</a>.</p></article>")]
    assert glossary_problems(pages, TERMS[:1]) == ["tape: in the glossary, but no page uses it"]


@pytest.mark.slow
def test_every_glossary_term_is_linked_at_its_first_use(built):
    html = built["student"].outdir / "html"
    terms = glossary_terms((html / "glossary.html").read_text(encoding="utf8"))
    assert len(terms) >= 10
    pages = [(name, (html / name).read_text(encoding="utf8"))
             for name in reading_order(html) if name != "glossary.html"]
    assert len(pages) >= 4
    assert glossary_problems(pages, terms) == []
