//! A real headless browser for the tests: Debian's `chromium` driven by its `chromedriver`
//! over the W3C WebDriver protocol (plain JSON over HTTP, spoken here with reqwest). Absent
//! browser: the test is skipped — under `CI=true` it fails instead.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session; `None` (skip) without them.
    pub async fn start() -> Option<Browser> {
        let found = |bin: &str| {
            Command::new("sh")
                .args(["-c", &format!("command -v {bin}")])
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !found("chromedriver") || !found("chromium") {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("chromium and chromedriver are missing: under CI=true a test fails instead of skipping (scripts/bootstrap.sh installs them)");
            }
            eprintln!("skipping: chromium or chromedriver is not installed (scripts/bootstrap.sh installs them)");
            return None;
        }
        let port = super::free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ready = http.get(format!("{base}/status")).send().await;
            if let Ok(r) = ready {
                if r.json::<Value>().await.is_ok_and(|v| v["value"]["ready"] == true) {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let profile = tempfile::tempdir().unwrap();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1280,1400", format!("--user-data-dir={}", profile.path().display())]
            }
        }}});
        let r: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let session = r["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {r}"))
            .to_string();
        Some(Browser {
            driver,
            base,
            session,
            http,
            _profile: profile,
        })
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut req = self.http.request(method, url);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let v: Value = req.send().await.unwrap().json().await.unwrap();
        v["value"].clone()
    }

    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await;
    }

    pub async fn source(&self) -> String {
        self.call(reqwest::Method::GET, "/source", None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The first element matching the CSS selector, if any.
    pub async fn find(&self, css: &str) -> Option<String> {
        let v = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        v[ELEMENT].as_str().map(str::to_string)
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css).await.unwrap_or_else(|| panic!("no {css}"));
        self.call(
            reqwest::Method::POST,
            &format!("/element/{e}/value"),
            Some(json!({ "text": text })),
        )
        .await;
    }

    pub async fn click(&self, css: &str) {
        let e = self.find(css).await.unwrap_or_else(|| panic!("no {css}"));
        self.call(reqwest::Method::POST, &format!("/element/{e}/click"), Some(json!({})))
            .await;
    }

    /// Saves a PNG of the page under the tests' artifact folder; returns its path.
    pub async fn screenshot(&self, name: &str) -> std::path::PathBuf {
        let v = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .unwrap();
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        eprintln!("screenshot: {}", path.display());
        path
    }

    /// Waits until the page source holds `needle`.
    pub async fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.source().await;
            if s.contains(needle) {
                return s;
            }
            assert!(Instant::now() < deadline, "no `{needle}` in the page:\n{s}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Browser {
    /// Ends the session (Chromium exits) and stops the driver.
    pub async fn quit(self) {
        self.call(reqwest::Method::DELETE, "", None).await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
