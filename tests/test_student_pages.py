"""The student's pages speak about PyTorch, not about how the book is built.

No build command (`make TARGET`), no commit id, no cell tag and no code that imports the
book's own package may show on a page of the student edition. What counts as each is
derived from the repository: the Makefile's targets, the commits git and the recordings
know, the tags the book and its recording environments define.
"""

from __future__ import annotations

import re
import subprocess

import nbformat
import pytest
from bs4 import BeautifulSoup

from conftest import BOOK, ROOT
from coursebook.model import notebooks
from coursebook.model.recordings import PROVENANCE_KEY

# myst-nb's tags that hide parts of a cell: as much the build's vocabulary as the book's own.
MYST_NB_TAGS = ("remove-cell", "remove-input", "remove-output", "hide-input", "hide-output")


def make_targets() -> list[str]:
    return re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M)


def cell_tags() -> list[str]:
    """The book's tags and its recording environments' (``cells_tagged``); the answer tag
    is an English word, and the audit of answers covers it."""
    own = [value for name, value in vars(notebooks).items()
           if name.endswith("_TAG") and value != notebooks.ANSWER_TAG]
    environments = "".join(p.read_text() for p in (BOOK / "recordings").glob("*.toml"))
    return own + re.findall(r'^cells_tagged\s*=\s*"([^"]+)"', environments, re.M) + list(MYST_NB_TAGS)


def known_commits() -> list[str]:
    """This checkout's commit and those the recordings were made at, as pages shorten them."""
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    commits = [done.stdout.strip()] if done.returncode == 0 else []
    for path in (BOOK / "recordings").glob("*.ipynb"):
        provenance = nbformat.read(path, as_version=4).metadata.get(PROVENANCE_KEY, {})
        commits.append(str(provenance.get("commit", "")).split("+")[0])
    return [commit[:7] for commit in commits if len(commit) >= 7]


def machinery(html: str, targets: list[str], tags: list[str], commits: list[str]) -> list[str]:
    """What a page shows of the build: one line per finding."""
    soup = BeautifulSoup(html, "html.parser")
    for hidden in soup(["script", "style", "noscript", "template"]):
        hidden.decompose()
    text = re.sub(r"\s+", " ", soup.get_text(" "))  # inline code splits words into spans
    found = [f"build command `{m.group(0)}`" for m in
             re.finditer(rf"\bmake (?:{'|'.join(map(re.escape, targets))})\b", text)]
    found += [f"commit id {m.group(0)}" for m in re.finditer(r"\b[0-9a-f]{7,40}\b", text)
              if any(m.group(0).startswith(c) or c.startswith(m.group(0)) for c in commits)]
    # A tag shows as code, or after the word "tag" ("torch-xla 2.9.0", a package, is neither).
    code = " ".join(element.get_text() for element in soup.select("code"))
    for tag in tags:
        word = rf"(?<![\w-]){re.escape(tag)}(?![\w-])"
        if re.search(word, code) or re.search(rf"\btag(?:ged|s)?\W+(?:\w+\W+){{0,3}}{word}",
                                              text, re.I):
            found.append(f"cell tag `{tag}`")
    for code in soup.select("div.cell_input, pre"):
        if re.search(r"^\s*(?:from|import)\s+coursebook\b", code.get_text(), re.M):
            found.append("shown code imports coursebook: "
                         + code.get_text().strip().splitlines()[0])
    return found


def _page(body: str) -> str:
    return f"<html><body><article>{body}</article><script>make html</script></body></html>"


CLEAN = _page("<p>Make a prediction, then make sure it holds. Kernel: torch-xla 2.9.0.</p>"
              "<div class='cell_input'><pre>import torch</pre></div>")


def test_a_clean_page_has_no_machinery():
    assert machinery(CLEAN, make_targets(), cell_tags(), known_commits()) == []


@pytest.mark.parametrize("planted, finding", [
    ("<p>Run <code>make recording RECORDING=bridges KIND=tpu</code>.</p>", "build command"),
    # As Sphinx writes inline code: a span per word.
    ('<p>Run <code class="docutils literal notranslate"><span class="pre">make</span> '
     '<span class="pre">html</span></code>.</p>', "build command `make html`"),
    ("<p>built from commit {commit} on 2026-12-03</p>", "commit id"),
    ("<p>this cell is tagged <code>accelerator-only</code></p>", "cell tag `accelerator-only`"),
    ("<p>on a TPU it runs in the torch_xla kernel (tag <code>torch-xla</code>)</p>", "cell tag `torch-xla`"),
    ("<p>the cells tagged stand-in-only run there</p>", "cell tag `stand-in-only`"),
    ("<div class='cell_input'><pre>from coursebook.exhibit_checks import run_in_fresh_python\n"
     "run_in_fresh_python('')</pre></div>", "shown code imports coursebook"),
])
def test_each_kind_of_machinery_is_found(planted, finding):
    """The check bites: each kind, planted in a clean page, is reported."""
    commits = known_commits()
    page = _page(planted.replace("{commit}", commits[0]))
    found = machinery(page, make_targets(), cell_tags(), commits)
    assert any(finding in line for line in found), found


@pytest.mark.slow
def test_the_student_edition_shows_no_build_machinery(built):
    html = built["student"].outdir / "html"
    targets, tags, commits = make_targets(), cell_tags(), known_commits()
    pages = sorted(p for p in html.rglob("*.html") if "_static" not in p.parts)
    assert pages
    found = {str(p.relative_to(html)): machinery(p.read_text(encoding="utf8"), targets, tags, commits)
             for p in pages}
    assert not {page: lines for page, lines in found.items() if lines}


@pytest.mark.slow
def test_the_instructor_edition_keeps_the_commands_and_commits(built):
    """The build machinery moved to the instructor edition; it did not vanish."""
    page = (built["instructor"].outdir / "html" / "bridges.html").read_text(encoding="utf8")
    found = machinery(page, make_targets(), cell_tags(), known_commits())
    assert any("build command" in line for line in found)
    assert any("commit id" in line for line in found)
