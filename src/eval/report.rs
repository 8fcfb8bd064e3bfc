//! `DIR/report.html` (and `compare.html`): one self-contained page a person reads — no
//! JavaScript, no outside resources, every text from outside escaped (minijinja autoescapes
//! `.html` templates; the charts are inline SVG drawn here from numbers and escaped labels).

use minijinja::{context, Environment};
use serde::Serialize;

use super::agreement::DimensionAgreement;
use super::compare::Comparison;
use super::figures::Totals;
use super::record::PostResult;
use super::rubric::DIMENSIONS;

fn templates() -> Environment<'static> {
    let mut env = Environment::new();
    for (name, text) in [
        ("base.html", include_str!("templates/base.html")),
        ("report.html", include_str!("templates/report.html")),
        ("compare.html", include_str!("templates/compare.html")),
    ] {
        env.add_template(name, text).expect("the report templates compile");
    }
    env
}

/// A horizontal bar chart: one bar per (label, value), scaled to `max`.
pub fn bars(items: &[(String, f64)], max: f64, percent: bool) -> String {
    let (row, label_w, bar_w) = (22.0, 300.0, 320.0);
    let height = row * items.len() as f64 + 8.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" role=\"img\">",
        label_w + bar_w + 80.0
    );
    for (i, (label, v)) in items.iter().enumerate() {
        let y = 4.0 + row * i as f64;
        let w = if max > 0.0 {
            (v / max).clamp(0.0, 1.0) * bar_w
        } else {
            0.0
        };
        let shown = if percent {
            format!("{:.0} %", v * 100.0)
        } else {
            format!("{v:.2}")
        };
        svg.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"13\">{}</text><rect x=\"{label_w}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"#4a7bb7\"/><text x=\"{}\" y=\"{}\" font-size=\"12\">{}</text>",
            label_w - 6.0,
            y + 14.0,
            html_escape::encode_text(label),
            row - 6.0,
            label_w + w + 4.0,
            y + 14.0,
            html_escape::encode_text(&shown)
        ));
    }
    svg.push_str("</svg>");
    svg
}

fn distribution(counts: &std::collections::BTreeMap<String, usize>) -> String {
    let total: usize = counts.values().sum();
    let items: Vec<(String, f64)> = counts
        .iter()
        .map(|(k, v)| (format!("{k} ({v})"), *v as f64 / total.max(1) as f64))
        .collect();
    bars(&items, 1.0, true)
}

/// The judge's overall scores, 0 to 10, as a histogram.
fn overall_histogram(results: &[&PostResult]) -> String {
    let mut counts = [0usize; 11];
    for r in results {
        if let Some(s) = r
            .judge
            .as_ref()
            .and_then(|j| j.answers.get("overall"))
            .and_then(|s| s.parse::<usize>().ok())
        {
            counts[s.min(10)] += 1;
        }
    }
    let total: usize = counts.iter().sum();
    let items: Vec<(String, f64)> = counts
        .iter()
        .enumerate()
        .map(|(s, c)| (format!("{s} ({c})"), *c as f64 / total.max(1) as f64))
        .collect();
    bars(&items, 1.0, true)
}

#[derive(Serialize)]
struct Row<'a> {
    key: &'a str,
    name: &'a str,
    value: Option<f64>,
}

pub fn write_report(
    dir: &std::path::Path,
    title: &str,
    results: &[&PostResult],
    totals: &Totals,
    agreement: Option<&[DimensionAgreement]>,
    skipped: &[String],
) -> anyhow::Result<std::path::PathBuf> {
    let dims: Vec<Row> = DIMENSIONS
        .iter()
        .map(|d| Row {
            key: d.key,
            name: d.name,
            value: totals.judge_means.get(d.key).copied(),
        })
        .collect();
    let judged: Vec<(String, f64)> = dims
        .iter()
        .filter_map(|r| Some((r.key.to_string(), r.value?)))
        .collect();
    let agreement_chart = agreement.map(|a| {
        let items: Vec<(String, f64)> = a
            .iter()
            .flat_map(|d| {
                let judge = if d.measure == "spearman" {
                    d.judge
                } else {
                    d.judge_kappa
                };
                let experts = if d.measure == "spearman" {
                    d.experts
                } else {
                    d.experts_kappa
                };
                [
                    judge.map(|v| (format!("{} · judge", d.key), v.max(0.0))),
                    experts.map(|v| (format!("{} · experts", d.key), v.max(0.0))),
                ]
            })
            .flatten()
            .collect();
        bars(&items, 1.0, false)
    });
    let html = templates().get_template("report.html")?.render(context! {
        title,
        totals,
        dims,
        results,
        agreement,
        skipped,
        outcome_chart => distribution(&totals.outcomes),
        verdict_chart => distribution(&totals.verdicts),
        judge_chart => bars(&judged, 1.0, false),
        overall_chart => overall_histogram(results),
        agreement_chart,
    })?;
    let path = dir.join("report.html");
    std::fs::write(&path, html)?;
    Ok(path)
}

pub fn write_compare(dir: &std::path::Path, a: &str, b: &str, c: &Comparison) -> anyhow::Result<std::path::PathBuf> {
    // A vs B on every 0–1 figure (the judge's dimensions), side by side.
    let items: Vec<(String, f64)> = c
        .differences
        .iter()
        .filter(|d| d.figure.ends_with("(0–1)"))
        .flat_map(|d| {
            [
                (format!("{} · A", d.figure), d.mean_a),
                (format!("{} · B", d.figure), d.mean_b),
            ]
        })
        .collect();
    let html = templates().get_template("compare.html")?.render(context! {
        title => "musebot eval: A vs B",
        a, b, c,
        chart => bars(&items, 1.0, false),
    })?;
    std::fs::create_dir_all(dir)?;
    let path = dir.join("compare.html");
    std::fs::write(&path, html)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_in_charts_are_escaped() {
        let svg = bars(&[("<script>alert(1)</script>".into(), 0.5)], 1.0, true);
        assert!(!svg.contains("<script>"), "{svg}");
        assert!(svg.contains("&lt;script&gt;"));
    }
}
