//! The reviewed claims' embeddings for a flat scan: unit vectors stored as int8 (each
//! component scaled by the vector's largest to ±127, the scale kept as an f32 in front: a
//! quarter of f32's memory, 200,000 claims of 384 dimensions are 78 MB; the cosine moves by
//! under 0.005), a
//! cache of each corpus segment's vectors (a segment never changes once written, so it is read
//! from the doc store once; deleted reviews are left out through the segment's alive set at
//! each scan), and the scan itself: the `k` best dot products. A first pass in integers
//! (`super::prescan`) keeps the rows that can be among them; the exact f32 dot scores those, through
//! the widest SIMD kernel the CPU has (AVX-512, AVX2, or the portable build's; detected at run
//! time), so the results are the exact scan's. A flat scan was measured enough
//! at the corpus sizes the bot keeps (`cargo bench --bench claim_matching`), so no approximate
//! index (HNSW) is built: it would add a dependency, a second structure to keep in step with
//! tantivy's commits, and recall below 1.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tantivy::index::SegmentId;
use tantivy::schema::{Field, Value};
use tantivy::{DocAddress, Searcher, TantivyDocument};

use super::prescan::{self, Collector, Query};

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

/// The wider kernels, compiled for their instruction sets and chosen only where the CPU has
/// them (runtime detection), so one binary runs everywhere and fast where it can.
#[cfg(target_arch = "x86_64")]
mod x86 {
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

/// The machine's cores a scan may use: at most [`SCAN_THREADS`], read once (on Linux it reads
/// the cgroup's quota files each call).
fn scan_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, SCAN_THREADS)
    })
}

/// One segment's vectors: `dims` components and a scale per document that has one, and the
/// largest L1 norm among them (what bounds the first pass's rounding).
struct SegmentVectors {
    dims: usize,
    docs: Vec<u32>,
    scales: Vec<f32>,
    data: Vec<i8>,
    l1: f32,
}

impl SegmentVectors {
    fn new(dims: usize, docs: Vec<u32>, scales: Vec<f32>, data: Vec<i8>) -> SegmentVectors {
        let l1 = if dims == 0 {
            0.0
        } else {
            data.chunks_exact(dims)
                .zip(&scales)
                .map(|(row, scale)| prescan::l1(row, *scale))
                // A bad scale (not finite) makes the bound useless: `top` then scores every row.
                .fold(0.0, |m: f32, x| {
                    if x.is_finite() && m.is_finite() {
                        m.max(x)
                    } else {
                        f32::INFINITY
                    }
                })
        };
        SegmentVectors {
            dims,
            docs,
            scales,
            data,
            l1,
        }
    }

    fn row(&self, r: usize) -> &[i8] {
        &self.data[r * self.dims..(r + 1) * self.dims]
    }

