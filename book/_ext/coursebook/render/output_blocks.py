"""Cell outputs on a page, shown as the book compares them: machine details replaced.

The doctree's output blocks get :func:`~coursebook.model.outputs.normalise`'s placeholders,
and a cut output's marker loses its digest (kept in the cache, for the comparison).
"""

from __future__ import annotations

from docutils import nodes

from coursebook.execute.long_outputs import without_digest
from coursebook.model.outputs import normalise


def normalise_output_nodes(doctree) -> None:
    """Apply :func:`normalise` to every cell output block of a page; a cut output's
    marker is shown without its digest."""
    for block in doctree.findall(nodes.literal_block):
        if "output" not in block.get("classes", []):
            continue
        text = block.astext()
        cleaned = without_digest(normalise(text))
        if cleaned != text:
            block.children = [nodes.Text(cleaned)]
            block.rawsource = cleaned
