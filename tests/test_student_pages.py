"""The student's pages speak about PyTorch, not about how the book is built.

No build command (`make TARGET`), no commit id, no cell tag and no code that imports the
book's own package may show on a page of the student edition. What counts as each is
derived from the repository: the Makefile's targets, the commits git and the recordings
know, the tags the book and its recording environments define.

The same holds for the two downloads each chapter page offers, the ``.md`` and the
``.ipynb``: neither may say how the book checks, records or builds its outputs
(:data:`BUILD_TALK`), carry the build's metadata (tags, cache keys, reasons a cell is not
verified) or keep an output.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup

from conftest import BOOK, ROOT
from coursebook.model import notebooks
from coursebook.model.recordings import PROVENANCE_KEY
from coursebook.render.downloads import GOES_ON_FOLDED, download_document
from coursebook.render.plain_markdown import PlainMarkdown

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
    return (own + re.findall(r'^cells_tagged\s*=\s*"([^"]+)"', environments, re.M)
            + list(MYST_NB_TAGS))


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


# What a student never reads (issue 31): how the book verifies, records and builds its
# outputs. The one allowed exception: a plain sentence saying on which device a TPU chapter's
# outputs were printed (never a TPU's, where no TPU ran them).
BUILD_TALK = {
    "a verification mark": r"✓|\bRaised exactly the error\b|\bsame error as recorded\b|\bfix ran\b",
    "this build's torch": r"\bthis build\b",
    "a replica note": r"\breplica\b",
    "the stand-in": r"\bstand-in\b",
    "where an output was recorded": r"\b[Rr]ecorded on\b|\b[Nn]ot yet recorded\b",
    "how the book is made": (r"\bwhen this book is built\b|\btyped by hand\b"
                             r"|\bwhen the book is (?:built|made)\b"),
    "a kernel or package panel": r"\bKernel `?[\w-]+`?:",
    "the book's cache key": r"\bbook_code\b|\bexecution_environment\b",
    "an unverified reason": r"\bunverified\b",
    "a cell for the book's pages": r"\bfor the book's pages\b",
    "a side folder": r"\bside (?:folder|environment)\b|\bpackage folder\b",
    "what the book ran": r"\bran green\b|\b[Nn]ot run on an? \w+ by this book\b",
    "a capture's provenance": r"\b[Cc]aptured on an? \w+",
    # Issue 44 (R3's read): the theme's footer dates, the recorded chapter's torch and date,
    # the side folder's mechanics, and a .md download written as a MyST notebook.
    "a build date": r"\bBuilt on \d|\bLast updated\b",
    # A PDF's title page or handout cover (issue 44): the torch the book was executed with.
    "the torch the book was executed with": r"\b[Ee]xecuted with torch\b",
    "which torch produced the outputs": r"\bproduced with torch\b",
    "how a package is set apart": r"\binstalled apart\b|\bfirst on the import path\b",
    # Issue 44 (HL's read): the sources the book was written from are the authors' business.
    "what the book is written from": (r"\b(?:material|notes|sources?)\s+"
                                      r"(?:it|the\s+book|this\s+(?:book|chapter))\s+"
                                      r"(?:is|was)\s+written\s+from\b"),
    "notebook markup": r"(?m)\{code-cell\}|^jupytext:|^\+\+\+",
}
_IMPORTS_BOOK = re.compile(r"^\s*(?:from|import)\s+coursebook\b", re.M)


def build_talk(text: str) -> list[str]:
    """Each kind of :data:`BUILD_TALK` in a text a student reads, with what was found."""
    return [f"{name}: {found.group(0)!r}" for name, pattern in BUILD_TALK.items()
            for found in [re.search(pattern, text)] if found]


def page_findings(html: str, targets: list[str], tags: list[str], commits: list[str]) -> list[str]:
    """An HTML page: the build's machinery and its talk, in the text a reader sees."""
    soup = BeautifulSoup(html, "html.parser")
    for hidden in soup(["script", "style", "noscript", "template"]):
        hidden.decompose()
    return (machinery(html, targets, tags, commits)
            + build_talk(re.sub(r"\s+", " ", soup.get_text(" "))))


