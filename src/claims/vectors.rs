//! The reviewed claims' embeddings for a flat scan: unit vectors stored as int8 (each
//! component scaled by the vector's largest to ±127, the scale kept as an f32 in front: a
//! quarter of f32's memory, 200,000 claims of 384 dimensions are 78 MB; the cosine moves by
//! under 0.005), a
//! cache of each corpus segment's vectors (a segment never changes once written, so it is read
//! from the doc store once; deleted reviews are left out through the segment's alive set at
//! each scan), and the scan itself: the `k` best dot products, through the widest SIMD kernel
//! the CPU has (AVX-512, AVX2, or the portable build's; detected at run time). A flat scan was measured enough
//! at the corpus sizes the bot keeps (`cargo bench --bench claim_matching`), so no approximate
//! index (HNSW) is built: it would add a dependency, a second structure to keep in step with
//! tantivy's commits, and recall below 1.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tantivy::index::SegmentId;
use tantivy::schema::{Field, Value};
use tantivy::{DocAddress, Searcher, TantivyDocument};

/// A unit vector as stored: the scale (its largest component's size / 127, f32 little
/// endian), then each component / scale, rounded, as i8.
pub fn quantize(v: &[f32]) -> Vec<u8> {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    let mut out = scale.to_le_bytes().to_vec();
    out.extend(v.iter().map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8 as u8));
    out
}

/// The stored vector back as f32 (≈ unit length).
pub fn dequantize(b: &[u8]) -> Vec<f32> {
    let Some((scale, rest)) = split(b) else {
        return Vec::new();
    };
    rest.iter().map(|x| (*x as i8) as f32 * scale).collect()
}

fn split(b: &[u8]) -> Option<(f32, &[u8])> {
    let (head, rest) = b.split_at_checked(4)?;
    Some((f32::from_le_bytes(head.try_into().ok()?), rest))
}

/// The cosine of a query (f32, unit) with a stored vector's components at `scale`: the scan of
/// 200,000 claims is this call, through the widest kernel the machine has (chosen once, at the
/// first call: [`kernel`]).
pub fn dot(query: &[f32], stored: &[i8], scale: f32) -> f32 {
    (chosen().0)(query, stored, scale)
}

/// The dot product's kernel on this machine: `avx512` (AVX-512F and BW), `avx2` (AVX2 and FMA)
/// or `portable` (the baseline x86-64 build, or any other architecture).
pub fn kernel() -> &'static str {
    chosen().1
}

type Kernel = fn(&[f32], &[i8], f32) -> f32;

fn chosen() -> &'static (Kernel, &'static str) {
    static CHOSEN: std::sync::OnceLock<(Kernel, &'static str)> = std::sync::OnceLock::new();
    CHOSEN.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512bw") {
                return (x86::avx512 as Kernel, "avx512");
            }
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                return (x86::avx2 as Kernel, "avx2");
            }
        }
        (portable as Kernel, "portable")
    })
}

/// The kernel every machine runs (the baseline build: 128-bit SIMD on x86-64).
pub fn portable(query: &[f32], stored: &[i8], scale: f32) -> f32 {
    lanes::<16>(query, stored, scale)
}

/// The dot product in `N` independent partial sums: a single running sum is one long chain of
/// dependent additions the compiler may not reorder, so it cannot use SIMD; `N` sums are as many
/// SIMD lanes, spread over registers so additions overlap. Compiled once per kernel, each time
/// for that kernel's instruction set.
#[inline(always)]
fn lanes<const N: usize>(query: &[f32], stored: &[i8], scale: f32) -> f32 {
    let mut lanes = [0f32; N];
    let (q_chunks, s_chunks) = (query.chunks_exact(N), stored.chunks_exact(N));
    let (q_rest, s_rest) = (q_chunks.remainder(), s_chunks.remainder());
    for (q, s) in q_chunks.zip(s_chunks) {
        for j in 0..N {
            lanes[j] += q[j] * f32::from(s[j]);
        }
    }
    let rest: f32 = q_rest.iter().zip(s_rest).map(|(q, s)| q * f32::from(*s)).sum();
    (lanes.iter().sum::<f32>() + rest) * scale
}

