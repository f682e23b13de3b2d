"""MathJax is served with the book, copied where it changed only
(coursebook.render.html_pages), with no other extension loaded for it."""

from __future__ import annotations

import filecmp
import os
from pathlib import Path

import pytest

from conftest import ROOT, run_in_python
from coursebook.render.html_pages import copy_changed_files, mathjax_files


def test_only_missing_or_changed_files_are_copied(tmp_path):
    source, target = tmp_path / "source", tmp_path / "target"
    (source / "fonts").mkdir(parents=True)
    (source / "tex.js").write_text("tex")
    (source / "fonts" / "a.woff").write_text("font")
    assert copy_changed_files(source, target) == [target / "fonts" / "a.woff", target / "tex.js"]
    assert copy_changed_files(source, target) == []  # nothing changed
    (source / "tex.js").write_text("tex, upgraded")  # another size
    assert copy_changed_files(source, target) == [target / "tex.js"]
    (target / "fonts" / "a.woff").write_text("FONT")  # same size, another time
    os.utime(target / "fonts" / "a.woff", ns=(0, 0))
    assert copy_changed_files(source, target) == [target / "fonts" / "a.woff"]
    assert all(filecmp.cmp(path, target / path.relative_to(source), shallow=False)
               for path in source.rglob("*") if path.is_file())


@pytest.mark.slow  # builds a page (HTML), in a Python of its own
def test_an_html_build_serves_mathjax_and_reads_in_parallel(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.md").write_text("# Title\n\n$x^2$\n")
    out = tmp_path / "out"
    code = (
        "import json\nfrom pathlib import Path\nfrom sphinx.application import Sphinx\n"
        f"app = Sphinx({str(tmp_path / 'src')!r}, {str(ROOT)!r}, {str(out / 'html')!r},\n"
        f"    {str(out / 'doctrees')!r}, 'html', status=None, parallel=2,\n"
        f"    confoverrides={{'nb_execution_cache_path': {str(tmp_path / 'cache')!r}}})\n"
        "app.build()\n"
        "print(json.dumps([app.statuscode, app.is_parallel_allowed('read'),\n"
        "    sorted(name for name in app.extensions if 'mathjax' in name)]))")
    status, parallel, loaded = run_in_python(code)
    assert (status, parallel, loaded) == (0, True, ["sphinx.ext.mathjax"])
    source = mathjax_files()
    files = [path for path in Path(source).rglob("*") if path.is_file()]
    served = out / "html" / "_static" / "mathjax"
    assert files and all(filecmp.cmp(path, served / path.relative_to(source), shallow=False)
                         for path in files)
    assert "mathjax/tex-chtml.js" in (out / "html" / "index.html").read_text()
