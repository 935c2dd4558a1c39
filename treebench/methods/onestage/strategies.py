"""How One-Stage and its two ablations search the architecture: one strategy object per variant.

The estimator's ``fit`` owns the data, the routers' initialisation, early stopping and the final
pruning; a strategy owns what differs between the variants (paper Sect. 4.4):

* :class:`BilevelSearch` — One-Stage itself (Alg. 1): per minibatch the lazy proximal step
  ``gamma_bar = 1[gamma >= 0.5]``, a router step, closed-form node values on the training part and a
  gamma step on the validation part; the discrete model's validation loss is monitored.
* :class:`GumbelArchitecture` — "Gumbel Tree": as One-Stage, but ``gamma_bar`` is sampled per step
  by Gumbel-softmax from ``gamma``.
* :class:`JointRelaxation` — "Joint Tree": relaxed ``gamma`` in Eq. (2), one joint Adam step on
  routers and gamma per minibatch, no validation-driven architecture step; the relaxed model's
  loss is monitored (on the held-out part, or on the training rows with
  ``early_stopping_holdout=False``).

A strategy reads and updates the mutable :class:`FitState` of one ``fit`` call; random numbers are
drawn in the same order for every variant as before the split into strategies (bit-identical fits).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from treebench.methods.onestage.core import LeafSums, RefreshPass, route_paths, router_rows

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


def wdiff(W: np.ndarray) -> np.ndarray:
    """Router logit differences ``w_0 - w_1`` (float32) of the (d+1, n_int, 2) routers ``W``."""
    return (W[:, :, 0] - W[:, :, 1]).astype(np.float32)


@dataclass
class FitState:
    """Everything one ``fit`` call updates step by step, and the data parts it reads."""

    D: int
    n_int: int
    nth: int
    tau: float
    lr: float
    glr: float
    Xtr: np.ndarray
    Ytr: np.ndarray
    ttr: np.ndarray
    wtr: np.ndarray
    codes: Any
    Xva: np.ndarray
    tva: np.ndarray
    wva: np.ndarray
    W: np.ndarray
    gamma: np.ndarray
    Wd: np.ndarray
    V: np.ndarray
    noise: Any = None  # per-epoch router path noise, (n_tr, n_int)
    WdT: Any = None  # ``Wd`` as the compiled kernels read it (:func:`~.core.router_rows`)
    adam: dict = field(default_factory=dict)
    gadam: dict = field(default_factory=dict)
    #: ``step_rows="batch"``: running leaf statistics, and the epoch's order of the validation rows
    leaves: LeafSums | None = None
    vorder: Any = None
    #: the prepared compiled passes over the training rows and over all validation rows
    rpass: Any = None
    gpass: Any = None

    def refresh_values(self, fresh: bool = True) -> None:
        """Refresh the router differences and the closed-form node values (Eq. 17).

        The router differences are recomputed unless ``fresh=False`` (the router step wrote them);
        the node values are computed on the whole training part.
        """
        if fresh:
            self.Wd = wdiff(self.W)
            self.WdT = router_rows(self.Wd)
        if self.rpass is None:
            self.rpass = RefreshPass(self.Xtr, self.Ytr, self.wtr, self.D, self.codes, self.nth)
        self.V, leaf = self.rpass(self.Wd, self.WdT)
        if self.leaves is not None:
            self.leaves.reset(leaf)

    def refresh_step(self, b: np.ndarray) -> None:
        """Update the node values after the router step on minibatch ``b``.

        On the whole training part (the paper's Eq. 17), or with ``step_rows="batch"`` from running
        leaf statistics in which only ``b``'s rows are routed again (:class:`~.core.LeafSums`). The
        router step has written ``Wd`` and ``WdT``.
        """
        if self.leaves is None:
            self.refresh_values(fresh=False)
            return
        self.leaves.move(b, route_paths(self.Xtr[b], self.Wd, self.D, True))
        self.V = self.leaves.values()

    def gamma_grad(self, est, keep: np.ndarray, step: int) -> np.ndarray:
        """Return the gamma gradient (``est._gamma_grad``) on the validation rows of ``step``."""
        if self.vorder is not None:
            return est._gamma_grad(
                *self.val_rows(step, int(est.batch_size)),
                self.Wd,
                self.V,
                keep,
                self.D,
                self.n_int,
                WdT=self.WdT,
            )
        if self.gpass is None:
            self.gpass = est._gamma_pass(self.Xva, self.tva, self.wva, self.D)
        return self.gpass(keep, self.V, self.Wd, self.WdT)

    def val_rows(self, step: int, bs: int):
        """Return the validation rows of a gamma step.

        All of them, or with ``step_rows="batch"`` the ``step``-th minibatch of ``bs`` rows of the
        epoch's order (cycled).
        """
        if self.vorder is None:
            return self.Xva, self.tva, self.wva
        n = len(self.vorder)
        r = self.vorder[(step * bs + np.arange(min(bs, n))) % n]
        return self.Xva[r], self.tva[r], self.wva[r]


class BilevelSearch:
    """One-Stage's alternating bilevel scheme (paper Alg. 1, Eqs. 9-17)."""

    name = "onestage"

    def holds_out(self, est) -> bool:
        """Whether ``validation_fraction`` of the rows is held out (the gamma steps need it)."""
        return True

    def epoch_noise(self, rng, n_steps: int, n_int: int):
        """Architecture noise drawn once per epoch, after the path noise (none here)."""
        return None

    def architecture(self, gamma: np.ndarray, step: int, noise) -> np.ndarray:
        """Return the discrete architecture ``gamma_bar`` of a minibatch: the lazy proximal step."""
        return gamma >= 0.5

    def step(self, est, s: FitState, b: np.ndarray, step: int, arch_noise) -> None:
        """One minibatch ``b``: architecture, router step, node values, gamma step (in place)."""
        b1, b2 = ADAM_BETAS
        # (a) lazy proximal step (or a Gumbel sample of the architecture for the ablation)
        keep = self.architecture(s.gamma, step, arch_noise)
        # (b) router step on the minibatch with straight-through Gumbel path samples
        gW = est._router_grad(
            s.Xtr[b], s.ttr[b], s.wtr[b], s.noise[b], s.W, s.V, keep, s.tau, s.D, Wd=s.Wd
        )
        s.adam["t"] += 1
        est._adam_routers(s.W, gW, s.adam, s.lr, b1, b2, ADAM_EPS, out=(s.Wd, s.WdT))
        # (c) closed-form node values on the training part, deterministic routing
        s.refresh_step(b)
        # (d) architecture step on the validation part (or a minibatch of it)
        gg = s.gamma_grad(est, keep, step)
        gg += est.gamma_l1
        if est.gamma_optimizer == "sgd":  # Eq. (15): plain projected gradient step
            s.gamma -= s.glr * gg
        else:
            s.gadam["t"] += 1
            est._adam(s.gamma, gg, s.gadam, s.glr, b1, b2, ADAM_EPS)
        np.clip(s.gamma, 0.0, 1.0, out=s.gamma)  # prox_C2

    def monitored_loss(self, est, s: FitState, mon, keep: np.ndarray, disc_loss) -> float:
        """Early-stopping loss of the epoch: the discrete model on the monitored rows ``mon``."""
        return disc_loss(*mon, s.Wd, s.V, keep)


class GumbelArchitecture(BilevelSearch):
    """The "Gumbel Tree" ablation: ``gamma_bar`` sampled by Gumbel-softmax from ``gamma``.

    A new sample is drawn every step.
    """

    name = "gumbel"

    def epoch_noise(self, rng, n_steps: int, n_int: int):
        """Draw the epoch's architecture noise: a logistic sample per step and split node."""
        return rng.logistic(size=(n_steps, n_int))

    def architecture(self, gamma: np.ndarray, step: int, noise) -> np.ndarray:
        """Return a Gumbel sample of ``gamma_bar``: ``logit(gamma) + noise[step] > 0``."""
        with np.errstate(divide="ignore"):
            lg = np.log(gamma) - np.log1p(-gamma)
        return lg + noise[step] > 0


class JointRelaxation:
    """The "Joint Tree" ablation (Eq. 8): relaxed gamma.

    One joint gradient step on routers and gamma.
    """

    name = "joint"

    def holds_out(self, est) -> bool:
        """Whether rows are held out for early stopping (``est._joint_holdout()``)."""
        return est._joint_holdout()

    def epoch_noise(self, rng, n_steps: int, n_int: int):
        """Architecture noise drawn once per epoch (none here)."""
        return None

    def step(self, est, s: FitState, b: np.ndarray, step: int, arch_noise) -> None:
        """One minibatch ``b``: joint Adam step on routers and gamma, then node values, in place."""
        b1, b2 = ADAM_BETAS
        gW, gg = est._router_grad(
            s.Xtr[b],
            s.ttr[b],
            s.wtr[b],
            s.noise[b],
            s.W,
            s.V,
            s.gamma,
            s.tau,
            s.D,
            with_gamma=True,
            Wd=s.Wd,
        )
        s.adam["t"] += 1
        est._adam_routers(s.W, gW, s.adam, s.lr, b1, b2, ADAM_EPS, out=(s.Wd, s.WdT))
        s.gadam["t"] += 1
        est._adam(s.gamma, gg + est.gamma_l1, s.gadam, s.lr, b1, b2, ADAM_EPS)
        np.clip(s.gamma, 0.0, 1.0, out=s.gamma)
        s.refresh_step(b)

    def monitored_loss(self, est, s: FitState, mon, keep: np.ndarray, disc_loss) -> float:
        """Return the relaxed model's loss (held-out or training rows)."""
        return est._relaxed_loss(*mon, s.W, s.V, s.gamma, s.D)