/// One stored vector met by a batch of queries: its components widened to f32 once (into
/// `row`), then a plain f32 dot with each query, into `scores` (`NaN` for a query of other
/// dimensions). Each product and the order of the sums are [`lanes`]'s, so each score is
/// exactly what [`dot`] gives; the widening is paid once a row instead of once a query.
#[inline(always)]
fn many<const N: usize>(queries: &[Vec<f32>], stored: &[i8], scale: f32, row: &mut [f32], scores: &mut [f32]) {
    for (r, s) in row.iter_mut().zip(stored) {
        *r = f32::from(*s);
    }
    for (q, out) in queries.iter().zip(scores.iter_mut()) {
        if q.len() != row.len() {
            *out = f32::NAN;
            continue;
        }
        let mut lanes = [0f32; N];
        let (q_chunks, r_chunks) = (q.chunks_exact(N), row.chunks_exact(N));
        let (q_rest, r_rest) = (q_chunks.remainder(), r_chunks.remainder());
        for (a, b) in q_chunks.zip(r_chunks) {
            for j in 0..N {
                lanes[j] += a[j] * b[j];
            }
        }
        let rest: f32 = q_rest.iter().zip(r_rest).map(|(a, b)| a * b).sum();
        *out = (lanes.iter().sum::<f32>() + rest) * scale;
    }
}

type ManyKernel = fn(&[Vec<f32>], &[i8], f32, &mut [f32], &mut [f32]);

fn portable_many(queries: &[Vec<f32>], stored: &[i8], scale: f32, row: &mut [f32], scores: &mut [f32]) {
    many::<16>(queries, stored, scale, row, scores)
}

/// [`many`] through the kernel [`kernel`] names.
fn dot_many(queries: &[Vec<f32>], stored: &[i8], scale: f32, row: &mut [f32], scores: &mut [f32]) {
    static CHOSEN: std::sync::OnceLock<ManyKernel> = std::sync::OnceLock::new();
    let k = CHOSEN.get_or_init(|| match kernel() {
        #[cfg(target_arch = "x86_64")]
        "avx512" => x86::avx512_many as ManyKernel,
        #[cfg(target_arch = "x86_64")]
        "avx2" => x86::avx2_many as ManyKernel,
        _ => portable_many as ManyKernel,
    });
    k(queries, stored, scale, row, scores)
}

/// The wider kernels, compiled for their instruction sets and chosen only where the CPU has
/// them (runtime detection), so one binary runs everywhere and fast where it can.
#[cfg(target_arch = "x86_64")]
mod x86 {
    #[target_feature(enable = "avx2,fma")]
    fn avx2_many_body(q: &[Vec<f32>], s: &[i8], scale: f32, row: &mut [f32], out: &mut [f32]) {
        super::many::<32>(q, s, scale, row, out)
    }

    #[target_feature(enable = "avx512f,avx512bw")]
    fn avx512_many_body(q: &[Vec<f32>], s: &[i8], scale: f32, row: &mut [f32], out: &mut [f32]) {
        super::many::<64>(q, s, scale, row, out)
    }

    pub fn avx2_many(q: &[Vec<f32>], s: &[i8], scale: f32, row: &mut [f32], out: &mut [f32]) {
        // SAFETY: chosen only after `is_x86_feature_detected!` found AVX2 and FMA.
        unsafe { avx2_many_body(q, s, scale, row, out) }
    }

    pub fn avx512_many(q: &[Vec<f32>], s: &[i8], scale: f32, row: &mut [f32], out: &mut [f32]) {
        // SAFETY: chosen only after `is_x86_feature_detected!` found AVX-512F and BW.
        unsafe { avx512_many_body(q, s, scale, row, out) }
    }

