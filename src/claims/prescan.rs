//! The scan's first pass, in integers. A query is rounded to int8 with its own step, as the
//! stored vectors are, and met by the stored int8 vectors with the CPU's integer multiply-adds:
//! AVX-512 VNNI's `vpdpbusd` (64 products an instruction), AVX2's `vpmaddubsw` (32), or the
//! portable loop. The f32 pass does 8 or 16 products an instruction, after widening each
//! stored component. All three kernels give the same integer, so the kernel never changes a
//! result.
//!
//! Rounding the query moves a score by at most [`Query::bound`]: half the query's step times
//! the stored vector's L1 norm, plus a margin for f32 rounding. So a stored vector whose
//! rounded score is more than twice that below the k-th best rounded score cannot be in the
//! top k. A [`Collector`] keeps only the ones that can. Those few are scored again by the exact
//! f32 kernel (`super::vectors::dot`), so the scan's results are bit for bit those of the f32
//! scan, only found sooner.

/// A query rounded for the first pass: `codes[j] = round(q[j] / step)` in ±127, and the same
/// codes plus 128 as unsigned bytes (what `vpdpbusd` takes).
pub struct Query {
    codes: Vec<i8>,
    biased: Vec<u8>,
    step: f32,
}

/// What f32 rounding can add to the gap between the rounded and the exact score (both under
/// 1e-4 for unit vectors of a few thousand dimensions), with room to spare: this much, and this
/// share of the rounding's own bound (for vectors far from unit length).
const ROUNDING: f32 = 1e-3;
const ROUNDING_SHARE: f32 = 1e-3;

impl Query {
    /// `None` for a query with a component that is not finite: such a query gets no first pass
    /// (every stored vector is scored exactly).
    pub fn new(v: &[f32]) -> Option<Query> {
        if v.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        let step = if max > 0.0 { max / 127.0 } else { 1.0 };
        let codes: Vec<i8> = v
            .iter()
            .map(|x| (x / step).round().clamp(-127.0, 127.0) as i8)
            .collect();
        let biased = codes.iter().map(|c| (*c as u8) ^ 0x80).collect();
        Some(Query { codes, biased, step })
    }

    pub fn dims(&self) -> usize {
        self.codes.len()
    }

    /// The most the rounded score of this query can be from its exact score, against stored
    /// vectors whose L1 norm (scale × Σ|component|) is at most `l1`.
    pub fn bound(&self, l1: f32) -> f32 {
        self.step / 2.0 * l1 * (1.0 + ROUNDING_SHARE) + ROUNDING
    }

    /// The rounded score from the integer dot product with a stored vector at `scale`.
    pub fn score(&self, dot: i32, scale: f32) -> f32 {
        dot as f32 * self.step * scale
    }
}

/// A stored vector's L1 norm as the bound needs it.
pub fn l1(stored: &[i8], scale: f32) -> f32 {
    stored.iter().map(|s| (*s as i32).unsigned_abs()).sum::<u32>() as f32 * scale.abs()
}

/// The integer dot product of each of `queries` with one stored vector, into `out` (over the
/// dimensions both have, for a query of other dimensions). `scratch` holds what a kernel works
/// out once a row.
pub fn dots(queries: &[&Query], stored: &[i8], scratch: &mut Vec<u8>, out: &mut [i32]) {
    // The SIMD kernels read every query over the stored vector's length.
    if queries.iter().any(|q| q.dims() != stored.len()) {
        return portable(queries, stored, scratch, out);
    }
    (chosen().0)(queries, stored, scratch, out)
}

/// The first pass's kernel on this machine: `avx512vnni`, `avx2` or `portable`.
pub fn kernel() -> &'static str {
    chosen().1
}

/// Chooses the kernel by name before the first scan (the benches measure the AVX2 kernel on a
/// machine that has AVX-512 too). `false` when this CPU lacks it or a kernel was already chosen.
pub fn choose(name: &str) -> bool {
    let Some(k) = available().into_iter().find(|k| k.1 == name) else {
        return false;
    };
    CHOSEN.set(k).is_ok()
}

type Kernel = fn(&[&Query], &[i8], &mut Vec<u8>, &mut [i32]);

