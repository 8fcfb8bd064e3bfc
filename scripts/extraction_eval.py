#!/usr/bin/env python3
"""Main-text extraction quality and speed, scored like scrapinghub/article-extraction-benchmark.

Data: ../shared/data/extraction/ from the project root (html/<key>.html and
ground-truth.json {key: {"articleBody": ..., "url": ...}}); 91 of the benchmark's 181 pages.

Subcommands
  score       --pred PRED.json [--name N] [--truth GT.json]      one table row: F1, P, R, accuracy, n
  compare     --pred A.json --name A --pred B.json --name B ...  side-by-side table (+ paired
                                                                  bootstrap differences vs the first)
  trafilatura [--pages DIR] [--truth GT.json] [--out PRED.json]  run Python trafilatura on every
                                                                  page, time it, score it

PRED.json is {key: {"articleBody": text, ...}}; the benchmark's wrapped form
{"version": ..., "output": {key: {...}}} is accepted too. A null/absent articleBody counts as empty.
Keys must equal the ground truth's (as in the benchmark) unless --allow-missing / --ignore-extra.

Scoring (a faithful re-implementation of the benchmark's evaluate.py, MIT, commit 4a3bc97):
  * tokens   = re.findall(r"\\w+", text) (Python's Unicode \\w; punctuation dropped, case kept).
  * shingles = token 4-grams, counted as a multiset; a text with 1..3 tokens gives one short
               shingle, an empty text gives none.
  * per page: tp = sum(min(true, pred)), fp = sum(max(0, pred - true)), fn = sum(max(0, true - pred))
               over shingles, then normalised by (tp + fp + fn) so every page weighs the same.
  * precision(page) = 1 if fp == fn == 0, else tp / (tp + fp); recall likewise with fn.
  * P = mean of precision over pages with tp + fp > 0 (an empty prediction is left out of P but
    scores recall 0); R = mean of recall over pages with tp + fn > 0.
  * F1 = 2PR / (P + R) of the averaged P and R (NOT the mean of per-page F1): that is what the
    benchmark's metrics_from_tp_fp_fns does, and the published numbers use it.
  * accuracy = share of pages whose token lists are identical.
  * "±" = standard deviation over --n-bootstrap (default 1000, as the benchmark) resamples of the
    pages with replacement (the benchmark reports std since commit 3cca8c3). Seeded (--seed) here,
    unseeded in the benchmark, so the ± figures wobble in the 3rd decimal between tools.
  Checked against the benchmark's own evaluate.py on its stored outputs (trafilatura,
  rs_trafilatura, readability_js, dom_smoothie, news_please; 181 and 91 pages): identical per-page
  tp/fp/fn and P/R/F1/accuracy; on all 181 pages trafilatura scores F1 0.958 ± 0.006 as published.
  Python trafilatura 2.0.0 run by this script reproduces the published output byte for byte on the
  91 pages: F1 0.958, P 0.938, R 0.980 (the 181-page figure is 0.958 / 0.938 / 0.978).

Python trafilatura (only the `trafilatura` subcommand needs it; the scoring is stdlib only):
    pip install trafilatura==2.0.0 'lxml<6' lxml_html_clean
  (2.0.0 and lxml<6 are the benchmark's pins; jusText 3.0.2 needs lxml_html_clean with lxml>=5.2.)
  From the project sandbox: "$MUSEBOT_VENV/bin/pip" install ... then run this file with
  "$MUSEBOT_VENV/bin/python". The published run calls trafilatura.extract(html,
  include_comments=False) (defaults: output_format="txt", include_tables=True, no url); this
  script passes the ground-truth url unless --no-url.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import re
import resource
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "extraction"
DEFAULT_TRUTH = DEFAULT_DATA / "ground-truth.json"
DEFAULT_PAGES = DEFAULT_DATA / "html"

NGRAM_N = 4
_TOKEN_RE = re.compile(r"\w+", re.UNICODE | re.MULTILINE | re.IGNORECASE | re.DOTALL)

TpFpFn = tuple[float, float, float]


# ---------------------------------------------------------------- scoring (benchmark-exact)

def tokenize(text: str | None) -> list[str]:
    return _TOKEN_RE.findall(text or "")


def shingles(text: str | None, n: int = NGRAM_N) -> Counter:
    tokens = tokenize(text)
    out: Counter = Counter()
    for i in range(0, max(1, len(tokens) - n + 1)):
        sh = tuple(tokens[i:i + n])
        if sh:
            out[sh] += 1
    return out


def tp_fp_fn(true: str | None, pred: str | None) -> TpFpFn:
    t, p = shingles(true), shingles(pred)
    tp = fp = fn = 0.0
    for key in set(t) | set(p):
        tc, pc = t.get(key, 0), p.get(key, 0)
        tp += min(tc, pc)
        fp += max(0, pc - tc)
        fn += max(0, tc - pc)
    s = tp + fp + fn
    if s > 0:
        return (tp / s, fp / s, fn / s)
    return (tp, fp, fn)


def precision_score(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    if tp == fp == 0:
        return 0.0
    return tp / (tp + fp)


def recall_score(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    if tp == fn == 0:
        return 0.0
    return tp / (tp + fn)


def metrics_from(tfs: list[TpFpFn]) -> dict[str, float]:
    ps = [precision_score(*x) for x in tfs if x[0] + x[1] > 0]
    rs = [recall_score(*x) for x in tfs if x[0] + x[2] > 0]
    # The benchmark would raise on an empty list (statistics.mean([])); we report 0 instead.
    p = statistics.mean(ps) if ps else 0.0
    r = statistics.mean(rs) if rs else 0.0
    f1 = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return {"f1": f1, "precision": p, "recall": r}


def load_json(path: Path) -> Any:
    with path.open("rt", encoding="utf8") as f:
        return json.load(f)


def load_pred(path: Path) -> tuple[dict[str, dict], str]:
    data = load_json(path)
    if isinstance(data, dict) and set(data) == {"version", "output"} and isinstance(data["output"], dict):
        return data["output"], str(data.get("version") or "")
    return data, ""


def load_truth(path: Path) -> dict[str, dict]:
    if not path.exists():
        sys.exit(f"ground truth not found: {path} (the shared data folder is absent; pass --truth)")
    return load_json(path)


def evaluate(truth: dict[str, dict], pred: dict[str, dict], *, n_bootstrap: int = 1000,
             seed: int = 0, allow_missing: bool = False, ignore_extra: bool = False) -> dict[str, Any]:
    missing = [k for k in truth if k not in pred]
    extra = [] if ignore_extra else [k for k in pred if k not in truth]
    if extra or (missing and not allow_missing):
        raise ValueError(f"prediction keys do not match ground truth: {len(missing)} missing, "
                         f"{len(extra)} extra (--allow-missing scores missing ones as empty, "
                         f"--ignore-extra drops keys absent from the ground truth)")
    keys = list(truth)
    tfs: list[TpFpFn] = []
    acc: list[float] = []
    for k in keys:
        t = truth[k].get("articleBody", "")
        p = (pred.get(k) or {}).get("articleBody", "")
        tfs.append(tp_fp_fn(t, p))
        acc.append(float(tokenize(t) == tokenize(p)))
    m: dict[str, Any] = metrics_from(tfs)
    m["accuracy"] = statistics.mean(acc)
    m["n"] = len(keys)
    m["n_empty_pred"] = sum(1 for x in tfs if x[0] + x[1] == 0)
    m["n_missing"] = len(missing)
    m["keys"], m["tp_fp_fns"], m["acc"] = keys, tfs, acc
    if n_bootstrap > 1:
        rng = random.Random(seed)
        vals: dict[str, list[float]] = {}
        n = len(tfs)
        for _ in range(n_bootstrap):
            idx = [rng.randint(0, n - 1) for _ in range(n)]
            b = metrics_from([tfs[i] for i in idx])
            b["accuracy"] = statistics.mean(acc[i] for i in idx)
            for key, v in b.items():
                vals.setdefault(key, []).append(v)
        for key, v in vals.items():
            m[f"{key}_std"] = statistics.stdev(v)
    return m


def bootstrap_diff(a: list[TpFpFn], b: list[TpFpFn], n_bootstrap: int, seed: int) -> dict[str, tuple[float, float]]:
    rng = random.Random(seed)
    n = len(a)
    diffs: dict[str, list[float]] = {}
    for _ in range(n_bootstrap):
        idx = [rng.randint(0, n - 1) for _ in range(n)]
        ma = metrics_from([a[i] for i in idx])
        mb = metrics_from([b[i] for i in idx])
        for key in ma:
            diffs.setdefault(key, []).append(ma[key] - mb[key])
    return {k: (statistics.mean(v), statistics.stdev(v)) for k, v in diffs.items()}


# ---------------------------------------------------------------- output

def _fmt(m: dict[str, Any], key: str) -> str:
    std = m.get(f"{key}_std")
    return f"{m[key]:.3f} ± {std:.3f}" if std is not None else f"{m[key]:.3f}        "


def header(w: int = 22) -> str:
    return f"{'name':<{w}} {'F1':<13}  {'precision':<13}  {'recall':<13}  {'accuracy':<13}  {'n':>3}  empty"


def row(name: str, m: dict[str, Any], w: int = 22) -> str:
    return (f"{name:<{w}} {_fmt(m, 'f1')}  {_fmt(m, 'precision')}  {_fmt(m, 'recall')}  "
            f"{_fmt(m, 'accuracy')}  {m['n']:>3}  {m['n_empty_pred']:>5}")


def print_worst(m: dict[str, Any], k: int) -> None:
    per = []
    for key, x in zip(m["keys"], m["tp_fp_fns"]):
        p, r = precision_score(*x), recall_score(*x)
        f = 2 * p * r / (p + r) if p + r else 0.0
        per.append((f, p, r, key))
    per.sort()
    print(f"\nworst {k} pages (per-page F1, P, R):")
    for f, p, r, key in per[:k]:
        print(f"  {f:.3f}  P={p:.3f}  R={r:.3f}  {key}")


def percentile(sorted_vals: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an ascending list."""
    if not sorted_vals:
        return float("nan")
    rank = max(1, math.ceil(q / 100 * len(sorted_vals)))
    return sorted_vals[rank - 1]