    #[target_feature(enable = "avx2,fma")]
    fn avx2_body(query: &[f32], stored: &[i8], scale: f32) -> f32 {
        super::lanes::<32>(query, stored, scale)
    }

    #[target_feature(enable = "avx512f,avx512bw")]
    fn avx512_body(query: &[f32], stored: &[i8], scale: f32) -> f32 {
        super::lanes::<64>(query, stored, scale)
    }

    pub fn avx2(query: &[f32], stored: &[i8], scale: f32) -> f32 {
        // SAFETY: chosen only after `is_x86_feature_detected!` found AVX2 and FMA.
        unsafe { avx2_body(query, stored, scale) }
    }

    pub fn avx512(query: &[f32], stored: &[i8], scale: f32) -> f32 {
        // SAFETY: chosen only after `is_x86_feature_detected!` found AVX-512F and BW.
        unsafe { avx512_body(query, stored, scale) }
    }
}

/// The most threads one batched scan uses.
pub const SCAN_THREADS: usize = 4;

/// One segment's vectors: `dims` components and a scale per document that has one.
struct SegmentVectors {
    dims: usize,
    docs: Vec<u32>,
    scales: Vec<f32>,
    data: Vec<i8>,
}

/// The per-segment cache of one vector field.
pub struct VectorCache {
    field: Field,
    segments: Mutex<HashMap<SegmentId, Arc<SegmentVectors>>>,
}

impl VectorCache {
    pub fn new(field: Field) -> VectorCache {
        VectorCache {
            field,
            segments: Mutex::new(HashMap::new()),
        }
    }

