"""Machine-dependent output details are normalised, and only those."""

import pytest

from coursebook.outputs import normalise


@pytest.mark.parametrize("raw, shown", [
    ("grad_fn: <MulBackward0 object at 0x11247bbe0>", "grad_fn: <MulBackward0 object at 0x…>"),
    ("/tmp/ipykernel_43124/1142738744.py:5: UserWarning: x", "<cell>:5: UserWarning: x"),
    ("/var/folders/w9/T/ipykernel_1/22.py:5: UserWarning", "<cell>:5: UserWarning"),
    ("cannot import name 'mutable_array' from 'jax.experimental' "
     "(/venv/lib/python3.11/site-packages/jax/experimental/__init__.py)",
     "cannot import name 'mutable_array' from 'jax.experimental'"),
    ("cannot import name 'mutable_array' from 'jax.experimental' "  # a side folder's package
     "(/work/.venv-bridges-cpu-both/sides/old-torchax/jax/experimental/__init__.py)",
     "cannot import name 'mutable_array' from 'jax.experimental'"),
])
def test_machine_details_are_replaced(raw, shown):
    assert normalise(raw) == shown


@pytest.mark.parametrize("text", [
    "tensor([[1., 2.], [3., 4.]])",
    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x16 and 8x4)",
    "value 0x10 is a literal",  # a hex number that is not an address stays
])
def test_everything_else_is_left_alone(text):
    assert normalise(text) == text
