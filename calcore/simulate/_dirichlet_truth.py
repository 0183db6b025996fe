"""True calibration errors of a Dirichlet fake classifier: quadrature over one score,
Monte Carlo over the rest of the probability vector.

For ``p ~ Dirichlet(alpha)`` and a class ``c``, ``p_c ~ Beta(alpha_c, alpha_0 - alpha_c)``
and, given ``p_c = t``, the other coordinates are ``(1 - t) q`` with
``q ~ Dirichlet(alpha_{-c})`` independent of ``t`` (the aggregation property). So every
conditional expectation the binned ECEs need is an expectation over ``q`` at a fixed
``t``:

- class-wise: ``r_c(t) = E_q[pi_c(t, (1-t) q)]``; ``CW_c = int |t - r_c(t)| dBeta_c(t)``.
- top-label: ``{argmax p = c, max p = h} = {p_c = h, (1-h) max q <= h}``, so with
  ``A_c(h) = P_q(ok)`` and ``B_c(h) = E_q[pi_c 1{ok}]``,
  ``TL = sum_c int |h A_c(h) - B_c(h)| beta_c(h) dh`` and
  ``conf = int |sum_c beta_c(h) (h A_c(h) - B_c(h))| dh`` over ``h in [1/L, 1]``.

The outer integrals use composite Gauss-Legendre rules (after a change of variable that
removes the endpoint singularities of the Beta densities); the inner expectations use
``n_inner`` Dirichlet draws shared by all nodes, split into batches whose spread gives
the Monte Carlo standard error.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaincinv, betaln, logsumexp

from calcore.foundation.tuning import DIRICHLET_NODE_CHUNK_POINTS as _NODE_CHUNK_POINTS
from calcore.simulate._generators import DirichletSimulator, log_dirichlet

__all__ = ["dirichlet_errors", "dirichlet_reliability"]

_GL_ORDER = 8


def composite_gauss_legendre(lo: float, hi: float, panels: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of ``panels`` equal 8-point Gauss-Legendre panels on ``[lo, hi]``."""
    x, w = np.polynomial.legendre.leggauss(_GL_ORDER)
    edges = np.linspace(lo, hi, panels + 1)
    mid, half = (edges[:-1] + edges[1:]) / 2, (edges[1:] - edges[:-1]) / 2
    return (mid[:, None] + half[:, None] * x).ravel(), (half[:, None] * w).ravel()


def _inner_samples(sim: DirichletSimulator, classes, n_inner: int, n_batches: int, rng):
    """``log q`` per class, shape (n_batches, n_inner // n_batches, L - 1)."""
    per = n_inner // n_batches
    out = {}
    for c in classes:
        rest = np.delete(sim.alpha, c)
        if rest.shape[0] == 1:
            out[c] = np.zeros((n_batches, per, 1))
        else:
            out[c] = log_dirichlet(rest, n_batches * per, rng).reshape(n_batches, per, -1)
    return out


def _class_prob(sim, c, log_t, log_rest, log_q):
    """``pi_c(p)`` for ``p_c = t`` (per node) and the others ``(1 - t) q``: (nodes, K, M)."""
    e, b = sim.true_map.exponents, sim.true_map.class_bias
    e_rest, b_rest = np.delete(e, c), np.delete(b, c)
    with np.errstate(invalid="ignore"):
        score_c = b[c] + log_t * e[c]
        others = b_rest + (log_rest[:, None, None, None] + log_q[None]) * e_rest
    lse = np.logaddexp(score_c[:, None, None], logsumexp(others, axis=-1))
    return np.exp(score_c[:, None, None] - lse)