static CHOSEN: std::sync::OnceLock<(Kernel, &'static str)> = std::sync::OnceLock::new();

fn chosen() -> &'static (Kernel, &'static str) {
    CHOSEN.get_or_init(|| available()[0])
}

/// The kernels this CPU can run, widest first.
fn available() -> Vec<(Kernel, &'static str)> {
    #[allow(unused_mut)]
    let mut out: Vec<(Kernel, &'static str)> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") && has!("avx512bw") && has!("avx512vnni") {
            out.push((x86::vnni as Kernel, "avx512vnni"));
        }
        if has!("avx2") {
            out.push((x86::avx2 as Kernel, "avx2"));
        }
    }
    out.push((portable as Kernel, "portable"));
    out
}

fn portable(queries: &[&Query], stored: &[i8], _: &mut Vec<u8>, out: &mut [i32]) {
    for (q, o) in queries.iter().zip(out.iter_mut()) {
        *o = q.codes.iter().zip(stored).map(|(a, b)| *a as i32 * *b as i32).sum();
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::Query;

    pub fn vnni(queries: &[&Query], stored: &[i8], scratch: &mut Vec<u8>, out: &mut [i32]) {
        // SAFETY: chosen only after `is_x86_feature_detected!` found AVX-512F, BW and VNNI.
        unsafe { vnni_body(queries, stored, scratch, out) }
    }

    pub fn avx2(queries: &[&Query], stored: &[i8], scratch: &mut Vec<u8>, out: &mut [i32]) {
        // SAFETY: chosen only after `is_x86_feature_detected!` found AVX2.
        unsafe { avx2_body(queries, stored, scratch, out) }
    }

    /// `vpdpbusd` multiplies unsigned by signed bytes: the query's codes plus 128 by the
    /// stored components, so each sum is the dot product plus 128 × the stored components'
    /// sum, which is taken off.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    fn vnni_body(queries: &[&Query], stored: &[i8], _: &mut Vec<u8>, out: &mut [i32]) {
        let n = stored.len();
        let whole = n / 64 * 64;
        let load = |p: &[u8], at: usize| {
            // SAFETY: `at + 64 <= whole <= p.len()`; an unaligned load reads 64 bytes.
            unsafe { _mm512_loadu_si512(p.as_ptr().add(at).cast()) }
        };
        let bytes: &[u8] = {
            // SAFETY: i8 and u8 have the same size and alignment; only read.
            unsafe { std::slice::from_raw_parts(stored.as_ptr().cast(), n) }
        };
        let ones = _mm512_set1_epi8(1);
        let mut sum = _mm512_setzero_si512();
        for at in (0..whole).step_by(64) {
            sum = _mm512_dpbusd_epi32(sum, ones, load(bytes, at));
        }
        let row_sum = _mm512_reduce_add_epi32(sum) + stored[whole..].iter().map(|s| *s as i32).sum::<i32>();
        for (q, o) in queries.iter().zip(out.iter_mut()) {
            let mut acc = _mm512_setzero_si512();
            for at in (0..whole).step_by(64) {
                acc = _mm512_dpbusd_epi32(acc, load(&q.biased, at), load(bytes, at));
            }
            let tail: i32 = q.biased[whole..n]
                .iter()
                .zip(&stored[whole..])
                .map(|(a, b)| *a as i32 * *b as i32)
                .sum();
            *o = _mm512_reduce_add_epi32(acc) + tail - 128 * row_sum;
        }
    }

    /// `vpmaddubsw` multiplies unsigned by signed bytes into pairs of i16: the stored
    /// components' sizes (≤ 127, worked out once a row) by the query's codes with the stored
    /// component's sign; a pair is at most 2 × 127 × 127, so it never saturates.
    #[target_feature(enable = "avx2")]
    fn avx2_body(queries: &[&Query], stored: &[i8], scratch: &mut Vec<u8>, out: &mut [i32]) {
        let n = stored.len();
        let whole = n / 32 * 32;
        scratch.clear();
        scratch.extend(stored.iter().map(|s| s.unsigned_abs()));
        let load = |p: *const u8, at: usize| {
            // SAFETY: callers pass slices of at least `whole` bytes and `at + 32 <= whole`.
            unsafe { _mm256_loadu_si256(p.add(at).cast()) }
        };
        let ones = _mm256_set1_epi16(1);
        let (s_ptr, abs_ptr) = (stored.as_ptr().cast::<u8>(), scratch.as_ptr());
        for (q, o) in queries.iter().zip(out.iter_mut()) {
            let q_ptr = q.codes.as_ptr().cast::<u8>();
            let mut acc = _mm256_setzero_si256();
            for at in (0..whole).step_by(32) {
                let signed = _mm256_sign_epi8(load(q_ptr, at), load(s_ptr, at));
                let pairs = _mm256_maddubs_epi16(load(abs_ptr, at), signed);
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
            }
            let mut lanes = [0i32; 8];
            // SAFETY: `lanes` is 32 bytes.
            unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), acc) };
            let tail: i32 = q.codes[whole..n]
                .iter()
                .zip(&stored[whole..])
                .map(|(a, b)| *a as i32 * *b as i32)
                .sum();
            *o = lanes.iter().sum::<i32>() + tail;
        }
    }
}