# ---------------------------------------------------------------- subcommands

def cmd_score(args: argparse.Namespace) -> None:
    truth = load_truth(args.truth)
    pred, _ = load_pred(args.pred)
    m = evaluate(truth, pred, n_bootstrap=args.n_bootstrap, seed=args.seed,
                 allow_missing=args.allow_missing, ignore_extra=args.ignore_extra)
    name = args.name or args.pred.stem
    w = max(22, len(name))
    print(header(w))
    print(row(name, m, w))
    if args.worst:
        print_worst(m, args.worst)


def cmd_compare(args: argparse.Namespace) -> None:
    truth = load_truth(args.truth)
    names = list(args.name or [])
    if len(names) > len(args.pred):
        sys.exit("more --name than --pred")
    names += [p.stem for p in args.pred[len(names):]]
    results = []
    for name, path in zip(names, args.pred):
        pred, _ = load_pred(path)
        results.append((name, evaluate(truth, pred, n_bootstrap=args.n_bootstrap, seed=args.seed,
                                       allow_missing=args.allow_missing, ignore_extra=args.ignore_extra)))
    w = max(22, *(len(n) for n in names))
    print(header(w))
    for name, m in results:
        print(row(name, m, w))
    if len(results) > 1 and args.n_bootstrap > 1:
        base_name, base = results[0]
        print(f"\npaired bootstrap differences (other minus {base_name}), mean ± std:")
        for name, m in results[1:]:
            d = bootstrap_diff(m["tp_fp_fns"], base["tp_fp_fns"], args.n_bootstrap, args.seed)
            wins = sum(1 for a, b in zip(m["tp_fp_fns"], base["tp_fp_fns"]) if _page_f1(a) > _page_f1(b) + 1e-9)
            losses = sum(1 for a, b in zip(m["tp_fp_fns"], base["tp_fp_fns"]) if _page_f1(a) < _page_f1(b) - 1e-9)
            print(f"  {name:<{w}} F1 {d['f1'][0]:+.3f} ± {d['f1'][1]:.3f}  P {d['precision'][0]:+.3f} ± "
                  f"{d['precision'][1]:.3f}  R {d['recall'][0]:+.3f} ± {d['recall'][1]:.3f}  "
                  f"pages better/worse: {wins}/{losses}")


