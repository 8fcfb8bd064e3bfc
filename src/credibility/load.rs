//! Loaders for ratings files, configured under `[credibility]`:
//! - `pc1_csv`: `domain,pc1` with a quality score in [0,1] (Lin et al. 2023), cut into tiers by
//!   `pc1_cuts` (calibration in ARCHITECTURE.md);
//! - `tier_list`: one domain per line, all at the file's `tier` (Muse's publisher lists);
//! - `mbfc_json`: `{domain: {factuality, bias}}` or `[{domain, factuality|factual_reporting, bias}]`.
//!
//! A malformed line is skipped and counted; a file with no usable line is an error.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Bias, Credibility, Factuality, Rating, Tier};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CredibilityConfig {
    /// Ratings files, applied in order (later files override earlier ones and the built-in table).
    pub files: Vec<RatingsFile>,
    /// pc1 cut points for the high, medium and low tiers; below the last: excluded.
    pub pc1_cuts: [f64; 3],
    /// Admit publishers no source rates, at the low tier (Muse excludes them).
    pub include_unknown: bool,
    /// Fact-checkers beyond the built-in table (`{ domain, path, name }`): a review read from
    /// their pages is named by this name. Their pages must also be credible to be read.
    pub fact_checkers: Vec<super::factcheckers::FactChecker>,
}

impl Default for CredibilityConfig {
    fn default() -> Self {
        CredibilityConfig {
            files: Vec::new(),
            pc1_cuts: [0.90, 0.75, 0.60],
            include_unknown: false,
            fact_checkers: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatingsFile {
    pub path: String,
    pub format: FileFormat,
    /// For `tier_list`: the tier of every domain in the file.
    #[serde(default)]
    pub tier: Option<Tier>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileFormat {
    Pc1Csv,
    TierList,
    MbfcJson,
}

#[derive(Debug, thiserror::Error)]
#[error("{key}: {problem} — {fix}")]
pub struct LoadError {
    pub key: String,
    pub problem: String,
    pub fix: String,
}

/// Counts of one file's load, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LoadStats {
    pub loaded: usize,
    pub skipped: usize,
}

/// The built-in table plus every configured file.
pub fn build(config: &CredibilityConfig) -> Result<Credibility, LoadError> {
    let mut c = Credibility::builtin();
    c.unknown_tier = config.include_unknown.then_some(Tier::Low);
    for f in &config.fact_checkers {
        c.fact_checkers.add(f.clone());
    }
    for (i, file) in config.files.iter().enumerate() {
        let key = format!("credibility.files[{i}]");
        let stats = load_file(&mut c, file, config.pc1_cuts, &key)?;
        tracing::info!(file = %file.path, loaded = stats.loaded, skipped = stats.skipped, "ratings loaded");
    }
    Ok(c)
}

pub fn load_file(c: &mut Credibility, file: &RatingsFile, cuts: [f64; 3], key: &str) -> Result<LoadStats, LoadError> {
    let text = std::fs::read_to_string(Path::new(&file.path)).map_err(|e| LoadError {
        key: format!("{key}.path"),
        problem: format!("cannot read `{}`: {e}", file.path),
        fix: "check the path and that the bot's user may read it".into(),
    })?;
    let rows = match file.format {
        FileFormat::Pc1Csv => parse_pc1(&text, cuts),
        FileFormat::TierList => {
            let tier = file.tier.ok_or_else(|| LoadError {
                key: format!("{key}.tier"),
                problem: "is missing for a tier_list file".into(),
                fix: "add tier = \"high\" | \"medium\" | \"low\"".into(),
            })?;
            parse_tier_list(&text, tier)
        }
        FileFormat::MbfcJson => parse_mbfc(&text).map_err(|e| LoadError {
            key: format!("{key}.path"),
            problem: format!("`{}` is not MBFC-style JSON: {e}", file.path),
            fix: "use {\"domain\": {\"factuality\": \"high\", \"bias\": \"least biased\"}} or a list of such objects with a domain".into(),
        })?,
    };
    let (ok, skipped): (Vec<_>, Vec<_>) = rows.into_iter().partition(Option::is_some);
    if ok.is_empty() {
        return Err(LoadError {
            key: format!("{key}.path"),
            problem: format!("no usable rating in `{}` ({} lines skipped)", file.path, skipped.len()),
            fix: format!("check that the file is in the `{:?}` format", file.format),
        });
    }
    let stats = LoadStats {
        loaded: ok.len(),
        skipped: skipped.len(),
    };
    for (domain, rating) in ok.into_iter().flatten() {
        c.insert(&domain, rating, &file.path);
    }
    Ok(stats)
}

/// `domain,pc1` rows; `None` for each malformed row. A header row is ignored.
pub fn parse_pc1(text: &str, cuts: [f64; 3]) -> Vec<Option<(String, Rating)>> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.to_ascii_lowercase().starts_with("domain,"))
        .map(|l| {
            let (domain, score) = l.split_once(',')?;
            let score: f64 = score.trim().parse().ok().filter(|s: &f64| (0.0..=1.0).contains(s))?;
            let rating = if score >= cuts[0] {
                Rating::Tier(Tier::High)
            } else if score >= cuts[1] {
                Rating::Tier(Tier::Medium)
            } else if score >= cuts[2] {
                Rating::Tier(Tier::Low)
            } else {
                Rating::Excluded
            };
            valid_domain(domain).map(|d| (d, rating))
        })
        .collect()
}

pub fn parse_tier_list(text: &str, tier: Tier) -> Vec<Option<(String, Rating)>> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| valid_domain(l).map(|d| (d, Rating::Tier(tier))))
        .collect()
}

