"""Cell outputs on a page as the book compares them (a cut output's marker without its
digest)."""

from __future__ import annotations

from docutils import nodes

from coursebook.execute.notebook_runs import without_digest
from coursebook.model.outputs import normalise


def normalise_output_nodes(doctree) -> None:
    for block in doctree.findall(nodes.literal_block):
        if "output" not in block.get("classes", []):
            continue
        text = block.astext()
        cleaned = without_digest(normalise(text))
        if cleaned != text:
            block.children = [nodes.Text(cleaned)]
            block.rawsource = cleaned
