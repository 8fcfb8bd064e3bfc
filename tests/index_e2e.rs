//! The keyless evidence index end to end: a local feed server (RSS 2.0 with an ETag, Atom with
//! Last-Modified, a broken feed, a feed that never ends, one that trickles forever) whose items'
//! pages are served under a fact-checker's name (test-only DNS overrides + allowlist);
//! `musebot index refresh` / `index search` on it, the index surviving `kill -9` during its
//! commits, and the daemon answering on mastodon-mock from the index alone, naming the
//! fact-checker whose `ClaimReview` markup matched.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use common::*;
use serde_json::{json, Value};

const HOST: &str = "www.factcheck.org";
const CLAIM: &str = "The Great Wall of China is the only man-made structure visible from the Moon with the naked eye!";

/// The fact-check page: our own text about the claim, with `ClaimReview` markup.
fn fact_check_page() -> String {
    let markup = json!({"@context": "https://schema.org", "@type": "ClaimReview",
        "url": format!("http://{HOST}/2025/03/great-wall-moon/"),
        "claimReviewed": "The Great Wall of China is the only man-made structure visible from the Moon with the naked eye",
        "datePublished": "2025-03-02",
        "author": {"@type": "Organization", "name": "FactCheck.org", "url": "https://www.factcheck.org"},
        "reviewRating": {"@type": "Rating", "alternateName": "False", "ratingValue": 1, "bestRating": 5, "worstRating": 1}});
    let para = [
        "Astronauts who walked on the Moon have said that no human structure, the Great Wall of China included, can be seen from the Moon with the naked eye.",
        "From the Moon, about 384,000 kilometres away, the whole Earth appears about as large as a thumbnail held at arm's length, and continents are the smallest features an eye can pick out.",
        "The Great Wall is long but only a few metres wide, and its stone and earth are close in colour to the land around it, which makes it hard to see even from low Earth orbit.",
        "The claim that the wall is the only man-made structure visible from the Moon circulated decades before anyone had been to space, and it has been repeated in textbooks since.",
    ];
    format!(
        "<html lang=\"en\"><head><title>No, the Great Wall of China is not visible from the Moon</title>\
         <meta property=\"article:published_time\" content=\"2025-03-02T10:00:00Z\">\
         <script type=\"application/ld+json\">{markup}</script></head><body><article>\
         <h1>No, the Great Wall of China is not visible from the Moon</h1>{}</article></body></html>",
        para.iter().map(|p| format!("<p>{p}</p>")).collect::<String>()
    )
}

fn news_page(title: &str, words: &str) -> String {
    format!(
        "<html lang=\"en\"><head><title>{title}</title></head><body><article><h1>{title}</h1><p>{}</p></article></body></html>",
        words.repeat(8)
    )
}

fn rss(items: &[(&str, &str, &str)]) -> String {
    let items: String = items
        .iter()
        .map(|(title, path, date)| {
            format!("<item><title>{title}</title><link>http://{HOST}{path}</link><pubDate>{date}</pubDate><description>{title}</description></item>")
        })
        .collect();
    format!("<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>FactCheck.org</title><link>http://{HOST}/</link>{items}</channel></rss>")
}

/// Counters of what the feed server saw.
#[derive(Default)]
struct Seen {
    rss: AtomicUsize,
    rss_304: AtomicUsize,
    atom_304: AtomicUsize,
}

