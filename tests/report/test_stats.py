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
