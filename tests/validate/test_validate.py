"""`pmsim validate`: the microbenchmarks reproduce the published shapes (on simulated time,
which is deterministic), the report is complete and honest, and the command fails cleanly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pmsim.cli import main
from pmsim.presets import preset
from pmsim.validate import Point, Report, bench, markdown, published
from pmsim.validate.report import TOLERANCE, shapes

SEED = 1


def test_idle_latencies_and_the_random_over_sequential_ratio() -> None:
    lat = bench.idle_latency("optane-adr", 200, SEED)
    pub = published.idle_latency()
    for key in [("Optane", "Read\\Random"), ("Optane", "Read\\Sequential"),
                ("DRAM", "Read\\Random")]:
        assert lat[key] == pytest.approx(pub[key], rel=TOLERANCE), key
    ratio = lat[("Optane", "Read\\Random")] / lat[("Optane", "Read\\Sequential")]
    assert ratio == pytest.approx(305.0 / 169.4, rel=TOLERANCE)


def test_small_writes_get_a_quarter_of_the_bandwidth_of_media_lines() -> None:
    small = bench.bandwidth("optane-1dimm", "Write(ntstore)", 4, 64, 16 * 1024, SEED)
    full = bench.bandwidth("optane-1dimm", "Write(ntstore)", 4, 256, 16 * 1024, SEED)
    assert small / full == pytest.approx(0.25, rel=TOLERANCE)
    assert full == pytest.approx(2.2, rel=TOLERANCE)  # one DIMM's peak (FAST'20 Fig. 5)


def test_the_buffer_holds_16_kib_of_media_lines() -> None:
    """WA about 1 while the rewritten region fits the on-DIMM buffer, about 2 from 32 KiB."""
    assert bench.write_amplification("optane-1dimm", 16384, 2, SEED) == pytest.approx(1.0, abs=0.1)
    assert bench.write_amplification("optane-1dimm", 65536, 2, SEED) == pytest.approx(2.0, abs=0.25)
    mid = bench.write_amplification("optane-1dimm", 24576, 2, SEED)
    assert 1.1 < mid < 1.9, "random replacement: the rise is gradual, as measured"


def test_read_bandwidth_scales_with_dimms_and_saturates_one() -> None:
    one = [bench.bandwidth("optane-1dimm", "Read", t, 256, 16 * 1024, SEED) for t in (1, 8)]
    six = bench.bandwidth("optane-adr", "Read", 8, 256, 16 * 1024, SEED)
    assert one[0] == pytest.approx(2.92, rel=TOLERANCE)
    assert one[1] < 7.0, "one DIMM's media bounds reads near its 6.5 GB/s"
    assert six > 2.5 * one[1]


def test_the_media_reads_at_the_rate_its_constant_sets() -> None:
    """Four readers saturate one DIMM's media at 256 B per media_read_occ_ns (39 ns: 6.56
    GB/s, FAST'20's 6.5 GB/s peak): the media's calendar loses no time to packing reads into
    its buckets (it held five 39 ns reads per 232 ns, 5.5 GB/s, before)."""
    dm = preset("optane-1dimm").pm.dimm
    bw = bench.bandwidth("optane-1dimm", "Read", 4, 256, 32 * 1024, SEED)
    assert bw == pytest.approx(256 / dm.media_read_occ_ns, rel=0.03)


def test_effective_read_ratio_falls_beyond_the_streams_the_buffer_serves() -> None:
    """Sequential 256 B readers on one DIMM: every media line read once up to
    combine_writers readers; at 8, the counters' 0.92 (the series read_contention is fitted
    to); off with a chance of 0; and random readers spread over six DIMMs do not contend."""
    by = {s.name: s for s in published.effective_read_ratio()}
    err = by["Read sequential"]
    assert err.x == (1, 2, 3, 4, 6, 8) and err.at(8) == 0.9196
    one = bench.read_ratio("optane-1dimm", 4, 256, 16 * 1024, SEED, sequential=True)
    eight = bench.read_ratio("optane-1dimm", 8, 256, 16 * 1024, SEED, sequential=True)
    off = bench.read_ratio("optane-1dimm", 8, 256, 16 * 1024, SEED, sequential=True,
                           changes={"pm.dimm.read_contention": 0.0})
    six = bench.read_ratio("optane-adr", 24, 256, 8 * 1024, SEED)
    assert one == 1.0 and off == 1.0 and six > 0.995
    assert eight == pytest.approx(0.9196, rel=0.05)


def test_same_seed_same_numbers() -> None:
    a = bench.bandwidth("optane-adr", "Write(clwb)", 3, 256, 8 * 1024, 5)
    b = bench.bandwidth("optane-adr", "Write(clwb)", 3, 256, 8 * 1024, 5)
    assert a == b


def test_write_bandwidth_falls_with_writers() -> None:
    """FAST'20 Fig. 4: one DIMM's write bandwidth at 24 threads is well below its peak, with
    ntstore and with clwb (a prediction: the contention constants are fitted to the counters'
    ratios only)."""
    for kind, few in (("Write(ntstore)", 2), ("Write(clwb)", 4)):
        peak = bench.bandwidth("optane-1dimm", kind, few, 256, 8 * 1024, SEED)
        many = bench.bandwidth("optane-1dimm", kind, 24, 256, 4 * 1024, SEED)
        assert many < 0.75 * peak, kind


def test_published_effective_write_ratio_is_the_raw_sweeps_median() -> None:
    by = {s.name: s for s in published.effective_write_ratio()}
    assert set(by) == {f"Write({k}) {o}" for k in ("ntstore", "clwb")
                       for o in ("random", "sequential")}
    nt = by["Write(ntstore) random"]
    assert nt.x == (1, 2, 3, 4, 6, 8, 12) and nt.at(1) == 0.9806 and nt.at(8) == 0.6522
    assert by["Write(clwb) random"].x == (1, 2, 3, 4, 6, 8)  # blank cells are not points
    assert all(0.5 < y < 1.0 for s in by.values() for y in s.y)
    (six,) = published.effective_write_ratio_six()
    assert six.figure == "EWR (6 DIMMs)" and six.x[-1] == 23 and six.at(23) == 0.8099


def test_effective_write_ratio_is_one_for_a_lone_writer_and_falls_with_more() -> None:
    one = bench.write_ratio("optane-1dimm", "Write(ntstore)", 1, 256, 16 * 1024, SEED)
    eight = bench.write_ratio("optane-1dimm", "Write(ntstore)", 8, 256, 16 * 1024, SEED)
    seq = bench.write_ratio("optane-1dimm", "Write(ntstore)", 8, 256, 16 * 1024, SEED,
                            sequential=True)
    assert one == pytest.approx(1.0)
    assert eight < 0.97 and seq < 0.97, "writers evict each other's half-written media lines"


def test_effective_write_ratio_falls_as_measured() -> None:
    """8 random ntstore writers: the series the constants are fitted to; 8 clwb writers, and
    8 writers spread over six DIMMs (one stream a DIMM: no loss), predicted."""
    nt = bench.write_ratio("optane-1dimm", "Write(ntstore)", 8, 256, 16 * 1024, SEED)
    clwb = bench.write_ratio("optane-1dimm", "Write(clwb)", 8, 256, 16 * 1024, SEED)
    six = bench.write_ratio("optane-adr", "Write(ntstore)", 8, 256, 16 * 1024, SEED)
    assert nt == pytest.approx(0.6522, rel=TOLERANCE)
    assert clwb == pytest.approx(0.6607, rel=TOLERANCE)
    assert six > 0.95


def _five_writers_of_eight(changes: dict[str, float] | None) -> tuple[float, ...]:
    """Five threads of an eight-core one-DIMM machine writing random media lines: every
    clock and the media bytes."""
    m = bench.machine("optane-1dimm", 8, SEED, changes=changes)
    rng = np.random.default_rng(SEED)
    for tid in range(5):
        base, size = bench._slice(8, tid)
        m.spawn(bench.BODIES["Write(ntstore)"], tid, base, 256,
                rng.integers(0, size // 256, 64) * 256, 64)
    m.run()
    return (*(m.cpu(t).clock for t in range(8)), float(m.stats()["media_write_bytes"].sum()))


def test_contention_needs_more_streams_than_the_buffer_combines() -> None:
    """Up to combine_writers writing threads (on a machine with more cores), or with
    contention 0, runs are those of a model without contention, bit for bit; beyond, media
    writes grow with the streams."""
    assert _five_writers_of_eight(None) == _five_writers_of_eight({"pm.dimm.contention": 0.0})
    assert _five_writers_of_eight({"pm.dimm.combine_writers": 4}) != \
        _five_writers_of_eight({"pm.dimm.combine_writers": 4, "pm.dimm.contention": 0.0})
    ewr = [bench.write_ratio("optane-1dimm", "Write(ntstore)", t, 256, 8 * 1024, SEED)
           for t in (6, 8, 12)]
    assert ewr[0] > ewr[1] > ewr[2]
    assert bench.write_ratio("optane-1dimm", "Write(ntstore)", 12, 256, 8 * 1024, SEED,
                             changes={"pm.dimm.contention": 0.0}) > 0.9


def test_calibration_refits_the_constants() -> None:
    from pmsim.validate import calibrate

    fits = calibrate.fit(quick=True, writers=(5,), chances=(0.1, 0.2, 0.4))
    assert fits[0].chance == 0.2 and fits[-1].chance == 0.4
    assert [x for x, _ in fits[0].ratios] == [1, 2, 3, 4, 6, 8, 12]
    assert "| published |" in calibrate.table(fits)
    reads = calibrate.fit_reads(quick=True, chances=(0.0, 0.009, 0.05))
    assert reads[0].chance == 0.009 and reads[-1].chance == 0.05
    assert [x for x, _ in reads[0].ratios] == [1, 2, 3, 4, 6, 8]
    assert "ERR at 8" in calibrate.table(reads, reads=True)


@pytest.mark.slow
def test_the_presets_constants_are_the_fits_best() -> None:
    from pmsim.presets import preset
    from pmsim.validate import calibrate

    best = calibrate.fit()[0]
    dm = preset("optane-1dimm").pm.dimm
    assert (best.combine_writers, best.chance) == (dm.combine_writers, dm.contention)
    assert calibrate.fit_reads()[0].chance == dm.read_contention


def fake_report() -> Report:
    r = Report("optane-adr", True)
    r.points = [
        Point("Fig. 2", "Optane Read\\Random", 0, 305.0, 305.0, "ns"),
        Point("Fig. 2", "Optane Read\\Sequential", 0, 169.4, 166.0, "ns"),
        Point("Fig. 2", "DRAM Write\\(clwb)", 0, 57.3, None, "ns", "untimed"),
        Point("Fig. 5 (1 DIMM)", "Write(ntstore)", 64, 0.55, 0.45, "GB/s"),
        Point("Fig. 5 (1 DIMM)", "Write(ntstore)", 256, 2.2, 2.2, "GB/s"),
        Point("Fig. 9", "WriteAmp", 16384, 1.04, 1.0, "ratio"),
        Point("Fig. 9", "WriteAmp", 65536, 2.04, 1.3, "ratio"),
        *[Point("Fig. 4 (1 DIMM)", s, t, 2.2 / t, 2.2, "GB/s")
          for s in ("Write(ntstore)", "Write(clwb)") for t in (1, 24)],
        Point("EWR (1 DIMM)", "Write(ntstore) random", 1, 0.98, 1.0, "ratio"),
        Point("EWR (1 DIMM)", "Write(ntstore) random", 8, 0.65, 0.93, "ratio"),
        Point("EWR (1 DIMM)", "Write(clwb) random", 1, 0.96, 1.0, "ratio"),
        Point("EWR (1 DIMM)", "Write(clwb) random", 8, 0.66, 0.67, "ratio"),
    ]
    r.shapes = shapes(r)
    return r


def test_report_counts_points_and_flags_misses() -> None:
    r = fake_report()
    # 0.64, the two 24-thread rows and EWR 0.93 against 0.65 miss
    assert r.summary().startswith("10 of 14 points within")
    assert "1 not modelled" in r.summary()
    table = r.table()
    assert "not modelled: untimed" in table and "**no**" in table
    by = {s.name.split(" (")[0]: s for s in r.shapes}
    assert by["write amplification from 32 KB"].holds is False  # |1.3 - 2| > 0.5
    assert by["1-DIMM Write(ntstore) bandwidth at 24 threads / peak"].holds is False
    assert by["1-DIMM random ntstore EWR at 8 threads / at 1 thread"].holds is False
    assert by["1-DIMM random clwb EWR at 8 threads / at 1 thread"].holds is True
    assert json.loads(r.to_json())["points"][2]["pmsim"] is None
    assert "### Shapes" in markdown(r, [])


def test_plots_draw_published_points_and_pmsim_lines(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from pmsim.validate import plot

    files = plot(fake_report(), tmp_path)
    assert {f.name for f in files} == {"validate-fig-5-1-dimm.png", "validate-fig-9.png",
                                       "validate-fig-4-1-dimm.png", "validate-ewr-1-dimm.png"}
    assert all(f.stat().st_size > 1000 for f in files)


def test_cli_rejects_unknown_presets_and_missing_folders(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    assert main(["validate", "--preset", "optane-ard"]) == 2
    assert "Did you mean 'optane-adr'" in capsys.readouterr().err
    assert main(["validate", "--json", str(tmp_path / "no" / "r.json")]) == 2
    assert "create it first" in capsys.readouterr().err
