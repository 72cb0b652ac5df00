"""Fit and judge a learned re-ranker over the feature rows of bench/rerank/features.py (issue 13, LR10; measure only).

A linear score w . x over standardised features, fitted by a listwise softmax (or pairwise) logistic loss
with L2, on seven development sets; the eighth set's top 30 is re-ranked by it and its recall@3 hits compared
with the shipped order (leave one set out).  A second view: a 2-fold split of each set's queries (even / odd
position), fitted on one half of all eight sets and judged on the other.  A tool the query names exactly
stays first, as the shipped search pins it.  numpy/scipy: bench only.

    /work/venv-distill/bin/python bench/rerank/fit.py [FEATURE_DIR] [--pairwise] [--lambda 1.0] [--features a,b,..]
"""
import argparse
import json
import os

import numpy as np
from scipy.optimize import minimize

SETS = ("dev", "b", "c", "d", "e", "f", "g", "h")
KINDS = ("paraphrase", "task")


def load(directory):
    """Set -> list of (X rows array, relevance array, kind); and the feature names."""
    data, names = {}, None
    for s in SETS:
        with open(os.path.join(directory, f"{s}.json")) as f:
            blob = json.load(f)
        names = blob["features"]
        data[s] = [(np.array(q["rows"], dtype=float).reshape(-1, len(names)),
                    np.array([tid in set(q["wanted"]) for tid in q["ids"]], dtype=bool), q["kind"])
                   for q in blob["queries"]]
    return data, names


def fit(queries, lam, pairwise, columns, prior=None):
    """Weights (on standardised columns) and the standardisation, from queries with a wanted tool among the rows.

    ``prior``: the weights the L2 penalty pulls toward (zero when None); a prior that orders by the shipped
    rank makes a strong penalty mean "keep the shipped order" rather than "weigh every feature alike".
    """
    prior = np.zeros(len(columns)) if prior is None else prior
    usable = [(x[:, columns], y) for x, y, _ in queries if len(y) and y.any() and not y.all()]
    stacked = np.vstack([x for x, _ in usable])
    mean, std = stacked.mean(0), stacked.std(0) + 1e-9
    usable = [((x - mean) / std, y) for x, y in usable]
    if pairwise:
        diffs = np.vstack([(x[y][:, None, :] - x[~y][None, :, :]).reshape(-1, x.shape[1]) for x, y in usable])

        def loss(w):
            m = diffs @ w
            value = np.logaddexp(0, -m).mean() + lam * (w - prior) @ (w - prior) / 2
            grad = -(diffs * (1 / (1 + np.exp(m)))[:, None]).mean(0) + lam * (w - prior)
            return value, grad
    else:
        def loss(w):
            value, grad = 0.0, np.zeros_like(w)
            for x, y in usable:
                s = x @ w
                p = np.exp(s - s.max()); p /= p.sum()
                pos = p[y].sum()
                value -= np.log(pos)
                # d/dw -log(sum_pos p) = E_p[x] - E_{p|pos}[x]
                grad += p @ x - (p[y] @ x[y]) / pos
            n = len(usable)
            return value / n + lam * (w - prior) @ (w - prior) / 2, grad / n + lam * (w - prior)
    w0 = prior.copy()
    result = minimize(loss, w0, jac=True, method="L-BFGS-B")
    return result.x, mean, std


def hits(queries, w, mean, std, columns, exact_column):
    """(shipped hits, re-ranked hits) at 3 in all and per kind."""
    shipped, learned = {"all": 0}, {"all": 0}
    for x, y, kind in queries:
        if not len(y):
            continue
        s = ((x[:, columns] - mean) / std) @ w
        s = s + 1e6 * (x[:, exact_column] > 0)  # exact names stay first
        order = np.lexsort((np.arange(len(s)), -s))  # ties keep the shipped order
        a, b = int(y[:3].any()), int(y[order[:3]].any())
        shipped["lost"] = shipped.get("lost", 0) + (a > b)
        shipped["won"] = shipped.get("won", 0) + (b > a)
        for k in ("all", kind):
            shipped[k] = shipped.get(k, 0) + a
            learned[k] = learned.get(k, 0) + b
    return shipped, learned


NESTED_LAMBDAS = (0.001, 0.003, 0.01, 0.03, 0.1)


