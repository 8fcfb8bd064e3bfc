//! `musebot eval` end to end with the real binary: Muse-format and JSONL posts run through the
//! daemon's own stages with a scripted LLM, real news pages under their publishers' names
//! (../shared/data/extraction) and a SearXNG-format search server; a scripted judge. Checks
//! the integrity figures (a stitched quote is caught), resuming after `kill -9`, the report,
//! `eval compare`, and the judge-vs-experts agreement on the Muse paper's own expert ratings
//! (../shared/data/muse/ratings): a judge that copies the first expert scores 1.0, one that
//! answers at random about 0.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

/// Plays each Muse step; at the reply step it quotes the first evidence quote verbatim and a
/// second one stitched from two pieces (a quote no page holds).
fn scripted(body: &Value) -> String {
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    let user = body["messages"][1]["content"].as_str().unwrap_or("");
    if system.contains("web search queries") {
        return json!({"queries": ["claim one", "claim two", "claim three"]}).to_string();
    }
    if system.contains("You check a reply") {
        return json!({"verdict": "supported", "reasons": "ok", "objections": []}).to_string();
    }
    if system.contains("Quote passages") {
        let page = block(user, "page");
        let content = page.split("content:\n").nth(1).unwrap_or("");
        let passages: Vec<&str> = content
            .split("\n\n")
            .map(str::trim)
            .filter(|p| p.split_whitespace().count() >= 30)
            .collect();
        let refute: Vec<String> = passages.iter().take(1).map(|p| first_words(p, 14)).collect();
        return json!({"refute": refute, "context": []}).to_string();
    }
    if system.contains("using only the facts given") {
        let evidence = block(user, "evidence");
        // Lines `- QUOTE (source: URL, published …)`.
        let quotes: Vec<&str> = evidence
            .lines()
            .filter_map(|l| l.strip_prefix("- ")?.split(" (source: ").next())
            .filter(|q| q.split_whitespace().count() >= 8)
            .collect();
        let urls = evidence_urls(user, 1);
        let (Some(q), Some(u)) = (quotes.first(), urls.first()) else {
            return "This post is misleading.".into();
        };
        let words: Vec<&str> = q.split_whitespace().collect();
        let stitched = format!("{} {}", words[..4].join(" "), words[words.len() - 5..].join(" "));
        return format!(
            "This post is misleading. The report says “{q}” and also “{stitched} according to officials” ({u}). See https://evil.example/more."
        );
    }
    "none".into()
}

struct Web {
    config: String,
    posts: Vec<(String, String)>,
    _site: Site,
    _search: SearchServer,
    _llm: ScriptedLlm,
    llm_requests: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
}

/// The local web, the scripted LLM (each call `delay` long) and the config naming them.
async fn local_web(data: &Path, judge_base: &str, delay: Duration) -> Web {
    let sandbox = Sandbox::load();
    let pages = real_pages(data, &["www.nytimes.com", "www.cbsnews.com"]);
    assert!(pages.len() >= 4, "{}", pages.len());
    let posts: Vec<(String, String)> = pages
        .iter()
        .take(3)
        .enumerate()
        // From the middle of the article: a reply quoting its opening does not echo the post.
        .map(|(i, p)| {
            (
                format!("p{i}"),
                p.3.split_whitespace().skip(120).take(40).collect::<Vec<_>>().join(" "),
            )
        })
        .collect();
    let site: BTreeMap<String, String> = pages
        .iter()
        .map(|(_, path, html, _)| (path.clone(), html.clone()))
        .collect();
    let web = Site::start(site).await;
    let results: Vec<Value> = pages
        .iter()
        .map(|(host, path, _, _)| json!({"url": format!("http://{host}{path}"), "title": "t", "content": "c"}))
        .collect();
    let search = SearchServer::start(move |_| results.clone()).await;
    let mut script = Script::routed(scripted);
    script.delay = delay;
    let llm = ScriptedLlm::start(script).await;
    let resolve: Vec<String> = web
        .resolve_entries(&["www.nytimes.com", "www.cbsnews.com", "evil.example"])
        .iter()
        .map(|e| format!("\"{e}\""))
        .collect();
    let config = format!(
        r#"
[daemon]
state_dir = "/nonexistent"
pipeline = "muse"

[llm]
base_url = "{}"
model = "test"

[search]
backends = [{{ kind = "searxng", base_url = "http://{}" }}]

[relevance]
onnxruntime = "{}"
model = "{}"
tokenizer = "{}"

[fetch]
test_allow_addrs = ["{}"]
test_resolve = [{}]

[mastodon]
base_url = "http://127.0.0.1:9"

[eval.judge]
base_url = "{judge_base}"
model = "judge"
"#,
        llm.base_url,
        search.addr,
        sandbox.get("MUSEBOT_ORT_DYLIB"),
        sandbox.get("MUSEBOT_EMBED_MODEL"),
        sandbox.get("MUSEBOT_EMBED_TOKENIZER"),
        web.addr,
        resolve.join(", ")
    );
    Web {
        config,
        posts,
        llm_requests: llm.requests.clone(),
        _site: web,
        _search: search,
        _llm: llm,
    }
}

