"""The theme's templates are compiled once per Python environment
(coursebook.render.html_pages): a build into a clean output folder compiles none
that a build before it compiled."""

from __future__ import annotations


import pytest
from conftest import ROOT, run_in_python


@pytest.mark.slow  # three Sphinx builds of the book's configuration
def test_a_build_into_a_clean_folder_compiles_no_template_compiled_before(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.md").write_text("# Title\n\nText.\n")
    # Builds of the book's configuration into folders of their own, in one Python; the
    # templates Jinja compiles during the second, and during a third without the kept ones
    # (the count sees compiles).
    code = (
        "import json, jinja2\nfrom sphinx.application import Sphinx\n"
        "compiled = []\noriginal = jinja2.Environment.compile\n"
        "def compile(self, source, name=None, *args, **kwargs):\n"
        "    compiled.append(name)\n"
        "    return original(self, source, name, *args, **kwargs)\n"
        "jinja2.Environment.compile = compile\n"
        "def build(out, kept):\n"
        "    compiled.clear()\n"
        f"    app = Sphinx({str(tmp_path / 'src')!r}, {str(ROOT)!r}, out + '/html',\n"
        "        out + '/doctrees', 'html', status=None,\n"
        "        confoverrides={'nb_execution_cache_path': "
        f"{str(tmp_path / 'cache')!r}}})\n"
        "    if not kept:\n"
        "        app.builder.templates.environment.bytecode_cache = None\n"
        "    app.build()\n"
        "    return [app.statuscode, len([n for n in compiled if n])]\n"
        f"print(json.dumps([build({str(tmp_path / 'a')!r}, True),\n"
        f"                  build({str(tmp_path / 'b')!r}, True),\n"
        f"                  build({str(tmp_path / 'c')!r}, False)]))")
    first, kept, not_kept = run_in_python(code)
    assert (first[0], kept[0], not_kept[0]) == (0, 0, 0)
    assert kept[1] == 0 and not_kept[1] > 10, (kept, not_kept)
