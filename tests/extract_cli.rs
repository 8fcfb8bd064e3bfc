//! `musebot extract`: a page served on loopback (explicitly allowed), a file, the shared
//! folder of real news pages as benchmark JSON, and a refused URL.

#[path = "common/sandbox.rs"]
#[allow(dead_code)]
mod sandbox;

use std::process::Command;

use axum::response::Html;
use axum::routing::get;

const PAGE: &str = r#"<html lang="en"><head><title>Apollo samples settle it</title>
<meta property="article:published_time" content="2023-06-01T08:00:00Z">
<meta property="og:image" content="/img/rock.jpg"></head><body><nav>Home · Science</nav>
<article><h1>Apollo samples settle it</h1><p>WORDS</p>
<p>Lunar samples returned by the Apollo missions show that the Moon is made of rock.</p></article>
<footer>© Example</footer></body></html>"#;

fn page() -> String {
    let words: Vec<String> = (0..120).map(|i| format!("lunar{i}")).collect();
    PAGE.replace("WORDS", &words.join(" "))
}

fn musebot(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_musebot")).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_page_shows_its_fields_and_decision() {
    let body = page();
    let app = axum::Router::new().route("/article", get(move || async move { Html(body) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(
        &cfg,
        format!("[daemon]\npipeline = \"baseline\"\n[fetch]\ntest_allow_addrs = [\"{addr}\"]\n[mastodon]\nbase_url = \"https://m.example\"\n"),
    )
    .unwrap();
    let url = format!("http://{addr}/article");
    let (code, out, err) = tokio::task::spawn_blocking({
        let (url, cfg) = (url.clone(), cfg.clone());
        move || musebot(&["extract", &url, "--json", "--config", cfg.to_str().unwrap()])
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["title"], "Apollo samples settle it");
    assert_eq!(v["date"], "2023-06-01T08:00:00+00:00");
    assert_eq!(v["language"], "en");
    assert_eq!(v["image"], format!("http://{addr}/img/rock.jpg"));
    assert_eq!(v["decision"], "kept");
    assert!(v["word_count"].as_u64().unwrap() >= 120);
    assert!(v["text"].as_str().unwrap().contains("made of rock"));
    assert!(!v["text"].as_str().unwrap().contains("©"));

    // The same page judged for a post checked "as of" before its publication date.
    let (code, out, _) = tokio::task::spawn_blocking(move || {
        musebot(&[
            "extract",
            &url,
            "--before",
            "2023-01-01T00:00:00Z",
            "--config",
            cfg.to_str().unwrap(),
        ])
    })
    .await
    .unwrap();
    assert_eq!(code, 0);
    assert!(out.contains("decision:   dropped: too new"), "{out}");
}

#[test]
fn a_file_with_its_url() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("p.html");
    std::fs::write(&f, page()).unwrap();
    let (code, out, err) = musebot(&[
        "extract",
        f.to_str().unwrap(),
        "--url-for-file",
        "https://news.example/a/b",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("title:      Apollo samples settle it"), "{out}");
    assert!(out.contains("main image: https://news.example/img/rock.jpg"), "{out}");
    assert!(out.contains("decision:   kept"), "{out}");
}

#[test]
fn a_blocked_url_is_refused_with_a_non_zero_exit() {
    for url in [
        "http://127.0.0.1:9/",
        "http://169.254.169.254/latest/meta-data/",
        "http://localhost/",
        "file:///etc/passwd",
    ] {
        let (code, out, err) = musebot(&["extract", url]);
        assert_ne!(code, 0, "{url}");
        assert!(out.is_empty());
        assert!(err.contains("refused") && err.contains("blocked"), "{url}: {err}");
    }
}

#[test]
fn the_shared_news_pages_give_benchmark_json() {
    let Some(dir) = sandbox::shared_data("extraction") else {
        return;
    };
    let html = dir.join("html");
    let truth = dir.join("ground-truth.json");
    let (code, out, err) = musebot(&[
        "extract",
        html.to_str().unwrap(),
        "--json",
        "--urls-from",
        truth.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let truth: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&truth).unwrap()).unwrap();
    let got = v.as_object().unwrap();
    assert_eq!(got.len(), truth.as_object().unwrap().len());
    let mut nonempty = 0;
    for (k, page) in got {
        assert!(truth.get(k).is_some(), "unexpected key {k}");
        assert!(page["articleBody"].is_string(), "{k}");
        nonempty += usize::from(!page["articleBody"].as_str().unwrap().is_empty());
    }
    assert!(nonempty >= 88, "most pages yield text: {nonempty}");
}

/// Malformed but ordinary markup (text directly in a `<table>`, which html5ever "foster
/// parents" and warns about through `log`) leaves stderr clean even at the debug level: the
/// parser's notes are capped at `error`.
#[test]
fn parser_notes_on_malformed_pages_stay_out_of_the_logs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("foster.html");
    let html = page().replace(
        "<footer>",
        "<table>loose text<b>bold</b><tr><td>x</td></tr></table><footer>",
    );
    std::fs::write(&file, html).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_musebot"))
        .args(["extract", file.to_str().unwrap()])
        .env("RUST_LOG", "debug")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("foster") && !err.contains("html5ever"), "{err}");
}

/// Hostile pages from a file: dropped with the reason, at once, never a crash.
#[test]
fn a_deeply_nested_page_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deep.html");
    std::fs::write(&file, page().replace("<footer>", &"<table><tr><td>".repeat(20_000))).unwrap();
    let (code, _out, err) = musebot(&["extract", file.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("nest more than") && err.contains("unreadable"), "{err}");
}
