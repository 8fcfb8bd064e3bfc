//! One post's line of `results.jsonl` ([`PostResult`]: what the bot answered, its evidence,
//! the checks of its links and quotes, figures, trace and the judge's rating), reading the
//! file back (a line cut by an interruption is dropped), and the run's [`Totals`].

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::figures::{share, Figures, LinkCheck, QuoteCheck, Totals};
use super::judge::Rating;
use super::rubric::DIMENSIONS;
use crate::model::StepTrace;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostResult {
    pub id: String,
    pub text: String,
    pub time: Option<DateTime<Utc>>,
    pub language: Option<String>,
    /// The job's outcome (`reply`, `insufficient`, `nothing_to_check`…), `skipped:<reason>`,
    /// or `failed`.
    pub outcome: String,
    pub error: Option<String>,
    pub verdict: Option<String>,
    pub parts: Vec<String>,
    pub evidence: Vec<EvidenceLine>,
    pub links: Vec<LinkCheck>,
    pub quotes: Vec<QuoteCheck>,
    pub figures: Figures,
    pub trace: Vec<StepTrace>,
    pub judge: Option<Rating>,
    pub judge_error: Option<String>,
    /// The replies the input carried for this post (Muse's, GPT-4's, Community Notes…).
    #[serde(default)]
    pub references: BTreeMap<String, String>,
}

/// One page's evidence, as the reply was written from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceLine {
    pub url: String,
    pub tier: String,
    pub refute: Vec<String>,
    pub context: Vec<String>,
}

impl PostResult {
    pub fn failed(&self) -> bool {
        self.outcome == "failed"
    }

    /// The reply as one text (its parts, one per line).
    pub fn reply(&self) -> String {
        self.parts.join("\n")
    }
}

/// The results in `path`, by id (a later line for an id replaces an earlier one: a post
/// run again). Read-only: a last line cut short is left out, not removed ([`read_lines`]).
pub fn read(path: &Path) -> anyhow::Result<BTreeMap<String, PostResult>> {
    read_lines(path, false)
}

/// Lines of JSON records keyed by `key` (the `id` field; `key` for expert items), the same way.
/// A last line without its newline is kept when it is a whole record (a hand-edited file);
/// one cut short by an interruption is left out, and with `repair` (the run that appends next)
/// removed from the file, so the next line starts clean.
pub fn read_lines<T: for<'de> Deserialize<'de> + Keyed>(
    path: &Path,
    repair: bool,
) -> anyhow::Result<BTreeMap<String, T>> {
    let mut out = BTreeMap::new();
    let Ok(mut bytes) = std::fs::read(path) else {
        return Ok(out);
    };
    let whole = match bytes.iter().rposition(|b| *b == b'\n') {
        Some(i) => i + 1,
        None => 0,
    };
    if whole < bytes.len() {
        if serde_json::from_slice::<T>(&bytes[whole..]).is_ok() {
            if repair {
                std::fs::OpenOptions::new().append(true).open(path)?.write_all(b"\n")?;
            }
            bytes.push(b'\n');
        } else {
            bytes.truncate(whole);
            if repair {
                tracing::warn!(path = %path.display(), "dropping a last line cut short by an interruption");
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)?
                    .set_len(whole as u64)?;
            }
        }
    }
    for (n, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: T = serde_json::from_str(line).map_err(|e| {
            anyhow::anyhow!(
                "{} line {}: {e} — delete the line (its post is run again)",
                path.display(),
                n + 1
            )
        })?;
        out.insert(r.key().to_string(), r);
    }
    Ok(out)
}

pub trait Keyed {
    fn key(&self) -> &str;
}

impl Keyed for PostResult {
    fn key(&self) -> &str {
        &self.id
    }
}

/// Appends one record as a line and makes it durable before the next post starts counting as
/// done.
pub fn append(path: &Path, record: &impl Serialize) -> anyhow::Result<()> {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    let mut line = serde_json::to_vec(record)?;
    line.push(b'\n');
    f.write_all(&line)?;
    f.sync_data()?;
    Ok(())
}

/// The language a result is counted under: the language the bot answered in for the post's
/// tag and text (`zh-Hans`/`zh-Hant` for Chinese), or "unknown" when neither tells.
pub fn language_of(r: &PostResult) -> String {
    match crate::lang::of(r.language.as_deref(), &r.text) {
        Some(l) if crate::lang::primary(Some(&l)).as_deref() == Some("zh") => l,
        Some(l) => crate::lang::primary(Some(&l)).unwrap_or(l),
        None => "unknown".to_string(),
    }
}

/// Sums, shares and distributions over the results, over all of them and per language
/// ([`language_of`]) when they are in more than one.
pub fn totals<'a>(results: impl IntoIterator<Item = &'a PostResult>) -> Totals {
    let results: Vec<&PostResult> = results.into_iter().collect();
    let mut t = totals_of(results.iter().copied());
    let mut groups: BTreeMap<String, Vec<&PostResult>> = BTreeMap::new();
    for r in &results {
        groups.entry(language_of(r)).or_default().push(r);
    }
    if groups.len() > 1 {
        t.by_language = groups.into_iter().map(|(l, rs)| (l, totals_of(rs))).collect();
    }
    t
}

