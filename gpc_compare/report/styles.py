"""What the report shows, and how: the metrics' labels and each engine's colour and marker."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ENGINE_STYLE", "METRICS", "REFERENCE_METRICS", "set_styles", "style"]

#: Held-out metrics in the order they are shown, with labels and which way is better.
METRICS = {
    "mean_log_predictive": ("mean log predictive (nats)", "higher"),
    "information_bits": ("information (bits)", "higher"),
    "error_rate": ("error rate", "lower"),
    "brier": ("Brier score", "lower"),
    "ece": ("expected calibration error", "lower"),
    "auc": ("AUC", "higher"),
    # C classes (softmax studies): gpc_compare.metrics.score_multiclass
    "brier_multiclass": ("multi-class Brier score", "lower"),
    "ece_top_label": ("top-label calibration error", "lower"),
    "auc_ovr_macro": ("one-vs-rest AUC (macro)", "higher"),
}
REFERENCE_METRICS = {
    "latent_mean_rmse": "latent mean RMSE",
    "latent_var_rmse": "latent variance RMSE",
    "marginal_kl_mean": "mean KL(ref ‖ approx)",
    "evidence_gap": "log evidence - reference's estimate",
    "proba_diff_max": "class probability, max abs diff",
    "proba_diff_mean": "class probability, mean abs diff",
}
ENGINE_STYLE = {
    "laplace": ("tab:blue", "o", "Laplace"),
    "ep": ("tab:orange", "s", "EP"),
    "kl": ("tab:red", "v", "KL"),
    "vb": ("tab:brown", "P", "VB"),
    "mcmc": ("tab:green", "^", "MCMC"),
    # the sparse engines: each in a lighter shade of its dense counterpart's colour, with a
    # marker of its own (beside its counterpart the shade alone was hard to tell apart)
    "fitc_laplace": ("tab:cyan", "p", "FITC-Laplace"),
    "fitc_ep": ("goldenrod", "d", "FITC-EP"),
    "svgp": ("salmon", "*", "SVGP"),
}


_EXTRA_STYLES = [
    ("tab:purple", "D"),
    ("tab:gray", "h"),
    ("tab:pink", "X"),
    ("tab:olive", "<"),
    ("darkslateblue", ">"),
]
_label_styles: dict[str, tuple[str, str, str]] = {}


def set_styles(labels: Sequence[str]) -> None:
    """Colours and markers for engine labels: the three engines' own, then a palette."""
    _label_styles.clear()
    extra = iter(_EXTRA_STYLES)
    for label in labels:
        if label in ENGINE_STYLE:
            _label_styles[label] = ENGINE_STYLE[label]
        else:
            colour, marker = next(extra, ("tab:gray", "D"))
            _label_styles[label] = (colour, marker, label)


def style(engine: str) -> tuple[str, str, str]:
    """(colour, marker, display name) of an engine label, as :func:`set_styles` chose them."""
    return _label_styles.get(engine) or ENGINE_STYLE.get(engine, ("tab:gray", "D", engine))
