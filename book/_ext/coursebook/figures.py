"""Figures of the tensors a chapter just computed, each shown with the texts it draws as its
plain-text form, by which the book verifies it (never by its pixels)."""

from __future__ import annotations

import base64

import matplotlib.pyplot as plt
import torch
from IPython.core.pylabtools import print_figure
from IPython.display import display
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

_FORWARD, _BACKWARD, _MEMORY = "#dbe9f6", "#fde2c4", "#e4f2de"


def _show(fig, ax, xlim: tuple[float, float], ylim: tuple[float, float],
          equal: bool = True) -> None:
    ax.set(xlim=xlim, ylim=ylim, aspect="equal" if equal else "auto")
    ax.axis("off")
    fig.tight_layout()
    drawn = "\n".join(text.get_text().replace("\n", " ")
                      for axes in fig.axes for text in axes.texts)
    png = base64.b64encode(print_figure(fig, "png")).decode("ascii")
    display({"image/png": png, "text/plain": f"Figure drawing:\n{drawn}"}, raw=True)
    plt.close(fig)


def _box(ax, x: float, y: float, text: str, colour: str) -> None:
    ax.add_patch(FancyBboxPatch((x - 1.3, y - 0.3), 2.6, 0.6,
                                boxstyle="round,pad=0.05", facecolor=colour, edgecolor="#444"))
    ax.text(x, y, text, ha="center", va="center", fontsize=10, family="DejaVu Sans Mono")


def _arrow(ax, start: tuple[float, float], end: tuple[float, float]) -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14, color="#444"))


def computation_graph(tensors: dict[str, torch.Tensor]) -> None:
    """The forward tensors (by name, in order: the last is the output) in a row and, under
    them, the ``grad_fn`` nodes backward walks."""
    names = list(tensors)
    chain, node = [], tensors[names[-1]].grad_fn  # backward's nodes, from the output's
    while node is not None:
        chain.append(node)
        node = next((fn for fn, _ in node.next_functions if fn is not None), None)
    owner = {id(t.grad_fn): name for name, t in tensors.items() if t.grad_fn is not None}
    columns = max(len(names), len(chain))
    fig, ax = plt.subplots(figsize=(2.8 * columns, 3.2))
    for i, (name, tensor) in enumerate(tensors.items()):
        kind = "leaf" if tensor.is_leaf else f"grad_fn={type(tensor.grad_fn).__name__}"
        _box(ax, 3 * i, 2, f"{name}\n{kind}", _FORWARD)
        if i:
            _arrow(ax, (3 * (i - 1) + 1.35, 2), (3 * i - 1.35, 2))
    for depth, node in enumerate(chain):
        x = 3 * (len(chain) - 1 - depth)
        label = type(node).__name__
        if label == "AccumulateGrad":
            label += f"\n(writes {names[0]}.grad)"
        elif id(node) in owner:
            label += f"\n({owner[id(node)]}.grad_fn)"
        _box(ax, x, 0, label, _BACKWARD)
        if depth:
            _arrow(ax, (x + 3 - 1.35, 0), (x + 1.35, 0))
    ax.text(-1.4, 2.55, "forward: operations recorded", fontsize=9, color="#245")
    ax.text(-1.4, -0.55 - 0.2, "backward: from the output to the leaf", fontsize=9, color="#852")
    _show(fig, ax, (-1.6, 3 * (columns - 1) + 1.6), (-1.0, 2.8), equal=False)


def _grid(ax, values: torch.Tensor, left: float, top: float, colour: str, title: str,
          faded: set[int] | None = None) -> None:
    rows, cols = values.shape
    for r in range(rows):
        for c in range(cols):
            alpha = 0.35 if faded and r in faded else 1.0
            ax.add_patch(plt.Rectangle((left + c, top - r - 1), 1, 1, facecolor=colour,
                                       edgecolor="#444", alpha=alpha))
            ax.text(left + c + 0.5, top - r - 0.5, f"{values[r, c].item():g}", ha="center",
                    va="center", fontsize=9, alpha=max(alpha, 0.6))
    ax.text(left + cols / 2, top + 0.3, title, ha="center", fontsize=10)


def broadcast_bias(products: torch.Tensor, bias: torch.Tensor) -> None:
    """``products + bias``: the (C,) bias is reused for every row of the (B, C) batch."""
    batch = products.shape[0]
    repeated = bias.expand(batch, -1)
    width = products.shape[1]
    fig, ax = plt.subplots(figsize=(8.5, 0.9 * batch + 1.2))
    _grid(ax, products, 0, batch, _FORWARD, f"X @ W.T  {tuple(products.shape)}")
    ax.text(width + 0.5, batch / 2, "+", fontsize=16, ha="center", va="center")
    _grid(ax, repeated, width + 1, batch, _BACKWARD, f"b {tuple(bias.shape)}, broadcast",
          faded=set(range(1, batch)))
    ax.text(2 * width + 1.5, batch / 2, "=", fontsize=16, ha="center", va="center")
    _grid(ax, products + bias, 2 * width + 2, batch, _MEMORY, f"Z {tuple((products + bias).shape)}")
    ax.text(width + 1 + width / 2, -0.45, "faded rows: the same bias, not copied in memory",
            ha="center", fontsize=8, color="#852")
    _show(fig, ax, (-0.3, 3 * width + 2.3), (-0.8, batch + 0.8))


def strides(tensor: torch.Tensor) -> None:
    """One block of memory read two ways: a 2-D tensor and its transpose, with their strides."""
    storage, transposed = tensor.flatten(), tensor.T
    fig, ax = plt.subplots(figsize=(9, 3.6))
    _grid(ax, storage[None], 0, 4.2, _MEMORY, "memory: one flat block")
    _grid(ax, tensor, 0.5, 2.4, _FORWARD,
          f"A {tuple(tensor.shape)}, stride {tensor.stride()}")
    _grid(ax, transposed, tensor.shape[1] + 2, 2.4, _BACKWARD,
          f"A.T {tuple(transposed.shape)}, stride {transposed.stride()}")
    _show(fig, ax, (-0.3, max(len(storage), tensor.shape[1] + 2 + transposed.shape[1]) + 0.3),
          (-1.2, 4.7))