def notebook_findings(notebook: nbformat.NotebookNode) -> list[str]:
    """A student's notebook: its cells' text, and no metadata of the build, no tag and no
    output."""
    found = []
    for cell in notebook.cells:
        first = notebooks.first_line(cell)[:60]
        found += [f"`{first}`: {line}" for line in build_talk(cell.source)]
        if cell.cell_type == "code" and _IMPORTS_BOOK.search(cell.source):
            found.append(f"`{first}`: imports coursebook")
        if notebooks.cell_tags(cell):
            found.append(f"`{first}`: tags {notebooks.cell_tags(cell)}")
        extra = sorted(set(cell.metadata) - {"tags", *GOES_ON_FOLDED})  # Colab's, Jupyter's
        if extra:
            found.append(f"`{first}`: the build's metadata {extra}")
        if cell.get("outputs"):
            found.append(f"`{first}`: an output")
    return found


def download_findings(path: Path) -> list[str]:
    """A download: an ``.ipynb``, or a page's ``.md`` (a chapter's: one plain Markdown
    document; a MyST notebook's top matter and directives are build markup)."""
    text = path.read_text(encoding="utf8")
    if path.suffix == ".ipynb":
        return notebook_findings(nbformat.reads(text, as_version=4))
    imports = [f"code imports coursebook: {m.group(0).strip()}"
               for m in [_IMPORTS_BOOK.search(text)] if m]
    return build_talk(text) + imports


def student_findings(html_dir: Path) -> dict[str, list[str]]:
    """Each of an edition's pages and downloads, with what it shows of the build."""
    targets, tags, commits = make_targets(), cell_tags(), known_commits()
    found = {str(p.relative_to(html_dir)): page_findings(p.read_text(encoding="utf8"), targets,
                                                          tags, commits)
             for p in sorted(html_dir.glob("*.html"))}
    for path in sorted((html_dir / "_sources").glob("*")):
        found[str(path.relative_to(html_dir))] = download_findings(path)
    return {name: lines for name, lines in found.items() if lines}


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
    ("<p>on a TPU it runs in the torch_xla kernel (tag <code>torch-xla</code>)</p>",
     "cell tag `torch-xla`"),
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


# --- The three forms a student reads: the page, the .md and the .ipynb ----------------------

# One of each thing issue 31 found, as the build printed it: (text, the finding it gives).
PLANTED_TEXT = [
    ("✓ same error as recorded", "a verification mark"),
    ("Raised exactly the error recorded for torch 2.13.0 (Linux x86_64, CPU, 2026-12-02).",
     "a verification mark"),
    ("✓ fix ran", "a verification mark"),
    ("and this build's torch raised:", "this build's torch"),
    ("sees (recorded on a replica of Colab (CPU runtime), 2026-12-03):", "a replica note"),
    ("Recorded on CPU stand-in.", "the stand-in"),
    ("Kernel `both`: jax 0.7.2, numpy 2.1.3, torch 2.9.0+cu128.", "a kernel or package panel"),
    ("Not yet recorded on: TPU.", "where an output was recorded"),
    ("Each exhibit below is executed when this book is built.", "how the book is made"),
    ("Its chapters are notebooks, and no output on these pages was typed by hand.",
     "how the book is made"),
    ("from coursebook.exhibit_checks import check_raised\ncheck_raised('pytorch/01')",
     "imports coursebook"),
    ("the cache key holds book_code: f36f4787c3c8ee01", "the book's cache key"),
    ("execution_environment: {python: 3.11.7}", "the book's cache key"),
    ("unverified: pip's messages depend on what the machine already has", "an unverified reason"),
    ("# Short tracebacks without colour codes, for the book's pages.\n%xmode Minimal",
     "a cell for the book's pages"),
    ("# one process: the new one runs on the CPU, as the book's CPU stand-in does.",
     "the stand-in"),
    ("# The book runs this with the package folder 'old-torchax' in front of\n"
     "# the import path (see the exhibit's note above).", "a side folder"),
    ("*The museum's fix, captured on a Colab TPU v6e-1 during LAB·P4, 2026-07-27: it ran green "
     "on the same hardware.*", "what the book ran"),
    ("the museum's own follows. Not run on a TPU by this book.", "what the book ran"),
    ("Captured record: captured on a Colab TPU v6e-1 during LAB·P4", "a capture's provenance"),
    ("Built on 2026-12-05.", "a build date"),
    ("Executed with torch 2.13.0", "the torch the book was executed with"),
    ("Last updated on 2026-12-05.", "a build date"),
    ("*The outputs of this chapter were produced with torch 2.9.0 on a CPU (2026-12-05), not on a "
     "TPU.*", "which torch produced the outputs"),
    ("Here both are installed apart and put first on the import path of a fresh Python process.",
     "how a package is set apart"),
    ("This chapter cannot tell you: the course material it is written from names neither bridge",
     "what the book is written from"),
]
# What the build leaves in a cell's metadata, or its output: (change, the finding it gives).
PLANTED_CELL = [
    ({"metadata": {"tags": ["hide-output"]}}, "tags ['hide-output']"),
    ({"metadata": {"unverified": "pip's messages vary"}}, "the build's metadata ['unverified']"),
    ({"metadata": {"execution_environment": {"book_code": "f36f4787"}}},
     "the build's metadata ['execution_environment']"),
    ({"outputs": [nbformat.v4.new_output("stream", text="tensor([1.])\n")]}, "an output"),
]


