"""Statistics on known inputs (values checked by hand / against Demšar 2006)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from treebench.report import stats


def test_friedman_consistent_ranking():
    # 6 datasets, 3 methods always ranked the same way: chi2 = 12 N k(k+1)^-1 ... = 12, p = exp(-6)
    t = pd.DataFrame(
        {
            "a": np.arange(6) * 0.01 + 0.7,
            "b": np.arange(6) * 0.01 + 0.8,
            "c": np.arange(6) * 0.01 + 0.9,
        }
    )
    r = stats.friedman(t)
    assert r["statistic"] == pytest.approx(12.0) and r["p"] == pytest.approx(np.exp(-6))
    assert r["n"] == 6 and r["k"] == 3


def test_friedman_needs_three_groups():
    with pytest.raises(ValueError, match=">= 3 groups"):
        stats.friedman(pd.DataFrame({"a": [1, 2], "b": [2, 3]}))


def test_critical_difference_matches_demsar_table():
    # Demšar (2006) Table 5: q_0.05 = 2.569 for k = 4; CD = q sqrt(k(k+1)/(6N))
    assert stats.critical_difference(4, 14, 0.05) == pytest.approx(
        2.569 * np.sqrt(20 / 84), abs=2e-3
    )
    assert stats.critical_difference(2, 10, 0.05) == pytest.approx(
        1.960 * np.sqrt(6 / 60), abs=2e-3
    )


def test_average_ranks_and_nemenyi():
    t = pd.DataFrame(
        {"a": [0.9, 0.8, 0.7, 0.9], "b": [0.8, 0.8, 0.6, 0.7], "c": [0.1, 0.2, 0.3, 0.1]}
    )
    ranks = stats.average_ranks(t)
    assert ranks.to_dict() == {"a": pytest.approx(1.125), "b": pytest.approx(1.875), "c": 3.0}
    nem = stats.nemenyi(t)
    p = nem["p_values"]
    assert list(p.columns) == ["a", "b", "c"] and np.allclose(p.to_numpy(), p.to_numpy().T)
    assert p.loc["a", "c"] < p.loc["a", "b"]
    assert stats.average_ranks(-t, higher_is_better=False).equals(ranks)


def test_wilcoxon_known_values():
    r = stats.wilcoxon([2, 3, 4, 5, 6], [1, 1, 1, 1, 1])
    assert r["statistic"] == 0.0 and r["p"] == pytest.approx(0.0625) and r["n"] == 5
    assert stats.wilcoxon([1, 2], [1, 2])["p"] == 1.0
    with pytest.raises(ValueError, match="differ in length"):
        stats.wilcoxon([1, 2], [1])


def test_cd_diagram_files_and_caption(tmp_path):
    t = pd.DataFrame(np.random.default_rng(0).random((8, 4)), columns=list("wxyz"))
    nem = stats.nemenyi(t)
    files = stats.cd_diagram(nem, tmp_path / "cd", title="t")
    assert [f.suffix for f in files] == [".png", ".pdf"] and all(
        f.stat().st_size > 1000 for f in files
    )
    cap = stats.caption(nem, "test_accuracy")
    assert "Nemenyi" in cap and "N = 8" in cap and "α = 0.05" in cap
    cap = stats.caption(stats.friedman(t), "test_accuracy", 0.05)
    assert cap.startswith("Friedman test") and "N = 8" in cap


# Demšar (2006), Table 6: AUC of C4.5 and three variants on 14 UCI data sets. The table's values
# are rounded to three places; its ranks put C4.5+cf ahead of C4.5+m+cf on voting (both print
# as 0.975), so that cell is nudged to keep the paper's order.
DEMSAR = pd.DataFrame(
    [
        [0.763, 0.768, 0.771, 0.798],
        [0.599, 0.591, 0.590, 0.569],
        [0.954, 0.971, 0.968, 0.967],
        [0.628, 0.661, 0.654, 0.657],
        [0.882, 0.888, 0.886, 0.898],
        [0.936, 0.931, 0.916, 0.931],
        [0.661, 0.668, 0.609, 0.685],
        [0.583, 0.583, 0.563, 0.625],
        [0.775, 0.838, 0.866, 0.875],
        [1.000, 1.000, 1.000, 1.000],
        [0.940, 0.962, 0.965, 0.962],
        [0.619, 0.666, 0.614, 0.669],
        [0.972, 0.981, 0.97501, 0.975],
        [0.957, 0.978, 0.946, 0.970],
    ],
    columns=["C4.5", "C4.5+m", "C4.5+cf", "C4.5+m+cf"],
)


def test_iman_davenport_reproduces_demsar_worked_example():
    # Sect. 3.2.2: average ranks 3.143, 2.000, 2.893, 1.964; chi2_F = 9.28, F_F = 3.69 on (3, 39)
    # degrees of freedom, above the critical value 2.85 at alpha = 0.05
    r = stats.iman_davenport(DEMSAR)
    assert r["ranks"].round(3).tolist() == [3.143, 2.0, 2.893, 1.964]
    assert round(r["chi2"], 2) == 9.28 and round(r["F"], 2) == 3.69
    assert (r["df1"], r["df2"], r["n"], r["k"]) == (3, 39, 14, 4)
    assert r["p"] < 0.05 and round(float(stats.sps.f.ppf(0.95, 3, 39)), 2) == 2.85


def test_corrected_ttest_by_hand():
    # d = 1..5 points over J = 5 splits of 80 train / 20 test rows: mean 3, s^2 = 2.5;
    # corrected variance (1/5 + 20/80) * 2.5 = 1.125, t = 3 / sqrt(1.125) = 2.8284, 4 df
    r = stats.corrected_ttest([1.0, 2.0, 3.0, 4.0, 5.0], n_train=80, n_test=20)
    assert r["t"] == pytest.approx(3 / np.sqrt(1.125))
    assert r["df"] == 4 and r["p"] == pytest.approx(2 * stats.sps.t.sf(3 / np.sqrt(1.125), 4))
    assert r["p"] == pytest.approx(0.04742, abs=1e-5)
    assert r["d"] == pytest.approx(3 / np.sqrt(2.5))
    # the plain t statistic shrinks by sqrt((1/J) / (1/J + n_test/n_train)) = sqrt(0.2 / 0.45)
    plain = stats.sps.ttest_1samp([1.0, 2.0, 3.0, 4.0, 5.0], 0)
    assert r["t"] == pytest.approx(plain.statistic * np.sqrt(0.2 / 0.45)) and plain.pvalue < r["p"]
    assert stats.corrected_ttest([0.5, 0.5, 0.5], 80, 20)["p"] == 0.0
    assert stats.corrected_ttest([0.0, 0.0], 80, 20)["p"] == 1.0
    assert np.isnan(stats.corrected_ttest([1.0], 80, 20)["p"])


def test_holm_by_hand():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> monotone 0.06
    got = stats.holm([0.01, 0.04, 0.03, 0.005, np.nan])
    assert got[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02]) and np.isnan(got[4])


def test_pairwise_wilcoxon_on_demsar_table_by_hand():
    # C4.5 - C4.5+m: two zero differences dropped; of the 12 others R+ = 5 (breast cancer,
    # |d| = .008) + 1.5 (iris, .005 tied with adult) = 6.5, R- = 78 - 6.5 = 71.5
    pairs = stats.pairwise_wilcoxon(DEMSAR)
    row = pairs[(pairs["a"] == "C4.5") & (pairs["b"] == "C4.5+m")].iloc[0]
    assert row["W"] == 6.5 and row["n"] == 14
    assert row["r"] == pytest.approx((6.5 - 71.5) / 78)
    assert len(pairs) == 6 and (pairs["p_holm"] >= pairs["p"]).all()
    assert pairs["p_holm"].max() <= 1.0
    m = stats.pvalue_matrix(pairs)
    assert m.loc["C4.5", "C4.5+m"] == m.loc["C4.5+m", "C4.5"] == row["p_holm"]
    assert m.loc["C4.5", "C4.5"] == 1.0


def _signed_rank_by_formula(x, y, rope, seed, nsamples):
    """Benavoli et al. (2014), Sect.

    4: with Dirichlet(0.5, 1, ..., 1) weights w over the pseudo-observation 0 and the differences z
    = y - x, P(left) is the posterior share of draws in which sum_ij w_i w_j [z_i + z_j < -2 rope]
    is the largest of the three regions.
    """
    z = np.r_[0.0, np.asarray(y) - np.asarray(x)]
    s = z[:, None] + z[None, :]
    below = (s < -2 * rope) + 0.5 * (s == -2 * rope)
    above = (s > 2 * rope) + 0.5 * (s == 2 * rope)
    alpha = np.r_[0.5, np.ones(len(z) - 1)]
    w = np.random.RandomState(seed).dirichlet(alpha, nsamples)
    left = np.einsum("ni,ij,nj->n", w, below, w)
    right = np.einsum("ni,ij,nj->n", w, above, w)
    win = np.argmax(np.c_[left, 1 - left - right, right], axis=1)
    return np.bincount(win, minlength=3) / nsamples


def test_bayes_signed_rank_against_the_formula():
    x, y = DEMSAR["C4.5+m"].to_numpy(), DEMSAR["C4.5"].to_numpy()
    r = stats.bayes_signed_rank(x, y, rope=0.01, seed=3, nsamples=4000)
    ref = _signed_rank_by_formula(x, y, 0.01, 3, 4000)
    assert [r["p_better"], r["p_equiv"], r["p_worse"]] == pytest.approx(ref.tolist())
    assert r["p_better"] + r["p_equiv"] + r["p_worse"] == pytest.approx(1.0)
    swapped = stats.bayes_signed_rank(y, x, rope=0.01, seed=3, nsamples=4000)
    assert swapped["p_worse"] == pytest.approx(r["p_better"], abs=0.02)
    # every difference far outside the ROPE: x is better with certainty; all inside: equivalent
    assert stats.bayes_signed_rank(y + 0.2, y, 0.01, nsamples=2000)["p_better"] == 1.0
    assert stats.bayes_signed_rank(y + 0.001, y, 0.01, nsamples=2000)["p_equiv"] == 1.0
