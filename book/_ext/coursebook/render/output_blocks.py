"""Cell outputs on a page, shown as the book compares them: machine details replaced."""

from __future__ import annotations

from docutils import nodes

from coursebook.execute.notebook_runs import without_digest
from coursebook.model.outputs import normalise


def normalise_output_nodes(doctree) -> None:
    """A cut output's marker loses its digest (the comparison's, kept in the cache)."""
    for block in doctree.findall(nodes.literal_block):
        if "output" not in block.get("classes", []):
            continue
        text = block.astext()
        cleaned = without_digest(normalise(text))
        if cleaned != text:
            block.children = [nodes.Text(cleaned)]
            block.rawsource = cleaned
