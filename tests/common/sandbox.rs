//! The sandbox `scripts/setup-sandbox.sh` provisions (`sandbox.env`: venv, models, the ONNX
//! Runtime library), free loopback ports, signals, and the real local LLM it serves.

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

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

/// `../shared/data/<sub>` (the project's real data), or `None` with a "skipped" message when
/// it is absent — but under `CI=true` its absence fails the test instead: CI never passes by
/// skipping.
pub fn shared_data(sub: &str) -> Option<PathBuf> {
    let p = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data")).join(sub);
    if p.exists() {
        return Some(p);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "{} is missing: under CI=true a test fails instead of skipping",
            p.display()
        );
    }
    eprintln!("skipped: {} is absent", p.display());
    None
}

/// A port on 127.0.0.1 nothing listens on now, for a server a test starts.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    // Below the kernel's ephemeral range (32768–60999 on Linux), so no server of another test
    // that binds port 0 is handed this port between this call and the daemon's own bind; the
    // start is spread by process id between test binaries that run side by side.
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const FROM: u32 = 20_000;
    const SPAN: u32 = 12_000;
    let start = std::process::id().wrapping_mul(131);
    for _ in 0..SPAN {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (FROM + start.wrapping_add(n.wrapping_mul(7)) % SPAN) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Sends `signal` (`TERM`, `KILL`, …) to a process.
pub fn send_signal(pid: i32, signal: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status();
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
