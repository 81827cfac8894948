"""The undo record checksum: the C core's FNV-1a equals the Python reference."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pmsim.runtimes.marathe import undo

words = st.lists(st.integers(0, 2**64 - 1), max_size=40)


@given(words)
def test_c_checksum_equals_the_python_reference(ws: list[int]) -> None:
    assert undo.checksum(ws) == undo.checksum(tuple(ws)) == undo.checksum_py(ws)


def test_checksum_of_nothing_is_the_offset_basis() -> None:
    assert undo.checksum([]) == 0xCBF29CE484222325


def test_a_word_out_of_range_gets_pythons_answer_or_error() -> None:
    with pytest.raises(TypeError):
        undo.checksum([1, "x"])  # type: ignore[list-item]
    assert undo.checksum([2**64 + 5]) == undo.checksum_py([2**64 + 5])