/// The feed server and its pages (every path under `HOST` through `fetch.test_resolve`).
async fn feed_server(extra_feeds: Vec<(String, String)>) -> (std::net::SocketAddr, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let rss_body = rss(&[
        (
            "No, the Great Wall of China is not visible from the Moon",
            "/2025/03/great-wall-moon/",
            "Sun, 02 Mar 2025 10:00:00 GMT",
        ),
        (
            "Budget figures in the spring statement",
            "/2025/02/budget-figures/",
            "Sat, 01 Feb 2025 10:00:00 GMT",
        ),
        ("A page that is gone", "/2025/01/gone/", "Wed, 01 Jan 2025 10:00:00 GMT"),
    ]);
    let atom_body = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><feed xmlns=\"http://www.w3.org/2005/Atom\"><title>Checks</title><id>urn:checks</id>\
         <updated>2025-04-01T00:00:00Z</updated><entry><title>Vaccine schedule rumour</title><id>urn:checks:1</id>\
         <link rel=\"alternate\" href=\"http://{HOST}/2025/04/vaccine-schedule/\"/><updated>2025-04-01T00:00:00Z</updated>\
         <summary>A rumour about the schedule.</summary></entry></feed>"
    );
    let s = seen.clone();
    let rss_route = get(move |headers: HeaderMap| {
        let (s, body) = (s.clone(), rss_body.clone());
        async move {
            s.rss.fetch_add(1, Ordering::SeqCst);
            if headers.get("if-none-match").and_then(|v| v.to_str().ok()) == Some("\"v1\"") {
                s.rss_304.fetch_add(1, Ordering::SeqCst);
                return StatusCode::NOT_MODIFIED.into_response();
            }
            ([("content-type", "application/rss+xml"), ("etag", "\"v1\"")], body).into_response()
        }
    });
    let s = seen.clone();
    let atom_route = get(move |headers: HeaderMap| {
        let (s, body) = (s.clone(), atom_body.clone());
        async move {
            const STAMP: &str = "Tue, 01 Apr 2025 00:00:00 GMT";
            if headers.get("if-modified-since").and_then(|v| v.to_str().ok()) == Some(STAMP) {
                s.atom_304.fetch_add(1, Ordering::SeqCst);
                return StatusCode::NOT_MODIFIED.into_response();
            }
            (
                [("content-type", "application/atom+xml"), ("last-modified", STAMP)],
                body,
            )
                .into_response()
        }
    });
    let endless = get(|| async {
        let chunk = axum::body::Bytes::from("<item><title>more</title></item>".repeat(100));
        let stream = futures_util::stream::unfold(chunk, |chunk| async move {
            Some((Ok::<_, std::io::Error>(chunk.clone()), chunk))
        });
        (
            [("content-type", "application/rss+xml")],
            axum::body::Body::from_stream(stream),
        )
    });
    let trickle = get(|| async {
        let stream = futures_util::stream::unfold((), |()| async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Some((Ok::<_, std::io::Error>(axum::body::Bytes::from_static(b" ")), ()))
        });
        (
            [("content-type", "application/rss+xml")],
            axum::body::Body::from_stream(stream),
        )
    });
    let mut router = axum::Router::new()
        .route("/feed/rss", rss_route)
        .route("/feed/atom", atom_route)
        .route(
            "/feed/broken",
            get(|| async { ([("content-type", "text/xml")], "<html><body>Not a feed</body></html>") }),
        )
        .route("/feed/endless", endless)
        .route("/feed/trickle", trickle)
        .route(
            "/2025/03/great-wall-moon/",
            get(|| async { axum::response::Html(fact_check_page()) }),
        )
        .route(
            "/2025/02/budget-figures/",
            get(|| async {
                axum::response::Html(news_page(
                    "Budget figures",
                    "The spring statement set out new spending plans for schools and hospitals. ",
                ))
            }),
        )
        .route(
            "/2025/04/vaccine-schedule/",
            get(|| async {
                axum::response::Html(news_page(
                    "Vaccine schedule rumour",
                    "Health officials said the childhood vaccine schedule has not changed this year. ",
                ))
            }),
        );
    for (path, body) in extra_feeds {
        router = router.route(
            &path,
            get(move || {
                let body = body.clone();
                async move {
                    if body.starts_with("<?xml") {
                        ([("content-type", "application/rss+xml")], body).into_response()
                    } else {
                        axum::response::Html(body).into_response()
                    }
                }
            }),
        );
    }
    (web::serve(router).await, seen)
}

