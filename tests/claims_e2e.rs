//! The fact-check corpus end to end, through the binary as an operator runs it: `musebot index
//! import` of real Snopes fact-checks (CheckThat! 2022 Task 2A, `../shared/data/claim-matching`)
//! as JSONL `ClaimReview` objects, interrupted by `kill -9` at random moments and run again
//! until it finishes (every review once, none twice), then again (nothing changes) and with one
//! review changed (one update); `index match` finding paraphrased and translated claims'
//! fact-checks as the same claim and refusing near misses on the same topic; and a file of no
//! reviews failing clearly.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

fn config(dir: &Path) -> PathBuf {
    let s = Sandbox::load();
    let text = format!(
        r#"
[daemon]
state_dir = "{}"
pipeline = "baseline"
[mastodon]
base_url = "https://mastodon.example"
[relevance]
onnxruntime = "{}"
model = "{}"
tokenizer = "{}"
multilingual_model = "{}"
multilingual_tokenizer = "{}"
"#,
        dir.join("state").display(),
        s.get("MUSEBOT_ORT_DYLIB"),
        s.get("MUSEBOT_EMBED_MODEL"),
        s.get("MUSEBOT_EMBED_TOKENIZER"),
        s.get("MUSEBOT_EMBED_MODEL_MULTI"),
        s.get("MUSEBOT_EMBED_TOKENIZER_MULTI"),
    );
    let path = dir.join("bot-config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The first `n` Snopes fact-checks of the data as schema.org `ClaimReview` JSONL.
fn snopes_jsonl(data: &Path, n: usize) -> Vec<Value> {
    std::fs::read_to_string(data.join("vclaims.jsonl"))
        .unwrap()
        .lines()
        .take(n)
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let slug = v["vclaim_id"].as_str().unwrap().trim_start_matches("vclaim-sno-");
            json!({
                "@context": "https://schema.org",
                "@type": "ClaimReview",
                "url": format!("https://www.snopes.com/fact-check/{slug}/"),
                "claimReviewed": v["vclaim"],
                "name": v["title"],
                "author": {"@type": "Organization", "name": "Snopes"},
                "reviewRating": {"@type": "Rating", "alternateName": "False"}
            })
        })
        .collect()
}

