//! The reference AT Protocol network (`@atproto/dev-env` 0.6.7: PLC + PDS + AppView on the
//! machine's PostgreSQL and Redis, installed by `scripts/setup-bluesky.sh`; with the AppView,
//! also a labeler account, its Ozone and the AppView's label ingester), one per test
//! binary, every listener on 127.0.0.1 (checked); accounts, posts and reads over its XRPC API.
//! The network stops (and drops its schemas) when the test binary exits and its stdin closes.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A running network.
pub struct Network {
    pub pds: String,
    pub appview: Option<String>,
    pub plc: String,
    /// The labeler account and its Ozone (the full network only: `network.mjs --labeler`).
    pub labeler: Option<Labeler>,
    pub pid: u32,
    _child: Mutex<(Child, ChildStdin)>,
}

static FULL: OnceLock<Option<Network>> = OnceLock::new();
static NO_APPVIEW: OnceLock<Option<Network>> = OnceLock::new();
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// `bluesky.env` from `scripts/setup-bluesky.sh`, or `None` with a "skipped" line — under
/// `CI=true` its absence fails the test instead.
fn env() -> Option<std::collections::HashMap<String, String>> {
    let cache = std::env::var("MUSEBOT_CACHE").unwrap_or_else(|_| {
        let base = std::env::var("XDG_CACHE_HOME")
            .unwrap_or_else(|_| format!("{}/.cache", std::env::var("HOME").unwrap_or_default()));
        format!("{base}/musebot")
    });
    let path = Path::new(&cache).join("bluesky.env");
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(
            text.lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        Err(_) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!(
                "{} is missing: under CI=true a test fails instead of skipping (run scripts/setup-bluesky.sh)",
                path.display()
            )
        }
        Err(_) => {
            eprintln!("skipped: {} is absent (run scripts/setup-bluesky.sh)", path.display());
            None
        }
    }
}

