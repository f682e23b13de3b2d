"""The theme's templates are compiled once per Python environment
(coursebook.render.html_pages): a build into a clean output folder compiles none
that a build before it compiled."""

from __future__ import annotations


import pytest
from conftest import ROOT, run_in_python


@pytest.mark.parametrize("kept", [True, False])
def test_a_build_into_a_clean_folder_compiles_no_template_compiled_before(tmp_path, kept):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.md").write_text("# Title\n\nText.\n")
    # Two builds of the book's configuration into folders of their own; the templates
    # Jinja compiles during the second. Without the kept ones (the check sees them).
    code = (
        "import json, jinja2\nfrom sphinx.application import Sphinx\n"
        "compiled = []\noriginal = jinja2.Environment.compile\n"
        "def compile(self, source, name=None, *args, **kwargs):\n"
        "    compiled.append(name)\n"
        "    return original(self, source, name, *args, **kwargs)\n"
        "jinja2.Environment.compile = compile\n"
        "def build(out):\n"
        f"    app = Sphinx({str(tmp_path / 'src')!r}, {str(ROOT)!r}, out + '/html', out + '/doctrees',\n"
        f"        'html', status=None, confoverrides={{'nb_execution_cache_path': {str(tmp_path / 'cache')!r}}})\n"
        f"    if not {kept!r}:\n"
        "        app.builder.templates.environment.bytecode_cache = None\n"
        "    app.build()\n"
        "    return app.statuscode\n"
        f"first = build({str(tmp_path / 'a')!r})\ncompiled.clear()\n"
        f"second = build({str(tmp_path / 'b')!r})\n"
        "print(json.dumps([first, second, len([n for n in compiled if n])]))")
    first, second, compiled = run_in_python(code)
    assert (first, second) == (0, 0)
    assert (compiled == 0) if kept else (compiled > 10)
