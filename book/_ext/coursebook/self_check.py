"""Students check their own answers without seeing them.

This module's source is copied, as it is, into a cell of the student's notebook: plain
Python, nothing to install, no network. Each checkable answer is held there as a salted
digest of its *canonical form* (the same normalisation for the author's answer and the
student's value: tensors and arrays as nested lists, numbers rounded to the check's
tolerance, text with its spaces collapsed), with the hint its author wrote, scrambled so
that reading the notebook does not show it (:func:`scramble`); never the answer itself.
``check(name, value)`` says "correct", or "not yet" and the hint, unscrambled only then.

The book uses the same code: the student edition's table is made from the answers when a
chapter is prepared, and the instructor edition checks every answer against it.
"""

import base64
import hashlib
import json
import math

# Each check by name: the digest of its answer, its tolerance, its scrambled hint and its
# question.
CHECKS: dict[str, dict] = {}


def canonical(value, tolerance: float):
    """What the comparison sees of a value: plain JSON data, the same for equal answers."""
    if hasattr(value, "detach"):  # a torch tensor, on any device
        value = value.detach().cpu()
    if hasattr(value, "tolist") and hasattr(value, "shape"):  # a tensor or an array
        return canonical(value.tolist(), tolerance)
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return repr(value)
        steps = round(value / tolerance)
        return steps if steps != 0 else 0  # -0 and 0 alike
    if isinstance(value, str):
        return " ".join(value.split()).lower()
    if isinstance(value, (list, tuple)):  # torch.Size too
        return [canonical(item, tolerance) for item in value]
    if isinstance(value, dict):
        return {str(key): canonical(item, tolerance) for key, item in sorted(value.items())}
    raise TypeError(f"a check compares numbers, text, lists and tensors, not {type(value).__name__}")


def digest(name: str, value, tolerance: float) -> str:
    """The salted digest of a value's canonical form (the check's name is the salt)."""
    data = json.dumps(canonical(value, tolerance), separators=(",", ":"))
    return hashlib.sha256(f"{name}\0{data}".encode("utf8")).hexdigest()


def _mask(name: str, size: int) -> bytes:
    stream = b""
    while len(stream) < size:
        stream += hashlib.sha256(f"{name}\0hint\0{len(stream)}".encode("utf8")).digest()
    return stream[:size]


def scramble(name: str, hint: str) -> str:
    """A hint as the notebook holds it: unreadable until a wrong try (not a secret: a
    student who wants the hint can have it, but nobody reads it ahead by accident)."""
    data = hint.encode("utf8")
    return base64.b64encode(bytes(a ^ b for a, b in zip(data, _mask(name, len(data))))).decode()


def unscramble(name: str, scrambled: str) -> str:
    data = base64.b64decode(scrambled, validate=True)
    return bytes(a ^ b for a, b in zip(data, _mask(name, len(data)))).decode("utf8")


def passes(name: str, value) -> bool:
    """Whether ``value`` is the answer of check ``name`` (nothing printed)."""
    entry = CHECKS[name]
    return digest(name, value, entry["tolerance"]) == entry["digest"]


def check(name: str, value=...) -> None:
    """Compare ``value`` with the answer of check ``name``; prints the verdict."""
    entry = CHECKS.get(name)
    if entry is None:
        print(f"{name}: no such check here (the checks are: {', '.join(sorted(CHECKS))})")
    elif value is ...:
        print(f"{name}: put your answer in place of ... and run the cell again "
              f"({entry['ask']})")
    else:
        try:
            same = passes(name, value)
        except TypeError as error:
            print(f"{name}: not yet. {error}")
            return
        print(f"{name}: correct" if same else f"{name}: not yet. Hint: {unscramble(name, entry['hint'])}")