    /// For each of `queries` (exact, and rounded where it has a first pass; all of this
    /// segment's dimensions), its `k` best rows among those whose document is `alive`: (exact
    /// dot product, row), best first, ties to the earlier row. The first pass
    /// (`super::prescan`) runs over every row once for all the queries, split into contiguous
    /// runs over `threads` cores for a large segment; the exact kernel ([`dot`]) scores only
    /// the rows it keeps.
    fn top(
        &self,
        alive: impl Fn(u32) -> bool + Sync,
        queries: &[(&[f32], Option<&Query>)],
        k: usize,
        threads: usize,
    ) -> Vec<Vec<(f32, u32)>> {
        if queries.is_empty() {
            return Vec::new();
        }
        let n = self.docs.len();
        let rounded: Vec<&Query> = queries.iter().filter_map(|(_, q)| *q).collect();
        let run = |from: usize, to: usize| -> Vec<Collector> {
            let mut kept: Vec<Collector> = queries
                .iter()
                .map(|(_, q)| match q {
                    Some(q) if self.l1.is_finite() => Collector::new(k, q.bound(self.l1), false),
                    _ => Collector::new(k, 0.0, true),
                })
                .collect();
            let (mut scratch, mut dots) = (Vec::new(), vec![0i32; rounded.len()]);
            for r in from..to {
                if !alive(self.docs[r]) {
                    continue;
                }
                if !rounded.is_empty() {
                    prescan::dots(&rounded, self.row(r), &mut scratch, &mut dots);
                }
                let mut dot = dots.iter();
                for ((_, q), c) in queries.iter().zip(kept.iter_mut()) {
                    let score = match q {
                        Some(q) => q.score(*dot.next().unwrap_or(&0), self.scales[r]),
                        None => 0.0,
                    };
                    c.offer(score, r as u32);
                }
            }
            kept
        };
        let parts = if n < 4096 { 1 } else { threads.max(1) };
        let chunk = n.div_ceil(parts).max(1);
        let mut kept = if parts == 1 {
            run(0, n)
        } else {
            std::thread::scope(|scope| {
                let run = &run;
                let handles: Vec<_> = (0..parts)
                    .map(|p| (p * chunk, ((p + 1) * chunk).min(n)))
                    .map(|(from, to)| scope.spawn(move || run(from, to)))
                    .collect();
                let mut parts = handles.into_iter().map(|h| h.join().expect("a scan thread panicked"));
                let mut first = parts.next().unwrap_or_default();
                for part in parts {
                    for (c, other) in first.iter_mut().zip(part) {
                        c.merge(other);
                    }
                }
                first
            })
        };
        queries
            .iter()
            .zip(kept.drain(..))
            .map(|((query, _), c)| {
                let mut best: Vec<(f32, u32)> = c
                    .finish()
                    .into_iter()
                    .map(|r| (dot(query, self.row(r as usize), self.scales[r as usize]), r))
                    // A score that is not a number ranks nowhere.
                    .filter(|(score, _)| !score.is_nan())
                    .collect();
                best.sort_by(|a, b| b.0.total_cmp(&a.0));
                best.truncate(k);
                best
            })
            .collect()
    }
}

/// The per-segment cache of one vector field.
pub struct VectorCache {
    field: Field,
    /// The corpus's folder, where its segments' files are read from (not mapped) when their
    /// vectors are loaded: see [`unmapped_store`].
    dir: Option<PathBuf>,
    segments: Mutex<HashMap<SegmentId, Arc<SegmentVectors>>>,
}

/// A file read with positioned reads: what the kernel reads for it stays in its page cache,
/// which it reclaims at will, instead of becoming the process's resident memory as the pages of
/// a mapping do.
#[derive(Debug)]
struct Unmapped {
    file: std::fs::File,
    len: usize,
}

impl tantivy::HasLen for Unmapped {
    fn len(&self) -> usize {
        self.len
    }
}

impl tantivy::directory::FileHandle for Unmapped {
    fn read_bytes(&self, range: std::ops::Range<usize>) -> std::io::Result<tantivy::directory::OwnedBytes> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; range.len()];
        self.file.read_exact_at(&mut buf, range.start as u64)?;
        Ok(tantivy::directory::OwnedBytes::new(buf))
    }
}

/// The doc store of segment `ord`, read from its file in `dir` rather than through tantivy's
/// mapping. Loading a segment's vectors reads its whole store once (at 200,000 fact-checks,
/// about 120 MB); through the mapping, those pages would stay resident in the daemon for
/// good although it never reads most of them again. `None` when the file cannot be read so
/// (the mapping is used then).
pub(super) fn unmapped_store(dir: &Path, searcher: &Searcher, ord: usize) -> Option<tantivy::store::StoreReader> {
    let id = searcher.segment_reader(ord as u32).segment_id();
    let segment = searcher
        .index()
        .searchable_segments()
        .ok()?
        .into_iter()
        .find(|s| s.id() == id)?;
    let relative = segment.relative_path(tantivy::index::SegmentComponent::Store);
    // The body's length as tantivy reads it (its footer left off the end).
    let body = tantivy::HasLen::len(&tantivy::Directory::open_read(searcher.index().directory(), &relative).ok()?);
    let file = std::fs::File::open(dir.join(&relative)).ok()?;
    let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
    if body > len {
        return None;
    }
    let slice = tantivy::directory::FileSlice::new(Arc::new(Unmapped { file, len })).slice(0..body);
    tantivy::store::StoreReader::open(slice, 64).ok()
}