pub fn parse_mbfc(text: &str) -> Result<Vec<Option<(String, Rating)>>, serde_json::Error> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    let entries: Vec<(String, serde_json::Value)> = match value {
        serde_json::Value::Object(map) => map.into_iter().collect(),
        serde_json::Value::Array(items) => items
            .into_iter()
            .map(|v| {
                let d = ["domain", "url", "source_url"]
                    .iter()
                    .find_map(|k| v.get(*k).and_then(|d| d.as_str()))
                    .unwrap_or("");
                (d.to_string(), v)
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(entries
        .into_iter()
        .map(|(domain, v)| {
            let f = ["factuality", "factual_reporting", "factual"]
                .iter()
                .find_map(|k| v.get(*k).and_then(|x| x.as_str()))
                .and_then(Factuality::parse)?;
            let b = ["bias", "bias_rating"]
                .iter()
                .find_map(|k| v.get(*k).and_then(|x| x.as_str()))
                .and_then(Bias::parse)?;
            let domain = url::Url::parse(&domain)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string))
                .unwrap_or(domain);
            valid_domain(&domain).map(|d| (d, Rating::Mbfc(f, b)))
        })
        .collect())
}

fn valid_domain(d: &str) -> Option<String> {
    let d = super::normalize_host(d);
    let ok = d.contains('.') && d.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    ok.then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pc1_rows() {
        let rows = parse_pc1(
            "domain,pc1\nreuters.com,1\nmid.com,0.8\nlow.org,0.61\nbad.net,0.2\nbroken\nx.com,2\n",
            [0.9, 0.75, 0.6],
        );
        let got: Vec<_> = rows.into_iter().map(|r| r.map(|(d, r)| (d, r.tier()))).collect();
        assert_eq!(
            got,
            vec![
                Some(("reuters.com".into(), Some(Tier::High))),
                Some(("mid.com".into(), Some(Tier::Medium))),
                Some(("low.org".into(), Some(Tier::Low))),
                Some(("bad.net".into(), None)),
                None,
                None,
            ]
        );
    }

    #[test]
    fn mbfc_both_shapes() {
        let map = r#"{"example.com": {"factuality": "Very High", "bias": "least-biased"}, "x.org": {"factuality": "mixed", "bias": "left"}}"#;
        let mut rows: Vec<_> = parse_mbfc(map)
            .unwrap()
            .into_iter()
            .flatten()
            .map(|(d, r)| (d, r.tier()))
            .collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            rows,
            vec![("example.com".into(), Some(Tier::High)), ("x.org".into(), None)]
        );
        let list = r#"[{"domain": "https://www.sci.org/", "factual_reporting": "HIGH", "bias": "pro-science"}, {"domain": "nofacts.com"}]"#;
        let rows = parse_mbfc(list).unwrap();
        assert_eq!(
            rows[0].as_ref().map(|(d, r)| (d.as_str(), r.tier())),
            Some(("sci.org", Some(Tier::Medium)))
        );
        assert!(rows[1].is_none());
    }
}