def nested_lambda(data, sets, pairwise, columns, exact_column, prior):
    """The L2 weight that re-ranks best under leave-one-set-out within ``sets`` alone (the held-aside set unseen)."""
    best = None
    for lam in NESTED_LAMBDAS:
        total = 0
        for inner in sets:
            w, mean, std = fit([q for s in sets if s != inner for q in data[s]], lam, pairwise, columns, prior)
            total += hits(data[inner], w, mean, std, columns, exact_column)[1]["all"]
        if best is None or total > best[0]:
            best = (total, lam)
    return best[1]


def report(title, rows):
    pooled = sum(r["gain"] for r in rows.values())
    kinds = {k: sum(r.get(k, 0) for r in rows.values()) for k in KINDS}
    print(json.dumps({"view": title, "pooled_gain": pooled, **{f"{k}_gain": v for k, v in kinds.items()},
                      "worst_set": min(r["gain"] for r in rows.values()), "sets": rows}), flush=True)
    return pooled


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("directory", nargs="?", default="/tmp/lr10-features")
    parser.add_argument("--pairwise", action="store_true")
    parser.add_argument("--lambda", dest="lam", type=float, default=0.01)
    parser.add_argument("--features", default="")
    parser.add_argument("--nested", action="store_true",
                        help="leave one set out with the L2 weight chosen by an inner leave-one-set-out on the other seven")
    parser.add_argument("--drop", default="", help="features left out, comma-separated")
    parser.add_argument("--prior", type=float, default=0.0,
                        help="pull the weights toward -PRIOR on log_rank (the shipped order) instead of toward zero")
    args = parser.parse_args()
    data, names = load(args.directory)
    wanted = args.features.split(",") if args.features else names
    wanted = [n for n in wanted if n not in args.drop.split(",")]
    columns = [names.index(n) for n in wanted]
    prior = np.zeros(len(columns))
    if args.prior and "log_rank" in wanted:
        prior[wanted.index("log_rank")] = -args.prior
    exact_column = names.index("sig_exact_name")
    label = f"{'pairwise' if args.pairwise else 'listwise'} lambda={args.lam} prior={args.prior} features={len(columns)}"

    rows = {}
    for held in SETS:
        train = [q for s in SETS if s != held for q in data[s]]
        lam = args.lam
        if args.nested:
            lam = nested_lambda(data, [s for s in SETS if s != held], args.pairwise, columns, exact_column, prior)
        w, mean, std = fit(train, lam, args.pairwise, columns, prior)
        shipped, learned = hits(data[held], w, mean, std, columns, exact_column)
        rows[held] = {"shipped": shipped["all"], "learned": learned["all"], "gain": learned["all"] - shipped["all"],
                      "won": shipped.get("won", 0), "lost": shipped.get("lost", 0),
                      **{k: learned.get(k, 0) - shipped.get(k, 0) for k in KINDS}, **({"lambda": lam} if args.nested else {})}
    report(("nested " if args.nested else "") + "leave one set out, " + label, rows)

    rows = {s: {"shipped": 0, "learned": 0, "gain": 0, "won": 0, "lost": 0, **{k: 0 for k in KINDS}} for s in SETS}
    for half in (0, 1):
        train = [q for s in SETS for n, q in enumerate(data[s]) if n % 2 != half]
        w, mean, std = fit(train, args.lam, args.pairwise, columns, prior)
        for s in SETS:
            shipped, learned = hits([q for n, q in enumerate(data[s]) if n % 2 == half], w, mean, std, columns, exact_column)
            r = rows[s]
            r["shipped"] += shipped["all"]; r["learned"] += learned["all"]; r["gain"] += learned["all"] - shipped["all"]
            r["won"] += shipped.get("won", 0); r["lost"] += shipped.get("lost", 0)
            for k in KINDS:
                r[k] += learned.get(k, 0) - shipped.get(k, 0)
    report("2-fold by query within sets, " + label, rows)

    w, mean, std = fit([q for s in SETS for q in data[s]], args.lam, args.pairwise, columns, prior)
    print(json.dumps({"weights_all_sets_standardised": {n: round(float(v), 3) for n, v in zip(wanted, w)}}))
    # The same in the features' own units (w / std), what an implementation would multiply raw values by.
    print(json.dumps({"weights_all_sets_raw_units": {n: round(float(v / d), 3) for n, v, d in zip(wanted, w, std)}}))


if __name__ == "__main__":
    main()