impl VectorCache {
    pub fn new(field: Field, dir: Option<&Path>) -> VectorCache {
        VectorCache {
            field,
            dir: dir.map(Path::to_path_buf),
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
        let store = match self.dir.as_deref().and_then(|d| unmapped_store(d, searcher, ord)) {
            Some(store) => store,
            None => reader.get_store_reader(64)?,
        };
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
        let s = Arc::new(SegmentVectors::new(dims, docs, scales, data));
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
    /// first (ties: the earlier document).
    pub fn top(&self, searcher: &Searcher, query: &[f32], k: usize) -> tantivy::Result<Vec<(f32, DocAddress)>> {
        Ok(self.scan(searcher, &[query], k)?.pop().unwrap_or_default())
    }

    /// The best live document for each of `queries` (its dot product), every stored vector
    /// read once for all of them.
    pub fn best_many(
        &self,
        searcher: &Searcher,
        queries: &[Vec<f32>],
    ) -> tantivy::Result<Vec<Option<(f32, DocAddress)>>> {
        let queries: Vec<&[f32]> = queries.iter().map(Vec::as_slice).collect();
        Ok(self
            .scan(searcher, &queries, 1)?
            .into_iter()
            .map(|best| best.into_iter().next().filter(|(score, _)| !score.is_nan()))
            .collect())
    }

    /// The `k` best live documents for each of `queries` (their dot products), best first,
    /// every stored vector read once for all of them.
    pub fn top_many(
        &self,
        searcher: &Searcher,
        queries: &[&[f32]],
        k: usize,
    ) -> tantivy::Result<Vec<Vec<(f32, DocAddress)>>> {
        Ok(self
            .scan(searcher, queries, k)?
            .into_iter()
            .map(|top| top.into_iter().filter(|(score, _)| !score.is_nan()).collect())
            .collect())
    }

    /// The `k` best live documents for each of `queries`, best first; ties go to the earlier
    /// document (segment, then document order), as one exact pass in order gives them.
    fn scan(&self, searcher: &Searcher, queries: &[&[f32]], k: usize) -> tantivy::Result<Vec<Vec<(f32, DocAddress)>>> {
        let rounded: Vec<Option<Query>> = queries.iter().map(|q| Query::new(q)).collect();
        let mut found: Vec<Vec<(f32, DocAddress)>> = vec![Vec::new(); queries.len()];
        for (ord, reader) in searcher.segment_readers().iter().enumerate() {
            let s = self.segment(searcher, ord)?;
            let alive = reader.alive_bitset();
            let here: Vec<usize> = (0..queries.len())
                .filter(|&i| s.dims > 0 && queries[i].len() == s.dims)
                .collect();
            let best = s.top(
                |doc| alive.is_none_or(|a| a.is_alive(doc)),
                &here
                    .iter()
                    .map(|&i| (queries[i], rounded[i].as_ref()))
                    .collect::<Vec<_>>(),
                k,
                scan_threads(),
            );
            for (i, best) in here.into_iter().zip(best) {
                // Earlier segments' documents are ahead of these: a stable sort keeps them
                // ahead of equal scores.
                found[i].extend(
                    best.into_iter()
                        .map(|(score, r)| (score, DocAddress::new(ord as u32, s.docs[r as usize]))),
                );
                found[i].sort_by(|a, b| b.0.total_cmp(&a.0));
                found[i].truncate(k);
            }
        }
        Ok(found)
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
mod tests;