fn musebot(args: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_musebot"));
    c.args(args);
    c
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The posts whose queries the LLM was asked for (by the post's text).
fn queried(requests: &[Value], posts: &[(String, String)]) -> HashMap<String, usize> {
    let mut n = HashMap::new();
    for r in requests {
        let system = r["messages"][0]["content"].as_str().unwrap_or("");
        let user = r["messages"][1]["content"].as_str().unwrap_or("");
        if system.contains("web search queries") {
            for (id, text) in posts {
                if user.contains(text.as_str()) {
                    *n.entry(id.clone()).or_default() += 1;
                }
            }
        }
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eval_runs_posts_checks_their_integrity_resumes_and_compares() {
    let Some(data) = shared_data("") else { return };
    let judge = ScriptedLlm::start(Script::reply(
        r#"{"explicitness": "Explicit", "identification": "Exist without misidentification", "comprehensiveness": "High", "explanation_accuracy": "Mostly Correct", "informativeness": 7, "text_relevance": 9, "factuality": "Mostly Factual and Accurate", "fluency_mistakes": "No", "coherence": "Coherent and Logical", "toxicity": "No", "references": [], "overall": 7}"#,
    ))
    .await;
    let web = local_web(&data, &judge.base_url, Duration::from_millis(150)).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bot-config.toml");
    std::fs::write(&cfg, &web.config).unwrap();
    let posts = dir.path().join("posts.jsonl");
    let body: String = web
        .posts
        .iter()
        .enumerate()
        .map(|(i, (id, text))| {
            format!(
                "{}\n",
                json!({"id": id, "text": text, "time": format!("2030-01-0{}T00:00:00Z", i + 1)})
            )
        })
        .collect();
    // Two unusable lines: skipped with their reasons, the rest run.
    let body = format!("{body}{{\"text\": 3}}\n{{\"id\": \"p0\", \"text\": \"the same id again\"}}\n");
    std::fs::write(&posts, body).unwrap();
    let out = dir.path().join("a");
    let results = out.join("results.jsonl");
    let run = {
        let (posts, out, cfg) = (posts.clone(), out.clone(), cfg.clone());
        move |extra: &[&str]| {
            let mut c = musebot(&[
                "eval",
                posts.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "--config",
                cfg.to_str().unwrap(),
                "--jobs",
                "1",
            ]);
            c.args(extra);
            c
        }
    };

    // Interrupted by kill -9 once the first post is written; what was written stands.
    let log = std::fs::File::create(dir.path().join("first-run.log")).unwrap();
    let mut child = run(&[]).stderr(log).spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while lines(&results).is_empty() {
        assert!(std::time::Instant::now() < deadline, "no post finished in 120 s");
        assert!(
            child.try_wait().unwrap().is_none(),
            "eval stopped before any post was written: {}",
            std::fs::read_to_string(dir.path().join("first-run.log")).unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before: Vec<String> = lines(&results)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert!(!before.is_empty() && before.len() < 3, "{before:?}");
    let asked_before = queried(&web.llm_requests.lock().unwrap(), &web.posts);

    let again = run.clone();
    let o = tokio::task::spawn_blocking(move || again(&[]).output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("already in") && stderr.contains("3/3 posts done"),
        "progress on stderr: {stderr}"
    );
    let asked = queried(&web.llm_requests.lock().unwrap(), &web.posts);
    for id in &before {
        assert_eq!(
            asked[id], asked_before[id],
            "{id} was finished before the kill and is not run again"
        );
        assert_eq!(asked[id], 1, "{id}");
    }
    let rs = lines(&results);
    assert_eq!(rs.len(), 3, "one line per post: {rs:#?}");
    let mut ids: Vec<&str> = rs.iter().map(|r| r["id"].as_str().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, ["p0", "p1", "p2"]);

    // Integrity: every URL from the evidence and answering; the stitched quote is caught.
    let stdout = String::from_utf8_lossy(&o.stdout);
    for r in &rs {
        assert_eq!(r["outcome"], "reply", "{r:#}");
        let f = &r["figures"];
        assert!(f["reply_urls"].as_u64().unwrap() >= 1, "{r:#}");
        assert_eq!(f["urls_from_evidence"], f["reply_urls"], "{r:#}");
        assert_eq!(f["urls_reachable"], f["reply_urls"], "{r:#}");
        assert_eq!(f["quotes"], 2, "{r:#}");
        assert_eq!(f["quotes_verbatim"], 1, "the stitched quote is not verbatim: {r:#}");
        assert!(
            f["llm_calls"].as_u64().unwrap() >= 3 && f["llm_in_sequence"].as_u64().unwrap() >= 3,
            "{f}"
        );
        assert!(f["llm_in_sequence"].as_u64() <= f["llm_calls"].as_u64());
        assert_eq!(r["judge"]["answers"]["overall"], "7", "{r:#}");
        assert!(!r["parts"].to_string().contains("evil.example"));
    }
    assert!(stdout.contains("reply URLs from the evidence: 100.0 %"), "{stdout}");
    assert!(stdout.contains("input lines skipped: 2"), "{stdout}");
    assert!(
        stdout.contains("quotes verbatim in a cited page: 50.0 % of 6"),
        "{stdout}"
    );

    // The report: self-contained, no script, outside text escaped.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        !html.contains("<script") && !html.contains("src=\"http"),
        "self-contained, no JavaScript"
    );
    assert!(html.contains("<svg") && html.contains("not found verbatim") && html.contains("p2"));

    // compare: a run against itself differs by nothing; against a run with another judge,
    // the judge's overall score differs by exactly its change.
    let judge_b = ScriptedLlm::start(Script::reply(r#"{"overall": 4, "explicitness": "Implicit"}"#)).await;
    let cfg_b = dir.path().join("b.toml");
    std::fs::write(&cfg_b, web.config.replace(&judge.base_url, &judge_b.base_url)).unwrap();
    let out_b = dir.path().join("b");
    let o = output(&["eval", arg(&posts), "--out", arg(&out_b), "--config", arg(&cfg_b)]).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html_dir = dir.path().join("cmp");
    let o = output(&["eval", "compare", arg(&out), arg(&out_b), "--out", arg(&html_dir)]).await;
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("3 posts paired"), "{text}");
    let overall = text
        .lines()
        .find(|l| l.starts_with("judge overall"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        overall.contains("-0.3000") && overall.contains("[-0.3000, -0.3000]"),
        "7 → 4 on every post: {overall}"
    );
    let same = text.lines().find(|l| l.starts_with("urls from evidence %")).unwrap();
    assert!(same.contains("0.0000  [0.0000, 0.0000]"), "{same}");
    assert!(std::fs::read_to_string(dir.path().join("cmp/compare.html"))
        .unwrap()
        .contains("<svg"));

    // A run without the judge, then the same run with it: the posts are rated, not run again.
    let out_c = dir.path().join("c");
    let o = output(&[
        "eval",
        arg(&posts),
        "--out",
        arg(&out_c),
        "--config",
        arg(&cfg),
        "--no-judge",
    ])
    .await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(lines(&out_c.join("results.jsonl")).iter().all(|r| r["judge"].is_null()));
    let asked_before = web.llm_requests.lock().unwrap().len();
    let o = output(&["eval", arg(&posts), "--out", arg(&out_c), "--config", arg(&cfg)]).await;
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(
        stderr.matches("finished earlier without a rating").count(),
        3,
        "{stderr}"
    );
    assert_eq!(
        web.llm_requests.lock().unwrap().len(),
        asked_before,
        "no post was run again"
    );
    let rated = record_by_id(&out_c.join("results.jsonl"));
    assert!(
        rated.values().all(|r| r["judge"]["answers"]["overall"] == "7"),
        "{rated:#?}"
    );
}

/// A path as a command-line argument.
fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The binary's output for `args`, run off the async workers (the scripted servers answer on
/// them meanwhile).
async fn output(args: &[&str]) -> std::process::Output {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_musebot"))
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// The last line of each id (a later line replaces an earlier one).
fn record_by_id(path: &Path) -> BTreeMap<String, Value> {
    lines(path)
        .into_iter()
        .map(|r| (r["id"].as_str().unwrap().to_string(), r))
        .collect()
}

/// The experts' labels of each rated reply, as Muse's files hold them: for each reply, the
/// expert whose rating was recorded first.
fn first_experts(ratings: &Path) -> HashMap<String, Value> {
    let files: Vec<PathBuf> = std::fs::read_dir(ratings)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with('Q'))
        .collect();
    // (text, user) → (min id, {dimension file: label or [(url, label)]})
    let mut by: HashMap<(String, String), (u64, BTreeMap<String, Value>)> = HashMap::new();
    for f in &files {
        let name = f.file_stem().unwrap().to_str().unwrap().to_string();
        let mut r = csv::Reader::from_path(f).unwrap();
        let h = r.headers().unwrap().clone();
        let col = |c: &str| h.iter().position(|x| x == c).unwrap();
        let (id, user, label, text) = (col("id"), col("username"), col("label"), col("response_text"));
        let url = h.iter().position(|x| x == "url");
        for row in r.records() {
            let row = row.unwrap();
            let key = (norm(&row[text]), row[user].to_string());
            let e = by.entry(key).or_insert((u64::MAX, BTreeMap::new()));
            e.0 = e.0.min(row[id].parse().unwrap());
            match url {
                Some(u) => {
                    let list = e.1.entry(name.clone()).or_insert(json!([]));
                    list.as_array_mut()
                        .unwrap()
                        .push(json!([row[u].trim(), row[label].trim()]));
                }
                None => {
                    e.1.insert(name.clone(), json!(row[label].trim()));
                }
            }
        }
    }
    let mut first: HashMap<String, (u64, Value)> = HashMap::new();
    for ((text, _), (id, labels)) in by {
        if first.get(&text).is_none_or(|(i, _)| id < *i) {
            first.insert(text, (id, json!(labels)));
        }
    }
    first.into_iter().map(|(k, (_, v))| (k, v)).collect()
}

fn norm(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(300)
        .collect()
}

/// A judge answering with the first expert's labels (`copy`) or at random.
fn expert_judge(first: HashMap<String, Value>, copy: bool) -> impl Fn(&Value) -> String {
    let rng = std::sync::Mutex::new(fastrand::Rng::with_seed(11));
    move |body: &Value| {
        let user = body["messages"][1]["content"].as_str().unwrap_or("");
        let key = norm(block(user, "draft"));
        let pick = |options: &[&str]| options[rng.lock().unwrap().usize(..options.len())].to_string();
        let labels = first
            .iter()
            .find(|(k, _)| key.starts_with(k.as_str()) || k.starts_with(key.as_str()))
            .map(|(_, v)| v.clone());
        let Some(l) = labels else { return "{}".into() };
        let get = |f: &str| l[f].as_str().unwrap_or("").to_string();
        let refs = |f: &str| l[f].as_array().cloned().unwrap_or_default();
        if copy {
            let mut references: BTreeMap<String, Value> = BTreeMap::new();
            for (f, field) in [
                ("Q8.1-reference_credibility", "credibility"),
                ("Q8.2-reference_relevance", "relevance"),
            ] {
                for pair in refs(f) {
                    let url = pair[0].as_str().unwrap().to_string();
                    references.entry(url.clone()).or_insert(json!({"url": url}))[field] = pair[1].clone();
                }
            }
            json!({
                "explicitness": get("Q1-correction_explicitness"), "identification": get("Q2-identification_accuracy"),
                "comprehensiveness": get("Q2.1-identification_comprehensiveness"), "explanation_accuracy": get("Q2.2-explanation_accuracy"),
                "informativeness": get("Q2.2.1-explanation_informativeness"), "text_relevance": get("Q3-text_relevance"),
                "factuality": get("Q4-text_factuality"), "fluency_mistakes": get("Q5-text_fluency"), "coherence": get("Q6-text_coherence"),
                "toxicity": get("Q7-text_toxicity"), "overall": get("Q9-overall_quality"),
                "references": references.into_values().collect::<Vec<_>>(),
            })
            .to_string()
        } else {
            let score = || rng.lock().unwrap().u8(0..=10);
            let references: Vec<Value> = refs("Q8.1-reference_credibility")
                .iter()
                .map(|p| json!({"url": p[0], "credibility": pick(&["Very High", "High", "Medium", "Low Not Informed", "Low Informed", "Cant Determine"]), "relevance": pick(&["Yes", "No", "Cant Determine"])}))
                .collect();
            json!({
                "explicitness": pick(&["Explicit", "Implicit", "Unclear"]),
                "identification": pick(&["Exist without misidentification", "Exist with misidentification", "Do not exist"]),
                "comprehensiveness": pick(&["No", "Low", "Medium", "High", "Extremely High"]),
                "explanation_accuracy": pick(&["Completely Incorrect", "Mostly Incorrect", "Half", "Mostly Correct", "Fully Correct"]),
                "informativeness": score(), "text_relevance": score(),
                "factuality": pick(&["Completely False, Inaccurate, or Unverifiable", "Mostly False, Inaccurate, or Unverifiable", "Half Factual and Accurate", "Mostly Factual and Accurate", "Completely Factual and Accurate"]),
                "fluency_mistakes": pick(&["No", "Yes, but minor", "Yes"]), "coherence": pick(&["Coherent and Logical", "Partially Coherent and Logical", "Barely Coherent and Logical"]),
                "toxicity": pick(&["No", "Yes"]), "overall": score(), "references": references,
            })
            .to_string()
        }
    }
}

fn agreement_of(muse: &Path, judge_base: &str, dir: &Path) -> Vec<Value> {
    let cfg = dir.join("bot-config.toml");
    std::fs::write(
        &cfg,
        format!("[daemon]\npipeline = \"baseline\"\n[mastodon]\nbase_url = \"http://127.0.0.1:9\"\n[llm]\nbase_url = \"{judge_base}\"\nmodel = \"judge\"\n"),
    )
    .unwrap();
    let out = dir.join("run");
    let o = musebot(&[
        "eval",
        muse.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--config",
        cfg.to_str().unwrap(),
        "--experts-only",
        "--jobs",
        "8",
    ])
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    eprintln!("{stdout}");
    assert!(stdout.contains("judge vs experts"), "{stdout}");
    serde_json::from_slice::<Vec<Value>>(&std::fs::read(out.join("agreement.json")).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_judges_agreement_with_muses_experts_is_measured_beside_theirs() {
    let Some(muse) = shared_data("muse") else { return };
    let first = first_experts(&muse.join("ratings"));
    let copying = ScriptedLlm::start(Script::routed(expert_judge(first.clone(), true))).await;
    let random = ScriptedLlm::start(Script::routed(expert_judge(first, false))).await;
    let dir = tempfile::tempdir().unwrap();
    let (m, base, d) = (muse.clone(), copying.base_url.clone(), dir.path().join("copy"));
    std::fs::create_dir_all(&d).unwrap();
    let copied = tokio::task::spawn_blocking(move || agreement_of(&m, &base, &d))
        .await
        .unwrap();
    for a in &copied {
        if a["key"] == "reachability" {
            assert!(a["judge"].is_null(), "reachability is measured, not judged: {a}");
            continue;
        }
        assert_eq!(a["judge"], 1.0, "a judge copying the first expert agrees fully: {a}");
        assert!(a["judge_n"].as_u64().unwrap() > 100, "{a}");
        assert!(a["experts_n"].as_u64().unwrap() > 20, "{a}");
    }
    let overall = copied.iter().find(|a| a["key"] == "overall").unwrap();
    let ceiling = overall["experts"].as_f64().unwrap();
    assert!(
        (0.2..0.8).contains(&ceiling),
        "the experts agree at Spearman ≈ 0.5 on overall quality: {ceiling}"
    );

    let (m, base, d) = (muse.clone(), random.base_url.clone(), dir.path().join("random"));
    std::fs::create_dir_all(&d).unwrap();
    let randomly = tokio::task::spawn_blocking(move || agreement_of(&m, &base, &d))
        .await
        .unwrap();
    for a in &randomly {
        let v = if a["measure"] == "spearman" {
            &a["judge"]
        } else {
            &a["judge_kappa"]
        };
        if a["key"] == "reachability" {
            continue;
        }
        let v = v.as_f64().unwrap_or_else(|| panic!("{a}"));
        assert!(v.abs() < 0.2, "a judge answering at random scores about 0: {a}");
    }
}
