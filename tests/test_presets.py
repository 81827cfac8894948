"""Named presets: each builds, validates, round-trips, runs, and cites a source."""

from __future__ import annotations

import importlib.util

import pytest

from pmsim import Machine, MachineConfig
from pmsim.errors import UnknownNameError
from pmsim.presets import PRESETS, _ddr3_ns, preset

NAMES = sorted(PRESETS)


def _need(backend: str) -> None:
    if backend == "c" and importlib.util.find_spec("pmsim.hw.engines.native_engine") is None:
        pytest.skip("the C engine module pmsim.hw.engines.native_engine does not exist yet")


def test_the_documented_presets_exist() -> None:
    expected = {"default", "optane-adr", "eadr", "pdom0", "marathe-pdom0", "marathe-pdom1",
                "marathe-pdom2", "proteus-marss", "proteus-marss-slownvm", "proteus-marss-dram",
                "loc-gem5"}
    assert expected <= set(PRESETS)


@pytest.mark.parametrize("name", NAMES)
def test_preset_builds_and_validates(name: str) -> None:
    cfg = preset(name)
    assert isinstance(cfg, MachineConfig)
    # rebuilding from its fields runs validation again
    assert MachineConfig.from_dict(cfg.to_dict()) == cfg
    assert preset(name) == cfg  # a factory: same config every time


@pytest.mark.parametrize("name", NAMES)
def test_preset_round_trips_json_and_yaml(name: str) -> None:
    cfg = preset(name)
    assert MachineConfig.from_json(cfg.to_json()) == cfg
    assert MachineConfig.from_yaml(cfg.to_yaml()) == cfg


@pytest.mark.parametrize("name", NAMES)
def test_preset_names_a_source(name: str) -> None:
    factory, source = PRESETS[name]
    assert callable(factory)
    assert isinstance(source, str) and len(source.strip()) >= 20


def test_sources_cite_their_papers() -> None:
    assert "FAST'20" in PRESETS["optane-adr"][1] and "VANS" in PRESETS["optane-adr"][1]
    assert "Marathe" in PRESETS["marathe-pdom2"][1]
    for name in ("proteus-marss", "proteus-marss-slownvm", "proteus-marss-dram"):
        assert "Proteus" in PRESETS[name][1] and "Table 1" in PRESETS[name][1]
        assert "[D]" in PRESETS[name][1], "says which values are the card's defaults"
    assert "§7.1" in PRESETS["proteus-marss-slownvm"][1]
    assert "§7.2" in PRESETS["proteus-marss-dram"][1] and "tCAS" in PRESETS["proteus-marss-dram"][1]
    assert "LOC" in PRESETS["loc-gem5"][1]


def test_every_preset_says_which_core_prefetcher_and_dimm_model() -> None:
    """Issue: every preset names its core, its prefetchers and its PM module, and why."""
    for name, (_, source) in PRESETS.items():
        cfg = preset(name)
        if name == "default":
            continue
        assert "Core" in source or "as optane-adr" in source or "as marathe" in source \
            or "as proteus-marss" in source, name
        if cfg.core.model == "inorder":
            assert "in-order" in source, name
    assert preset("loc-gem5").core.model == "inorder" and not preset("loc-gem5").prefetch.on
    assert preset("loc-gem5").pm.merge_writes
    for name in ("optane-adr", "dudetx-xeon", "nvhtm-xeon", "marathe-pdom1"):
        assert preset(name).core.model == "ooo" and preset(name).prefetch.stream, name
    assert preset("proteus-marss").core.store_buffer == 56  # Table 1's StoreQ
    assert not preset("proteus-marss").prefetch.on


def test_domains_and_barriers_match_their_names() -> None:
    assert preset("optane-adr").domain == "pdom1"
    assert preset("eadr").domain == "pdom2"
    assert preset("pdom0").domain == "pdom0"
    for dom, ns in (("pdom0", 500.0), ("pdom1", 100.0), ("pdom2", 0.0)):
        cfg = preset(f"marathe-{dom}")
        assert cfg.domain == dom
        assert cfg.barrier == "fixed" and cfg.barrier_ns == ns
    assert preset("default") == MachineConfig()


def test_variants_differ_only_where_their_source_says() -> None:
    adr = preset("optane-adr")
    assert preset("eadr") == adr.replace(domain="pdom2")
    assert preset("pdom0") == adr.replace(domain="pdom0")
    pro = preset("proteus-marss")
    assert preset("proteus-marss-slownvm") == pro.replace(**{"pm.write_ns": 300.0})
    assert preset("proteus-marss-dram") == pro.replace(**{"pm.read_ns": 27.5,
                                                           "pm.write_ns": 27.5})


