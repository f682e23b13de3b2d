"""The versions page lists what torch says differently, titled by section or exhibit."""

import json
import re
import shutil
from dataclasses import asdict

import pytest
from bs4 import BeautifulSoup

from conftest import BOOK, EXHIBITS, RUNTIMES_FILE, book_museum, copy_of_built_cache, sphinx_build
from coursebook.model.runtimes import reader_runtimes
from coursebook.torch_versions.model import verified_versions
from coursebook.torch_versions.verify import comparable

WARNING = ("UserWarning: The .grad attribute of a Tensor that is not a leaf Tensor is being "
           "accessed. (Triggered internally at {path}/aten/src/ATen/core/TensorBody.h:{line}.)")


def test_a_build_tag_the_version_and_a_cpp_line_are_no_change():
    pairs = [("PyTorch 2.13.0+cpu", "2.13.0+cpu", "PyTorch 2.14.1+cu130", "2.14.1+cu130"),
             ("✓ The fix ran (torch 2.13.0+cpu).", "2.13.0",
              "✓ The fix ran (torch 2.14.1).", "2.14.1"),
             (WARNING.format(path="/__w/pytorch/pytorch/build", line=493), "2.13.0",
              WARNING.format(path="/Users/runner/work/pytorch/pytorch/build", line=488), "2.14.1")]
    for old, old_version, new, new_version in pairs:
        assert old != new  # they differ as printed ...
        assert comparable(old, old_version) == comparable(new, new_version)  # ... not as said


def test_what_torch_says_differently_is_still_a_change():
    old = "RuntimeError: which is output 0 of ExpBackward0, is at version 1 (torch 2.2.2)"
    new = "RuntimeError: which is output 0 of Exp, is at version 1 (torch 2.13.0)"
    assert comparable(old, "2.2.2") != comparable(new, "2.13.0")
    assert comparable("shape (2, 13)", "2.13.0") != comparable("shape (2, 14)", "2.14.1")


def test_a_chapter_in_a_folder_is_verified_on_the_versions_of_its_files(tmp_path):
    for version in ("2.14.1", "2.2.2"):
        (tmp_path / f"torch-{version}" / "part").mkdir(parents=True)
        (tmp_path / f"torch-{version}" / "part" / "ch.txt").write_text("")
    assert verified_versions(tmp_path, "part/ch") == ["2.2.2", "2.14.1"]


def _pairs(page: str) -> list[tuple[str, list[str], list[str]]]:
    """Each change on the page: its title, the two column labels, the two outputs."""
    soup = BeautifulSoup(page, "html.parser")
    found = []
    for pair in soup.select("div.torch-diff-pair"):
        title = pair.find_previous_sibling("p")
        labels = [p.get_text(strip=True) for p in pair.select("div.torch-diff-column > p")]
        outputs = [pre.get_text() for pre in pair.select("pre")]
        found.append((title, labels, outputs))
    return found


