"""`make preview` as an author meets it: edits of a scratch copy of the book reach the open
page in Chromium, and a failed build leaves the last good pages served."""

from __future__ import annotations

import shutil

import pytest

from conftest import BOOK, TORCH_VERSION, copy_of_built_cache, load_tool
from coursebook.model.versions import release
from coursebook.process.preview import FAILED, failure_message
from coursebook.verify.expectations import ACCEPT_COMMAND
# Generous: a code edit executes its chapter on a shared, loaded machine. Speed is the
# bench's business (its preview cases), not this test's.
WAIT_MS = 900_000


@pytest.fixture
def preview(tmp_path, built):
    """The preview (the bench's helper) of a scratch copy of the book."""
    book = tmp_path / "book"
    shutil.copytree(BOOK, book, ignore=shutil.ignore_patterns("_ext", "__pycache__"))
    server = load_tool("bench_build").PreviewServer(
        book, tmp_path / "out", copy_of_built_cache(built, tmp_path / "cache"))
    yield server
    server.stop()


@pytest.mark.slow
def test_edits_reach_the_open_page_and_a_failed_build_keeps_the_last_good_one(preview, browser):
    from playwright.sync_api import expect

    preview.wait_until_serving()  # after the first build
    assert FAILED not in preview.log(), preview.log()[-4000:]
    page = browser.new_page()
    page.goto(f"{preview.url}/pt01.html")
    body = page.locator("body")
    expect(body).to_contain_text("Dtype: torch.float32")

    # Prose: the open page reloads with the new sentence.
    preview.edit("pt01.md", "## 1. Tensors\n", "## 1. Tensors\n\nA sentence the preview shows.\n")
    expect(body).to_contain_text("A sentence the preview shows.", timeout=WAIT_MS)

    # Code: the chapter executes again and its new output is verified against the expected
    # output its author accepted (a new key: the cell's code changed).
    expected = f"expected/torch-{release(TORCH_VERSION)}/pt01.txt"
    preview.edit(expected, "    Dtype: torch.float32\n", "    Element type: torch.float32\n")
    preview.edit_cell("pt01.md", 'print("Dtype:", X.dtype)', 'print("Element type:", X.dtype)',
                      expected)
    expect(body).to_contain_text("Element type: torch.float32", timeout=WAIT_MS)
    assert FAILED not in preview.log(), preview.log()[-4000:]

    # A planted verification failure, with a prose edit saved with it: the build fails with
    # its message, writes no page, and the server goes on serving the last good one.
    preview.edit(expected, "    Element type: torch.float32\n", "    Element type: torch.float64\n")
    preview.edit("pt01.md", "A sentence the preview shows.", "A sentence of a failed build.")
    preview.wait_for_log("Sphinx exited with exit code")  # sphinx-autobuild: the build failed
    served = preview.page("pt01.html")
    assert "A sentence the preview shows." in served
    assert "A sentence of a failed build." not in served
    log = preview.log()
    # It names the command the failure needs.
    assert failure_message([ACCEPT_COMMAND]) in log, log[-4000:]
    assert "Element type: torch.float64" in log and "Traceback" not in log, log[-4000:]

    # The fix: the next build passes and writes the page the failed one held back.
    preview.edit(expected, "    Element type: torch.float64\n", "    Element type: torch.float32\n")
    expect(body).to_contain_text("A sentence of a failed build.", timeout=WAIT_MS)
    assert preview.process.poll() is None
    assert preview.log().count(FAILED) == 1


def test_the_failure_names_the_command_it_needs_or_asks_for_the_fix():
    assert f"run `{ACCEPT_COMMAND}` in another terminal" in failure_message([ACCEPT_COMMAND])
    assert failure_message([]).endswith("Save the fix to rebuild.")
    assert "make" not in failure_message([])


def test_the_preview_learns_its_editions_configuration_from_sphinx_with_its_settings():
    """-D reaches the kernels the preview keeps waiting, as it reaches its builds (conf.py
    evaluated alone, as the preview once read it, knew nothing of -D); a setting Sphinx
    cannot use is its one line."""
    preview = load_tool("preview")
    conf = preview.edition_configuration("instructor", BOOK, {
        "coursebook_preview_kernel_imports": "json,numpy"})
    assert conf["kernel_imports"] == ["json", "numpy"], conf
    assert "coursebook" in conf["extensions"] and conf["html_theme"], conf
    assert "coursebook_machine_kinds_file is '/no/such.toml'" in preview.edition_configuration(
        "student", BOOK, {"coursebook_machine_kinds_file": "/no/such.toml"})


def test_files_written_before_their_rename_are_no_edits(tmp_path):
    from sphinx_autobuild.filter import IgnoreFilter

    ignored = IgnoreFilter([], load_tool("preview").NOT_EDITS)
    expected = tmp_path / "book" / "expected" / "torch-2.13.0"
    assert ignored(str(expected / ".pt02.txt.24294"))  # make accept-outputs writing
    assert not ignored(str(expected / "pt02.txt"))  # then renamed: an edit
    assert not ignored(str(tmp_path / "book" / "pt02.md"))
