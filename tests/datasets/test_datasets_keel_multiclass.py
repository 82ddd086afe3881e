"""The eight multi-class KEEL benchmarks (gpc_compare.datasets.keel_multiclass): sizes, class
counts in class_names order and first rows as UCI publishes them and gpc_compare/data/README.md
documents (whose checksum table tests/datasets/test_datasets.py recomputes)."""

from __future__ import annotations

import numpy as np
import pytest

from gpc_compare import datasets as ds

# name, n, d, cases per class in class_names order (UCI's published figures)
SETS = [
    ("wine", 178, 13, {"cultivar 1": 59, "cultivar 2": 71, "cultivar 3": 48}),
    ("vehicle", 846, 18, {"bus": 218, "opel": 212, "saab": 217, "van": 199}),
    ("vowel", 990, 10, dict.fromkeys("hid hId hEd hAd hYd had hOd hod hUd hud hed".split(), 90)),
    (
        "segment",
        2310,
        19,
        dict.fromkeys("brickface sky foliage cement window path grass".split(), 330),
    ),
    (
        "satimage",
        6435,
        36,
        {
            "red soil": 1533,
            "cotton crop": 703,
            "grey soil": 1358,
            "damp grey soil": 626,
            "vegetation stubble": 707,
            "very damp grey soil": 1508,
        },
    ),
    (
        "optdigits",
        5620,
        64,
        dict(zip("0123456789", [554, 571, 557, 572, 568, 558, 558, 566, 554, 562], strict=True)),
    ),
    (
        "penbased",
        10992,
        16,
        dict(
            zip(
                "0123456789",
                [1143, 1143, 1144, 1055, 1144, 1055, 1056, 1142, 1055, 1055],
                strict=True,
            )
        ),
    ),  # fmt: skip
    (
        "letter",
        20000,
        16,
        dict(
            zip(
                "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                [
                    789,
                    766,
                    736,
                    805,
                    768,
                    775,
                    773,
                    734,
                    755,
                    747,
                    739,
                    761,
                    792,
                    783,
                    753,
                    803,
                    783,
                    758,
                    748,
                    796,
                    813,
                    764,
                    752,
                    787,
                    786,
                    734,
                ],
                strict=True,
            )
        ),
    ),  # fmt: skip
]


@pytest.mark.parametrize(("name", "n", "d", "counts"), SETS)
def test_sizes_and_class_counts_are_ucis(name, n, d, counts) -> None:
    data = ds.load(name)
    assert data.name == name and data.kind == "real" and data.positive_class is None
    assert data.X.shape == (n, d) and data.y.shape == (n,) and data.X.dtype == float
    assert data.n_classes == len(counts) and data.class_counts == counts
    assert np.issubdtype(data.y.dtype, np.integer) and set(np.unique(data.y)) == set(
        range(len(counts))
    )
    assert len(data.feature_names) == d and np.all(np.isfinite(data.X))
    assert f"n={n}" in data.description and f"d={d}" in data.description
    assert getattr(ds, f"load_{name}")().X.shape == (n, d)


def test_first_rows_are_keels() -> None:
    wine = ds.load_wine()  # UCI wine.data, line 1
    assert wine.feature_names[0] == "alcohol" and wine.feature_names[-1] == "proline"
    np.testing.assert_array_equal(wine.X[0, :4], [14.23, 1.71, 2.43, 15.6])
    assert wine.X[0, -1] == 1065.0 and wine.class_names[wine.y[0]] == "cultivar 1"
    vehicle = ds.load_vehicle()
    np.testing.assert_array_equal(vehicle.X[0, :4], [95, 48, 83, 178])
    assert vehicle.class_names[vehicle.y[0]] == "van" and vehicle.feature_names[0] == "Comp"
    vowel = ds.load_vowel()  # Deterding's first frame: speaker 0, "hid"
    assert vowel.feature_names == [f"F{i}" for i in range(10)]
    np.testing.assert_array_equal(vowel.X[0, :3], [-3.639, 0.418, -0.67])
    assert vowel.class_names[vowel.y[0]] == "hid"
    assert (vowel.info["TT"] == 0).sum() == 528 and set(vowel.info["SpeakerNumber"]) == set(
        range(15)
    )
    letter = ds.load_letter()
    np.testing.assert_array_equal(letter.X[0, :5], [2, 4, 4, 3, 2])
    assert letter.class_names[letter.y[0]] == "Z" and letter.feature_names[0] == "x.box"
    satimage = ds.load_satimage()
    assert satimage.class_names[satimage.y[0]] == "grey soil" and satimage.X[0, 0] == 92


def test_segment_classes_are_ucis_order() -> None:
    """KEEL labels segment's classes 1-7; UCI lists brickface, sky, foliage, cement, window,
    path, grass. Sky regions lie at the top of the images (smallest centroid row) and are
    the brightest; grass and path lie at the bottom."""
    seg = ds.load_segment()
    row = seg.X[:, seg.feature_names.index("region-centroid-row")]
    intensity = seg.X[:, seg.feature_names.index("intensity-mean")]
    by_class = {c: (row[seg.y == k].mean(), intensity[seg.y == k].mean())
                for k, c in enumerate(seg.class_names)}  # fmt: skip
    assert min(by_class, key=lambda c: by_class[c][0]) == "sky"
    assert max(by_class, key=lambda c: by_class[c][1]) == "sky"
    assert sorted(by_class, key=lambda c: by_class[c][0])[-2:] == ["path", "grass"]


def test_a_multiclass_set_is_refused_for_a_binary_likelihood() -> None:
    """``gc.fit`` with probit on three classes says to use the softmax."""
    import gpc_compare as gc

    wine = ds.load_wine()
    X = ds.standardize(wine.X, wine.X)[0]
    X, y = X[::6], wine.y[::6]  # 30 wines of the three cultivars
    assert set(y) == {0, 1, 2}
    with pytest.raises(ValueError, match="use likelihood='softmax'"):
        gc.fit(X, y)
    post = gc.fit(X, y, likelihood="softmax")
    assert post.predict_proba(X).shape == (30, 3)