    fn segment(&self, searcher: &Searcher, ord: usize) -> tantivy::Result<Arc<SegmentVectors>> {
        let reader = searcher.segment_reader(ord as u32);
        let id = reader.segment_id();
        if let Some(s) = self
            .segments
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&id)
        {
            return Ok(s.clone());
        }
        let store = reader.get_store_reader(64)?;
        let (mut docs, mut scales, mut data) = (Vec::new(), Vec::new(), Vec::new());
        let mut dims = 0;
        for doc in 0..reader.max_doc() {
            let d: TantivyDocument = store.get(doc)?;
            let Some((scale, bytes)) = d.get_first(self.field).and_then(|v| v.as_bytes()).and_then(split) else {
                continue;
            };
            if dims == 0 {
                dims = bytes.len();
            }
            if bytes.len() != dims || dims == 0 {
                continue;
            }
            docs.push(doc);
            scales.push(scale);
            data.extend(bytes.iter().map(|b| *b as i8));
        }
        let s = Arc::new(SegmentVectors {
            dims,
            docs,
            scales,
            data,
        });
        let mut cache = self.segments.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Segments merged away are forgotten.
        let live: Vec<SegmentId> = searcher.segment_readers().iter().map(|r| r.segment_id()).collect();
        cache.retain(|k, _| live.contains(k));
        cache.insert(id, s.clone());
        Ok(s)
    }

    /// Loads every segment's vectors now (at start, so the first match is not the slow one).
    pub fn warm(&self, searcher: &Searcher) -> tantivy::Result<usize> {
        let mut n = 0;
        for ord in 0..searcher.segment_readers().len() {
            n += self.segment(searcher, ord)?.docs.len();
        }
        Ok(n)
    }

    /// The `k` live documents whose vectors have the highest dot product with `query`, best
    /// first.
    pub fn top(&self, searcher: &Searcher, query: &[f32], k: usize) -> tantivy::Result<Vec<(f32, DocAddress)>> {
        let mut best: Vec<(f32, DocAddress)> = Vec::with_capacity(k + 1);
        let mut floor = f32::MIN;
        for (ord, reader) in searcher.segment_readers().iter().enumerate() {
            let s = self.segment(searcher, ord)?;
            if s.dims != query.len() {
                continue;
            }
            let alive = reader.alive_bitset();
            for (i, doc) in s.docs.iter().enumerate() {
                let score = dot(query, &s.data[i * s.dims..(i + 1) * s.dims], s.scales[i]);
                if score <= floor && best.len() >= k {
                    continue;
                }
                if alive.is_some_and(|a| !a.is_alive(*doc)) {
                    continue;
                }
                best.push((score, DocAddress::new(ord as u32, *doc)));
                if best.len() > k {
                    best.sort_by(|a, b| b.0.total_cmp(&a.0));
                    best.truncate(k);
                    floor = best.last().map_or(f32::MIN, |b| b.0);
                }
            }
        }
        best.sort_by(|a, b| b.0.total_cmp(&a.0));
        best.truncate(k);
        Ok(best)
    }

    /// The best live document for each of `queries` (its dot product), scanning every stored
    /// vector once for all of them: a stored vector is read from memory once, widened once,
    /// and met by each query while it is in cache ([`many`]). A batch is split into contiguous
    /// runs of stored vectors over the machine's cores (at most [`SCAN_THREADS`]); ties go to
    /// the earlier document, as one pass in order would give them.
    pub fn best_many(
        &self,
        searcher: &Searcher,
        queries: &[Vec<f32>],
    ) -> tantivy::Result<Vec<Option<(f32, DocAddress)>>> {
        let mut best: Vec<Option<(f32, DocAddress)>> = vec![None; queries.len()];
        // Read once: on Linux it reads the cgroup's quota files each call.
        static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let threads = *THREADS.get_or_init(|| {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .clamp(1, SCAN_THREADS)
        });
        for (ord, reader) in searcher.segment_readers().iter().enumerate() {
            let s = self.segment(searcher, ord)?;
            let alive = reader.alive_bitset();
            let n = s.docs.len();
            // One thread for a small segment or a single query: not worth a spawn.
            let parts = if n < 4096 || queries.len() < 2 { 1 } else { threads };
            let run = |from: usize, to: usize| -> Vec<Option<(f32, u32)>> {
                let mut local: Vec<Option<(f32, u32)>> = vec![None; queries.len()];
                let (mut row, mut scores) = (vec![0f32; s.dims], vec![0f32; queries.len()]);
                for i in from..to {
                    let doc = s.docs[i];
                    if alive.is_some_and(|a| !a.is_alive(doc)) {
                        continue;
                    }
                    dot_many(
                        queries,
                        &s.data[i * s.dims..(i + 1) * s.dims],
                        s.scales[i],
                        &mut row,
                        &mut scores,
                    );
                    for (score, slot) in scores.iter().zip(local.iter_mut()) {
                        if !score.is_nan() && slot.is_none_or(|(b, _)| *score > b) {
                            *slot = Some((*score, doc));
                        }
                    }
                }
                local
            };
            let chunk = n.div_ceil(parts.max(1)).max(1);
            let results: Vec<Vec<Option<(f32, u32)>>> = if parts == 1 {
                vec![run(0, n)]
            } else {
                std::thread::scope(|scope| {
                    let handles: Vec<_> = (0..parts)
                        .map(|p| (p * chunk, ((p + 1) * chunk).min(n)))
                        .map(|(from, to)| scope.spawn(move || run(from, to)))
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().expect("a scan thread panicked"))
                        .collect()
                })
            };
            // In document order: a later run replaces only a strictly better score.
            for local in results {
                for (found, slot) in local.into_iter().zip(best.iter_mut()) {
                    if let Some((score, doc)) = found {
                        if slot.is_none_or(|(b, _)| score > b) {
                            *slot = Some((score, DocAddress::new(ord as u32, doc)));
                        }
                    }
                }
            }
        }
        Ok(best)
    }

    /// The cosine of `query` with one document's stored vector, if it has one.
    pub fn cosine(&self, searcher: &Searcher, address: DocAddress, query: &[f32]) -> tantivy::Result<Option<f32>> {
        let s = self.segment(searcher, address.segment_ord as usize)?;
        Ok(s.docs
            .binary_search(&address.doc_id)
            .ok()
            .filter(|_| s.dims == query.len())
            .map(|i| dot(query, &s.data[i * s.dims..(i + 1) * s.dims], s.scales[i])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lane_sums_are_the_plain_dot_product() {
        for dims in [0, 5, 16, 384, 385, 512] {
            let q: Vec<f32> = (0..dims).map(|i| ((i * 31 % 17) as f32 - 8.0) / 10.0).collect();
            let s: Vec<i8> = (0..dims).map(|i| ((i * 13 % 255) as i32 - 127) as i8).collect();
            let plain: f32 = q.iter().zip(&s).map(|(a, b)| a * f32::from(*b)).sum::<f32>() * 0.5;
            let mut kernels = vec![("chosen", dot(&q, &s, 0.5)), ("portable", portable(&q, &s, 0.5))];
            #[cfg(target_arch = "x86_64")]
            {
                use std::arch::is_x86_feature_detected as has;
                if has!("avx2") && has!("fma") {
                    kernels.push(("avx2", x86::avx2(&q, &s, 0.5)));
                }
                if has!("avx512f") && has!("avx512bw") {
                    kernels.push(("avx512", x86::avx512(&q, &s, 0.5)));
                }
            }
            for (name, got) in kernels {
                assert!(
                    (plain - got).abs() <= 1e-3 * plain.abs().max(1.0),
                    "{name} ({}), {dims}: {plain} vs {got}",
                    kernel()
                );
            }
        }
    }

    /// A row met by a batch gives each query exactly the score [`dot`] gives it alone (the
    /// same products, summed in the same order), and `NaN` for a query of other dimensions.
    #[test]
    fn a_batch_scores_each_query_exactly_as_one_query_alone() {
        for dims in [5, 384, 385, 512] {
            let s: Vec<i8> = (0..dims).map(|i| ((i * 13 % 255) as i32 - 127) as i8).collect();
            let mut queries: Vec<Vec<f32>> = (0..7)
                .map(|k| (0..dims).map(|i| (((i + k) * 31 % 17) as f32 - 8.0) / 10.0).collect())
                .collect();
            queries.push(vec![0.5; dims + 1]);
            let (mut row, mut scores) = (vec![0f32; dims], vec![0f32; queries.len()]);
            dot_many(&queries, &s, 0.25, &mut row, &mut scores);
            for (q, got) in queries.iter().zip(&scores) {
                if q.len() != dims {
                    assert!(got.is_nan());
                    continue;
                }
                assert_eq!(got.to_bits(), dot(q, &s, 0.25).to_bits(), "{dims} ({})", kernel());
            }
        }
    }

    #[test]
    fn int8_keeps_the_cosine_within_five_thousandths() {
        let a: Vec<f32> = (0..384).map(|i| (i * 7 % 13) as f32 - 6.0).collect();
        let b: Vec<f32> = (0..384).map(|i| (i * 5 % 11) as f32 - 5.0).collect();
        let unit = |v: Vec<f32>| {
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / n).collect::<Vec<_>>()
        };
        let (a, b) = (unit(a), unit(b));
        let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let q = quantize(&b);
        let (scale, rest) = split(&q).unwrap();
        let stored: Vec<i8> = rest.iter().map(|x| *x as i8).collect();
        let got = dot(&a, &stored, scale);
        assert!((got - exact).abs() < 0.005, "{got} vs {exact}");
        let back = dequantize(&quantize(&a))
            .iter()
            .zip(&a)
            .map(|(x, y)| x * y)
            .sum::<f32>();
        assert!((back - 1.0).abs() < 0.005, "{back}");
    }
}
