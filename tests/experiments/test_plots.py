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


def test_palette_and_variant_styles() -> None:
    assert OKABE_ITO[:3] == ("#E69F00", "#56B4E9", "#009E73")
    s = style(["undo", "undo-2pb", "redo", "cow", "undo-eager"])
    assert s["undo"]["color"] == s["undo-2pb"]["color"] == s["undo-eager"]["color"]
    assert len({s["undo"]["linestyle"], s["undo-2pb"]["linestyle"], s["undo-eager"]["linestyle"]}) == 3
    assert len({s[n]["color"] for n in ("undo", "redo", "cow")}) == 3


def test_bad_kind() -> None:
    with pytest.raises(ConfigError, match="kind"):
        Figure("f", "t", "x", "y", "x", "y", kind="pie")  # type: ignore[arg-type]