def _chunks(n_nodes: int, log_q: np.ndarray):
    step = max(1, _NODE_CHUNK_POINTS // log_q.size)
    return [slice(i, min(i + step, n_nodes)) for i in range(0, n_nodes, step)]


def _top_terms(sim, c, log_h, log_rest, log_q):
    """``A_c(h)`` and ``B_c(h)`` per node and batch: arrays of shape (nodes, K)."""
    A = np.empty((log_h.shape[0], log_q.shape[0]))
    B = np.empty_like(A)
    max_q = log_q.max(axis=-1)
    for sl in _chunks(log_h.shape[0], log_q):
        ok = (log_rest[sl, None, None] + max_q[None]) <= log_h[sl, None, None]
        pi_c = _class_prob(sim, c, log_h[sl], log_rest[sl], log_q)
        A[sl] = ok.mean(axis=-1)
        B[sl] = np.where(ok, pi_c, 0.0).mean(axis=-1)
    return A, B


def _beta_logpdf(a, b, log_x, log_1mx):
    return (a - 1) * log_x + (b - 1) * log_1mx - betaln(a, b)


def _top_grid(sim: DirichletSimulator, panels: int):
    """Nodes ``h = 1 - (1 - 1/L) v^m`` on ``[1/L, 1]`` with ``log h``, ``log(1-h)``, and
    weights including the Jacobian; ``m`` makes ``beta_c(h) dh`` bounded near ``h = 1``."""
    L = sim.n_classes
    m = max(1.0, 2.0 / float(np.min(sim.alpha.sum() - sim.alpha)))
    v, w = composite_gauss_legendre(0.0, 1.0, panels)
    span = 1.0 - 1.0 / L
    log_1mh = np.log(span) + m * np.log(v)
    h = 1.0 - np.exp(log_1mh)
    log_h = np.log1p(-np.exp(log_1mh))
    log_w = np.log(w) + np.log(span * m) + (m - 1.0) * np.log(v)
    return h, log_h, log_1mh, log_w


def _batch_and_full(values_by_batch: np.ndarray, reduce) -> tuple[float, float]:
    """``reduce`` on the batch mean (the full-sample estimate) and the batch-spread s.e."""
    full = reduce(values_by_batch.mean(axis=-1))
    k = values_by_batch.shape[-1]
    per = np.array([reduce(values_by_batch[..., j]) for j in range(k)])
    se = float(per.std(ddof=1) / np.sqrt(k)) if k > 1 else 0.0
    return float(full), se


def _top_label_and_confidence(sim, classes, log_q, panels):
    h, log_h, log_1mh, log_w = _top_grid(sim, panels)
    alpha, a0 = sim.alpha, sim.alpha.sum()
    D = np.zeros((len(classes), h.shape[0], next(iter(log_q.values())).shape[0]))
    acc = np.zeros_like(D)
    for i, c in enumerate(classes):
        A, B = _top_terms(sim, c, log_h, log_1mh, log_q[c])
        weight = np.exp(_beta_logpdf(alpha[c], a0 - alpha[c], log_h, log_1mh) + log_w)[:, None]
        D[i], acc[i] = (h[:, None] * A - B) * weight, B * weight
    mult = sim.n_classes / len(classes)
    tl = _batch_and_full(D, lambda d: mult * np.sum(np.abs(d)))
    conf = _batch_and_full(D, lambda d: np.sum(np.abs(mult * d.sum(axis=0))))
    accuracy = _batch_and_full(acc, lambda d: mult * np.sum(d))
    return tl, conf, accuracy


def _classwise(sim, classes, log_q, panels):
    u, w = composite_gauss_legendre(0.0, 1.0, panels)
    alpha, a0 = sim.alpha, sim.alpha.sum()
    per_class = []
    for c in classes:
        a, b = alpha[c], a0 - alpha[c]
        t, one_minus_t = betaincinv(a, b, u), betaincinv(b, a, 1.0 - u)
        with np.errstate(divide="ignore"):
            log_t, log_1mt = np.log(t), np.log(one_minus_t)
        r = np.empty((u.shape[0], log_q[c].shape[0]))
        for sl in _chunks(u.shape[0], log_q[c]):
            r[sl] = _class_prob(sim, c, log_t[sl], log_1mt[sl], log_q[c]).mean(axis=-1)
        per_class.append(t[:, None] - r)
    G = np.stack(per_class)
    return _batch_and_full(G, lambda g: np.sum(np.abs(g) * w) / len(classes))


def _canonical(sim: DirichletSimulator, n_mc: int, rng):
    """Plain Monte Carlo of ``||p - pi(p)||_1``, ``||p - pi(p)||_2^2`` and ``pi_{argmax p}``."""
    sums = np.zeros(3)
    sq = np.zeros(3)
    done = 0
    while done < n_mc:
        k = min(100_000, n_mc - done)
        log_p = sim.sample_log_probs(k, rng)
        p, pi = np.exp(log_p), np.exp(sim.true_map.log_apply(log_p))
        vals = np.stack(
            [
                np.abs(p - pi).sum(axis=1),
                ((p - pi) ** 2).sum(axis=1),
                pi[np.arange(k), np.argmax(log_p, axis=1)],
            ]
        )
        sums += vals.sum(axis=1)
        sq += (vals**2).sum(axis=1)
        done += k
    mean = sums / n_mc
    se = np.sqrt(np.maximum(sq / n_mc - mean**2, 0.0) / (n_mc - 1))
    return mean, se


def dirichlet_errors(sim: DirichletSimulator, *, n_inner, n_batches, panels, n_mc, seed) -> dict:
    """All true errors of a Dirichlet simulator as ``{name: (value, standard error)}``."""
    rng = np.random.default_rng(seed)
    classes = (
        [0]
        if (sim.true_map.exchangeable and np.all(sim.alpha == sim.alpha[0]))
        else list(range(sim.n_classes))
    )
    log_q = _inner_samples(sim, classes, n_inner, n_batches, rng)
    tl, conf, acc_quad = _top_label_and_confidence(sim, classes, log_q, panels)
    cw = _classwise(sim, classes, log_q, panels)
    mean, se = _canonical(sim, n_mc, rng)
    l2 = float(np.sqrt(mean[1]))
    return {
        "conf_ece": conf,
        "top_label_ece": tl,
        "classwise_ece": cw,
        "canonical_ece_l1": (float(mean[0]), float(se[0])),
        "canonical_ece_l2": (l2, float(se[1] / (2 * l2)) if l2 > 0 else float(np.sqrt(se[1]))),
        "accuracy": (float(mean[2]), float(se[2])),
        "accuracy_quadrature": acc_quad,
    }


def dirichlet_reliability(sim: DirichletSimulator, grid: np.ndarray, *, n_inner, seed):
    """True confidence reliability ``P(correct | max p = h)`` and density of ``h`` on ``grid``."""
    rng = np.random.default_rng(seed)
    classes = list(range(sim.n_classes))
    log_q = _inner_samples(sim, classes, n_inner, 1, rng)
    h = np.asarray(grid, dtype=np.float64)
    log_h, log_1mh = np.log(h), np.log1p(-h)
    alpha, a0 = sim.alpha, sim.alpha.sum()
    density, correct = np.zeros_like(h), np.zeros_like(h)
    for c in classes:
        A, B = _top_terms(sim, c, log_h, log_1mh, log_q[c])
        pdf = np.exp(_beta_logpdf(alpha[c], a0 - alpha[c], log_h, log_1mh))
        density += pdf * A[:, 0]
        correct += pdf * B[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.where(density > 0, correct / density, np.nan)
    return accuracy, density
