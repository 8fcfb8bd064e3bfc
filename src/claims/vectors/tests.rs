//! The flat scan's tests: the kernels, the two passes against one exact pass, bad scales.

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

/// The two-pass scan gives exactly what one exact pass over every live row gives: the
/// same rows, the same scores to the bit, ties to the earlier row, on one thread or four,
/// for a query with no first pass too, and with copies of one vector (ties) and dead rows.
#[test]
fn the_two_pass_scan_is_the_exact_scan() {
    let mut rng = fastrand::Rng::with_seed(5);
    let dims = 384;
    let unit = |v: Vec<f32>| {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect::<Vec<f32>>()
    };
    let base: Vec<Vec<f32>> = (0..3000)
        .map(|_| unit((0..dims).map(|_| rng.f32() - 0.5).collect()))
        .collect();
    // Near copies of the first queries, and exact copies of a few rows: ties.
    let queries: Vec<Vec<f32>> = (0..9)
        .map(|i| unit(base[i * 7].iter().map(|x| x + (rng.f32() - 0.5) * 0.05).collect()))
        .chain([vec![0.0; dims], {
            let mut v = base[3].clone();
            v[0] = f32::NAN;
            v
        }])
        .collect();
    // Rows at one angle to each of the first two queries (0.8 along it, the rest at right
    // angles in random directions): their exact scores differ only by the stored vectors'
    // rounding, by less than the first pass's, so a bound too tight loses some of the best.
    let near: Vec<Vec<f32>> = (0..400)
        .map(|i| {
            let q = &queries[i % 2];
            let u: Vec<f32> = (0..dims).map(|_| rng.f32() - 0.5).collect();
            let along: f32 = u.iter().zip(q).map(|(a, b)| a * b).sum();
            let u = unit(u.iter().zip(q).map(|(a, b)| a - along * b).collect());
            unit(q.iter().zip(&u).map(|(a, b)| 0.8 * a + 0.6 * b).collect())
        })
        .collect();
    let (mut docs, mut scales, mut data) = (Vec::new(), Vec::new(), Vec::new());
    for (i, v) in base.iter().chain(&near).chain(base.iter().take(1500)).enumerate() {
        let packed = quantize(v);
        docs.push(i as u32);
        scales.push(f32::from_le_bytes(packed[..4].try_into().unwrap()));
        data.extend(packed[4..].iter().map(|b| *b as i8));
    }
    let s = SegmentVectors::new(dims, docs, scales, data);
    let alive = |doc: u32| doc % 11 != 3;
    let rounded: Vec<Option<Query>> = queries.iter().map(|q| Query::new(q)).collect();
    let pairs: Vec<(&[f32], Option<&Query>)> = queries
        .iter()
        .zip(&rounded)
        .map(|(q, r)| (q.as_slice(), r.as_ref()))
        .collect();
    for k in [1, 3, 10] {
        let exact: Vec<Vec<(u32, u32)>> = queries
            .iter()
            .map(|q| {
                let mut all: Vec<(f32, u32)> = (0..s.docs.len())
                    .filter(|&r| alive(s.docs[r]))
                    .map(|r| (dot(q, s.row(r), s.scales[r]), r as u32))
                    // A score that is not a number ranks nowhere.
                    .filter(|(x, _)| !x.is_nan())
                    .collect();
                all.sort_by(|a, b| b.0.total_cmp(&a.0));
                all.truncate(k);
                all.into_iter().map(|(x, r)| (x.to_bits(), r)).collect()
            })
            .collect();
        for threads in [1, 4] {
            let got: Vec<Vec<(u32, u32)>> = s
                .top(alive, &pairs, k, threads)
                .into_iter()
                .map(|b| b.into_iter().map(|(x, r)| (x.to_bits(), r)).collect())
                .collect();
            assert_eq!(got, exact, "k {k}, {threads} threads, kernel {}", prescan::kernel());
        }
    }
}

/// A stored vector whose scale went bad (not finite, or negative: a corpus written by
/// something else) costs the first pass its use, never a row: the scan still gives the
/// exact scan's best rows, scores that are not numbers left out.
#[test]
fn a_bad_stored_scale_loses_no_row() {
    let dims = 64;
    let mut rng = fastrand::Rng::with_seed(9);
    let (mut docs, mut scales, mut data) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..5000u32 {
        docs.push(i);
        scales.push(match i {
            0 => f32::NAN,
            2100 => f32::INFINITY,
            3000 => -0.01,
            _ => 0.008,
        });
        data.extend((0..dims).map(|_| rng.i8(-127..=127)));
    }
    let s = SegmentVectors::new(dims, docs, scales, data);
    let query: Vec<f32> = (0..dims).map(|_| rng.f32() - 0.5).collect();
    let rounded = Query::new(&query);
    for k in [1, 5] {
        let mut exact: Vec<(f32, u32)> = (0..s.docs.len())
            .map(|r| (dot(&query, s.row(r), s.scales[r]), r as u32))
            .filter(|(x, _)| !x.is_nan())
            .collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0));
        exact.truncate(k);
        for threads in [1, 4] {
            let got = s.top(|_| true, &[(query.as_slice(), rounded.as_ref())], k, threads);
            let bits = |v: &[(f32, u32)]| v.iter().map(|(x, r)| (x.to_bits(), *r)).collect::<Vec<_>>();
            assert_eq!(bits(&got[0]), bits(&exact), "k {k}, {threads} threads");
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
