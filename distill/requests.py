"""Tune the word-vector table on real tool requests: a contrastive stage after distill/distill.py (VECTORS-V7).

distill.py makes a table whose sentence vectors mimic the teacher's; nothing in it is trained for
retrieval.  This stage takes that table (``--start``, V3 as distill.py writes it) and moves its rows so
that a request's vector lands nearer the tools it asks for: each (query, labelled tool) pair of the
development sets under bench/ (their queries, both authors' files) is a positive, the other pairs of its
batch negatives (symmetric in-batch InfoNCE), and each set's noise requests (no tool serves them) extra
negatives for the tools.  A tool is encoded as search encodes it (toolscript.search.fields.vector_texts: its name,
first sentence, description and parameter names, each a unit vector, weighed by Tuning.tool_text_weights).  A pull
toward the starting rows keeps the tokens no request uses where they were.  Then the rows are packed
exactly as distill.py packs them (int4, same vocabulary, same size).

A text is pooled as toolscript.search.vectors.encode pools it (its tokens' rows summed, then normalised; the
rows already carry distill.py's SIF weights), with the product's own tokenizer.  torch on one thread,
fixed seeds, a hand-written Adam that moves only the rows a batch touches: the same inputs give the same
bytes.  Only the sets in DEVELOPMENT_SETS are read; a set added later (bench/search/sets/set12 on) joins them
only after it has judged a table once, so a fresh held-out set can still judge this one.  ``--leave-out`` drops sets (and every pair whose tool is in
their catalogs) to judge the stage on them (distill/README.md, VECTORS-V5 to V7).

    /work/venv-distill/bin/python distill/requests.py --start distill/embeddings-v3.bin -o toolscript/search/data/embeddings.bin
"""

import argparse
import hashlib
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, HERE)

import distill  # noqa: E402  (distill/distill.py: pack, write_table, _torch)

# The sets whose queries train the table (bench/search/sets/sets.json's trains_vectors): the committed
# table was made from exactly these, so a set added later joins only when the table is made again.
DEVELOPMENT_SETS = tuple(f"set{n:02d}" for n in range(21))
START = os.path.join(HERE, "embeddings-v3.bin")
OUTPUT = os.path.join(ROOT, "toolscript", "search", "data", "embeddings.bin")
TAU = 0.05  # softmax temperature of the contrastive loss
PULL = 0.1  # weight of the squared distance of touched rows from their start (in a row's mean square)
EPOCHS = 20
BATCH = 256
STEP = 0.02  # Adam's step, as a fraction of the starting rows' rms value
NOISE_PER_BATCH = 32  # noise requests each batch's tools must also beat


