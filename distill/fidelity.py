#!/usr/bin/env python3
"""How well candidate token tables mimic the teacher on corpus sentences left out of their fit (no bench data).

The held-aside sentences are the 1/16 of the corpus whose lower-case sha256 starts with ``0``
(corpus.held_aside; ``distill.py --hold-aside`` leaves them out of the fit).  For each table: the share
of each sentence's 10 nearest neighbours by the teacher's cosine that the table's vectors also put in
their 10 nearest (nn@10), and the correlation of all pairwise cosines.  This is what the fit optimises,
on text it did not see; distill/README.md chose the ridge strength with it next to the development set.

    /work/venv-distill/bin/python distill/fidelity.py --sentence-cache /tmp/sentences.npz TABLE.bin ...
"""

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

import corpus  # noqa: E402
import distill  # noqa: E402

sys.path.insert(0, distill.ROOT)
from toolscript.search import vectors  # noqa: E402


def fidelity(tables: list, sources: list, packages: str, sentence_cache: str) -> dict:
    sentences = [s for s in corpus.build(sources, packages) if corpus.held_aside(s)]
    teacher = distill.teacher_sentences(distill.teacher_dir(), sentences, sentence_cache)
    teacher /= np.linalg.norm(teacher, axis=1, keepdims=True)
    wanted = teacher @ teacher.T
    np.fill_diagonal(wanted, -9.0)
    nearest = np.argsort(-wanted, axis=1, kind="stable")[:, :10]
    pairs = np.triu_indices(len(sentences), 1)
    out = {"sentences": len(sentences)}
    for path in tables:
        with open(path, "rb") as f:
            vectors.use_table(f.read())
        student = np.array([vectors.encode(s) or [0.0] * vectors.DIM for s in sentences])
        got = student @ student.T
        np.fill_diagonal(got, -9.0)
        found = np.argsort(-got, axis=1, kind="stable")[:, :10]
        agreement = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(nearest, found)]))
        out[path] = {"nn@10": round(agreement, 4), "pair_correlation": round(float(np.corrcoef(wanted[pairs], got[pairs])[0, 1]), 4)}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tables", nargs="+", help="embeddings.bin files (distill.py -o FILE)")
    parser.add_argument("--sources", default="debian,man,python", help="corpus sources whose held-aside sentences are measured")
    parser.add_argument("--packages", default=corpus.PACKAGES)
    parser.add_argument("--sentence-cache", default="", help="the npz file distill.py --sentence-cache keeps")
    args = parser.parse_args(argv)
    json.dump(fidelity(args.tables, args.sources.split(","), args.packages, args.sentence_cache), sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
