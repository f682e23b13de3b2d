"""Students check their own answers without seeing them (docs/authoring.md, "Answers students
can check"). This module, its docstring left out, is a cell of the student's notebook: plain
Python, nothing to install, no network."""

import base64
import hashlib
import json
import math
import warnings

# Each check by name: the digests of its answer and of its numbers, its tolerance, its
# scrambled hint and its question; for a function, the code of its own inputs.
CHECKS: dict[str, dict] = {}


FINE = 20  # steps per tolerance: the tolerance holds to a fortieth of itself


def canonical(value, numbers: list):
    """What the comparison sees of a value: plain JSON data, each finite number replaced by
    "#" and appended to ``numbers`` (compared on their own, within the tolerance)."""
    if hasattr(value, "detach"):  # a torch tensor, on any device
        with warnings.catch_warnings():  # torchax's copy out of JAX warns that it is read-only
            warnings.simplefilter("ignore")
            value = value.detach().cpu()
    if hasattr(value, "tolist") and hasattr(value, "shape"):  # a tensor or an array
        return canonical(value.tolist(), numbers)
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return repr(value)
        numbers.append(value)
        return "#"
    if isinstance(value, str):
        return " ".join(value.split()).lower()
    if isinstance(value, (list, tuple)):  # torch.Size too
        return [canonical(item, numbers) for item in value]
    if isinstance(value, dict):
        return {str(key): canonical(item, numbers) for key, item in sorted(value.items())}
    raise TypeError(f"a check compares numbers, text, lists and tensors, not {type(value).__name__}")


def _hash(*parts) -> str:
    return hashlib.sha256("\0".join(map(str, parts)).encode("utf8")).hexdigest()


def _whole(name: str, shape, number_digests: list) -> str:
    return _hash(name, json.dumps(shape, separators=(",", ":")), *number_digests)


def number_digests(name: str, value, tolerance: float) -> list:
    """The salted digest of each number of a value, on a grid of FINE steps per tolerance."""
    numbers: list = []
    canonical(value, numbers)
    return [_hash(name, index, round(number * FINE / tolerance))
            for index, number in enumerate(numbers)]


def digest(name: str, value, tolerance: float) -> str:
    """The salted digest of a value: its shape, text and numbers (the check's name is the
    salt)."""
    return _whole(name, canonical(value, []), number_digests(name, value, tolerance))


class CannotCheck(Exception):
    """The check's own inputs could not be made: nothing the student wrote is wrong."""


def results(entry: dict, function) -> list:
    """What a function returns on a check's own inputs, one result per argument tuple; what
    it raised is raised on, holding the input in ``check_input`` (check() prints it)."""
    if not callable(function):
        raise TypeError("this check wants your function itself (its name, not a call)")
    scope: dict = {}
    try:
        exec(entry["inputs"], scope)
    except Exception as error:  # a module or a mode a cell above sets up, say
        raise CannotCheck(f"making the check's own inputs raised {type(error).__name__}: "
                          f"{error}. Run the cells above it, then this one again") from None
    returned = []
    for arguments in scope["inputs"]:
        try:
            returned.append(function(*arguments))
        except Exception as error:
            error.check_input = ", ".join(f"a tensor of shape {tuple(argument.shape)}"
                                          if hasattr(argument, "shape") else repr(argument)
                                          for argument in arguments)
            raise
    return returned


def passes(name: str, value) -> bool:
    """Whether ``value`` is the answer of check ``name`` (nothing printed): the same shape
    and text, and each number within the tolerance of the answer's (to a FINE-th of it).
    For a check with inputs, ``value`` is a function, and what it returns is compared."""
    entry = CHECKS[name]
    if "inputs" in entry:
        value = results(entry, value)
    numbers: list = []
    shape = canonical(value, numbers)
    if len(numbers) != len(entry["numbers"]):
        return False
    steps = FINE / entry["tolerance"]
    for index, (number, stored) in enumerate(zip(numbers, entry["numbers"])):
        if not any(_hash(name, index, step) == stored for step in range(
                math.ceil(number * steps - FINE), math.floor(number * steps + FINE) + 1)):
            return False
    return _whole(name, shape, entry["numbers"]) == entry["digest"]


def exact(name: str, value) -> None:
    """The instructor edition's check that ``value``, what the answer's cell computes, is the
    stated answer to a step of the grid, not a rounding of it: the tolerance is centred on
    the stated answer. For a check with inputs, ``value`` is the function."""
    entry = CHECKS[name]
    if "inputs" in entry:
        value = results(entry, value)
    if digest(name, value, entry["tolerance"]) != entry["digest"]:
        numbers: list = []
        canonical(value, numbers)
        raise AssertionError(f"check {name}: its answer is not the value its cell computes, "
                             f"whose numbers are {numbers}, but a rounding of it: write those "
                             "in full, so that the tolerance is centred on them")


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
        except CannotCheck as error:
            print(f"{name}: cannot check yet: {error}")
            return
        except Exception as error:
            if hasattr(error, "check_input"):  # the student's function raised it
                print(f"{name}: not yet. Your function raised {type(error).__name__} on the "
                      f"check's input ({error.check_input}): {error}")
            elif isinstance(error, TypeError):  # a value the check cannot compare
                print(f"{name}: not yet. {error}")
            else:  # a value beyond the check's numbers (1e308, a meta tensor)
                print(f"{name}: not yet. This value cannot be compared "
                      f"({type(error).__name__}: {error})")
            return
        print(f"{name}: correct" if same else f"{name}: not yet. Hint: {unscramble(name, entry['hint'])}")