def read_table(data: bytes):
    """(vocabulary, rows with vectors, bits, float rows) of a data file as distill.pack writes it."""
    dim, bits, count, with_vectors, words_size = struct.unpack_from("<HHIII", data, len(distill.MAGIC))
    offset = len(distill.MAGIC) + struct.calcsize("<HHIII")
    vocab = data[offset:offset + words_size].decode("utf-8").split("\n")
    offset += words_size
    column = np.frombuffer(data, "<f4", dim, offset).astype(np.float64)
    offset += 4 * dim
    scale = np.frombuffer(data, "<f4", with_vectors, offset).astype(np.float64)
    offset += 4 * with_vectors
    if bits == 4:
        packed = np.frombuffer(data, np.uint8, with_vectors * dim // 2, offset).reshape(with_vectors, dim // 2)
        values = np.empty((with_vectors, dim), dtype=np.float64)
        values[:, 0::2] = (packed & 15).astype(np.float64) - 8
        values[:, 1::2] = (packed >> 4).astype(np.float64) - 8
    else:
        values = np.frombuffer(data, np.int8, with_vectors * dim, offset).reshape(with_vectors, dim).astype(np.float64)
    assert len(vocab) == count
    return vocab, with_vectors, bits, values * scale[:, None] * column[None, :]


def request_pairs(leave_out=()):
    """Sorted unique (query, the tool's four texts as search encodes them) pairs and noise requests of DEVELOPMENT_SETS
    but ``leave_out``; no pair whose tool is in a left-out set's own catalogs (later sets' multi queries label earlier
    sets' tools)."""
    import search as bench  # bench/search.py
    from toolscript.search.fields import vector_texts

    dev_tools = bench.load_catalog()
    sets = {DEVELOPMENT_SETS[0]: (dev_tools, bench.with_dev_kinds(dev_tools, bench.load_queries()), bench.load_queries(key="noise"), dev_tools)}
    for name in DEVELOPMENT_SETS[1:]:
        sets[name] = bench.later_set(name)
    banned = {t["id"] for name in leave_out for t in sets[name][3]}
    pairs, noise = set(), set()
    for name, (tools, queries, noise_queries, _own) in sets.items():
        if name in leave_out:
            continue
        by_id = {t["id"]: t for t in tools}
        for query in queries:
            for tool_id in query["ids"]:
                if tool_id in banned:
                    continue
                texts = vector_texts(by_id[tool_id])
                pairs.add((" ".join(query["query"].split()),) + tuple(" ".join(t.split()) for t in texts))
        noise.update(" ".join(q.split()) for q in noise_queries)
    return sorted(pairs), sorted(noise)


def tune(data: bytes, pairs, noise, tau=TAU, pull=PULL, epochs=EPOCHS, batch=BATCH, step=STEP,
         noise_per_batch=NOISE_PER_BATCH) -> bytes:
    """``data`` (a table) with its rows tuned on ``pairs`` (query, tool texts) and ``noise`` requests, packed alike."""
    from toolscript.search import vectors
    from toolscript.search.tuning import DEFAULT_TUNING

    torch = distill._torch()
    torch.manual_seed(0)
    vocab, with_vectors, bits, start = read_table(data)
    table = vectors.Table(data)
    texts = {"": np.zeros(0, dtype=np.int64)}
    for text in [t for pair in pairs for t in pair] + list(noise):
        if text not in texts:
            texts[text] = np.array(vectors.rows_of(table, text), dtype=np.int64)
    pairs = [p for p in pairs if len(texts[p[0]]) and any(len(texts[t]) for t in p[1:])]
    noise = [q for q in noise if len(texts[q])]
    names = sorted(texts)
    number = {text: n for n, text in enumerate(names)}
    parts = len(pairs[0]) - 1  # the tool's texts, as search encodes a tool
    weights = torch.tensor(DEFAULT_TUNING.tool_text_weights, dtype=torch.float32)
    pair_ids = np.array([[number[t] for t in p] for p in pairs], dtype=np.int64)
    noise_ids = np.array([number[q] for q in noise], dtype=np.int64)
    v0 = torch.tensor(start, dtype=torch.float32)
    rms = float(v0.pow(2).mean().sqrt())
    rows, first, second = v0.clone(), torch.zeros_like(v0), torch.zeros_like(v0)
    functional = torch.nn.functional
    rng = np.random.RandomState(0)
    steps = 0
    for _ in range(epochs):
        order = rng.permutation(len(pair_ids))
        for begin in range(0, len(order) - batch + 1, batch):
            chosen = pair_ids[order[begin:begin + batch]]
            extra = noise_ids[rng.randint(0, len(noise_ids), noise_per_batch)] if len(noise_ids) and noise_per_batch else noise_ids[:0]
            n = len(chosen)
            ids = np.concatenate([chosen[:, 0], chosen[:, 1:].T.ravel(), extra])
            tokens = [texts[names[i]] for i in ids]
            touched, local = np.unique(np.concatenate(tokens), return_inverse=True)
            offsets = np.cumsum([0] + [len(t) for t in tokens[:-1]])
            touched_t = torch.from_numpy(touched)
            sub = rows[touched_t].clone().requires_grad_(True)
            pooled = functional.embedding_bag(torch.from_numpy(local.astype(np.int64).ravel()), sub,
                                              torch.from_numpy(offsets), mode="sum")
            pooled = functional.normalize(pooled, dim=1)  # an empty text pools to zero and stays zero
            queries, noise_vectors = pooled[:n], pooled[n + parts * n:]
            # A tool as search encodes it: its texts' unit vectors, weighted, summed, normalised.
            tools = functional.normalize((pooled[n:n + parts * n].reshape(parts, n, -1) * weights[:, None, None]).sum(0), dim=1)
            logits = queries @ tools.T / tau
            a = torch.from_numpy(chosen[:, 0])
            b = torch.from_numpy(np.unique(chosen[:, 1:], axis=0, return_inverse=True)[1].ravel())  # the tool
            # Two pairs sharing a query or a tool are not each other's negatives.
            same = ((a[:, None] == a[None, :]) | (b[:, None] == b[None, :])) & ~torch.eye(n, dtype=torch.bool)
            logits = logits.masked_fill(same, -1e4)
            backward = torch.cat([logits.T, tools @ noise_vectors.T / tau], dim=1) if len(extra) else logits.T
            target = torch.arange(n)
            loss = (functional.cross_entropy(logits, target) + functional.cross_entropy(backward, target)) / 2
            loss = loss + pull * (sub - v0[touched_t]).pow(2).sum() / (rms * rms * v0.shape[1] * batch)
            loss.backward()
            gradient = sub.grad
            steps += 1
            with torch.no_grad():
                m = first[touched_t].mul_(0.9).add_(gradient, alpha=0.1)
                v = second[touched_t].mul_(0.999).addcmul_(gradient, gradient, value=0.001)
                first[touched_t], second[touched_t] = m, v
                update = (m / (1 - 0.9 ** steps)) / ((v / (1 - 0.999 ** steps)).sqrt() + 1e-8)
                rows[touched_t] = sub.detach() - step * rms * update
    return distill.pack(vocab, rows.double().numpy(), with_vectors, bits)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--start", default=START, help="the table to tune (distill.py's output, VECTORS-V3)")
    parser.add_argument("--leave-out", default="", help=f"comma-separated sets of {', '.join(DEVELOPMENT_SETS)} left out (experiments)")
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--pull", type=float, default=PULL)
    parser.add_argument("-o", "--output", default=OUTPUT)
    args = parser.parse_args(argv)
    leave_out = [s for s in args.leave_out.split(",") if s]
    unknown = set(leave_out) - set(DEVELOPMENT_SETS)
    if unknown:
        parser.error(f"--leave-out: not a development set: {', '.join(sorted(unknown))}")
    pairs, noise = request_pairs(leave_out)
    pairs_sha = hashlib.sha256("\n".join("\t".join(p) for p in pairs).encode("utf-8")).hexdigest()
    print(f"{len(pairs)} pairs (sha256 {pairs_sha[:16]}), {len(noise)} noise requests", file=sys.stderr)
    with open(args.start, "rb") as f:
        data = tune(f.read(), pairs, noise, epochs=args.epochs, pull=args.pull)
    distill.write_table(args.output, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