def test_numbers_from_the_cited_tables() -> None:
    opt = preset("optane-adr")
    assert (opt.pm.read_ns, opt.pm.write_ns, opt.pm.wpq_entries) == (100.0, 29.0, 4)
    d = opt.pm.dimm
    assert (d.dimms, d.interleave_kib, d.buffer_lines) == (6, 4, 64)
    # the idle latencies of FAST'20 Fig. 2: random read = LLC + buffer hit + media read
    assert opt.cache.llc.latency_ns + opt.pm.read_ns + d.media_read_ns == 305.0
    assert preset("optane-1dimm") == opt.replace(**{"pm.dimm.dimms": 1})
    pro = preset("proteus-marss")
    assert pro.cores == 4
    assert pro.pm.read_ns == 50.0 and pro.pm.write_ns == 150.0 and pro.pm.wpq_entries == 64
    assert pro.cache.llc.latency_ns == pytest.approx(42 / 3.4)
    assert pro.cache.llc.size_kib == 8192 and pro.cache.llc.ways == 16
    loc = preset("loc-gem5")
    assert loc.cache.l1.ways == 2 and loc.cache.llc.size_kib == 1024 and loc.pm.banks == 8


@pytest.mark.parametrize("name", ["proteus-marss", "proteus-marss-slownvm", "proteus-marss-dram"])
def test_proteus_table_1(name: str) -> None:
    """Proteus (MICRO'17) Table 1 and the card's §11 defaults; cycles at 3.4 GHz."""
    cyc = 1 / 3.4
    cfg = preset(name)
    c = cfg.cache
    assert cfg.cores == 4 and cfg.domain == "pdom1" and cfg.barrier == "modelled"
    assert (c.l1.size_kib, c.l1.ways, c.l1.latency_ns) == (32, 8, pytest.approx(4 * cyc))
    assert (c.l2.size_kib, c.l2.ways, c.l2.latency_ns) == (256, 8, pytest.approx(12 * cyc))
    assert (c.llc.size_kib, c.llc.ways, c.llc.latency_ns) == (8192, 16, pytest.approx(42 * cyc))
    assert cfg.pm.wpq_entries == 64 and cfg.pm.banks == 16  # [D]
    assert cfg.pm.to_wpq_ns == pytest.approx((42 + 4 + 10) * cyc)  # L3 + link + MC accept [D]
    assert cfg.dram.latency_ns == 27.5  # DDR3-1600: (tRCD 11 + tCAS 11) x 1.25 ns
    assert (cfg.costs.store_ns, cfg.costs.fence_ns) == (pytest.approx(cyc), pytest.approx(2 * cyc))
    read, write = {"proteus-marss": (50.0, 150.0), "proteus-marss-slownvm": (50.0, 300.0),
                   "proteus-marss-dram": (27.5, 27.5)}[name]
    assert (cfg.pm.read_ns, cfg.pm.write_ns) == (read, write)


def test_proteus_nvm_latencies_follow_the_papers_trcd_rule() -> None:
    """§5.1: tRCD 29 (read) and 109 (write) at DDR3-1600 give 50 and 150 ns, so latency =
    (tRCD + tCAS 11) x 1.25 ns; slow NVM's 300 ns is tRCD 229 by the same rule."""
    for trcd, ns in ((29, 50.0), (109, 150.0), (229, 300.0), (11, 27.5)):
        assert _ddr3_ns(trcd) == ns


def test_proteus_pm_miss_costs_l3_plus_nvm_read(backend: str) -> None:
    _need(backend)
    for name, read in (("proteus-marss", 50.0), ("proteus-marss-dram", 27.5)):
        m = Machine(preset(name), backend=backend)
        cpu = m.cpu(0)
        cpu.load(m.pm.base + 4096)
        assert m.stats()[0]["time_ns"] == pytest.approx(42 / 3.4 + read)


def test_unknown_preset_suggests_the_closest() -> None:
    with pytest.raises(UnknownNameError) as ei:
        preset("optane-ard")
    msg = str(ei.value)
    assert "unknown preset 'optane-ard'" in msg
    assert "Did you mean 'optane-adr'" in msg
    assert "loc-gem5" in msg  # the known names are listed


def test_unknown_preset_without_close_match_lists_names() -> None:
    with pytest.raises(UnknownNameError) as ei:
        preset("zzzzzz")
    assert "Did you mean" not in str(ei.value)
    assert "default" in str(ei.value)


@pytest.mark.parametrize("name", NAMES)
def test_preset_runs_a_persist_barrier(name: str, backend: str) -> None:
    _need(backend)
    m = Machine(preset(name), backend=backend)
    cpu = m.cpu(0)
    a = m.pm.base + 4096
    cpu.store(a, 0xABC)
    cpu.clwb(a)
    cpu.persist_barrier()
    assert cpu.load(a) == 0xABC
    s = m.stats()[0]
    assert s["persist_barriers"] == 1 and s["wpq_inserts"] == 1 and s["clwb"] == 1
    assert s["time_ns"] > 0
    assert len(m.cpus) == m.config.cores