impl Network {
    /// The shared PDS + AppView network (`None`: skipped, see [`env`]).
    pub fn shared() -> Option<&'static Network> {
        FULL.get_or_init(|| env().map(|e| Network::start(&e, false))).as_ref()
    }

    /// The shared PDS without an AppView.
    pub fn shared_no_appview() -> Option<&'static Network> {
        NO_APPVIEW
            .get_or_init(|| env().map(|e| Network::start(&e, true)))
            .as_ref()
    }

    fn start(env: &std::collections::HashMap<String, String>, no_appview: bool) -> Network {
        let dir = Path::new(&env["MUSEBOT_BLUESKY_DIR"]);
        let mut cmd = Command::new(&env["MUSEBOT_NODE"]);
        cmd.current_dir(dir)
            .arg("--require")
            .arg(dir.join("loopback.cjs"))
            .arg(dir.join("network.mjs"));
        if no_appview {
            cmd.arg("--no-appview");
        } else {
            // The labeler account, its own Ozone and the AppView's label ingester.
            cmd.arg("--labeler");
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the Bluesky network (node)");
        let stdin = child.stdin.take().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("network output");
        let ready: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("network did not start ({e}): {line:?}"));
        let net = Network {
            pds: ready["pds"].as_str().unwrap().to_string(),
            appview: ready["appview"].as_str().map(str::to_string),
            plc: ready["plc"].as_str().unwrap_or_default().to_string(),
            labeler: ready["labeler"].as_object().map(|l| Labeler {
                handle: l["handle"].as_str().unwrap().to_string(),
                password: l["password"].as_str().unwrap().to_string(),
                did: l["did"].as_str().unwrap().to_string(),
                ozone: l["ozone"].as_str().unwrap().to_string(),
            }),
            pid: child.id(),
            _child: Mutex::new((child, stdin)),
        };
        net.assert_loopback_only();
        net
    }

    /// Every socket the network listens on is bound to a loopback address.
    pub fn assert_loopback_only(&self) {
        let out = Command::new("ss").args(["-ltnpH"]).output().expect("ss");
        let text = String::from_utf8_lossy(&out.stdout);
        let mine: Vec<&str> = text
            .lines()
            .filter(|l| l.contains(&format!("pid={},", self.pid)))
            .collect();
        assert!(!mine.is_empty(), "the network listens on nothing? {text}");
        for l in mine {
            let local = l.split_whitespace().nth(3).unwrap_or("");
            assert!(
                local.starts_with("127.0.0.1:") || local.starts_with("[::1]:"),
                "a listener of the Bluesky network is not on loopback: {l}"
            );
        }
    }

    /// Sends the network a command (network.mjs: `ozone-stop`, `ozone-start`) and waits until
    /// the labeler's Ozone answers (`ozone-start`) or no longer does (`ozone-stop`).
    pub async fn ozone(&self, command: &str) {
        {
            let mut child = self._child.lock().unwrap();
            writeln!(child.1, "{command}").unwrap();
            child.1.flush().unwrap();
        }
        let ozone = &self.labeler.as_ref().expect("the full network runs a labeler").ozone;
        let want_up = command == "ozone-start";
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let up = reqwest::get(format!("{ozone}/xrpc/_health"))
                .await
                .is_ok_and(|r| r.status().is_success());
            if up == want_up {
                return;
            }
            assert!(Instant::now() < deadline, "the labeler's Ozone did not {command}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The labeler account (its DID document names its Ozone and label key) logged in, with
    /// a new app password — what the bot runs as in labeler mode.
    pub async fn labeler_user(&self) -> User {
        let l = self.labeler.as_ref().expect("the full network runs with --labeler");
        let http = reqwest::Client::new();
        let session: Value = http
            .post(format!("{}/xrpc/com.atproto.server.createSession", self.pds))
            .json(&json!({"identifier": l.handle, "password": l.password}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        self.user_of(http, session, l.handle.clone()).await
    }

    /// A logged-in account (`createAccount`'s or `createSession`'s answer) as a [`User`],
    /// with a new app password (what the bot logs in with).
    async fn user_of(&self, http: reqwest::Client, session: Value, handle: String) -> User {
        let jwt = session["accessJwt"]
            .as_str()
            .unwrap_or_else(|| panic!("{session}"))
            .to_string();
        let name = format!("musebot-{}", NEXT.fetch_add(1, Ordering::SeqCst));
        let app: Value = http
            .post(format!("{}/xrpc/com.atproto.server.createAppPassword", self.pds))
            .bearer_auth(&jwt)
            .json(&json!({"name": name}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        User {
            pds: self.pds.clone(),
            did: session["did"].as_str().unwrap().to_string(),
            handle,
            jwt,
            app_password: app["password"].as_str().unwrap_or_else(|| panic!("{app}")).to_string(),
            http,
        }
    }

    /// The post views the AppView gives for `uris` to a reader who subscribes to `labelers`
    /// (the `atproto-accept-labelers` header the app sends from `labelersPref`; `None`: no
    /// header, the AppView's own defaults).
    pub async fn posts_seen_with(&self, uris: &[&str], labelers: Option<&str>) -> Vec<Value> {
        let appview = self.appview.as_ref().expect("an AppView");
        let mut req = reqwest::Client::new()
            .get(format!("{appview}/xrpc/app.bsky.feed.getPosts"))
            .query(&uris.iter().map(|u| ("uris", *u)).collect::<Vec<_>>());
        if let Some(l) = labelers {
            req = req.header("atproto-accept-labelers", l);
        }
        let v: Value = req.send().await.unwrap().json().await.unwrap();
        v["posts"].as_array().cloned().unwrap_or_default()
    }

    /// The AppView's detailed view of the labeler `did` (`getServices`), asked until it has one:
    /// the AppView indexes the declaration from the firehose a moment after the write (a fixed
    /// read raced the indexer in CI and saw `{"views":[]}`), and hydrates its labels only then.
    pub async fn labeler_services(&self, did: &str) -> Value {
        let appview = self.appview.as_ref().expect("an AppView");
        let mut services = Value::Null;
        for _ in 0..150 {
            services = reqwest::Client::new()
                .get(format!("{appview}/xrpc/app.bsky.labeler.getServices"))
                .query(&[("dids", did), ("detailed", "true")])
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if services["views"].as_array().is_some_and(|v| !v.is_empty()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        services
    }

    /// Waits until a subscriber of `src` sees `uri` carry (`present`) or no longer carry its
    /// label `val`.
    pub async fn wait_until_seen(&self, uri: &str, src: &str, val: &str, present: bool) {
        for _ in 0..200 {
            let views = self.posts_seen_with(&[uri], Some(src)).await;
            if views.first().is_some_and(|v| carries(v, src, val) == present) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("{uri} never {} {val}", if present { "carried" } else { "lost" });
    }

    /// A new account with a unique handle (`{name}-{n}.test`) and an app password.
    pub async fn account(&self, name: &str) -> User {
        self.account_with_handle(&Self::fresh_handle(name)).await
    }

    /// A handle no account has yet (`{name}-{pid}-{n}.test`).
    pub fn fresh_handle(name: &str) -> String {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        format!("{name}-{}-{n}.test", std::process::id())
    }

    /// A new account with exactly this handle (one another account gave up, say).
    pub async fn account_with_handle(&self, handle: &str) -> User {
        let handle = handle.to_string();
        let password = format!("pw-{handle}");
        let http = reqwest::Client::new();
        let created: Value = http
            .post(format!("{}/xrpc/com.atproto.server.createAccount", self.pds))
            .json(&json!({"handle": handle, "email": format!("{}-{handle}@test.invalid", NEXT.fetch_add(1, Ordering::SeqCst)), "password": password}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        self.user_of(http, created, handle).await
    }
}

/// The network's labeler account (`network.mjs --labeler`): an ordinary account whose DID
/// document names an Ozone run as it, and the Ozone's URL.
pub struct Labeler {
    pub handle: String,
    pub password: String,
    pub did: String,
    pub ozone: String,
}

/// A strong reference to a record.
#[derive(Debug, Clone)]
pub struct Ref {
    pub uri: String,
    pub cid: String,
}

impl Ref {
    fn json(&self) -> Value {
        json!({"uri": self.uri, "cid": self.cid})
    }
}

/// An account on the network.
pub struct User {
    pub pds: String,
    pub did: String,
    pub handle: String,
    pub jwt: String,
    pub app_password: String,
    http: reqwest::Client,
}

impl User {
    /// Changes this account's handle (`com.atproto.identity.updateHandle`) and waits until the
    /// network resolves the new one to this account.
    pub async fn update_handle(&mut self, handle: &str) {
        let answer = self
            .call("com.atproto.identity.updateHandle", json!({ "handle": handle }))
            .await;
        assert!(answer.get("error").is_none(), "updateHandle: {answer}");
        self.handle = handle.to_string();
        for _ in 0..100 {
            let r = self
                .get("com.atproto.identity.resolveHandle", &[("handle", handle)])
                .await;
            if r["did"] == json!(self.did) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the new handle {handle} never resolved to {}", self.did);
    }

    /// Calls a procedure as this user; returns the answer (errors included) as JSON.
    pub async fn call(&self, nsid: &str, body: Value) -> Value {
        let resp = self
            .http
            .post(format!("{}/xrpc/{nsid}", self.pds))
            .bearer_auth(&self.jwt)
            .json(&body)
            .send()
            .await
            .unwrap();
        resp.json().await.unwrap_or(Value::Null)
    }

    /// A query as this user.
    pub async fn get(&self, nsid: &str, params: &[(&str, &str)]) -> Value {
        self.http
            .get(format!("{}/xrpc/{nsid}", self.pds))
            .bearer_auth(&self.jwt)
            .query(params)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap_or(Value::Null)
    }

    /// Creates a record (`validate: false` lets tests write malformed ones).
    pub async fn create(&self, record: Value, validate: bool) -> Ref {
        let r = self
            .call(
                "com.atproto.repo.createRecord",
                json!({"repo": self.did, "collection": "app.bsky.feed.post", "record": record, "validate": validate}),
            )
            .await;
        Ref {
            uri: r["uri"]
                .as_str()
                .unwrap_or_else(|| panic!("createRecord: {r}"))
                .to_string(),
            cid: r["cid"].as_str().unwrap().to_string(),
        }
    }

    /// Posts `text` (with `facets` and `embed` when given), as a reply under `parent` (root
    /// taken from it) when given.
    pub async fn post(&self, text: &str, parent: Option<(&Ref, &Ref)>, facets: Value, embed: Option<Value>) -> Ref {
        let mut record = json!({
            "$type": "app.bsky.feed.post",
            "text": text,
            "createdAt": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "langs": ["en"],
        });
        if facets.as_array().is_some_and(|f| !f.is_empty()) {
            record["facets"] = facets;
        }
        if let Some((root, parent)) = parent {
            record["reply"] = json!({"root": root.json(), "parent": parent.json()});
        }
        if let Some(e) = embed {
            record["embed"] = e;
        }
        self.create(record, true).await
    }

    /// A reply under `parent` that mentions `who` (a mention facet with their DID).
    pub async fn mention(&self, who: &User, words: &str, root: &Ref, parent: &Ref) -> Ref {
        let text = format!("@{} {words}", who.handle);
        let facets = json!([{
            "index": {"byteStart": 0, "byteEnd": 1 + who.handle.len()},
            "features": [{"$type": "app.bsky.richtext.facet#mention", "did": who.did}],
        }]);
        self.post(&text, Some((root, parent)), facets, None).await
    }

    /// Uploads an image; returns the blob ref.
    pub async fn upload(&self, bytes: Vec<u8>, mime: &str) -> Value {
        let r: Value = self
            .http
            .post(format!("{}/xrpc/com.atproto.repo.uploadBlob", self.pds))
            .bearer_auth(&self.jwt)
            .header("content-type", mime)
            .body(bytes)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        r["blob"].clone()
    }

    /// The posts in `did`'s repo (newest first), read from the PDS itself.
    pub async fn records_of(&self, did: &str) -> Vec<Value> {
        let r = self
            .get(
                "com.atproto.repo.listRecords",
                &[("repo", did), ("collection", "app.bsky.feed.post"), ("limit", "100")],
            )
            .await;
        r["records"].as_array().cloned().unwrap_or_default()
    }

    /// Waits until `did` has at least `n` posts on the PDS (or `timeout`), returns them
    /// oldest first.
    pub async fn wait_for_records(&self, did: &str, n: usize, timeout: Duration) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut r = self.records_of(did).await;
            if r.len() >= n || Instant::now() > deadline {
                r.reverse();
                return r;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// Waits until the AppView shows the post at `uri` (it indexes from the PDS's firehose).
    /// Ask as another account than the author's: the PDS adds a user's own recent records to
    /// what she reads (read-after-write), before the AppView has indexed them.
    pub async fn wait_indexed(&self, uri: &str) {
        for _ in 0..100 {
            let r = self.get("app.bsky.feed.getPosts", &[("uris", uri)]).await;
            if r["posts"].as_array().is_some_and(|p| !p.is_empty()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the AppView never indexed {uri}");
    }

    /// The AppView's thread under `uri` (`getPostThread`), once `pred` holds or `timeout` passes.
    pub async fn thread_when(&self, uri: &str, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let t = self
                .get("app.bsky.feed.getPostThread", &[("uri", uri), ("depth", "10")])
                .await;
            if pred(&t) || Instant::now() > deadline {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
}

/// A daemon config serving `bot` on the network (and Mastodon at `mastodon`, when given); the
/// app password is read from `password_file`.
#[allow(clippy::too_many_arguments)]
pub fn bluesky_config(
    state_dir: &Path,
    service: &str,
    bot: &User,
    password_file: &Path,
    llm_base: &str,
    health_port: u16,
    mastodon: Option<&str>,
    extra: &str,
) -> String {
    let pipeline = if extra.contains("[search]") { "muse" } else { "baseline" };
    // Hermetic: the default feeds are on the internet; a test that wants an index names its own.
    let no_index = if extra.contains("[index]") {
        ""
    } else {
        "[index]\nfeeds = []\n"
    };
    let mastodon = match mastodon {
        Some(base) => format!(
            "[mastodon]\nbase_url = \"{base}\"\naccess_token_env = \"MUSEBOT_TEST_MASTODON_TOKEN\"\nreconnect_max_secs = 2\nmax_retries = 6\n"
        ),
        None => "[mastodon]\nenabled = false\n".to_string(),
    };
    std::fs::write(password_file, &bot.app_password).unwrap();
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

{mastodon}
[bluesky]
enabled = true
service = "{}"
identifier = "{}"
app_password_file = "{}"
poll_secs = 1
reconnect_max_secs = 2
max_retries = 6
{extra}
"#,
        state_dir.display(),
        service,
        bot.handle,
        password_file.display()
    )
}

/// An HTTP proxy in front of the PDS that holds every `putRecord` for `delay` (so a test can
/// kill the daemon between two parts of a thread), and answers the next `refuse_puts` of them
/// with Bluesky's 429 (`RateLimitExceeded`, `ratelimit-reset` 2 s ahead, epoch seconds). The
/// daemon's `bluesky.service` points here.
pub struct SlowPds {
    pub base: String,
    pub refuse_puts: std::sync::Arc<AtomicUsize>,
}

impl SlowPds {
    pub async fn start(pds: &str, delay: Duration) -> SlowPds {
        use axum::body::Bytes;
        use axum::extract::State;
        use axum::http::{HeaderMap, Method, StatusCode, Uri};
        use axum::response::IntoResponse;
        #[derive(Clone)]
        struct Upstream {
            base: String,
            http: reqwest::Client,
            delay: Duration,
            refuse: std::sync::Arc<AtomicUsize>,
        }
        async fn forward(
            State(up): State<Upstream>,
            method: Method,
            uri: Uri,
            headers: HeaderMap,
            body: Bytes,
        ) -> impl IntoResponse {
            if uri.path().ends_with("com.atproto.repo.putRecord") {
                tokio::time::sleep(up.delay).await;
                let refused = up
                    .refuse
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
                if refused {
                    let reset = (chrono::Utc::now().timestamp() + 2).to_string();
                    let body = r#"{"error":"RateLimitExceeded","message":"Rate Limit Exceeded"}"#;
                    return (
                        StatusCode::TOO_MANY_REQUESTS,
                        [
                            ("content-type", "application/json".to_string()),
                            ("ratelimit-reset", reset),
                        ],
                        body.as_bytes().to_vec(),
                    )
                        .into_response();
                }
            }
            let url = format!("{}{}", up.base, uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"));
            let mut req = up
                .http
                .request(reqwest::Method::from_bytes(method.as_str().as_bytes()).unwrap(), url)
                .body(body);
            for name in ["authorization", "content-type"] {
                if let Some(v) = headers.get(name) {
                    req = req.header(name, v.to_str().unwrap_or_default());
                }
            }
            match req.send().await {
                Ok(resp) => {
                    let status = StatusCode::from_u16(resp.status().as_u16()).unwrap();
                    let ctype = resp
                        .headers()
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("application/json")
                        .to_string();
                    let bytes = resp.bytes().await.unwrap_or_default();
                    (status, [("content-type", ctype)], bytes.to_vec()).into_response()
                }
                Err(_) => StatusCode::BAD_GATEWAY.into_response(),
            }
        }
        let refuse_puts = std::sync::Arc::new(AtomicUsize::new(0));
        let state = Upstream {
            base: pds.trim_end_matches('/').to_string(),
            http: reqwest::Client::new(),
            delay,
            refuse: refuse_puts.clone(),
        };
        let app = axum::Router::new().fallback(forward).with_state(state);
        let addr = super::web::serve(app).await;
        SlowPds {
            base: format!("http://{addr}"),
            refuse_puts,
        }
    }
}

/// Whether a post view carries the label `val` from `src` (not negated).
pub fn carries(view: &Value, src: &str, val: &str) -> bool {
    view["labels"].as_array().into_iter().flatten().any(|l| {
        l["src"] == serde_json::json!(src) && l["val"] == serde_json::json!(val) && l["neg"] != serde_json::json!(true)
    })
}

/// The labels the labeler's Ozone serves for `uri` from `src` (its public `queryLabels`).
pub async fn served(ozone: &str, uri: &str, src: &str) -> Vec<Value> {
    let v: Value = reqwest::Client::new()
        .get(format!("{ozone}/xrpc/com.atproto.label.queryLabels"))
        .query(&[("uriPatterns", uri), ("sources", src)])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["labels"].as_array().cloned().unwrap_or_default()
}
