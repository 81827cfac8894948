"""Runtime options in a name (``dudetx[persist_bw=4]``): typed, validated, picklable by name."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pmsim.errors import ConfigError
from pmsim.runtimes import RUNTIMES, get_runtime
from pmsim.runtimes.options import canonical, settable
from pmsim.runtimes.registry import declares_crash_irrelevant, reference


def test_options_set_class_settings_and_keep_the_family() -> None:
    cls = get_runtime("dudetx[persist_bw=4, vlog_entries=0x100]")
    base = get_runtime("dudetx")
    assert issubclass(cls, base) and cls is not base
    assert (cls.persist_bw, cls.vlog_entries, cls.family) == (4.0, 256, "dudetx")
    assert base.persist_bw == 1.0  # the registered protocol is untouched
    assert cls.name == "dudetx[persist_bw=4.0,vlog_entries=256]"
    assert reference(cls) == (cls.name, "")
    assert declares_crash_irrelevant(cls) == declares_crash_irrelevant(base)


def test_equal_settings_share_one_class_and_stay_out_of_the_listing() -> None:
    a = get_runtime("undo[elide_flushes=yes]")
    b = get_runtime("undo[ elide_flushes = true ]")
    assert a is b and a.elide_flushes is True
    assert not any("[" in k for k in RUNTIMES)


@pytest.mark.parametrize(("name", "says"), [
    ("dudetx[nope=1]", "Known options of 'dudetx'"),
    ("dudetx[persist_bw=fast]", "expected a non-negative float"),
    ("dudetx[vlog_entries=-3]", "expected a non-negative int"),
    ("dudetx[vlog_entries]", "has no value"),
    ("dudetx[]", "sets no option"),
    ("dudetx[durable=no]", "unknown option"),
    ("nosuch[a=1]", "unknown runtime 'nosuch'"),
])
def test_bad_options_say_what_to_write(name: str, says: str) -> None:
    with pytest.raises(ConfigError, match=None) as e:
        get_runtime(name)
    assert says in str(e.value)


@given(st.floats(min_value=0, max_value=1e6, allow_nan=False), st.integers(1, 1 << 20))
def test_canonical_name_round_trips(bw: float, entries: int) -> None:
    cls = get_runtime(f"dudetx[vlog_entries={entries},persist_bw={bw!r}]")
    assert get_runtime(cls.name) is cls
    assert cls.name == canonical("dudetx", {"persist_bw": bw, "vlog_entries": entries})
    assert set(settable(cls)) >= {"persist_bw", "vlog_entries"}


def test_dataclass_fields_are_options_and_keep_their_validation() -> None:
    cls = get_runtime("stm[stm_config.access_ns=12]")
    assert cls.stm_config.access_ns == 12.0
    assert get_runtime("stm").stm_config.access_ns != 12.0
    assert "stm_config.locks" in settable(cls)
    with pytest.raises(ConfigError, match="power of two"):
        get_runtime("stm[stm_config.locks=3]")