fn write_jsonl(path: &Path, reviews: &[Value]) {
    let text: Vec<String> = reviews.iter().map(|r| r.to_string()).collect();
    std::fs::write(path, text.join("\n") + "\n").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_killed_mid_way_finishes_on_the_next_run_and_never_duplicates() {
    let Some(data) = shared_data("claim-matching") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let cfg_s = cfg.to_str().unwrap().to_string();
    // Four batches of 500: three kills land after a commit and before the end.
    const N: usize = 2_000;
    let mut reviews = snopes_jsonl(&data, N);
    // Two records that cannot be reviews, and one review twice.
    reviews.push(json!({"@type": "ClaimReview", "claimReviewed": "no URL", "url": "/relative/"}));
    reviews.push(json!({"hello": "world"}));
    reviews.push(reviews[0].clone());
    let file = dir.path().join("reviews.jsonl");
    write_jsonl(&file, &reviews);
    let mut rng = fastrand::Rng::with_seed(27);
    let meta = dir.path().join("state/claims/meta.json");
    let stamp = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let mut killed_mid_way = 0;
    for round in 0..3 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_musebot"))
            .args(["index", "import"])
            .arg(&file)
            .args(["--config", &cfg_s])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Killed at a random moment after its next commit (a batch of 500 made durable).
        let before = stamp(&meta);
        let deadline = std::time::Instant::now() + Duration::from_secs(240);
        while stamp(&meta) == before && std::time::Instant::now() < deadline && child.try_wait().unwrap().is_none() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(rng.u64(0..1500))).await;
        if child.try_wait().unwrap().is_none() {
            killed_mid_way += 1;
        }
        let _ = child.kill(); // SIGKILL
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("another musebot") && !err.contains("panicked"),
            "round {round}: {err}"
        );
    }
    assert!(
        killed_mid_way >= 2,
        "the kills landed mid-import ({killed_mid_way} of 3)"
    );
    let (code, out, err) = tokio::task::spawn_blocking({
        let (file, cfg_s) = (file.clone(), cfg_s.clone());
        move || musebot(&["index", "import", file.to_str().unwrap(), "--config", &cfg_s])
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("read as JSONL"), "{out}");
    assert!(
        out.contains(&format!("{N} reviews held")),
        "every review once after the kills: {out}\n{err}"
    );
    assert!(out.contains("skipped 2"), "{out}");
    assert!(
        out.contains(&format!("line {}: no absolute http(s) url of the review", N + 1)),
        "{out}"
    );
    assert!(out.contains(&format!("line {}: no ClaimReview object", N + 2)), "{out}");
    // What the killed runs committed is not imported again.
    let imported: usize = out
        .split("imported ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(imported < N, "the killed runs' batches survived: {out}");
    // Again: nothing changes.
    let (code, out, _) = musebot(&["index", "import", file.to_str().unwrap(), "--config", &cfg_s]);
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!("imported 0, updated 0, unchanged {}", N + 1)),
        "{out}"
    );
    // One review re-rated: one update, still N held.
    let mut changed = reviews[..N].to_vec();
    changed[5]["reviewRating"]["alternateName"] = json!("Mostly True");
    write_jsonl(&file, &changed);
    let (_, out, _) = musebot(&["index", "import", file.to_str().unwrap(), "--config", &cfg_s]);
    assert!(
        out.contains(&format!("imported 0, updated 1, unchanged {}", N - 1)),
        "{out}"
    );
    assert!(out.contains(&format!("{N} reviews held")), "{out}");

    // Paraphrases find their fact-check as the same claim, in English and (by the
    // multilingual model) in German; claims on the same topic that are other claims do not
    // count as the same (they stay ordinary candidates).
    let first = |text: &str, lang: &str| {
        let (code, out, err) = musebot(&["index", "match", text, "--lang", lang, "--config", &cfg_s]);
        assert_eq!(code, 0, "{err}");
        let top = out
            .lines()
            .skip_while(|l| !l.starts_with("- score"))
            .take(4)
            .collect::<Vec<_>>()
            .join("\n");
        (top, out)
    };
    for (text, lang, slug) in [
        (
            "McDonald's is selling any size fries for just one dollar until the end of May",
            "en",
            "1-mcdonald39s-any-size-fries",
        ),
        (
            "Sharing this post 100 times on Facebook will pay for a sick child's heart transplant",
            "en",
            "100-facebook-shares-appeal",
        ),
        (
            "McDonald's bietet vom 18. bis 31. Mai Pommes in jeder Größe für einen Dollar an",
            "de",
            "1-mcdonald39s-any-size-fries",
        ),
    ] {
        let (top, out) = first(text, lang);
        assert!(
            top.contains(slug) && top.lines().next().unwrap_or("").contains("SAME CLAIM"),
            "{text}: {out}"
        );
    }
    for (text, lang) in [
        (
            "McDonald's is raising the price of its fries to five dollars next month",
            "en",
        ),
        ("McDonald's verkauft Pommes bald für fünf Dollar", "de"),
    ] {
        let (_, out) = first(text, lang);
        assert!(!out.contains("SAME CLAIM"), "a near miss is no match: {text}: {out}");
        assert!(out.contains("mcdonald"), "but the topic's checks are candidates: {out}");
    }

    // A file with no review at all: exit 1, saying why.
    let empty = dir.path().join("none.json");
    std::fs::write(&empty, "[{\"a\": 1}]").unwrap();
    let (code, out, err) = musebot(&["index", "import", empty.to_str().unwrap(), "--config", &cfg_s]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("no review could be read"), "{err}");
}
