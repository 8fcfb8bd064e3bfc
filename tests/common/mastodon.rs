//! `mastodon-mock` (the sandbox venv's real peer) with seeded accounts and tokens, and helpers
//! to post as users and read what the bot posted.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::sandbox::{free_port, send_signal, Sandbox};

pub const BOT_TOKEN: &str = "tok-musebot";
pub const ALICE_TOKEN: &str = "tok-alice";
pub const BOB_TOKEN: &str = "tok-bob";
pub const ROBO_TOKEN: &str = "tok-robo";
pub const NOBOT_TOKEN: &str = "tok-nobot";
/// A second bot account on the same server (a daemon serving several accounts).
pub const ES_BOT_TOKEN: &str = "tok-muse-es";

/// A `mastodon-mock` server with seeded accounts: musebot (bot), alice, bob, robo (a bot),
/// muse_es (a second bot account), nobody (`#nobot`).
pub struct MockMastodon {
    bot_id: tokio::sync::OnceCell<String>,
    pub port: u16,
    pub base: String,
    child: Child,
    _dir: tempfile::TempDir,
    http: reqwest::Client,
}

impl MockMastodon {
    pub async fn start() -> MockMastodon {
        Self::start_with(free_port(), None).await
    }

    /// Like [`start`], but the bot account is not flagged as a bot yet.
    pub async fn start_unflagged() -> MockMastodon {
        let mut m = Self::start_with(free_port(), None).await;
        m.unflag().await;
        m
    }

    async fn unflag(&mut self) {
        let r = self
            .http
            .patch(format!("{}/api/v1/accounts/update_credentials", self.base))
            .bearer_auth(BOT_TOKEN)
            .form(&[("bot", "false")])
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
    }

    /// A mock whose instance advertises and enforces `max_characters` (via
    /// `scripts/mastodon_mock_serve.py`, which patches the mock's fixed 500).
    pub async fn start_with_limit(max_characters: usize) -> MockMastodon {
        Self::start_with(free_port(), Some(max_characters)).await
    }

    pub async fn start_with(port: u16, max_characters: Option<usize>) -> MockMastodon {
        Self::start_full(port, max_characters, 300).await
    }

    /// A mock that allows `per_5min` requests per token in 5 minutes (real Mastodon: 300),
    /// for tests that restart the daemon dozens of times within minutes.
    pub async fn start_with_ratelimit(per_5min: u32) -> MockMastodon {
        Self::start_full(free_port(), None, per_5min).await
    }

    async fn start_full(port: u16, max_characters: Option<usize>, per_5min: u32) -> MockMastodon {
        let sandbox = Sandbox::load();
        let dir = tempfile::tempdir().unwrap();
        let config = format!(
            r#"
[database]
path = ":memory:"

[server]
host = "127.0.0.1"
port = {port}

[ratelimit]
enabled = true
limit = {per_5min}
window_seconds = 300

[[seed.accounts]]
username = "musebot"
display_name = "Muse Bot"
bot = true
access_token = "{BOT_TOKEN}"

[[seed.accounts]]
username = "alice"
display_name = "Alice"
access_token = "{ALICE_TOKEN}"

[[seed.accounts]]
username = "bob"
display_name = "Bob"
access_token = "{BOB_TOKEN}"

[[seed.accounts]]
username = "robo"
display_name = "Robo"
bot = true
access_token = "{ROBO_TOKEN}"

[[seed.accounts]]
username = "muse_es"
display_name = "Muse Bot ES"
bot = true
access_token = "{ES_BOT_TOKEN}"

[[seed.accounts]]
username = "nobody"
display_name = "Nobody"
note = "Please, no automated replies. #nobot"
access_token = "{NOBOT_TOKEN}"
"#
        );
        let cfg = dir.path().join("mock.toml");
        std::fs::write(&cfg, config).unwrap();
        let log = std::fs::File::create(dir.path().join("mock.log")).unwrap();
        let mut cmd = match max_characters {
            None => Command::new(sandbox.get("MUSEBOT_MOCK_BIN")),
            Some(n) => {
                let mut c = Command::new(sandbox.get("MUSEBOT_PYTHON"));
                c.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/mastodon_mock_serve.py"));
                c.args(["--max-characters", &n.to_string()]);
                c
            }
        };
        let child = cmd
            .args(["serve", "--config"])
            .arg(&cfg)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start mastodon_mock");
        let base = format!("http://127.0.0.1:{port}");
        let mock = MockMastodon {
            bot_id: Default::default(),
            port,
            base,
            child,
            _dir: dir,
            http: reqwest::Client::new(),
        };
        mock.wait_healthy().await;
        mock
    }

