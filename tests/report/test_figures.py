"""The report's reliability figure: each bin's Jeffreys interval drawn, and the figure's
bottom label inside the saved image (constrained layout with a fixed-aspect axes)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from matplotlib.image import imread

from gpc_compare.metrics import reliability_curve
from gpc_compare.metrics.multiclass import top_label_reliability_curve
from gpc_compare.report import figures


def _records(multiclass: bool) -> list[SimpleNamespace]:
    """Two engines' pooled test predictions on one data set, as job records hold them."""
    rng = np.random.default_rng(0)
    out = []
    for engine in ("laplace", "mcmc"):
        if multiclass:
            logits = 2.0 * rng.normal(size=(300, 3))
            proba = np.exp(logits - logits.max(1, keepdims=True))
            proba /= proba.sum(1, keepdims=True)
            y = np.array([rng.choice(3, p=p) for p in proba])
            arrays = SimpleNamespace(y_test=y, proba_test=proba, multiclass=True)
        else:
            p1 = rng.uniform(size=300)
            y = (rng.uniform(size=300) < p1).astype(int)
            arrays = SimpleNamespace(y_test=y, p1_test=p1, multiclass=False)
        out.append(SimpleNamespace(dataset="toy", engine=engine, arrays=arrays))
    return out


@pytest.mark.parametrize("multiclass", [False, True])
def test_reliability_bars_are_the_jeffreys_intervals(multiclass, monkeypatch, tmp_path) -> None:
    kept = []
    monkeypatch.setattr(figures, "save_figure", lambda fig, path, dpi: kept.append(fig))
    records = _records(multiclass)
    figures.plot_reliability(records, ["toy"], ["laplace", "mcmc"], tmp_path / "r.png")
    (ax,) = [a for a in kept[0].axes if a.get_visible()]
    for rec, container in zip(records, ax.containers, strict=True):
        a = rec.arrays
        curve = (
            top_label_reliability_curve(a.y_test, a.proba_test, n_bins=10)
            if multiclass
            else reliability_curve(a.y_test, a.p1_test, n_bins=10)
        )
        segments = container.lines[2][0].get_segments()  # one vertical bar per bin
        low = [s[0][1] for s in segments]
        high = [s[1][1] for s in segments]
        np.testing.assert_allclose(low, curve["observed_lower"], atol=1e-12)
        np.testing.assert_allclose(high, curve["observed_upper"], atol=1e-12)


def test_the_bottom_label_is_inside_the_saved_figure(tmp_path) -> None:
    """One fixed-aspect panel (the layout that cut its x label at the image's edge, when
    savefig laid the figure out once): the bottom rows of the PNG are background."""
    path = tmp_path / "reliability.png"
    figures.plot_reliability(_records(True), ["toy"], ["laplace", "mcmc"], path)
    image = imread(path)[..., :3]
    dark = np.flatnonzero((image < 0.8).any(axis=(1, 2)))
    assert dark.max() <= image.shape[0] - 3, (dark.max(), image.shape)
