"""Machine-dependent details in outputs, replaced by stable placeholders.

The rules are explicit and few: memory addresses and ipykernel's temporary cell paths.
The same normalisation applies to outputs on the page and to error messages compared
against a recorded exhibit, so both speak of the same text.
"""

from __future__ import annotations

import re

from docutils import nodes

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bat 0x[0-9a-fA-F]+"), "at 0x…"),
    (re.compile(r"[^\s:'\"]*ipykernel_\d+[/\\]\d+\.py"), "<cell>"),
)


def normalise(text: str) -> str:
    """Replace what differs from machine to machine, and nothing else."""
    for pattern, placeholder in _RULES:
        text = pattern.sub(placeholder, text)
    return text


def normalise_output_nodes(doctree: nodes.document) -> None:
    """Apply :func:`normalise` to every cell output block of a page."""
    for block in doctree.findall(nodes.literal_block):
        if "output" not in block.get("classes", []):
            continue
        text = block.astext()
        cleaned = normalise(text)
        if cleaned != text:
            block.children = [nodes.Text(cleaned)]
            block.rawsource = cleaned