fn index_config(dir: &Path, addr: std::net::SocketAddr, feeds: &[String], extra: &str) -> std::path::PathBuf {
    let feeds: Vec<String> = feeds.iter().map(|f| format!("\"http://{HOST}{f}\"")).collect();
    let text = format!(
        r#"
[daemon]
state_dir = "{}"
pipeline = "baseline"
[mastodon]
base_url = "https://mastodon.example"
[index]
feeds = [{}]
max_feed_bytes = 20000
{extra}
[fetch]
timeout_secs = 3
test_allow_addrs = ["{addr}"]
test_resolve = ["{HOST}={addr}"]
"#,
        dir.join("state").display(),
        feeds.join(", ")
    );
    let path = dir.join("bot-config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Every feed shape once, then the conditional GETs: what `index refresh` reports per feed,
/// what `index search` finds, and what a second refresh costs (304s, nothing re-fetched).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_reads_every_feed_shape_and_asks_again_conditionally() {
    let (addr, seen) = feed_server(Vec::new()).await;
    let dir = tempfile::tempdir().unwrap();
    let feeds: Vec<String> = ["rss", "atom", "broken", "endless", "trickle"]
        .iter()
        .map(|f| format!("/feed/{f}"))
        .collect();
    let cfg = index_config(dir.path(), addr, &feeds, "");
    let cfg = cfg.to_str().unwrap();
    let (code, out, err) = tokio::task::spawn_blocking({
        let cfg = cfg.to_string();
        move || musebot(&["index", "refresh", "--config", &cfg])
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{out}\n{err}");
    let line = |feed: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("http://{HOST}/feed/{feed}:")))
            .unwrap_or_else(|| panic!("no line for {feed}: {out}"))
            .to_string()
    };
    assert!(line("rss").ends_with("read, 3 items, 2 new"), "{out}");
    assert!(
        out.contains(&format!("skipped http://{HOST}/2025/01/gone/: HTTP 404")),
        "{out}"
    );
    assert!(line("atom").ends_with("read, 1 items, 1 new"), "{out}");
    assert!(line("broken").contains("failed: not a feed"), "{out}");
    assert!(
        line("endless").contains("failed: page larger than 20000 bytes"),
        "{out}"
    );
    assert!(line("trickle").contains("failed: timed out"), "{out}");
    assert!(out.contains("index: 3 items held"), "{out}");

    let search = |q: &str, before: Option<&str>| {
        let mut args = vec!["index", "search", q, "--config", cfg];
        if let Some(b) = before {
            args.extend(["--before", b]);
        }
        musebot(&args)
    };
    let (code, out, err) = search("great wall moon visible", None);
    assert_eq!(code, 0, "{err}");
    let first = out.lines().nth(1).unwrap_or_default();
    assert!(
        first.contains("No, the Great Wall of China is not visible from the Moon (2025-03-02)"),
        "{out}"
    );
    assert!(
        out.contains(&format!("http://{HOST}/2025/03/great-wall-moon/")),
        "{out}"
    );
    // Query syntax is only words: "*" (every item, in tantivy's query language) is no word here.
    let (code, out, _) = search("*", None);
    assert!(code == 0 && out.contains("3 items held; 0 found"), "{out}");
    let (_, out, _) = search("great wall moon", Some("2025-01-01T00:00:00Z"));
    assert!(out.contains("0 found"), "published after the bound: {out}");

    // Again: the RSS and Atom feeds answer 304 to the validators they gave; nothing new.
    let (code, out, err) = musebot(&["index", "refresh", "--config", cfg]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(line_of(&out, "rss").ends_with("not modified (304)"), "{out}");
    assert!(line_of(&out, "atom").ends_with("not modified (304)"), "{out}");
    assert_eq!(seen.rss_304.load(Ordering::SeqCst), 1);
    assert_eq!(seen.atom_304.load(Ordering::SeqCst), 1);
    assert!(out.contains("index: 3 items held"), "{out}");
}

fn line_of(out: &str, feed: &str) -> String {
    out.lines()
        .find(|l| l.starts_with(&format!("http://{HOST}/feed/{feed}:")))
        .unwrap_or_default()
        .to_string()
}

/// `kill -9` at random moments while the refresher adds and commits 12 feeds' items: each
/// restart opens the index (no writer lock left behind, no "busy"), and the last run ends with
/// every item once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_survives_kill_9_during_its_commits() {
    const FEEDS: usize = 12;
    const ITEMS: usize = 15;
    let mut served = Vec::new();
    for f in 0..FEEDS {
        let items: Vec<(String, String, String)> = (0..ITEMS)
            .map(|i| {
                (
                    format!("Item {f}-{i}"),
                    format!("/k/{f}/{i}/"),
                    format!("Mon, {:02} Jan 2024 10:00:00 GMT", 1 + i),
                )
            })
            .collect();
        let refs: Vec<(&str, &str, &str)> = items
            .iter()
            .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
            .collect();
        served.push((format!("/k/feed/{f}"), rss(&refs)));
        for i in 0..ITEMS {
            let words = format!("Report number zq{f}x{i} on the matter at hand, with figures and names. ");
            served.push((format!("/k/{f}/{i}/"), news_page(&format!("Item {f}-{i}"), &words)));
        }
    }
    let (addr, _) = feed_server(served).await;
    let dir = tempfile::tempdir().unwrap();
    let feeds: Vec<String> = (0..FEEDS).map(|f| format!("/k/feed/{f}")).collect();
    let cfg = index_config(dir.path(), addr, &feeds, &format!("items_per_feed = {ITEMS}"));
    let mut rng = fastrand::Rng::with_seed(7);
    for round in 0..6 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_musebot"))
            .args(["index", "refresh", "--config"])
            .arg(&cfg)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(rng.u64(150..1200))).await;
        let _ = child.kill(); // SIGKILL
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("another musebot") && !err.contains("panicked"),
            "round {round}: {err}"
        );
    }
    let (code, out, err) = tokio::task::spawn_blocking({
        let cfg = cfg.clone();
        move || musebot(&["index", "refresh", "--config", cfg.to_str().unwrap()])
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains(&format!("index: {} items held", FEEDS * ITEMS)),
        "{out}\n{err}"
    );
    for (f, i) in [(0, 0), (5, 7), (11, 14)] {
        let (_, out, _) = musebot(&[
            "index",
            "search",
            &format!("zq{f}x{i}"),
            "--config",
            cfg.to_str().unwrap(),
        ]);
        assert!(out.contains("; 1 found"), "item {f}-{i} once: {out}");
    }
}

