"""`make preview` as an author meets it: edits of a scratch copy of the book reach the open
page in Chromium, and a failed build leaves the last good pages served."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
import torch

from conftest import BOOK, ROOT, copy_of_built_cache
from coursebook.model.versions import release
from coursebook.process.preview import MESSAGE
from coursebook.verify.expectations import cell_keys

pytestmark = pytest.mark.slow
# Generous: a code edit executes its chapter on a shared, loaded machine. Speed is the
# bench's business (its preview cases), not this test's.
WAIT_MS = 600_000
CELL = 'X = torch.tensor([[1., 2.], [3., 1.], [2., 4.]])'


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _key(code: str) -> str:
    """The expected-outputs key of a code cell (a hash of its code)."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    return cell_keys(notebook)[0]


def _cell_code(chapter: str, first_line: str) -> str:
    start = chapter.index(first_line)
    return chapter[start:chapter.index("```", start)]


class Preview:
    """`tools/preview.py` serving a scratch copy of the book; its terminal in a file."""

    def __init__(self, root: Path, cache: Path) -> None:
        self.book = root / "book"
        shutil.copytree(BOOK, self.book, ignore=shutil.ignore_patterns("_ext", "__pycache__"))
        self.log_path = root / "preview.log"
        self.url = f"http://127.0.0.1:{_free_port()}"
        with self.log_path.open("w") as log:
            # Its own session: the server and the builds it starts end together.
            self.process = subprocess.Popen(
                [sys.executable, str(ROOT / "tools" / "preview.py"), "--source", str(self.book),
                 "--out", str(root / "out"), "--port", self.url.rsplit(":", 1)[1],
                 "-D", f"nb_execution_cache_path={cache}"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)

    def log(self) -> str:
        return self.log_path.read_text()

    def edit(self, path: str, old: str, new: str) -> None:
        file = self.book / path
        text = file.read_text()
        assert old in text, f"{path} no longer contains {old!r}"
        file.write_text(text.replace(old, new, 1))

    def wait_for_log(self, text: str, count: int = 1) -> None:
        deadline = time.monotonic() + WAIT_MS / 1000
        while self.log().count(text) < count:
            assert self.process.poll() is None, f"the preview ended:\n{self.log()[-4000:]}"
            assert time.monotonic() < deadline, f"never logged {text!r}:\n{self.log()[-4000:]}"
            time.sleep(1)

    def page(self, name: str) -> str:
        with urllib.request.urlopen(f"{self.url}/{name}") as response:
            return response.read().decode()

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=60)


@pytest.fixture
def preview(tmp_path, built):
    server = Preview(tmp_path, copy_of_built_cache(built, tmp_path / "cache"))
    yield server
    server.stop()


def test_edits_reach_the_open_page_and_a_failed_build_keeps_the_last_good_one(preview, browser):
    from playwright.sync_api import expect

    preview.wait_for_log("Waiting to detect changes")  # after the first build
    assert MESSAGE not in preview.log(), preview.log()[-4000:]
    page = browser.new_page()
    page.goto(f"{preview.url}/pt01.html")
    body = page.locator("body")
    expect(body).to_contain_text("Dtype: torch.float32")

    # Prose: the open page reloads with the new sentence.
    preview.edit("pt01.md", "## 1. Tensors\n", "## 1. Tensors\n\nA sentence the preview shows.\n")
    expect(body).to_contain_text("A sentence the preview shows.", timeout=WAIT_MS)

    # Code: the chapter executes again and its new output is verified against the expected
    # output its author accepted (a new key: the cell's code changed).
    expected = f"expected/torch-{release(torch.__version__)}/pt01.txt"
    code = _cell_code((preview.book / "pt01.md").read_text(), CELL)
    new_code = code.replace('print("Dtype:", X.dtype)', 'print("Element type:", X.dtype)')
    preview.edit(expected, f"=== cell {_key(code)} ", f"=== cell {_key(new_code)} ")
    preview.edit(expected, "    Dtype: torch.float32\n", "    Element type: torch.float32\n")
    preview.edit("pt01.md", code, new_code)
    expect(body).to_contain_text("Element type: torch.float32", timeout=WAIT_MS)
    assert MESSAGE not in preview.log(), preview.log()[-4000:]

    # A planted verification failure, with a prose edit saved with it: the build fails with
    # its message, writes no page, and the server goes on serving the last good one.
    preview.edit(expected, "    Element type: torch.float32\n", "    Element type: torch.float64\n")
    preview.edit("pt01.md", "A sentence the preview shows.", "A sentence of a failed build.")
    preview.wait_for_log(MESSAGE)
    log = preview.log()
    assert "Element type: torch.float64" in log and "Traceback" not in log, log[-4000:]
    served = preview.page("pt01.html")
    assert "A sentence the preview shows." in served
    assert "A sentence of a failed build." not in served

    # The fix: the next build passes and writes the page the failed one held back.
    preview.edit(expected, "    Element type: torch.float64\n", "    Element type: torch.float32\n")
    expect(body).to_contain_text("A sentence of a failed build.", timeout=WAIT_MS)
    assert preview.process.poll() is None
    assert preview.log().count(MESSAGE) == 1
