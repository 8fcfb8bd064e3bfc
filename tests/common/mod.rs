//! Test harness: starts real peers on loopback — `mastodon-mock` (from the sandbox venv that
//! `scripts/setup-sandbox.sh` provisions), a scripted OpenAI-compatible LLM server, and the
//! `musebot` binary itself — and offers helpers to post as users and read what the bot posted.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub const BOT_TOKEN: &str = "tok-musebot";
pub const ALICE_TOKEN: &str = "tok-alice";
pub const BOB_TOKEN: &str = "tok-bob";
pub const ROBO_TOKEN: &str = "tok-robo";
pub const NOBOT_TOKEN: &str = "tok-nobot";

/// Paths written by `scripts/setup-sandbox.sh`.
pub struct Sandbox {
    pub vars: HashMap<String, String>,
}

impl Sandbox {
    pub fn load() -> Sandbox {
        let cache = std::env::var("MUSEBOT_CACHE").unwrap_or_else(|_| {
            let base = std::env::var("XDG_CACHE_HOME")
                .unwrap_or_else(|_| format!("{}/.cache", std::env::var("HOME").unwrap_or_default()));
            format!("{base}/musebot")
        });
        let path = PathBuf::from(cache).join("sandbox.env");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "{} is missing: run `scripts/setup-sandbox.sh` (or `scripts/test.sh`, which does it) first",
                path.display()
            )
        });
        let vars = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        Sandbox { vars }
    }

    pub fn get(&self, key: &str) -> String {
        self.vars
            .get(key)
            .cloned()
            .unwrap_or_else(|| panic!("sandbox.env has no {key}: rerun scripts/setup-sandbox.sh"))
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A `mastodon-mock` server with seeded accounts: musebot (bot), alice, bob, robo (a bot),
/// nobody (`#nobot`).
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
limit = 300
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
        let mut form = vec![("status", text.to_string()), ("visibility", "public".to_string())];
        if let Some(id) = in_reply_to {
            form.push(("in_reply_to_id", id.to_string()));
        }
        let r = self
            .http
            .post(format!("{}/api/v1/statuses", self.base))
            .bearer_auth(token)
            .form(&form)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "posting failed: {}", r.status());
        r.json().await.unwrap()
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

fn unsafe_kill(pid: i32, signal: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status();
}

/// Computes a scripted answer from the request body (for multi-step pipelines).
pub type Router = Arc<dyn Fn(&Value) -> String + Send + Sync>;

/// What the scripted LLM answers.
#[derive(Clone)]
pub struct Script {
    /// When set, answers are computed from the request instead of `reply`.
    pub router: Option<Router>,
    /// The reply text (may echo the post: `{post}` is replaced by the user message).
    pub reply: String,
    /// Answer this many first requests with this HTTP status.
    pub fail_first: usize,
    pub fail_status: u16,
    pub delay: Duration,
}

impl Script {
    pub fn reply(text: &str) -> Script {
        Script {
            router: None,
            reply: text.into(),
            fail_first: 0,
            fail_status: 500,
            delay: Duration::ZERO,
        }
    }

    pub fn routed(router: impl Fn(&Value) -> String + Send + Sync + 'static) -> Script {
        Script {
            router: Some(Arc::new(router)),
            ..Script::reply("")
        }
    }
}

/// A scripted OpenAI-compatible server on loopback.
pub struct ScriptedLlm {
    pub base_url: String,
    pub calls: Arc<AtomicUsize>,
    pub requests: Arc<Mutex<Vec<Value>>>,
    _task: tokio::task::JoinHandle<()>,
}