fn totals_of<'a>(results: impl IntoIterator<Item = &'a PostResult>) -> Totals {
    let mut t = Totals::default();
    let mut judged: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    let mut finished = 0;
    let mut unsure = 0;
    for r in results {
        t.posts += 1;
        *t.outcomes.entry(r.outcome.clone()).or_default() += 1;
        if r.failed() {
            t.failed += 1;
            continue;
        }
        finished += 1;
        if r.outcome == "insufficient" {
            unsure += 1;
        }
        if let Some(v) = &r.verdict {
            *t.verdicts.entry(v.clone()).or_default() += 1;
        }
        let (s, f) = (&mut t.sum, &r.figures);
        s.reply_urls += f.reply_urls;
        s.urls_from_evidence += f.urls_from_evidence;
        s.urls_reachable += f.urls_reachable;
        s.quotes += f.quotes;
        s.quotes_verbatim += f.quotes_verbatim;
        s.parts += f.parts;
        s.chars += f.chars;
        s.llm_calls += f.llm_calls;
        s.llm_in_sequence += f.llm_in_sequence;
        s.seconds += f.seconds;
        s.prompt_tokens += f.prompt_tokens;
        s.completion_tokens += f.completion_tokens;
        s.cost += f.cost;
        s.judge_prompt_tokens += f.judge_prompt_tokens;
        s.judge_completion_tokens += f.judge_completion_tokens;
        s.judge_cost += f.judge_cost;
        for (d, p) in positions(r) {
            let e = judged.entry(d.to_string()).or_default();
            e.0 += p;
            e.1 += 1;
        }
    }
    t.could_not_verify = share(unsure, finished);
    t.urls_from_evidence = share(t.sum.urls_from_evidence, t.sum.reply_urls);
    t.urls_reachable = share(t.sum.urls_reachable, t.sum.reply_urls);
    t.quotes_verbatim = share(t.sum.quotes_verbatim, t.sum.quotes);
    t.judge_means = judged.into_iter().map(|(k, (sum, n))| (k, sum / n as f64)).collect();
    t
}

/// The judge's answers of one post as places 0 (worst) … 1 (best), by dimension (a
/// per-reference dimension: the mean over the references it rated).
pub fn positions(r: &PostResult) -> Vec<(&'static str, f64)> {
    let Some(j) = &r.judge else { return Vec::new() };
    let mut out = Vec::new();
    for d in &DIMENSIONS {
        if d.per_reference {
            let p: Vec<f64> = j
                .references
                .values()
                .filter_map(|a| d.position(a.get(d.key)?))
                .collect();
            if !p.is_empty() {
                out.push((d.key, p.iter().sum::<f64>() / p.len() as f64));
            }
        } else if let Some(p) = j.answers.get(d.key).and_then(|a| d.position(a)) {
            out.push((d.key, p));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str, text: &str, language: Option<&str>, outcome: &str) -> PostResult {
        PostResult {
            id: id.into(),
            text: text.into(),
            time: None,
            language: language.map(String::from),
            outcome: outcome.into(),
            error: None,
            verdict: None,
            parts: Vec::new(),
            evidence: Vec::new(),
            links: Vec::new(),
            quotes: Vec::new(),
            figures: Figures::default(),
            trace: Vec::new(),
            judge: None,
            judge_error: None,
            references: BTreeMap::new(),
        }
    }

    #[test]
    fn figures_are_split_by_the_posts_language() {
        let rs = [
            result(
                "1",
                "The Great Wall of China is visible from the Moon with the naked eye.",
                Some("en"),
                "reply",
            ),
            result(
                "2",
                "Die Chinesische Mauer ist vom Mond aus mit bloßem Auge zu sehen.",
                Some("de"),
                "insufficient",
            ),
            result(
                "3",
                "Die Mauer ist das einzige Bauwerk, das man vom Mond aus sehen kann.",
                None,
                "reply",
            ),
            result(
                "4",
                "網路上流傳這張照片，說長城在太空中肉眼可見，這是錯誤的說法。",
                None,
                "reply",
            ),
        ];
        let t = totals(rs.iter());
        assert_eq!(t.posts, 4);
        let langs: Vec<&str> = t.by_language.keys().map(String::as_str).collect();
        assert_eq!(langs, ["de", "en", "zh-Hant"], "by tag, else by the text");
        assert_eq!(t.by_language["de"].posts, 2);
        assert_eq!(t.by_language["de"].could_not_verify, Some(0.5));
        assert_eq!(t.by_language["en"].could_not_verify, Some(0.0));
        assert!(t.by_language["de"].by_language.is_empty());
        let one = totals(rs[..1].iter());
        assert!(one.by_language.is_empty(), "one language: no split");
    }

    #[derive(Debug, Deserialize, Serialize)]
    struct Line {
        key: String,
    }

    impl Keyed for Line {
        fn key(&self) -> &str {
            &self.key
        }
    }

    #[test]
    fn a_cut_line_is_left_out_and_repaired_only_by_the_run_that_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        std::fs::write(&path, "{\"key\":\"a\"}\n{\"key\":\"b\"}\n{\"key\":\"c").unwrap();
        let read: BTreeMap<String, Line> = read_lines(&path, false).unwrap();
        assert_eq!(read.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert!(
            std::fs::read_to_string(&path).unwrap().ends_with("{\"key\":\"c"),
            "a reader leaves the file as it is"
        );
        let _: BTreeMap<String, Line> = read_lines(&path, true).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"key\":\"a\"}\n{\"key\":\"b\"}\n"
        );
        // A whole record without its newline is kept (and given one by the appending run).
        std::fs::write(&path, "{\"key\":\"a\"}\n{\"key\":\"d\"}").unwrap();
        let read: BTreeMap<String, Line> = read_lines(&path, true).unwrap();
        assert_eq!(read.keys().collect::<Vec<_>>(), ["a", "d"]);
        append(&path, &Line { key: "e".into() }).unwrap();
        let read: BTreeMap<String, Line> = read_lines(&path, false).unwrap();
        assert_eq!(read.keys().collect::<Vec<_>>(), ["a", "d", "e"]);
    }
}
