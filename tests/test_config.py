"""MachineConfig: validation messages, dotted replace, describe(), JSON/YAML round-trips."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from pmsim.config import (
    CacheConfig,
    CacheLevel,
    CostConfig,
    DRAMConfig,
    MachineConfig,
    PMConfig,
    Region,
    describe,
    param,
)
from pmsim.errors import ConfigError, UnknownNameError


def test_defaults_validate_and_expose_regions() -> None:
    cfg = MachineConfig()
    assert cfg.pm_region.kind == "pm"
    assert cfg.dram_region is not None and cfg.dram_region.kind == "dram"
    assert cfg.domain == "pdom1"
    assert cfg.cache.l1.sets == 32 * 1024 // (64 * 8)


def test_dram_region_is_optional() -> None:
    cfg = MachineConfig(regions=(Region("pm", 0, 4096, "pm"),))
    assert cfg.dram_region is None
    assert cfg.pm_region.end == 4096


def test_configs_are_frozen() -> None:
    cfg = MachineConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.cores = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.pm.read_ns = 1.0  # type: ignore[misc]


def test_config_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        MachineConfig(cores=0)


def test_param_rejects_mutable_defaults() -> None:
    with pytest.raises(TypeError, match="tuple"):
        param([1, 2], "", "a list")


# -- validation ------------------------------------------------------------------------------

@pytest.mark.parametrize("size_kib, ways", [(3, 8), (96, 8), (48, 16)])
def test_sets_must_be_a_power_of_two(size_kib: int, ways: int) -> None:
    with pytest.raises(ConfigError, match=r"CacheLevel\.size_kib: .* not a power of two"):
        CacheLevel(size_kib, ways, 1.0)


@pytest.mark.parametrize("size_kib, ways", [(1, 3), (32, 5), (8, 7)])
def test_ways_must_divide_the_lines(size_kib: int, ways: int) -> None:
    with pytest.raises(ConfigError, match=r"CacheLevel\.ways: .* not divisible into"):
        CacheLevel(size_kib, ways, 1.0)


@pytest.mark.parametrize("make, field", [
    (lambda: CacheLevel(32, 8, -1.0), "CacheLevel.latency_ns"),
    (lambda: PMConfig(read_ns=-0.5), "PMConfig.read_ns"),
    (lambda: PMConfig(write_ns=-1), "PMConfig.write_ns"),
    (lambda: PMConfig(to_wpq_ns=-30.0), "PMConfig.to_wpq_ns"),
    (lambda: DRAMConfig(-90.0), "DRAMConfig.latency_ns"),
    (lambda: CostConfig(store_ns=-1.0), "CostConfig.store_ns"),
    (lambda: CostConfig(snoop_ns=-2.0), "CostConfig.snoop_ns"),
    (lambda: MachineConfig(barrier_ns=-1.0), "MachineConfig.barrier_ns"),
])
def test_negative_latencies_are_rejected(make: Any, field: str) -> None:
    with pytest.raises(ConfigError) as ei:
        make()
    msg = str(ei.value)
    assert msg.startswith(field + ":")
    assert ">= 0" in msg and "non-negative" in msg


@pytest.mark.parametrize("make, field", [
    (lambda: PMConfig(banks=0), "PMConfig.banks"),
    (lambda: PMConfig(wpq_entries=-4), "PMConfig.wpq_entries"),
    (lambda: PMConfig(wpq_entries=2.5), "PMConfig.wpq_entries"),
    (lambda: PMConfig(banks=True), "PMConfig.banks"),
    (lambda: CacheLevel(0, 8, 1.0), "CacheLevel.size_kib"),
    (lambda: MachineConfig(cores=0), "MachineConfig.cores"),
])
def test_counts_must_be_positive_integers(make: Any, field: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{field}: must be a positive integer"):
        make()


def test_latency_must_be_a_number_not_a_bool_or_string() -> None:
    with pytest.raises(ConfigError, match="PMConfig.read_ns"):
        PMConfig(read_ns="300")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="DRAMConfig.latency_ns"):
        DRAMConfig(True)  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [
    lambda: PMConfig(read_ns=float("nan")),
    lambda: CostConfig(fence_ns=float("nan")),
    lambda: MachineConfig(quantum_ns=float("nan")),
])
def test_nan_is_not_a_valid_latency(make: Any) -> None:
    with pytest.raises(ConfigError):
        make()


def test_too_many_cores() -> None:
    with pytest.raises(ConfigError, match="at most 64 cores"):
        MachineConfig(cores=65)
    assert MachineConfig(cores=64).cores == 64


def test_overlapping_regions_name_both_ranges() -> None:
    regions = (Region("pm", 0, 8192, "pm"), Region("dram", 4096, 8192, "dram"))
    with pytest.raises(ConfigError) as ei:
        MachineConfig(regions=regions)
    msg = str(ei.value)
    assert "MachineConfig.regions" in msg
    assert "'pm'" in msg and "'dram'" in msg and "overlaps" in msg and "0x1000" in msg


def test_adjacent_regions_do_not_overlap() -> None:
    cfg = MachineConfig(regions=(Region("dram", 4096, 4096, "dram"), Region("pm", 0, 4096, "pm")))
    assert cfg.pm_region.name == "pm"


def test_no_pm_region() -> None:
    with pytest.raises(ConfigError, match="has no 'pm' region"):
        MachineConfig(regions=(Region("d", 0, 4096, "dram"),))
    with pytest.raises(ConfigError, match="regions: is empty"):
        MachineConfig(regions=())


def test_duplicate_region_names() -> None:
    with pytest.raises(ConfigError, match="duplicate names"):
        MachineConfig(regions=(Region("a", 0, 4096, "pm"), Region("a", 8192, 4096, "dram")))


@pytest.mark.parametrize("kwargs, match", [
    ({"base": 32}, r"Region\.base: 32 is not a 64-byte aligned"),
    ({"base": -64}, r"Region\.base"),
    ({"size": 100}, r"Region\.size: 100 is not a positive multiple of 64"),
    ({"size": 0}, r"Region\.size"),
    ({"kind": "flash"}, r"Region\.kind: unknown kind 'flash'. Use 'pm' or 'dram'"),
])
def test_bad_regions(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        Region(**kwargs)


def test_bad_domain_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as ei:
        MachineConfig(domain="pdom3")  # type: ignore[arg-type]
    msg = str(ei.value)
    assert "MachineConfig.domain" in msg and "'pdom3'" in msg
    assert "pdom0, pdom1, pdom2" in msg


def test_bad_barrier_mode_quantum_and_seed() -> None:
    with pytest.raises(ConfigError, match="'modelled' or 'fixed'"):
        MachineConfig(barrier="free")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="quantum_ns: must be > 0"):
        MachineConfig(quantum_ns=0.0)
    with pytest.raises(ConfigError, match="seed: must be an integer"):
        MachineConfig(seed=1.5)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="seed"):
        MachineConfig(seed=True)


# -- replace ---------------------------------------------------------------------------------

def test_replace_with_dotted_names() -> None:
    cfg = MachineConfig()
    new = cfg.replace(**{"pm.read_ns": 123.0, "cache.l1.ways": 4, "cache.llc.latency_ns": 9.0,
                         "domain": "pdom0", "costs.fence_ns": 7.0})
    assert new.pm.read_ns == 123.0
    assert new.cache.l1.ways == 4 and new.cache.l1.size_kib == cfg.cache.l1.size_kib
    assert new.cache.llc.latency_ns == 9.0
    assert new.cache.l2 == cfg.cache.l2
    assert new.domain == "pdom0"
    assert new.costs.fence_ns == 7.0 and new.costs.store_ns == cfg.costs.store_ns
    assert new.pm.write_ns == cfg.pm.write_ns
    assert cfg == MachineConfig()  # the original is untouched


def test_replace_whole_section_and_field_of_it() -> None:
    cfg = MachineConfig().replace(pm=PMConfig(read_ns=1.0), **{"pm.banks": 2})
    assert cfg.pm.read_ns == 1.0 and cfg.pm.banks == 2


def test_replace_unknown_dotted_field_suggests() -> None:
    with pytest.raises(UnknownNameError) as ei:
        MachineConfig().replace(**{"pm.raed_ns": 1.0})
    msg = str(ei.value)
    assert "'raed_ns'" in msg and "Did you mean 'read_ns'" in msg
    with pytest.raises(UnknownNameError, match="Did you mean 'cores'"):
        MachineConfig().replace(coers=3)


def test_replace_validates_the_result() -> None:
    with pytest.raises(ConfigError, match="PMConfig.banks"):
        MachineConfig().replace(**{"pm.banks": 0})
    with pytest.raises(ConfigError, match="power of two"):
        MachineConfig().replace(**{"cache.l1.size_kib": 24})


# -- describe --------------------------------------------------------------------------------

def _leaf_names(obj: Any, prefix: str = "") -> list[str]:
    out: list[str] = []
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if dataclasses.is_dataclass(v):
            out.extend(_leaf_names(v, prefix + f.name + "."))
        else:
            out.append(prefix + f.name)
    return out


def test_describe_lists_every_leaf_with_help() -> None:
    cfg = MachineConfig()
    rows = describe(cfg)
    assert [r[0] for r in rows] == _leaf_names(cfg)
    assert {"cores", "pm.read_ns", "cache.llc.ways", "costs.snoop_ns", "regions"} <= {r[0] for r in rows}
    for name, value, unit, help_ in rows:
        assert help_.strip(), f"{name} has no help text"
        assert isinstance(unit, str)
        assert value == _get(cfg, name)


def _get(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def test_describe_units() -> None:
    units = {name: unit for name, _, unit, _ in describe(MachineConfig())}
    assert units["pm.read_ns"] == "ns"
    assert units["cache.l1.size_kib"] == "KiB"
    assert units["cache.llc.ways"] == "ways"
    assert units["pm.wpq_entries"] == "entries"
    assert units["pm.banks"] == "banks"
    assert units["cores"] == "cores"
    assert units["barrier_ns"] == "ns"
    # every latency/cost field (name ending in _ns) is in nanoseconds
    assert all(u == "ns" for n, u in units.items() if n.endswith("_ns"))


def test_describe_reflects_replaced_values() -> None:
    rows = dict((n, v) for n, v, _, _ in describe(MachineConfig().replace(**{"pm.banks": 3})))
    assert rows["pm.banks"] == 3


# -- dicts, JSON, YAML, files ----------------------------------------------------------------

def test_dict_round_trip_is_plain_data() -> None:
    cfg = MachineConfig()
    d = cfg.to_dict()
    assert isinstance(d["regions"], list) and isinstance(d["regions"][0], dict)
    assert isinstance(d["cache"]["l1"], dict)
    json.dumps(d)  # plain data only
    assert MachineConfig.from_dict(d) == cfg


def test_partial_dict_fills_defaults_and_converts_numbers() -> None:
    cfg = MachineConfig.from_dict({"pm": {"read_ns": 200}, "cores": 4.0})
    assert cfg.pm.read_ns == 200.0 and isinstance(cfg.pm.read_ns, float)
    assert cfg.cores == 4 and isinstance(cfg.cores, int)
    assert cfg.pm.write_ns == PMConfig().write_ns
    assert cfg.cache == CacheConfig()


def test_unknown_top_level_field_suggests() -> None:
    with pytest.raises(UnknownNameError) as ei:
        MachineConfig.from_dict({"domian": "pdom0"})
    msg = str(ei.value)
    assert "unknown MachineConfig field 'domian'" in msg
    assert "Did you mean 'domain'" in msg


def test_unknown_nested_field_names_its_path() -> None:
    with pytest.raises(UnknownNameError) as ei:
        MachineConfig.from_dict({"cache": {"l2": {"latncy_ns": 3}}})
    msg = str(ei.value)
    assert "MachineConfig.cache.l2" in msg and "Did you mean 'latency_ns'" in msg


def test_unknown_field_in_a_region() -> None:
    with pytest.raises(UnknownNameError, match=r"MachineConfig\.regions\[1\].*'kind'"):
        MachineConfig.from_dict({"regions": [{"name": "pm"}, {"name": "d", "knd": "dram"}]})


def test_section_must_be_a_mapping_and_regions_a_list() -> None:
    with pytest.raises(ConfigError, match=r"MachineConfig\.pm: expected a mapping, got int"):
        MachineConfig.from_dict({"pm": 3})
    with pytest.raises(ConfigError, match=r"MachineConfig\.regions: expected a list"):
        MachineConfig.from_dict({"regions": "pm"})
    with pytest.raises(ConfigError, match="expected a mapping, got list"):
        MachineConfig.from_dict([1, 2])  # type: ignore[arg-type]


def test_from_dict_validates_values() -> None:
    with pytest.raises(ConfigError, match="unknown domain 'pdom9'"):
        MachineConfig.from_dict({"domain": "pdom9"})


def test_json_round_trip_and_errors() -> None:
    cfg = MachineConfig(cores=3, domain="pdom0", seed=7)
    assert MachineConfig.from_json(cfg.to_json()) == cfg
    with pytest.raises(ConfigError, match="not valid JSON"):
        MachineConfig.from_json("{cores: 2")
    with pytest.raises(UnknownNameError, match="Did you mean 'wpq_entries'"):
        MachineConfig.from_json('{"pm": {"wpq_entrys": 4}}')


def test_yaml_round_trip_and_errors() -> None:
    cfg = MachineConfig(cores=4, barrier="fixed", barrier_ns=250.0)
    text = cfg.to_yaml()
    assert yaml.safe_load(text) == cfg.to_dict()
    assert MachineConfig.from_yaml(text) == cfg
    with pytest.raises(ConfigError, match="not valid YAML"):
        MachineConfig.from_yaml("pm: [1, 2\ncores: 3")
    with pytest.raises(UnknownNameError, match="Did you mean 'barrier_ns'"):
        MachineConfig.from_yaml("barrier_nss: 3\n")


def test_load_files(tmp_path: Path) -> None:
    cfg = MachineConfig(cores=5, seed=3).replace(**{"pm.wpq_entries": 16})
    (tmp_path / "m.json").write_text(cfg.to_json())
    (tmp_path / "m.yaml").write_text(cfg.to_yaml())
    (tmp_path / "m.yml").write_text(cfg.to_yaml())
    for name in ("m.json", "m.yaml", "m.yml"):
        assert MachineConfig.load(tmp_path / name) == cfg
    assert MachineConfig.load(str(tmp_path / "m.json")) == cfg


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        MachineConfig.load(tmp_path / "missing.json")
    (tmp_path / "m.toml").write_text("cores = 2\n")
    with pytest.raises(ConfigError, match=r"unknown extension '\.toml'. Use \.json, \.yaml or \.yml"):
        MachineConfig.load(tmp_path / "m.toml")


numeric_changes = st.fixed_dictionaries({
    "cores": st.integers(1, 64),
    "seed": st.integers(0, 2**64 - 1),
    "barrier_ns": st.floats(0, 1e9, allow_nan=False, allow_infinity=False),
    "quantum_ns": st.floats(1e-3, 1e9, allow_nan=False, allow_infinity=False),
    "pm.read_ns": st.floats(0, 1e6, allow_nan=False, allow_infinity=False),
    "pm.write_ns": st.floats(0, 1e6, allow_nan=False, allow_infinity=False),
    "pm.wpq_entries": st.integers(1, 4096),
    "pm.banks": st.integers(1, 64),
    "cache.l1.latency_ns": st.floats(0, 100, allow_nan=False, allow_infinity=False),
    "domain": st.sampled_from(["pdom0", "pdom1", "pdom2"]),
})


@given(numeric_changes)
def test_json_round_trip_property(changes: dict[str, Any]) -> None:
    cfg = MachineConfig().replace(**changes)
    back = MachineConfig.from_json(cfg.to_json())
    assert back == cfg
    assert back.to_json() == cfg.to_json()


@given(numeric_changes)
def test_yaml_round_trip_property(changes: dict[str, Any]) -> None:
    cfg = MachineConfig().replace(**changes)
    back = MachineConfig.from_yaml(cfg.to_yaml())
    assert back == cfg
    assert type(back.pm.read_ns) is float and type(back.pm.wpq_entries) is int