    async fn wait_healthy(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(r) = self.http.get(format!("{}/health", self.base)).send().await {
                if r.status().is_success() {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("mastodon-mock did not become healthy on port {}", self.port);
    }

    /// Stops the server with SIGKILL: once a WebSocket client has connected, mastodon-mock
    /// hangs on SIGTERM/SIGINT, and its in-memory state is throwaway anyway.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub async fn post(&self, token: &str, text: &str, in_reply_to: Option<&str>) -> Value {
        let mut form = vec![("status", text), ("visibility", "public")];
        if let Some(id) = in_reply_to {
            form.push(("in_reply_to_id", id));
        }
        self.post_form(token, &form).await
    }

    /// Deletes a status as its author (`DELETE /api/v1/statuses/:id`).
    pub async fn delete(&self, token: &str, id: &str) {
        let r = self
            .http
            .delete(format!("{}/api/v1/statuses/{id}", self.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "DELETE {id}: {}", r.status());
    }

    /// Edits a status as its author (`PUT /api/v1/statuses/:id`).
    pub async fn edit(&self, token: &str, id: &str, text: &str) {
        let r = self
            .http
            .put(format!("{}/api/v1/statuses/{id}", self.base))
            .bearer_auth(token)
            .form(&[("status", text)])
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "PUT {id}: {}", r.status());
    }

    /// Uploads a file as a media attachment (bytes stored and served as they are, under the
    /// file's name: the mock checks nothing); returns its id.
    pub async fn upload(&self, token: &str, bytes: Vec<u8>, file_name: &str, mime: &str, alt: Option<&str>) -> String {
        let part = reqwest::multipart::Part::bytes(bytes)
            .file_name(file_name.to_string())
            .mime_str(mime)
            .unwrap();
        let mut form = reqwest::multipart::Form::new().part("file", part);
        if let Some(alt) = alt {
            form = form.text("description", alt.to_string());
        }
        let r = self
            .http
            .post(format!("{}/api/v2/media", self.base))
            .bearer_auth(token)
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "upload failed: {}", r.status());
        let v: Value = r.json().await.unwrap();
        v["id"].as_str().unwrap().to_string()
    }

