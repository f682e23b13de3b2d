"""tools/private_names.py, the count issue 33's rule is held to: each kind of use of another
library's private name is found in a planted file, and the book's own names are not."""

from __future__ import annotations

import pytest

from conftest import load_tool

PLANTED = {
    "private attribute": "def f(app):\n    return app._warncount\n",
    "private module imported": "import torch._dynamo\n",
    "private name imported": "from sphinx.util import _private_thing\n",
    "private attribute (by name)": "def f(app):\n    return getattr(app, '_warncount')\n",
    "sys.modules entry replaced": "import sys\nsys.modules['myst_nb.core'] = None\n",
    "another library's global rebound": "import myst_nb\nmyst_nb.setup = None\n",
    "private module imported ahead": 'coursebook_kernel_imports = ["torch", "torch._dynamo"]\n',
    "another library's attribute replaced": "def f(app):\n    app.env.config = app.config\n",
    "another library's attribute given a stand-in": (
        "from jupyter_client.provisioning import LocalProvisioner\n\n\n"
        "class Provisioner(LocalProvisioner):\n    def start(self):\n"
        "        self.process = _Process()\n"),
}


@pytest.mark.parametrize("kind", PLANTED)
def test_each_kind_of_use_is_counted(tmp_path, kind):
    tool = load_tool("private_names")
    planted = tmp_path / "planted.py"
    planted.write_text(PLANTED[kind])
    assert [use.kind for use in tool.private_uses([planted])] == [kind]


def test_the_books_own_underscore_names_are_not_counted(tmp_path):
    tool = load_tool("private_names")
    own = tmp_path / "own.py"
    own.write_text("class A:\n    def _helper(self):\n        return self._helper\n\n\n"
                   "coursebook_kernel_imports = ['torch', 'matplotlib.pyplot']\n")
    assert tool.private_uses([own]) == []