def _clean_notebook() -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## Tensors\n\nA tensor records its shape; "
                                      "`backward()` fills `.grad`."),
        nbformat.v4.new_code_cell("import torch\nprint(torch.ones(2))")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})


def _form(tmp_path: Path, form: str, notebook: nbformat.NotebookNode, html_body: str = "") -> Path:
    """A student form holding ``notebook`` (an .ipynb, a chapter's .md) or a page."""
    if form == "html":
        path = tmp_path / "page.html"
        path.write_text(_page(html_body or "<p>A tensor records its shape.</p>"))
        return path
    path = tmp_path / f"chapter.{form}"
    if form == "ipynb":
        nbformat.write(notebook, path)
    else:  # as the .md download writes it: one plain Markdown document
        path.write_text(download_document(notebook, PlainMarkdown(lambda role, target: None)),
                        encoding="utf8")
    return path


def _findings(path: Path) -> list[str]:
    if path.suffix == ".html":
        return page_findings(path.read_text(), make_targets(), cell_tags(), known_commits())
    return download_findings(path)


@pytest.mark.parametrize("form", ["html", "md", "ipynb"])
def test_clean_student_forms_have_nothing_of_the_build(tmp_path, form):
    assert _findings(_form(tmp_path, form, _clean_notebook())) == []


@pytest.mark.parametrize("form", ["html", "md", "ipynb"])
@pytest.mark.parametrize("planted, finding", PLANTED_TEXT)
def test_each_planted_text_is_found_in_each_form(tmp_path, form, planted, finding):
    """The check bites: each kind, planted in a clean page, .md or .ipynb, is reported."""
    notebook = _clean_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(planted) if "\n" in planted else
                          nbformat.v4.new_markdown_cell(planted))
    shown = (f"<div class='cell_input'><pre>{planted}</pre></div>" if "\n" in planted
             else f"<p>{planted}</p>")
    found = _findings(_form(tmp_path, form, notebook, shown))
    assert any(finding in line for line in found), found


@pytest.mark.parametrize("change, finding", PLANTED_CELL)
def test_the_builds_metadata_or_an_output_in_a_download_is_found(tmp_path, change, finding):
    notebook = _clean_notebook()
    for key, value in change.items():
        notebook.cells[1][key] = nbformat.from_dict(value)
    found = _findings(_form(tmp_path, "ipynb", notebook))
    assert any(finding in line for line in found), found


def test_a_md_download_written_as_a_myst_notebook_is_found(tmp_path):
    """The .md download is a document: the MyST notebook it used to be (jupytext top matter,
    `{code-cell}` directives, `+++` breaks, the cells' tags) is the build's markup."""
    notebook = _clean_notebook()
    notebook.metadata["jupytext"] = {"text_representation": {"format_name": "myst"}}
    path = tmp_path / "chapter.md"
    path.write_text(notebooks.notebook_to_myst(notebook), encoding="utf8")
    assert any(line.startswith("notebook markup") for line in _findings(path)), _findings(path)


@pytest.mark.slow
def test_the_student_edition_shows_no_build_machinery(built):
    """Every page, and both downloads of every chapter, of a real student build."""
    html = built["student"].outdir / "html"
    chapters = [p.stem for p in BOOK.glob("*.md") if notebooks.is_chapter_source(p.read_text())]
    downloads = {p.name for p in (html / "_sources").iterdir()}
    assert chapters and all({f"{c}.md", f"{c}.ipynb"} <= downloads for c in chapters), downloads
    assert student_findings(html) == {}


@pytest.mark.slow
def test_the_instructor_edition_keeps_the_commands_and_commits(built):
    """The build machinery moved to the instructor edition; it did not vanish."""
    page = (built["instructor"].outdir / "html" / "bridges.html").read_text(encoding="utf8")
    found = machinery(page, make_targets(), cell_tags(), known_commits())
    assert any("build command" in line for line in found)
    assert any("commit id" in line for line in found)
