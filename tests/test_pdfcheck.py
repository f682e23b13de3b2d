"""The PDF checks read LaTeX logs as intended (the full PDF builds are in test_pdf.py)."""

import pytest

from coursebook.pdfcheck import log_problems


@pytest.mark.parametrize("log, found", [
    ("Overfull \\hbox (5.1234pt too wide) in paragraph at lines 10--12\n", 1),
    ("Overfull \\hbox (1.5pt too wide) in paragraph at lines 10--12\n", 0),
    ("Missing character: There is no ✗ (U+2717) in font FreeSerif!\n", 1),
    ("Underfull \\hbox (badness 10000) in paragraph\n", 0),
])
def test_log_problems(tmp_path, log, found):
    path = tmp_path / "book.log"
    path.write_text(log)
    assert len(log_problems(path)) == found