/// For one query, the stored vectors that can still be among its `k` best, found in the first
/// pass: it keeps the `k` best rounded scores and every row whose rounded score is within
/// twice the bound of the k-th of them (`all` keeps every row: a query with no first pass).
pub struct Collector {
    k: usize,
    bound: f32,
    all: bool,
    /// The `k` best rounded scores, lowest first.
    best: Vec<f32>,
    /// (rounded score, row) of each row that may be among the `k` best.
    rows: Vec<(f32, u32)>,
    /// `rows`' length at which it is pruned next (doubled past what a prune leaves, so many
    /// ties cost a prune now and then, not one a row).
    limit: usize,
}

impl Collector {
    pub fn new(k: usize, bound: f32, all: bool) -> Collector {
        Collector {
            k: k.max(1),
            bound,
            all,
            best: Vec::with_capacity(k.max(1) + 1),
            rows: Vec::new(),
            limit: 4 * k.max(1) + 256,
        }
    }

    /// The lowest rounded score a row may have and still be among the `k` best.
    fn floor(&self) -> f32 {
        if self.all || self.best.len() < self.k {
            f32::NEG_INFINITY
        } else {
            self.best[0] - 2.0 * self.bound
        }
    }

    pub fn offer(&mut self, score: f32, row: u32) {
        // A score that is not finite (a stored scale gone bad) bounds nothing: its row is kept
        // for the exact pass and sets no floor.
        if !score.is_finite() {
            self.rows.push((f32::INFINITY, row));
            return;
        }
        self.keep(score);
        if score >= self.floor() {
            self.rows.push((score, row));
            if self.rows.len() >= self.limit && !self.all {
                self.prune();
                self.limit = self.limit.max(2 * self.rows.len());
            }
        }
    }

    /// Counts `score` among the `k` best rounded scores if it is one.
    fn keep(&mut self, score: f32) {
        if self.best.len() < self.k || score > self.best[0] {
            let at = self.best.partition_point(|b| *b < score);
            self.best.insert(at, score);
            if self.best.len() > self.k {
                self.best.remove(0);
            }
        }
    }

    /// Drops the rows the best scores seen so far rule out.
    fn prune(&mut self) {
        let floor = self.floor();
        self.rows.retain(|(s, _)| *s >= floor);
    }

    /// Takes in another part's collector (the same query over other rows), then keeps only
    /// the rows that can still be among the `k` best of both.
    pub fn merge(&mut self, other: Collector) {
        for s in other.best.into_iter().filter(|s| s.is_finite()) {
            self.keep(s);
        }
        self.rows.extend(other.rows);
        self.prune();
    }

