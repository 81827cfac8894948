"""Unit tests of the pure-Python set-associative LRU cache array."""

from __future__ import annotations

from collections import OrderedDict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pmsim.cache.lru import CacheArray


def test_empty_cache_misses() -> None:
    c = CacheArray(4, 2)
    assert c.lookup(0) is None
    assert c.lookup(12345) is None
    assert c.remove(7) is None


def test_insert_then_lookup_keeps_dirty_bit() -> None:
    c = CacheArray(4, 2)
    assert c.insert(5, True) is None
    assert c.insert(6, False) is None
    assert c.lookup(5)[0] == 1
    assert c.lookup(6)[0] == 0


def test_lines_map_to_sets_by_low_bits() -> None:
    c = CacheArray(4, 1)
    # lines 0..3 go to four different sets: none evicts another
    for line in range(4):
        assert c.insert(line, False) is None
    # line 4 shares set 0 with line 0 and evicts it
    assert c.insert(4, False) == (0, 0)
    assert c.lookup(0) is None
    assert all(c.lookup(line) is not None for line in (1, 2, 3, 4))


def test_victim_is_least_recently_inserted_without_touches() -> None:
    c = CacheArray(2, 3)
    for line in (0, 2, 4):  # all in set 0
        assert c.insert(line, False) is None
    assert c.insert(6, True) == (0, 0)
    assert c.insert(8, False) == (2, 0)
    assert c.insert(10, False) == (4, 0)
    assert c.insert(12, False) == (6, 1)  # the dirty bit travels with the victim


def test_touch_protects_a_line_from_eviction() -> None:
    c = CacheArray(1, 3)
    for line in (10, 11, 12):
        c.insert(line, False)
    c.touch(c.lookup(10))
    assert c.insert(13, False) == (11, 0)
    c.touch(c.lookup(12))
    assert c.insert(14, False) == (10, 0)


def test_lookup_does_not_change_lru_order() -> None:
    c = CacheArray(1, 2)
    c.insert(1, False)
    c.insert(2, False)
    for _ in range(5):
        assert c.lookup(1) is not None
    assert c.insert(3, False) == (1, 0)


def test_remove_frees_a_way() -> None:
    c = CacheArray(1, 2)
    c.insert(1, True)
    c.insert(2, False)
    assert c.remove(1) == [1, 1]
    assert c.lookup(1) is None
    assert c.insert(3, False) is None  # a way was free: nothing evicted
    assert c.insert(4, False) == (2, 0)


def test_stamps_are_unique_and_increase() -> None:
    c = CacheArray(2, 2)
    c.insert(0, False)
    c.insert(1, False)
    e0 = c.lookup(0)
    c.touch(e0)
    stamps = [c.lookup(0)[1], c.lookup(1)[1]]
    assert len(set(stamps)) == 2
    assert c.lookup(0)[1] > c.lookup(1)[1]
    assert c.clock == 3


def test_entry_is_mutable_in_place() -> None:
    c = CacheArray(1, 1)
    c.insert(9, False)
    c.lookup(9)[0] = 1
    assert c.insert(10, False) == (9, 1)


@pytest.mark.parametrize("sets, ways", [(1, 1), (1, 4), (8, 2), (64, 8)])
def test_never_holds_more_than_ways_per_set(sets: int, ways: int) -> None:
    c = CacheArray(sets, ways)
    for line in range(sets * ways * 3):
        c.insert(line, line % 2 == 1)
    assert all(len(s) == ways for s in c.data)


ops = st.lists(
    st.tuples(st.sampled_from(["access", "remove"]), st.integers(0, 40), st.booleans()),
    max_size=200)


@given(ops, st.sampled_from([(1, 1), (1, 3), (2, 2), (4, 4)]))
def test_matches_an_ordered_dict_lru_model(program: list[tuple[str, int, bool]],
                                           shape: tuple[int, int]) -> None:
    sets, ways = shape
    c = CacheArray(sets, ways)
    model: list[OrderedDict[int, bool]] = [OrderedDict() for _ in range(sets)]
    for op, line, dirty in program:
        s = model[line % sets]
        if op == "remove":
            got = c.remove(line)
            want = s.pop(line, None)
            assert (got is None) == (want is None)
            if got is not None:
                assert got[0] == int(want)
            continue
        e = c.lookup(line)
        assert (e is not None) == (line in s)
        if e is not None:
            c.touch(e)
            s.move_to_end(line)
            if dirty:
                e[0] = 1
                s[line] = True
            continue
        victim = c.insert(line, dirty)
        want_victim = None
        if len(s) >= ways:
            vline, vdirty = s.popitem(last=False)
            want_victim = (vline, int(vdirty))
        s[line] = dirty
        assert victim == want_victim