@pytest.mark.slow
def test_the_versions_page_shows_only_changes_in_what_torch_says_and_an_exhibit_once(built,
                                                                                   tmp_path):
    """A planted torch release whose outputs differ from the newest's in the version it
    prints and its build tag, a C++ line number, a check line of the book, and one real
    output: only the last is listed, titled by its section. It also changes an exhibit's
    error, in its chapter's expected output (the failing code is a cell of the chapter) and
    in the exhibit's records: the page lists that change once, as the exhibit's, not again
    as the chapter's cell. (One build for both plants.) A heading added above that cell
    retitles its row in the next, incremental build."""
    source, exhibits = tmp_path / "book", tmp_path / "exhibits"
    shutil.copytree(BOOK, source)
    shutil.copytree(EXHIBITS, exhibits)
    expected = source / "expected"
    newest = max(expected.glob("torch-*"), key=lambda p: [int(n) for n in
                                                        re.findall(r"\d+", p.name)])
    version = newest.name.removeprefix("torch-")
    planted = expected / "torch-99.0.0"
    shutil.copytree(newest, planted)
    pt01 = planted / "pt01.txt"
    text = pt01.read_text()
    text = re.sub(r"PyTorch \d+\.\d+\.\d+\+\w+", "PyTorch 99.0.0+cu999", text)
    text = re.sub(r"TensorBody\.h:\d+", "TensorBody.h:1", text)
    assert "Device: cpu" in text
    text = text.replace("Device: cpu", "Device: cpu, planted", 1)
    pt01.write_text(text)
    museum = planted / "museum-pytorch.txt"
    museum.write_text(re.sub(r"The fix ran without an error \(torch [^)]*\)",
                             "The fix ran without an error (torch 99.0.0+planted)",
                             museum.read_text()))
    exhibit = next(e for wing in book_museum().values() for e in wing.exhibits
                   if e.runs_in_every_build and e.record_for(version))
    record = exhibit.record_for(version)
    for chapter in planted.glob("*.txt"):  # the exhibit's chapter, and any that raises the same
        chapter.write_text(chapter.read_text().replace(record.message,
                                                       record.message + " (planted)"))
    toml = exhibits / exhibit.path.relative_to(EXHIBITS)
    toml.write_text(toml.read_text() + "\n[[records]]\n" + "".join(
        f"{name} = {json.dumps(value)}\n" for name, value in {
            **asdict(record), "torch": "99.0.0", "where": "planted", "message":
            record.message + " (planted)"}.items()))
    # The versions page is the instructor edition's appendix.
    build = sphinx_build(source, tmp_path / "out", copy_of_built_cache(built, tmp_path / "cache"),
                         "instructor", settings={"coursebook_exhibits_dir": str(exhibits)})
    assert build.returncode == 0, build.log[-3000:]
    page = (tmp_path / "out" / "html" / "torch-versions.html").read_text(encoding="utf8")
    section = BeautifulSoup(page, "html.parser").find(
        "section", id=f"torch-{version}-to-99-0-0".replace(".", "-"))
    changes = _pairs(str(section))
    links = [title.select_one("a.reference")["href"].split("#")[-1]
             for title, _, _ in changes if title.select_one("a.reference")]
    assert links.count(exhibit.label) == 1, links
    others = [(title, labels, outputs) for title, labels, outputs in changes
              if not (title.select_one("a.reference") and title.select_one("a.reference")[
                  "href"].split("#")[-1] == exhibit.label)]
    # Besides the exhibit's: the chapters' cells that raise its error too, and the one real
    # change; nothing for a version, a build tag, a C++ line or a check line.
    raised = record.message + " (planted)"
    for title, _, (before, after) in others:
        assert ("Device: cpu, planted" in after or raised in after) and "planted" not in before, \
            (str(title), before, after)
    [(title, labels, outputs)] = [change for change in others if "Device: cpu" in change[2][1]]
    link = title.select_one("a.reference")
    assert link is not None and link.get_text(strip=True) == "1. Tensors"
    assert "coursebook" not in title.get_text()
    chapter = source / "pt01.md"
    cell = "```{code-cell} ipython3\nX = torch.tensor("
    assert cell in chapter.read_text()
    chapter.write_text(chapter.read_text().replace(
        cell, f"(pt01-planted)=\n### A planted heading\n\n{cell}", 1))
    build = sphinx_build(source, tmp_path / "out", tmp_path / "cache", "instructor",
                         settings={"coursebook_exhibits_dir": str(exhibits)})
    assert build.returncode == 0, build.log[-3000:]
    page = (tmp_path / "out" / "html" / "torch-versions.html").read_text(encoding="utf8")
    titles = [title.select_one("a.reference").get_text(strip=True)
              for title, _, outputs in _pairs(page) if "Device: cpu, planted" in outputs[1]]
    assert titles == ["A planted heading"], titles


@pytest.mark.slow
def test_no_change_on_the_versions_page_is_only_a_build_tag_or_a_line(built):
    page = (built["instructor"].outdir / "html" / "torch-versions.html").read_text(encoding="utf8")
    for title, labels, (old, new) in _pairs(page):
        versions = [label.removeprefix("torch ") for label in labels]
        assert comparable(old, versions[0]) != comparable(new, versions[1]), (title, old, new)
        assert title.select_one("a.reference") is not None, title


@pytest.mark.slow
def test_the_instructor_page_names_the_runtimes_its_download_was_verified_on(built):
    """A runtime readers use ran the chapter's student download: the instructor page names
    it as such (its answers are verified on the build's torches only); the student page
    names the build's torch alone."""
    named = 0
    for runtime in reader_runtimes(RUNTIMES_FILE):
        for expected in sorted((BOOK / "expected" / f"torch-{runtime.torch}").glob("*.txt")):
            pages = {edition: BeautifulSoup((built[edition].outdir / "html" / f"{expected.stem}"
                                             ".html").read_text(encoding="utf8"), "html.parser")
                     for edition in ("instructor", "student")}
            line = pages["instructor"].select_one("p.verified-on").get_text(" ", strip=True)
            assert f"as the student download on {runtime.reader_label}" in line, line
            assert runtime.torch not in pages["student"].select_one("p.verified-on").get_text()
            named += 1
    assert named


def test_the_torch_version_changes_directive_takes_no_content():
    """Its sections are made from the expected outputs: text under it is refused where
    written (docutils' Directive takes none unless it says it does), never silently dropped."""
    from docutils.core import publish_doctree
    from docutils.parsers.rst import directives

    from coursebook.torch_versions.verify import TorchVersionChanges

    directives.register_directive("torch-version-changes", TorchVersionChanges)
    doctree = publish_doctree(".. torch-version-changes::\n\n   Some text.\n",
                              settings_overrides={"report_level": 5})
    [message] = [str(node) for node in doctree.findall() if node.tagname == "system_message"]
    assert 'Error in "torch-version-changes" directive:\nno content permitted.' in message