    /// Posts a status with any form fields (`visibility`, `quoted_status_id`, …).
    pub async fn post_form(&self, token: &str, form: &[(&str, &str)]) -> Value {
        let r = self
            .http
            .post(format!("{}/api/v1/statuses", self.base))
            .bearer_auth(token)
            .form(form)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "posting failed: {}", r.status());
        r.json().await.unwrap()
    }

    /// `POST path` as `token` (follows, …).
    pub async fn post_path(&self, token: &str, path: &str) -> Value {
        let r = self
            .http
            .post(format!("{}{}", self.base, path))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "POST {path}: {}", r.status());
        r.json().await.unwrap()
    }

    /// Every status of the bot as the bot itself sees them (direct messages included).
    pub async fn bot_statuses_all(&self) -> Vec<Value> {
        let id = self.account_id(BOT_TOKEN).await;
        let page = self
            .get(BOT_TOKEN, &format!("/api/v1/accounts/{id}/statuses?limit=40"))
            .await;
        let mut all = page.as_array().unwrap().clone();
        all.reverse();
        all
    }

    pub async fn get(&self, token: &str, path: &str) -> Value {
        let r = self
            .http
            .get(format!("{}{}", self.base, path))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "GET {path}: {}", r.status());
        r.json().await.unwrap()
    }

    pub async fn account_id(&self, token: &str) -> String {
        self.get(token, "/api/v1/accounts/verify_credentials").await["id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Every status the bot has posted, oldest first. Read with another account's token, so
    /// polling does not spend the bot's own rate limit.
    pub async fn bot_statuses(&self) -> Vec<Value> {
        let id = self
            .bot_id
            .get_or_init(|| async { self.account_id(BOT_TOKEN).await })
            .await
            .clone();
        let mut all: Vec<Value> = Vec::new();
        let mut max_id: Option<String> = None;
        loop {
            let mut path = format!("/api/v1/accounts/{id}/statuses?limit=40");
            if let Some(m) = &max_id {
                path.push_str(&format!("&max_id={m}"));
            }
            let page = self.get(ALICE_TOKEN, &path).await;
            let page = page.as_array().unwrap().clone();
            if page.is_empty() {
                break;
            }
            max_id = page.last().unwrap()["id"].as_str().map(str::to_string);
            all.extend(page);
        }
        all.reverse();
        all
    }

    /// Adds a fault rule through `/api/v1/_mock/faults`.
    pub async fn fault(&self, rule: Value) {
        let r = self
            .http
            .post(format!("{}/api/v1/_mock/faults", self.base))
            .json(&rule)
            .send()
            .await
            .unwrap();
        assert!(
            r.status().is_success(),
            "fault rule rejected: {} {}",
            r.status(),
            r.text().await.unwrap_or_default()
        );
    }

    /// Waits until `pred` holds for the bot's statuses, or panics with them.
    pub async fn wait_for_bot_statuses(&self, timeout: Duration, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let s = self.bot_statuses().await;
            if pred(&s) {
                return s;
            }
            if Instant::now() > deadline {
                panic!("timed out; bot statuses: {}", serde_json::to_string_pretty(&s).unwrap());
            }
            tokio::time::sleep(Duration::from_millis(400)).await;
        }
    }

    /// Alice posts `claim`, bob asks the bot under it; returns the claim's status and the bot's
    /// statuses once there is one.
    pub async fn ask_about(&self, claim: &str, timeout: Duration) -> (Value, Vec<Value>) {
        let target = self.post(ALICE_TOKEN, claim, None).await;
        self.post(
            BOB_TOKEN,
            "@musebot is this true?",
            Some(target["id"].as_str().unwrap()),
        )
        .await;
        let posted = self.wait_for_bot_statuses(timeout, |s| !s.is_empty()).await;
        (target, posted)
    }
}

impl Drop for MockMastodon {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Plain text of a status's HTML content (enough for assertions).
pub fn text_of(status: &Value) -> String {
    musebot::platform::mastodon::text::html_to_text(status["content"].as_str().unwrap_or(""))
}

/// A reply thread's text, its parts joined without their " (i/n)" numbering (for sentences
/// that span two parts).
pub fn thread_text(posted: &[Value]) -> String {
    posted
        .iter()
        .map(|p| {
            let t = text_of(p);
            match t.rfind(" (") {
                Some(i) if t.ends_with(')') && t[i + 2..t.len() - 1].contains('/') => t[..i].to_string(),
                _ => t,
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every status of the bot (direct messages included, as the bot sees them), once `pred` holds;
/// fails after a minute with them and the daemon's log.
#[allow(dead_code)]
pub async fn wait_bot(
    daemon: &super::daemon::Daemon,
    mock: &MockMastodon,
    pred: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let all = mock.bot_statuses_all().await;
        if pred(&all) {
            return all;
        }
        assert!(
            Instant::now() < deadline,
            "bot statuses: {all:#?}\nlog:\n{}",
            daemon.log_text()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