/// The scripted model for the Muse steps: queries about the claim, the first passages of a page
/// quoted verbatim, a reply that repeats the evidence, a verifier that upholds it.
fn scripted(body: &Value) -> String {
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    let user = body["messages"][1]["content"].as_str().unwrap_or("");
    if system.contains("web search queries") {
        return json!({"queries": ["Great Wall of China visible from the Moon", "man-made structures seen from space"]}).to_string();
    }
    if system.contains("You check a reply") {
        return json!({"verdict": "supported", "reasons": "Every sentence is in the evidence.", "objections": []})
            .to_string();
    }
    if system.contains("Quote passages") {
        let refute: Vec<String> = page_passages(user)
            .iter()
            .take(2)
            .map(|p| web::first_words(p, 16))
            .collect();
        return json!({"refute": refute, "context": []}).to_string();
    }
    if system.contains("using only the facts given") {
        let url = evidence_urls(user, 1)
            .first()
            .map(|u| u.to_string())
            .unwrap_or_default();
        return format!("This post is false. Astronauts said no human structure can be seen from the Moon with the naked eye ({url}).");
    }
    "none".into()
}

/// The daemon's settings for the Muse pipeline with no web search: the index of the feed
/// server's RSS feed, the sandbox's relevance model, the feed server let through the guard.
fn muse_on_the_index(sandbox: &Sandbox, addr: std::net::SocketAddr) -> String {
    format!(
        r#"
[search]
backends = []
[index]
feeds = ["http://{HOST}/feed/rss"]
[relevance]
onnxruntime = "{}"
model = "{}"
tokenizer = "{}"
multilingual_model = "{}"
multilingual_tokenizer = "{}"
[fetch]
test_allow_addrs = ["{addr}"]
test_resolve = ["{HOST}={addr}"]
"#,
        sandbox.get("MUSEBOT_ORT_DYLIB"),
        sandbox.get("MUSEBOT_EMBED_MODEL"),
        sandbox.get("MUSEBOT_EMBED_TOKENIZER"),
        sandbox.get("MUSEBOT_EMBED_MODEL_MULTI"),
        sandbox.get("MUSEBOT_EMBED_TOKENIZER_MULTI"),
    )
}

