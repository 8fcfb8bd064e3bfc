//! The `musebot` binary running as a daemon against the test peers: its config, start-up,
//! health wait, log, kill -9 and SIGTERM.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::mastodon::{MockMastodon, BOT_TOKEN};
use super::sandbox::send_signal;

/// The `musebot` binary running as a daemon.
pub struct Daemon {
    child: Child,
    pub log: PathBuf,
    pub health_port: u16,
}

/// A config for a daemon talking to `mastodon` and the LLM at `llm_base`.
pub fn daemon_config(state_dir: &Path, mastodon: &str, llm_base: &str, health_port: u16, extra: &str) -> String {
    let pipeline = if extra.contains("[search]") { "muse" } else { "baseline" };
    // Hermetic: the default feeds are on the internet; a test that wants an index names its own.
    let no_index = if extra.contains("[index]") {
        ""
    } else {
        "[index]\nfeeds = []\n"
    };
    format!(
        r#"{no_index}
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

    /// The body of `GET path` on the daemon's health/metrics listener.
    pub async fn http_get(&self, path: &str) -> String {
        reqwest::get(format!("http://127.0.0.1:{}{path}", self.health_port))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// The log once it holds `needle` (it is written after what it reports is visible
    /// elsewhere, e.g. a posted reply), or as it is after 30 s.
    pub async fn log_once(&self, needle: &str) -> String {
        once_holding(needle, || async { self.log_text() }).await
    }

    /// `/metrics` once it holds `needle` (counted just after the action it counts), or as it
    /// is after 30 s.
    pub async fn metrics_once(&self, needle: &str) -> String {
        once_holding(needle, || self.http_get("/metrics")).await
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
        send_signal(self.child.id() as i32, "TERM");
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

/// What `read` gives once it holds `needle`, or what it gives after 30 s.
async fn once_holding<F, Fut>(needle: &str, mut read: F) -> String
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = String>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = read().await;
        if text.contains(needle) || Instant::now() > deadline {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Runs the `musebot` binary with `args`: its exit code, stdout and stderr.
pub fn musebot(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_musebot"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Writes `reviews` (ClaimReview JSONL) as `reviews.jsonl` beside the config at `cfg_path` and
/// imports them into its fact-check corpus (`musebot index import`); returns what it printed.
pub fn import_reviews(cfg_path: &Path, reviews: &str) -> String {
    let dump = cfg_path.with_file_name("reviews.jsonl");
    std::fs::write(&dump, reviews).unwrap();
    let (code, out, err) = musebot(&[
        "index",
        "import",
        dump.to_str().unwrap(),
        "--config",
        cfg_path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    out
}