impl ScriptedLlm {
    pub async fn start(script: Script) -> ScriptedLlm {
        use axum::routing::post;
        let calls = Arc::new(AtomicUsize::new(0));
        let requests: Arc<Mutex<Vec<Value>>> = Arc::default();
        let (c, r) = (calls.clone(), requests.clone());
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            post(move |axum::Json(body): axum::Json<Value>| {
                let (c, r, script) = (c.clone(), r.clone(), script.clone());
                async move {
                    let n = c.fetch_add(1, Ordering::SeqCst);
                    r.lock().unwrap().push(body.clone());
                    tokio::time::sleep(script.delay).await;
                    if n < script.fail_first {
                        let code = axum::http::StatusCode::from_u16(script.fail_status).unwrap();
                        return (code, [("retry-after", "0")], axum::Json(json!({"error": {"message": "scripted failure"}})));
                    }
                    let user = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("").to_string();
                    let content = match &script.router {
                        Some(route) => route(&body),
                        None => script.reply.replace("{post}", &user),
                    };
                    (
                        axum::http::StatusCode::OK,
                        [("retry-after", "0")],
                        axum::Json(json!({
                            "id": "chatcmpl-test", "object": "chat.completion",
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59}
                        })),
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        ScriptedLlm {
            base_url: format!("http://{addr}/v1"),
            calls,
            requests,
            _task: task,
        }
    }
}

/// The `musebot` binary running as a daemon.
pub struct Daemon {
    child: Child,
    pub log: PathBuf,
    pub health_port: u16,
}

/// A config for a daemon talking to `mastodon` and the LLM at `llm_base`.
pub fn daemon_config(state_dir: &Path, mastodon: &str, llm_base: &str, health_port: u16, extra: &str) -> String {
    let pipeline = if extra.contains("[search]") { "muse" } else { "baseline" };
    format!(
        r#"
[daemon]
state_dir = "{}"
shutdown_grace_secs = 5
pipeline = "{pipeline}"

[http]
listen = "127.0.0.1:{health_port}"

[llm]
base_url = "{llm_base}"
model = "test"
timeout_secs = 60
max_retries = 4

[mastodon]
base_url = "{mastodon}"
access_token_env = "MUSEBOT_TEST_MASTODON_TOKEN"
reconnect_max_secs = 2
max_retries = 6
{extra}
"#,
        state_dir.display()
    )
}

impl Daemon {
    pub fn start(dir: &Path, config: &str, health_port: u16) -> Daemon {
        let cfg = dir.join("bot-config.toml");
        std::fs::write(&cfg, config).unwrap();
        let n = std::fs::read_dir(dir).unwrap().count();
        let log = dir.join(format!("daemon-{n}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_musebot"))
            .args(["run", "--config"])
            .arg(&cfg)
            .env("MUSEBOT_TEST_MASTODON_TOKEN", BOT_TOKEN)
            .env("RUST_LOG", "info,musebot=debug")
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("start musebot");
        Daemon {
            child,
            log,
            health_port,
        }
    }

    /// Waits until `/healthz` says every platform is connected.
    pub async fn wait_connected(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let url = format!("http://127.0.0.1:{}/healthz", self.health_port);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("daemon exited early ({status}); log:\n{}", self.log_text());
            }
            if let Ok(r) = reqwest::get(&url).await {
                if r.status().is_success() {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("daemon never connected; log:\n{}", self.log_text());
    }

    /// Waits until `pred` holds for the bot's statuses; on time-out panics with the daemon log.
    pub async fn wait_for_replies(
        &self,
        mock: &MockMastodon,
        timeout: Duration,
        pred: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let s = mock.bot_statuses().await;
            if pred(&s) {
                return s;
            }
            if Instant::now() > deadline {
                panic!("timed out; bot statuses: {s:#?}\ndaemon log:\n{}", self.log_text());
            }
            tokio::time::sleep(Duration::from_millis(400)).await;
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then wait for the exit status.
    pub fn terminate(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        unsafe_kill(self.child.id() as i32, "TERM");
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Plain text of a status's HTML content (enough for assertions).
pub fn text_of(status: &Value) -> String {
    musebot::platform::mastodon::text::html_to_text(status["content"].as_str().unwrap_or(""))
}

/// A real LLM: `scripts/llm_server.py` (xllamacpp) serving the sandbox's SmolLM2 GGUF.
pub struct LlmServer(Child);

impl LlmServer {
    /// Starts the server and waits for its "ready" line; returns it and its `/v1` base URL.
    pub fn start() -> (LlmServer, String) {
        use std::io::{BufRead, BufReader};
        let sandbox = Sandbox::load();
        let port = free_port();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/llm_server.py");
        let mut child = Command::new(sandbox.get("MUSEBOT_PYTHON"))
            .arg(script)
            .args([
                "--model",
                &sandbox.get("MUSEBOT_GGUF"),
                "--port",
                &port.to_string(),
                "--threads",
                "1",
                "--ctx",
                "4096",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start llm_server.py");
        let stdout = child.stdout.take().unwrap();
        let ready = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|l| l.starts_with("ready"));
        assert!(ready, "llm_server.py never printed ready");
        (LlmServer(child), format!("http://127.0.0.1:{port}/v1"))
    }
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