/// A daemon's config answering from the index alone (no web search): the feed server, the
/// scripted LLM, mastodon-mock, a state folder and a port, kept alive by the caller.
struct OnTheIndex {
    llm: ScriptedLlm,
    mock: MockMastodon,
    dir: tempfile::TempDir,
    port: u16,
    cfg: String,
}

async fn on_the_index() -> OnTheIndex {
    let sandbox = Sandbox::load();
    let (addr, _) = feed_server(Vec::new()).await;
    let llm = ScriptedLlm::start(Script::routed(scripted)).await;
    let mock = MockMastodon::start().await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let extra = muse_on_the_index(&sandbox, addr);
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, port, &extra);
    OnTheIndex {
        llm,
        mock,
        dir,
        port,
        cfg,
    }
}

/// The daemon with no web search at all: the index's refresher reads the feed at start, the
/// mention's queries find the fact-check there, and the reply names the fact-checker, their
/// rating and date, and cites the review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fact_check_found_only_in_the_index_is_named_in_the_reply() {
    let OnTheIndex {
        llm: _llm,
        mock,
        dir,
        port,
        cfg,
    } = on_the_index().await;
    assert!(cfg.contains("pipeline = \"muse\""));
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !daemon.log_text().contains("evidence index refreshed") {
        assert!(std::time::Instant::now() < deadline, "{}", daemon.log_text());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let target = mock.post(ALICE_TOKEN, CLAIM, None).await;
    mock.post(
        BOB_TOKEN,
        "@musebot is this true?",
        Some(target["id"].as_str().unwrap()),
    )
    .await;
    let posted = daemon
        .wait_for_replies(&mock, Duration::from_secs(120), |s| !s.is_empty())
        .await;
    let reply = thread_text(&posted);
    let log = daemon.log_text();
    assert!(reply.contains("This post is false."), "{reply}\n{log}");
    assert!(
        reply.contains("FactCheck.org rated it \"False\" (2025-03-02)"),
        "{reply}\n{log}"
    );
    assert!(
        reply.contains(&format!("http://{HOST}/2025/03/great-wall-moon/")),
        "{reply}"
    );
    assert!(
        reply.contains("That check is older than a year"),
        "the post is of today: {reply}"
    );
    assert!(
        !reply.contains("budget-figures"),
        "the unrelated item is not cited: {reply}"
    );
    let metrics = daemon.http_get("/metrics").await;
    assert!(
        metrics.contains("musebot_feed_reads_total{outcome=\"read\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("musebot_index_items 2"), "{metrics}");
    assert!(metrics.contains("fact_checks_total{outcome=\"named\"} 1"), "{metrics}");
    let _ = daemon.terminate(Duration::from_secs(10));
}

/// Claim matching end to end on mastodon-mock: a review known only to the fact-check corpus
/// (imported by `musebot index import` as an operator does; no search finds it) of a claim the
/// post makes in other words. The match step finds it, its page is fetched through the guard,
/// lands on the fact-checker's site and carries the checker's own `ClaimReview` of the same
/// claim, and the reply rests on that live review: the bot's verdict from the page's rating
/// (not the dump's "Mostly True"), its date, the fact-checker by the table's name (not the
/// dump's `author`), the review linked — and `musebot_claim_matches_total` counts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_known_only_to_the_fact_check_corpus_is_answered_from_its_check() {
    let sandbox = Sandbox::load();
    let words =
        "Doctors and health agencies say there is no evidence that lemon water prevents or cures any viral infection. ";
    let live = json!({"@context": "https://schema.org", "@type": "ClaimReview",
        "url": format!("http://{HOST}/2025/05/lemon-water/"),
        "claimReviewed": "Drinking hot lemon water cures COVID-19",
        "datePublished": "2025-05-01",
        "author": {"@type": "Organization", "name": "FactCheck.org"},
        "reviewRating": {"@type": "Rating", "alternateName": "False"}});
    let page = news_page("Lemon water does not cure COVID-19", words).replacen(
        "</head>",
        &format!("<script type=\"application/ld+json\">{live}</script></head>"),
        1,
    );
    let (addr, _) = feed_server(vec![("/2025/05/lemon-water/".to_string(), page)]).await;
    let llm = ScriptedLlm::start(Script::routed(scripted)).await;
    let mock = MockMastodon::start().await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let extra = muse_on_the_index(&sandbox, addr);
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, port, &extra);
    let cfg_path = dir.path().join("bot-config.toml");
    std::fs::write(&cfg_path, &cfg).unwrap();
    let review = json!({"@context": "https://schema.org", "@type": "ClaimReview",
        "url": format!("http://{HOST}/2025/05/lemon-water/"),
        "name": "Lemon water does not cure COVID-19",
        "claimReviewed": "Drinking hot lemon water cures COVID-19",
        "datePublished": "2025-04-01",
        "author": {"@type": "Organization", "name": "Totally Real Checkers"},
        "reviewRating": {"@type": "Rating", "alternateName": "Mostly True"}});
    let other = json!({"@type": "ClaimReview", "url": format!("http://{HOST}/2025/05/lemon-prices/"),
        "claimReviewed": "Lemon prices doubled in Spain this spring", "reviewRating": {"alternateName": "True"}});
    let out = import_reviews(&cfg_path, &format!("{review}\n{other}\n"));
    assert!(out.contains("imported 2"), "{out}");

    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    let target = mock
        .post(
            ALICE_TOKEN,
            "A glass of hot water with lemon juice will cure you of COVID-19.",
            None,
        )
        .await;
    mock.post(
        BOB_TOKEN,
        "@musebot is this true?",
        Some(target["id"].as_str().unwrap()),
    )
    .await;
    let posted = daemon
        .wait_for_replies(&mock, Duration::from_secs(120), |s| !s.is_empty())
        .await;
    let reply = thread_text(&posted);
    let log = daemon.log_text();
    assert!(
        reply.contains("This post is false. Fact-checked: FactCheck.org rated it \"False\" (2025-05-01)"),
        "{reply}\n{log}"
    );
    assert!(
        reply.contains(&format!("http://{HOST}/2025/05/lemon-water/")),
        "{reply}"
    );
    assert!(
        !reply.contains("Totally Real")
            && !reply.contains("lemon-prices")
            && !reply.contains("Mostly True")
            && !reply.contains("2025-04-01"),
        "{reply}"
    );
    assert!(!reply.to_lowercase().contains("could not verify"), "{reply}");
    let metrics = daemon.http_get("/metrics").await;
    assert!(metrics.contains("musebot_claim_matches_total 1"), "{metrics}");
    let _ = daemon.terminate(Duration::from_secs(10));
}

