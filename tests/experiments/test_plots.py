"""Figures: PNG and PDF from rows, one panel per domain, a colour-blind-safe palette."""

from __future__ import annotations

import pytest

from pmsim.errors import ConfigError
from pmsim.experiments.plots import OKABE_ITO, Figure, draw, style

ROWS = [{"runtime": rt, "domain": d, "write_pct": wp, "lat_p50": 1000.0 * (i + 1) * (1 + wp / 100),
         "pm_bytes_per_tx": 64.0 * (i + 1)}
        for i, rt in enumerate(("undo", "undo-2pb", "redo", "cow"))
        for d in ("pdom0", "pdom2") for wp in (0, 50, 100)]


def test_draw_writes_png_and_pdf(tmp_path) -> None:
    fig = Figure("lat", "Latency", x="write_pct", y="lat_p50", xlabel="writes (%)",
                 ylabel="latency (µs)", yscale=1e-3)
    files = draw(fig, ROWS, tmp_path)
    assert [f.name for f in files] == ["lat.png", "lat.pdf"]
    assert files[0].read_bytes()[:4] == b"\x89PNG" and files[1].read_bytes()[:4] == b"%PDF"
    bars = Figure("pm", "PM writes", x="write_pct", y="pm_bytes_per_tx", xlabel="writes (%)",
                  ylabel="PM bytes / undo's", kind="bar", normalise="undo")
    assert len(draw(bars, ROWS, tmp_path, formats=("png",))) == 1
    assert draw(Figure("none", "t", "x", "y", "x", "y", where={"domain": "pdom9"}), ROWS,
                tmp_path) == []


def test_published_values_are_drawn_beside_the_lines(tmp_path, monkeypatch) -> None:
    """The paper's values appear as one marked point per (series, x) that the figure has."""
    import matplotlib.figure

    seen: list[list[str]] = []
    real = matplotlib.figure.Figure.savefig

    def spy(self, *a, **kw):  # type: ignore[no-untyped-def]
        seen.append([ln.get_label() for ax in self.axes for ln in ax.get_lines()
                     if ln.get_marker() == "*"])
        return real(self, *a, **kw)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    pub = (("undo", 100, 2500.0), ("redo", 50, 3000.0), ("absent", 0, 1.0))
    fig = Figure("lat", "Latency", x="write_pct", y="lat_p50", xlabel="writes (%)",
                 ylabel="latency (µs)", yscale=1e-3, published=pub)
    draw(fig, ROWS, tmp_path, formats=("png",))
    assert sorted(seen[0]) == ["redo (paper)", "redo (paper)", "undo (paper)", "undo (paper)"]
    bars = Figure("b", "bars", x="write_pct", y="pm_bytes_per_tx", xlabel="w", ylabel="B",
                  kind="bar", published=(("cow", 50, 100.0), ("cow", 7, 1.0)))
    draw(bars, ROWS, tmp_path, formats=("png",))
    assert seen[1] == ["cow (paper)", "cow (paper)"]  # x=7 is not on the axis: left out
    more = Figure("lat2", "Latency", x="write_pct", y="lat_p50", xlabel="writes (%)",
                  ylabel="latency (µs)", published=(("undo", 0, 1.0), ("undo", 100, 2.0),
                                                    ("undo", 400, 3.0)))
    draw(more, ROWS, tmp_path, formats=("png",))
    # per panel: two stars (400 lies beyond the x range run), one legend entry
    assert seen[2] == ["undo (paper)", "_nolegend_"] * 2


def test_share_of_draws_a_rate_and_where_takes_a_set_of_values() -> None:
    """``share_of`` turns two counters into a rate (misses over misses and hits); a tuple in
    ``where`` selects rows whose value is any of its members."""
    fig = Figure("rate", "Miss rate", x="workload", y="misses", share_of="hits", xlabel="w",
                 ylabel="rate", kind="bar", where=(("experiment", ("a", "b")),))
    rows = [{"experiment": e, "workload": e, "runtime": "p", "misses": m, "hits": h}
            for e, m, h in (("a", 1.0, 3.0), ("b", 2.0, 2.0), ("c", 1.0, 0.0))]
    assert [fig.value(r) for r in fig.select(rows)] == [0.25, 0.5]
    assert fig.value({"misses": 0.0, "hits": 0.0}) is None  # no lookups: no rate
    assert fig.value({"misses": 1.0}) is None
    assert Figure("y", "t", "x", "misses", "x", "y").value({"misses": "3"}) == 3.0


def test_proteus_table4_figure_reads_the_bench_rows(tmp_path) -> None:
    """The paper-level Table 4 figure: one bar per benchmark from the bench experiments only
    (the LogQ and LPQ sweeps run Proteus on the same preset), with the paper's six rates."""
    from pmsim.experiments.papers import proteus

    fig = proteus.TABLE4_FIGURE
    assert fig in proteus.PAPER.figures
    assert sorted(y for _, _, y in fig.published) == sorted(proteus.LLT_MISS.values())
    rows = [{"experiment": e, "runtime": "proteus", "preset": proteus.NVM, "workload": "queue",
             "log_flushes": 1.0, "llt_hits": 3.0} for e in ("bench-qe", "fig11-qe")]
    assert [r["experiment"] for r in fig.select(rows)] == ["bench-qe"]
    assert draw(fig, rows, tmp_path, formats=("png",))


def test_palette_and_variant_styles() -> None:
    assert OKABE_ITO[:3] == ("#E69F00", "#56B4E9", "#009E73")
    s = style(["undo", "undo-2pb", "redo", "cow", "undo-eager"])
    assert s["undo"]["color"] == s["undo-2pb"]["color"] == s["undo-eager"]["color"]
    assert len({s["undo"]["linestyle"], s["undo-2pb"]["linestyle"], s["undo-eager"]["linestyle"]}) == 3
    assert len({s[n]["color"] for n in ("undo", "redo", "cow")}) == 3


def test_bad_kind() -> None:
    with pytest.raises(ConfigError, match="kind"):
        Figure("f", "t", "x", "y", "x", "y", kind="pie")  # type: ignore[arg-type]
