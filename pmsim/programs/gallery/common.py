"""What several gallery structures share: argument generators for keys and values, and a
dictionary model."""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np

Args = Callable[[np.random.Generator], tuple[int, ...]]


def key_args(keys: int) -> Args:
    """One key in 1..keys."""
    return lambda rng: (int(rng.integers(1, keys + 1)),)


def key_value_args(keys: int) -> Args:
    """A key in 1..keys and a 32-bit value (never 0)."""
    return lambda rng: (int(rng.integers(1, keys + 1)), int(rng.integers(1, 1 << 32)))


class DictModel:
    """The reference of a map: a dict (put, delete returning whether the key was there, get)."""

    def __init__(self) -> None:
        self.d: dict[int, int] = {}

    def put(self, k: int, v: int) -> None:
        self.d[k] = v

    def delete(self, k: int) -> bool:
        return self.d.pop(k, None) is not None

    def get(self, k: int) -> int | None:
        return self.d.get(k)

    def state(self) -> Hashable:
        return frozenset(self.d.items())