/// The refresher is supervised: while another writer holds the index's lock at
/// start, the daemon answers without refreshing and `/healthz` says `index_refresher:
/// retrying` with why; once the lock is free it is opened again (within a minute), reads the
/// feeds, and `/healthz` says `running`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresher_that_cannot_open_at_start_is_opened_again_once_it_can() {
    let OnTheIndex {
        llm: _llm,
        mock: _mock,
        dir,
        port,
        cfg,
    } = on_the_index().await;
    let cfg_path = dir.path().join("bot-config.toml");
    std::fs::write(&cfg_path, &cfg).unwrap();
    // The index made once (as an earlier run would have), then its writer lock taken here.
    let (code, out, err) = musebot(&["index", "refresh", "--config", cfg_path.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}\n{err}");
    let index = tantivy::Index::open_in_dir(dir.path().join("state").join("index")).unwrap();
    let writer: tantivy::IndexWriter = index.writer(15_000_000).unwrap();

    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    let health: Value = serde_json::from_str(&daemon.http_get("/healthz").await).unwrap();
    assert_eq!(health["index_refresher"]["state"], "retrying", "{health}");
    assert!(
        health["index_refresher"]["reason"]
            .as_str()
            .unwrap_or("")
            .contains("lock")
            || health["index_refresher"]["reason"]
                .as_str()
                .unwrap_or("")
                .contains("refresh"),
        "{health}"
    );
    drop(writer);
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    loop {
        let health: Value = serde_json::from_str(&daemon.http_get("/healthz").await).unwrap();
        if health["index_refresher"]["state"] == "running" && daemon.log_text().contains("evidence index refreshed") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{health}\n{}", daemon.log_text());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let _ = daemon.terminate(Duration::from_secs(10));
}