    /// Closes the pass: only the rows that can be among the `k` best, in row order.
    pub fn finish(mut self) -> Vec<u32> {
        self.prune();
        let mut rows: Vec<u32> = self.rows.into_iter().map(|(_, r)| r).collect();
        rows.sort_unstable();
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: usize, dims: usize, seed: u64) -> Vec<Vec<i8>> {
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..n)
            .map(|_| (0..dims).map(|_| rng.i8(-127..=127)).collect())
            .collect()
    }

    /// Every kernel this CPU has gives the plain integer dot product, for any dimensions.
    #[test]
    fn every_kernel_gives_the_plain_integer_dot_product() {
        let mut rng = fastrand::Rng::with_seed(3);
        for dims in [1, 31, 32, 63, 64, 65, 384, 385, 512] {
            let queries: Vec<Query> = (0..5)
                .map(|_| Query::new(&(0..dims).map(|_| rng.f32() * 2.0 - 1.0).collect::<Vec<_>>()).unwrap())
                .collect();
            let refs: Vec<&Query> = queries.iter().collect();
            for stored in rows(7, dims, dims as u64) {
                let plain: Vec<i32> = queries
                    .iter()
                    .map(|q| q.codes.iter().zip(&stored).map(|(a, b)| *a as i32 * *b as i32).sum())
                    .collect();
                for (k, name) in available() {
                    let mut out = vec![0; refs.len()];
                    k(&refs, &stored, &mut Vec::new(), &mut out);
                    assert_eq!(out, plain, "{name}, {dims} dimensions");
                }
            }
        }
    }

    /// The bound holds: the rounded score is never further from the exact one than it says,
    /// for unit queries against stored unit vectors.
    #[test]
    fn the_rounded_score_is_within_the_bound() {
        let mut rng = fastrand::Rng::with_seed(11);
        let unit = |v: Vec<f32>| {
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / n).collect::<Vec<f32>>()
        };
        for _ in 0..200 {
            let q = unit((0..384).map(|_| rng.f32() - 0.5).collect());
            let s = unit((0..384).map(|_| rng.f32() - 0.5).collect());
            let packed = super::super::vectors::quantize(&s);
            let scale = f32::from_le_bytes(packed[..4].try_into().unwrap());
            let stored: Vec<i8> = packed[4..].iter().map(|b| *b as i8).collect();
            let exact = super::super::vectors::dot(&q, &stored, scale);
            let query = Query::new(&q).unwrap();
            let mut out = [0];
            dots(&[&query], &stored, &mut Vec::new(), &mut out);
            let gap = (query.score(out[0], scale) - exact).abs();
            assert!(gap <= query.bound(l1(&stored, scale)), "{gap}");
        }
    }

    /// A query of other dimensions than the stored vector is never read past its end.
    #[test]
    fn a_query_of_other_dimensions_is_read_only_as_far_as_it_goes() {
        let short = Query::new(&[0.5; 10]).unwrap();
        let stored = vec![3i8; 384];
        let mut out = [7];
        dots(&[&short], &stored, &mut Vec::new(), &mut out);
        assert_eq!(out[0], 127 * 3 * 10);
    }

    #[test]
    fn a_query_that_is_not_finite_gets_no_first_pass() {
        assert!(Query::new(&[0.5, f32::NAN]).is_none());
        assert!(Query::new(&[f32::INFINITY]).is_none());
        assert!(Query::new(&[0.0, 0.0]).is_some());
    }

    /// The collector keeps the k best and whatever is within twice the bound of the k-th; a
    /// merge keeps what can be among the k best of both parts.
    #[test]
    fn the_collector_keeps_what_can_be_among_the_best() {
        let mut c = Collector::new(2, 0.05, false);
        for (i, s) in [0.1, 0.9, 0.5, 0.85, 0.79, 0.7, 0.84].iter().enumerate() {
            c.offer(*s, i as u32);
        }
        // k-th best 0.85, floor 0.75: 0.9, 0.85, 0.79, 0.84.
        assert_eq!(c.finish(), vec![1, 3, 4, 6]);
        let (mut a, mut b) = (Collector::new(1, 0.01, false), Collector::new(1, 0.01, false));
        a.offer(0.5, 0);
        a.offer(0.49, 1);
        b.offer(0.6, 2);
        b.offer(0.585, 3);
        a.merge(b);
        assert_eq!(a.finish(), vec![2, 3]);
        let mut all = Collector::new(1, 0.0, true);
        for i in 0..1000 {
            all.offer(i as f32, i);
        }
        assert_eq!(all.finish().len(), 1000);
    }
}