def _page_f1(x: TpFpFn) -> float:
    p, r = precision_score(*x), recall_score(*x)
    return 2 * p * r / (p + r) if p + r else 0.0


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def cmd_trafilatura(args: argparse.Namespace) -> None:
    rss_start = _maxrss_mib()
    truth = load_truth(args.truth)
    if not args.pages.is_dir():
        sys.exit(f"pages folder not found: {args.pages}")
    keys = sorted(k for k in truth if (args.pages / f"{k}.html").exists())
    if not keys:
        sys.exit(f"no <key>.html under {args.pages} matches the ground truth")
    pages = {k: (args.pages / f"{k}.html").read_text(encoding="utf8") for k in keys}
    rss_loaded = _maxrss_mib()
    try:
        import trafilatura  # noqa: PLC0415
    except ImportError as e:
        sys.exit(f"cannot import trafilatura ({e}); pip install trafilatura==2.0.0 'lxml<6' lxml_html_clean")
    version = getattr(trafilatura, "__version__", "?")
    rss_import = _maxrss_mib()

    def run(k: str) -> str | None:
        return trafilatura.extract(
            pages[k],
            url=None if args.no_url else truth[k].get("url"),
            output_format="txt",
            include_comments=False,
            include_tables=not args.no_tables,
        )

    run(keys[0])  # warm-up, untimed
    out: dict[str, dict] = {}
    times: list[float] = []
    n_none = 0
    for k in keys:
        t0 = time.perf_counter()
        text = run(k)
        times.append(time.perf_counter() - t0)
        if text is None:
            n_none += 1
        out[k] = {"articleBody": text or "", "url": truth[k].get("url", "")}
    rss_peak = _maxrss_mib()

    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, ensure_ascii=False, indent=1, sort_keys=True), encoding="utf8")

    sub_truth = {k: truth[k] for k in keys}
    m = evaluate(sub_truth, out, n_bootstrap=args.n_bootstrap, seed=args.seed)
    st = sorted(times)
    ms = 1000.0
    settings = (f"url={'no' if args.no_url else 'yes'}, output_format=txt, include_comments=False, "
                f"include_tables={not args.no_tables}")
    print(f"trafilatura {version} on {len(keys)} pages ({settings})")
    print(header())
    print(row(f"trafilatura-{version}", m))
    print(f"time per page (ms): mean {statistics.mean(times) * ms:.2f}  p50 {percentile(st, 50) * ms:.2f}  "
          f"p99 {percentile(st, 99) * ms:.2f}  max {st[-1] * ms:.2f}  total {sum(times):.3f} s  "
          f"(perf_counter around extract() only, after 1 warm-up page; p = nearest rank)")
    print(f"peak RSS (ru_maxrss): {rss_peak:.1f} MiB  [start {rss_start:.1f}, pages+truth loaded {rss_loaded:.1f}, "
          f"after import {rss_import:.1f}]  extract() returned None on {n_none} pages")
    if args.out:
        print(f"predictions written to {args.out}")
    if args.worst:
        print_worst(m, args.worst)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--truth", type=Path, default=DEFAULT_TRUTH, help=f"default {DEFAULT_TRUTH}")
        p.add_argument("--n-bootstrap", type=int, default=1000, help="0 or 1 disables the ± column")
        p.add_argument("--seed", type=int, default=0)

    p = sub.add_parser("score", help="score one predictions file")
    common(p)
    p.add_argument("--pred", type=Path, required=True)
    p.add_argument("--name")
    p.add_argument("--allow-missing", action="store_true", help="score keys absent from PRED as empty")
    p.add_argument("--ignore-extra", action="store_true", help="drop PRED keys absent from the ground truth")
    p.add_argument("--worst", type=int, default=0, metavar="K", help="also list the K worst pages")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("compare", help="score several predictions files side by side")
    common(p)
    p.add_argument("--pred", type=Path, action="append", required=True)
    p.add_argument("--name", action="append")
    p.add_argument("--allow-missing", action="store_true")
    p.add_argument("--ignore-extra", action="store_true")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("trafilatura", help="run Python trafilatura on the pages, time and score it")
    common(p)
    p.add_argument("--pages", type=Path, default=DEFAULT_PAGES, help=f"default {DEFAULT_PAGES}")
    p.add_argument("--out", type=Path, help="write predictions JSON here")
    p.add_argument("--no-url", action="store_true", help="do not pass url= (as the published run)")
    p.add_argument("--no-tables", action="store_true", help="include_tables=False (default True)")
    p.add_argument("--worst", type=int, default=0, metavar="K")
    p.set_defaults(func=cmd_trafilatura)

    args = ap.parse_args(argv)
    try:
        args.func(args)
    except ValueError as e:
        sys.exit(str(e))


if __name__ == "__main__":
    main()
