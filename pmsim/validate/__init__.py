"""Validation of pmsim's timing model against measured Optane hardware (``pmsim validate``).

``validate()`` runs the microbenchmarks behind the figures of Yang et al., FAST'20 on the
Optane presets and returns a :class:`Report`: every published point beside pmsim's, the ratio,
and the shape checks. ``plot`` draws them (published as points, pmsim as lines).
"""

from .report import Point, Report, Shape, markdown, plot, save, validate

__all__ = ["Point", "Report", "Shape", "markdown", "plot", "save", "validate"]
