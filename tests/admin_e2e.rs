//! The admin page in a real headless browser (Debian's Chromium over WebDriver), against the
//! daemon on mastodon-mock with a held draft (`moderation.review = ["mention"]`): without the
//! token nothing but the sign-in form is shown; signed in, the pending draft is listed and
//! approving it posts the reply on the peer; a form posted to the admin page from another site
//! is refused and changes nothing. Screenshots go to the tests' artifact folder
//! (`$CARGO_TARGET_TMPDIR/artifacts`).

mod common;

use std::time::{Duration, Instant};

use common::webdriver::Browser;
use common::*;

const TOKEN: &str = "admin-test-token-0123456789abcdef";
const REPLY: &str = "This post is false: the Great Wall cannot be seen from the Moon with the naked eye.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_page_signs_in_shows_a_held_draft_and_approves_it() {
    let Some(browser) = Browser::start().await else { return };
    let mock = MockMastodon::start().await;
    let llm = ScriptedLlm::start(Script::reply(REPLY)).await;
    let dir = tempfile::tempdir().unwrap();
    let (port, admin_port) = (free_port(), free_port());
    let token_file = dir.path().join("admin-token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let extra = format!(
        "\n[moderation]\nreview = [\"mention\"]\n\n[admin]\nlisten = \"127.0.0.1:{admin_port}\"\ntoken_file = \"{}\"\n",
        token_file.display()
    );
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, port, &extra);
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    let admin = format!("http://127.0.0.1:{admin_port}");

    // A mention whose reply is held for review.
    let target = mock
        .post(ALICE_TOKEN, "The Great Wall of China is visible from the Moon.", None)
        .await;
    mock.post(
        BOB_TOKEN,
        "@musebot is this true?",
        Some(target["id"].as_str().unwrap()),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !daemon.log_text().contains("draft held for a moderator's review") {
        assert!(Instant::now() < deadline, "{}", daemon.log_text());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Without the token: the sign-in form and nothing else, in the browser and to a plain client.
    browser.goto(&admin).await;
    let page = browser.wait_for("Sign in").await;
    assert!(
        !page.contains("Drafts waiting") && !page.contains("visible from the Moon"),
        "{page}"
    );
    browser.screenshot("admin-signed-out").await;
    let plain = reqwest::get(&admin).await.unwrap().text().await.unwrap();
    assert!(
        plain.contains("Sign in") && !plain.contains("Drafts waiting"),
        "{plain}"
    );
    browser.type_into("#token", "not-the-token-at-all").await;
    browser.click("#sign-in").await;
    browser.wait_for("Wrong token").await;
    assert!(!daemon.log_text().contains("not-the-token-at-all") && !daemon.log_text().contains(TOKEN));

    // Signed in: the held draft is listed with the reply it would post.
    browser.type_into("#token", TOKEN).await;
    browser.click("#sign-in").await;
    let page = browser.wait_for("Drafts waiting for review (1)").await;
    assert!(
        page.contains("visible from the Moon") && page.contains("cannot be seen from the Moon"),
        "{page}"
    );
    assert!(!page.contains(TOKEN), "the token is never on the page");
    browser.screenshot("admin-held-draft").await;
    // The held job's id, as the page shows it.
    let start = page.find("data-id=\"").unwrap() + "data-id=\"".len();
    let id = page[start..].split('"').next().unwrap().to_string();
    assert!(id.starts_with("mastodon:"), "{id}");

    // A cross-site form: another origin's page auto-posts "approve" to the admin page. The
    // browser sends the session cookie (same site: 127.0.0.1), but neither the origin nor the
    // CSRF token is right: refused, and the draft still waits.
    let evil = web::serve(axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let id = id.clone();
            async move {
                axum::response::Html(format!(
                    r#"<html><body><form id="f" method="post" action="http://127.0.0.1:{admin_port}/drafts/approve">
<input type="hidden" name="id" value="{id}"><input type="hidden" name="csrf" value="guess"></form>
<script>document.getElementById('f').submit();</script></body></html>"#
                ))
            }
        }),
    ))
    .await;
    browser.goto(&format!("http://{evil}/")).await;
    let refused = browser.wait_for("Refused").await;
    assert!(refused.contains("another site"), "{refused}");
    browser.screenshot("admin-cross-site-refused").await;
    browser.goto(&admin).await;
    browser.wait_for("Drafts waiting for review (1)").await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(mock.bot_statuses().await.is_empty(), "nothing was posted");

    // Approve on the page: the reply appears on the peer, once.
    browser.click("button.approve").await;
    browser.wait_for("No draft is waiting").await;
    browser.screenshot("admin-approved").await;
    let posted = daemon
        .wait_for_replies(&mock, Duration::from_secs(30), |s| !s.is_empty())
        .await;
    assert_eq!(posted.len(), 1, "{posted:#?}");
    assert_eq!(posted[0]["in_reply_to_id"], target["id"]);
    assert!(text_of(&posted[0]).contains("cannot be seen from the Moon"));
    let page = browser.source().await;
    assert!(page.contains("admin page") || page.contains("Recent jobs"), "{page}");
    browser.quit().await;
}
