"""The leak audit finds answers wherever a build could carry them, and only answers."""

import json
from pathlib import Path

import pytest

from conftest import BOOK, ROOT, TINY_BOOK
from coursebook.audit import Fingerprints, audit_build, chapter_fingerprints

ANSWER_SENTENCE = "The tiny chapter's answer says that tripling doubles nothing whatsoever here."
STUDENT_SENTENCE = "A worked example."


@pytest.fixture
def fingerprints() -> Fingerprints:
    return chapter_fingerprints(TINY_BOOK)


def _clean_build(root: Path) -> Path:
    html = root / "html"
    (html / "_sources").mkdir(parents=True)
    (html / "chapter.html").write_text(f"<p>{STUDENT_SENTENCE}</p>")
    (html / "searchindex.js").write_text(
        'Search.setIndex({"terms": {"work": [0]}, "titles": ["A tiny chapter"], '
        '"titleterms": {}, "alltitles": {"A tiny chapter": [[0, null]]}})')
    return root


def test_fingerprints_come_from_answer_cells(fingerprints):
    assert fingerprints.runs and "Tiny answers" in fingerprints.headings
    assert not any("worked" in run for run in fingerprints.runs)


def test_a_clean_build_passes(tmp_path, fingerprints):
    assert audit_build(_clean_build(tmp_path), fingerprints) == []


@pytest.mark.parametrize("name, content", [
    ("html/chapter.html", "<p>The tiny chapter&#8217;s answer says that <em>tripling</em> "
                          "doubles nothing whatsoever here.</p>"),
    ("html/_sources/chapter.md", "tiny_answer_value = int(weights.sum().item()) * 21\n"),
    ("jupyter_execute/chapter.ipynb", json.dumps({"cells": [{"source": [
        "tiny_answer_value = int(weights.sum().item()) * 21\n",
        'print("tiny answer:", tiny_answer_value)']}]})),
])
def test_a_planted_answer_is_caught(tmp_path, fingerprints, name, content):
    build = _clean_build(tmp_path)
    planted = build / name
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text(content)
    leaks = audit_build(build, fingerprints)
    assert [leak.path for leak in leaks] == [planted]


def test_a_search_index_holding_answer_words_or_headings_is_caught(tmp_path, fingerprints):
    build = _clean_build(tmp_path)
    (build / "html" / "searchindex.js").write_text(
        'Search.setIndex({"terms": {"whatsoev": [0]}, "titles": ["Tiny answers"], '
        '"titleterms": {}, "alltitles": {}})')
    evidence = " ".join(leak.evidence for leak in audit_build(build, fingerprints))
    assert "whatsoev" in evidence and "Tiny answers" in evidence


def test_the_audit_tool_fails_on_a_leak_and_passes_when_clean(tmp_path, fingerprints):
    import subprocess, sys
    build = _clean_build(tmp_path)
    command = [sys.executable, str(ROOT / "tools" / "audit_student_build.py"), str(build),
               "--book", str(TINY_BOOK)]
    assert subprocess.run(command, capture_output=True).returncode == 0
    (build / "html" / "leak.html").write_text(ANSWER_SENTENCE)
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 1 and "leak.html" in done.stdout


def test_the_real_chapters_have_answers_to_look_for():
    assert len(chapter_fingerprints(BOOK).runs) > 100

