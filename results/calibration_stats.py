"""results/calibrate.py's statistics, apart from what it fits: the simplex search, the folds
of the fitting rows, and the conformal band of their out-of-fold residuals."""

import hashlib
import math

# The band's residuals are each fitting row's error under the parameters fitted without it, in
# this many folds (or one per row, where there are fewer rows).
FOLDS = 10


def conformal_band(residuals, coverage=0.8):
    """The residuals' order statistics that bound a conformal prediction interval of the given
    coverage (Vovk et al.; Lei et al. 2018, split conformal): with n residuals, the
    floor(a (n + 1))-th and ceil((1 - a) (n + 1))-th smallest, a = (1 - coverage) / 2, clamped to
    the smallest and largest."""
    v = sorted(residuals)
    n = len(v)
    a = (1 - coverage) / 2
    lo = max(1, math.floor(a * (n + 1)))
    hi = min(n, math.ceil((1 - a) * (n + 1)))
    return v[lo - 1], v[hi - 1]


def nelder_mead(f, x0, steps, upper, tolerance=1e-5, max_evaluations=200):
    """The minimum of f by Nelder and Mead's simplex from x0, the first simplex stepping each
    coordinate by its step (down where up would pass its upper bound)."""
    simplex = [list(x0)]
    for i, step in enumerate(steps):
        x = list(x0)
        x[i] = x[i] - step if x[i] + step > upper[i] else x[i] + step
        simplex.append(x)
    values = [f(x) for x in simplex]
    evaluations = len(simplex)
    while evaluations < max_evaluations:
        order = sorted(range(len(simplex)), key=lambda i: values[i])
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        if values[-1] - values[0] < tolerance:
            break
        n = len(x0)
        centroid = [sum(x[j] for x in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]

        def point(t):
            return [c + t * (w - c) for c, w in zip(centroid, worst)]

        reflected = point(-1.0)
        fr = f(reflected)
        evaluations += 1
        if fr < values[0]:
            expanded = point(-2.0)
            fe = f(expanded)
            evaluations += 1
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = point(0.5)
            fc = f(contracted)
            evaluations += 1
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                for i in range(1, len(simplex)):
                    simplex[i] = [(a + b) / 2 for a, b in zip(simplex[0], simplex[i])]
                    values[i] = f(simplex[i])
                    evaluations += 1
    best = min(range(len(simplex)), key=lambda i: values[i])
    return simplex[best], values[best]


def restarted_nelder_mead(f, x0, steps, upper, restarts=4, tolerance=1e-5):
    """Nelder-Mead, restarted from its best point with a fresh simplex until a restart gains less
    than `tolerance`: the loss is piecewise smooth (a step's critical path switches between
    passes), and a simplex that has collapsed across a kink stops short of the minimum."""
    best, loss = nelder_mead(f, x0, steps, upper)
    for _ in range(restarts):
        x, value = nelder_mead(f, best, [s / 2 for s in steps], upper)
        if value > loss - tolerance:
            break
        best, loss = x, value
    return best, loss


def folds_of(names):
    """The fitting rows dealt round-robin into FOLDS folds in the order of the SHA-256 of their
    names: fixed, even in size, and chosen by no one."""
    order = sorted(names, key=lambda n: hashlib.sha256(n.encode()).hexdigest())
    k = min(FOLDS, len(order))
    return [frozenset(order[i::k]) for i in range(k)]


def residual_band(rows):
    """The plain and the locally weighted 80 % conformal band of (measured, predicted, spread)
    rows (see the module's docstring)."""
    low, high = conformal_band([m / p - 1 for m, p, _ in rows])
    band = {
        "residual_p10": round(min(0.0, low), 4),
        "residual_p90": round(max(0.0, high), 4),
    }
    # Locally weighted: each residual over its row's kernel spread (the P10-P90 width of the
    # kernels the database timed), so that the band widens with the kernels' own variation.
    weighted = [(m / p - 1) / w for m, p, w in rows if w > 0]
    if len(weighted) == len(rows):
        low, high = conformal_band(weighted)
        band["residual_per_spread_p10"] = round(min(0.0, low), 3)
        band["residual_per_spread_p90"] = round(max(0.0, high), 3)
    return band
