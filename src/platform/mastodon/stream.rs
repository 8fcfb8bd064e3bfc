//! Mastodon intake: our own reconnect loop over the streaming WebSocket (a library's
//! `std::thread::sleep` would block a tokio worker, and its logs could carry the token-bearing
//! URL), with REST catch-up from the saved cursor after every (re)connect, so a mention
//! posted while disconnected is answered once: the store dedupes by notification id.
//!
//! Cursor rule: the cursor only moves past ids the catch-up has paged through in order. Stream
//! events become jobs at once but move no cursor (a server may deliver mention N+2 before N+1,
//! and a disconnect then must not skip N+1); a catch-up runs after every (re)connect and every
//! [`CATCH_UP_EVERY`] while connected, and moves the cursor past what it paged through.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

use super::api::{Notification, Status, StreamFrame};
use super::client::{MastodonClient, MastodonError};
use super::text;
use super::text::status_text;
use crate::intake::{CursorMove, Event, Intake, IntakeError};
use crate::metrics::ConnState;
use crate::model::{id_less, Account, Cause, PlatformKind, Trigger, Visibility};

pub const CURSOR: &str = "mastodon:notifications";
const PING_EVERY: Duration = Duration::from_secs(30);
const SILENCE_LIMIT: Duration = Duration::from_secs(75);
const PAGE: u32 = 40;
/// How often the cursor catches up while the stream is connected.
pub const CATCH_UP_EVERY: Duration = Duration::from_secs(300);

/// Where an event was read: only an in-order page may move the cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Stream,
    CatchUp,
}

#[derive(Debug, thiserror::Error)]
enum StreamError {
    #[error("{0}")]
    Api(#[from] MastodonError),
    #[error("streaming socket: {0}")]
    Socket(String),
    #[error(transparent)]
    Intake(#[from] IntakeError),
}

pub struct MastodonSource {
    pub client: MastodonClient,
    pub streaming_base: String,
    pub bot: BotIdentity,
    pub reconnect_max: Duration,
    /// Woken by an `admin.report` notification (an account that may manage reports receives
    /// one per new report): the report watch reads the queue at once instead of at its next poll.
    pub reports_wake: Arc<Notify>,
}

impl MastodonSource {
    /// Runs until `shutdown`; never returns an error (every failure becomes a reconnect).
    pub async fn run(self, intake: Intake, shutdown: CancellationToken) {
        let platform = PlatformKind::Mastodon.as_str();
        let mut backoff = Duration::from_secs(1);
        while !shutdown.is_cancelled() {
            intake.metrics().set_connection(platform, ConnState::Connecting);
            let started = Instant::now();
            let result = self.connect_once(&intake, &shutdown).await;
            intake.metrics().set_connection(platform, ConnState::Disconnected);
            if shutdown.is_cancelled() {
                break;
            }
            match result {
                Ok(()) => tracing::warn!(platform, "stream closed by the server; reconnecting"),
                Err(e) => {
                    intake.metrics().error("stream");
                    tracing::warn!(platform, error = %e, wait_s = backoff.as_secs(), "stream failed; reconnecting");
                }
            }
            if started.elapsed() > Duration::from_secs(60) {
                backoff = Duration::from_secs(1);
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(self.reconnect_max);
        }
    }

    async fn connect_once(&self, intake: &Intake, shutdown: &CancellationToken) -> Result<(), StreamError> {
        let from = intake.cursor(CURSOR)?;
        let mut ws = open_socket(&self.client, &self.streaming_base, "stream=user")
            .await
            .map_err(StreamError::Socket)?;
        intake
            .metrics()
            .set_connection(PlatformKind::Mastodon.as_str(), ConnState::Connected);
        tracing::info!(platform = "mastodon", "stream connected; catching up");
        self.catch_up(intake, from).await?;
        let mut ping = tokio::time::interval(PING_EVERY);
        ping.tick().await;
        let mut catch_up = tokio::time::interval(CATCH_UP_EVERY);
        catch_up.tick().await;
        let mut last_frame = Instant::now();
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => {
                    let _ = ws.close(None).await;
                    return Ok(());
                }
                _ = catch_up.tick() => {
                    let from = intake.cursor(CURSOR)?;
                    self.catch_up(intake, from).await?;
                }
                _ = ping.tick() => {
                    if last_frame.elapsed() > SILENCE_LIMIT {
                        return Err(StreamError::Socket("no frame for 75 s".into()));
                    }
                    ws.send(Message::Ping(Vec::new().into())).await.map_err(|e| StreamError::Socket(e.to_string()))?;
                }
                frame = ws.next() => {
                    last_frame = Instant::now();
                    intake.metrics().heard(PlatformKind::Mastodon.as_str());
                    match frame {
                        None => return Ok(()),
                        Some(Err(e)) => return Err(StreamError::Socket(scrub(&e.to_string(), self.client.token().expose()))),
                        Some(Ok(Message::Text(text))) => self.on_frame(intake, text.as_str()).await?,
                        Some(Ok(Message::Close(_))) => return Ok(()),
                        Some(Ok(_)) => {}
                    }
                }
            }
        }
    }

    async fn on_frame(&self, intake: &Intake, text: &str) -> Result<(), StreamError> {
        let frame: StreamFrame = match serde_json::from_str(text) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(error = %e, "skipping unreadable stream frame");
                return Ok(());
            }
        };
        if let Some(err) = frame.error {
            return Err(StreamError::Socket(format!("server error frame: {err}")));
        }
        if frame.event.as_deref() != Some("notification") {
            return Ok(());
        }
        let Some(payload) = frame.payload else { return Ok(()) };
        match serde_json::from_str::<Notification>(&payload) {
            Ok(n) if n.kind == "mention" => self.accept(intake, n, Origin::Stream).await,
            Ok(n) if n.kind == "admin.report" => {
                self.reports_wake.notify_one();
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::warn!(error = %e, "skipping unreadable notification payload");
                Ok(())
            }
        }
    }

    /// Pages every mention after `from` in id order. On the very first start (no cursor) the
    /// cursor is set to the newest mention: history from before the bot ran is not answered.
    async fn catch_up(&self, intake: &Intake, from: Option<String>) -> Result<(), StreamError> {
        let Some(mut cursor) = from else {
            let newest = self.client.mentions(None, 1).await?;
            let start = newest.first().map_or_else(|| "0".to_string(), |n| n.id.clone());
            intake.start_cursor(CURSOR, &start)?;
            tracing::info!(cursor = %start, "first start: mentions from before now are not answered");
            return Ok(());
        };
        let mut seen = 0usize;
        loop {
            let (mut page, largest) = self.client.mentions_page(Some(&cursor), PAGE).await?;
            // No progress (an empty page, or a server that ignores `min_id`): done.
            let Some(largest) = largest.filter(|l| id_less(&cursor, l)) else {
                break;
            };
            page.sort_by(|a, b| {
                if id_less(&a.id, &b.id) {
                    std::cmp::Ordering::Less
                } else {
                    std::cmp::Ordering::Greater
                }
            });
            for n in page {
                if !id_less(&cursor, &n.id) {
                    continue;
                }
                cursor = n.id.clone();
                seen += 1;
                self.accept(intake, n, Origin::CatchUp).await?;
            }
            // Past the whole page, other notification types included: a page with no mention
            // in it must not stop the next catch-up here.
            if id_less(&cursor, &largest) {
                intake
                    .accept(Event {
                        trigger: None,
                        cursor: Some(CursorMove {
                            name: CURSOR.into(),
                            value: largest.clone(),
                        }),
                    })
                    .await?;
                cursor = largest;
            }
        }
        tracing::info!(seen, "catch-up done");
        Ok(())
    }

    async fn accept(&self, intake: &Intake, n: Notification, origin: Origin) -> Result<(), StreamError> {
        intake.accept(event(n, &self.bot, origin)).await?;
        Ok(())
    }
}

/// A mention notification as the event intake understands: its trigger, and a cursor move
/// only when it was read in order by a catch-up.
pub fn event(n: Notification, bot: &BotIdentity, origin: Origin) -> Event {
    let cursor = (origin == Origin::CatchUp).then(|| CursorMove {
        name: CURSOR.into(),
        value: n.id.clone(),
    });
    Event {
        trigger: to_trigger(n, bot),
        cursor,
    }
}

/// The bot as a mention target: its account id, and its handle for plain-text mentions.
#[derive(Debug, Clone, Default)]
pub struct BotIdentity {
    pub account_id: String,
    /// `username` (local part of the handle).
    pub username: String,
}

/// A mention notification as a [`Trigger`]; `None` (logged) when it carries no status.
pub fn to_trigger(n: Notification, bot: &BotIdentity) -> Option<Trigger> {
    let Some(status) = n.status else {
        tracing::warn!(notification = %n.id, "mention without a status; skipped");
        return None;
    };
    let text = status_text(&status.content, &status.spoiler_text);
    let asked_in_text = asks_in_text(&status, bot);
    Some(Trigger {
        platform: PlatformKind::Mastodon,
        cause: Cause::Mention,
        event_id: n.id,
        quote_of: status.quote.as_ref().and_then(|q| q.accepted_id()),
        asked_in_text,
        status_id: status.id,
        in_reply_to_id: status.in_reply_to_id,
        author: Account {
            handle: n.account.acct.clone(),
            is_bot: n.account.bot,
            is_self: n.account.id == bot.account_id,
            nobot: n.account.opted_out(),
            // Rights and memory key on the account's id: an `acct` can change hands.
            id: Some(n.account.id.clone()).filter(|i| !i.is_empty()),
        },
        visibility: Visibility::from_server(&status.visibility),
        created_at: status.created_at,
        text,
        language: status.language.clone(),
    })
}

/// Whether the bot's handle stands in the status text outside the leading run of mentions
/// (which clients pre-fill in a reply). Mentions are found as servers render them (h-card
/// links, matched to the bot by the status's `mentions` list or the profile URL) and as plain
/// `@user` / `@user@domain` text (mastodon-mock renders no links).
pub fn asks_in_text(status: &Status, bot: &BotIdentity) -> bool {
    let bot_urls: Vec<&str> = status
        .mentions
        .iter()
        .filter(|m| m.id == bot.account_id)
        .map(|m| m.url.as_str())
        .filter(|u| !u.is_empty())
        .collect();
    let user = bot.username.to_lowercase();
    let is_bot = |m: &text::MentionAt| {
        if !m.href.is_empty() {
            let href = m.href.to_lowercase();
            return bot_urls.iter().any(|u| u.eq_ignore_ascii_case(&m.href))
                || href.ends_with(&format!("/@{user}"))
                || href.ends_with(&format!("/users/{user}"));
        }
        let handle = m.shown.trim_start_matches('@').to_lowercase();
        handle == user || handle.split_once('@').is_some_and(|(u, _)| u == user)
    };
    text::mentions(&status.content).iter().any(|m| !m.leading && is_bot(m))
}

/// A streaming WebSocket for `query` (`stream=user`, `stream=hashtag&tag=x`). The URL carries
/// the token (the only form every server accepts over WebSocket): it is never logged, and
/// errors are reported without it.
pub(super) async fn open_socket(
    client: &MastodonClient,
    streaming_base: &str,
    query: &str,
) -> Result<tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>, String> {
    let token = client.token().expose();
    let url = format!(
        "{}/api/v1/streaming?{query}&access_token={token}",
        streaming_base.trim_end_matches('/')
    );
    let mut request = url
        .into_client_request()
        .map_err(|_| "invalid streaming URL".to_string())?;
    request.headers_mut().insert(
        "Authorization",
        format!("Bearer {token}")
            .parse()
            .map_err(|_| "token is not a valid header value".to_string())?,
    );
    let (ws, _) = tokio::time::timeout(Duration::from_secs(20), tokio_tungstenite::connect_async(request))
        .await
        .map_err(|_| "connect timed out".to_string())?
        .map_err(|e| scrub(&e.to_string(), token))?;
    Ok(ws)
}

/// Removes the token from an error message, in case a library echoes the URL.
fn scrub(message: &str, token: &str) -> String {
    if token.is_empty() {
        message.to_string()
    } else {
        message.replace(token, "[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bot() -> BotIdentity {
        BotIdentity {
            account_id: "1".into(),
            username: "musebot".into(),
        }
    }

    /// A source reading the server at `base` (no streaming).
    fn source_at(base: &str) -> MastodonSource {
        let config = crate::config::MastodonConfig {
            base_url: base.into(),
            ..Default::default()
        };
        MastodonSource {
            client: MastodonClient::new(&config, crate::secret::Secret::new("t")).unwrap(),
            streaming_base: String::new(),
            bot: bot(),
            reconnect_max: Duration::from_secs(1),
            reports_wake: Default::default(),
        }
    }

    /// A mention notification in Mastodon's documented JSON (`Notification` with a `Status`),
    /// its content in the server's real markup.
    fn notification(content: &str, in_reply_to: Option<&str>, quote: &str) -> Notification {
        let reply = in_reply_to.map_or("null".to_string(), |r| format!("\"{r}\""));
        serde_json::from_str(&format!(
            r#"{{"id":"50","type":"mention","created_at":"2026-11-30T10:00:00.000Z",
            "account":{{"id":"3","username":"carol","acct":"carol@c.example","bot":false,"note":""}},
            "status":{{"id":"500","created_at":"2026-11-30T10:00:00.000Z","visibility":"public","in_reply_to_id":{reply},
              "account":{{"id":"3","username":"carol","acct":"carol@c.example"}},
              "mentions":[{{"id":"2","username":"alice","acct":"alice","url":"https://m.example/@alice"}},
                          {{"id":"1","username":"musebot","acct":"musebot@bot.example","url":"https://bot.example/@musebot"}}],
              "content":{content:?}{quote}}}}}"#
        ))
        .unwrap()
    }

    const H_ALICE: &str = r#"<span class="h-card" translate="no"><a href="https://m.example/@alice" class="u-url mention">@<span>alice</span></a></span>"#;
    const H_BOT: &str = r#"<span class="h-card" translate="no"><a href="https://bot.example/@musebot" class="u-url mention">@<span>musebot</span></a></span>"#;

    #[test]
    fn a_handle_only_in_the_leading_run_may_be_inherited() {
        // "thanks!" under a thread: the client pre-filled both handles.
        let n = notification(&format!("<p>{H_ALICE} {H_BOT} thanks!</p>"), Some("400"), "");
        let t = to_trigger(n, &bot()).unwrap();
        assert!(!t.asked_in_text);
        assert!(t.may_be_inherited());
        // Rights and memory key on the account's id, not its renamable `acct`.
        assert_eq!((t.author.id.as_deref(), t.author.key().as_str()), (Some("3"), "3"));
        // The handle written into the text is a request.
        let n = notification(&format!("<p>{H_ALICE} is this right, {H_BOT}?</p>"), Some("400"), "");
        let t = to_trigger(n, &bot()).unwrap();
        assert!(t.asked_in_text && !t.may_be_inherited());
        // A top-level mention is never inherited.
        let n = notification(&format!("<p>{H_BOT} is the moon cheese?</p>"), None, "");
        assert!(!to_trigger(n, &bot()).unwrap().may_be_inherited());
    }

    #[test]
    fn a_mention_in_a_quote_post_targets_the_quoted_post() {
        let accepted = r#","quote":{"state":"accepted","quoted_status":{"id":"77","created_at":"2026-11-29T10:00:00.000Z","account":{"id":"9","acct":"dave"},"content":"<p>The moon is cheese</p>"}}"#;
        let n = notification(&format!("<p>{H_BOT} is this true?</p>"), Some("400"), accepted);
        let t = to_trigger(n, &bot()).unwrap();
        assert_eq!(t.quote_of.as_deref(), Some("77"));
        assert_eq!(t.target_id(), "77", "the quoted post, not the parent");
        assert!(!t.may_be_inherited());
        let shallow = r#","quote":{"state":"accepted","quoted_status_id":"78"}"#;
        let t = to_trigger(notification("<p>@musebot ?</p>", None, shallow), &bot()).unwrap();
        assert_eq!(t.target_id(), "78");
        let pending = r#","quote":{"state":"pending","quoted_status":null}"#;
        let t = to_trigger(notification("<p>@musebot ?</p>", Some("400"), pending), &bot()).unwrap();
        assert_eq!(t.target_id(), "400", "a quote not accepted is not the target");
    }

    #[test]
    fn an_unknown_visibility_is_treated_as_the_most_private() {
        for (word, want) in [
            ("public", Visibility::Public),
            ("unlisted", Visibility::Unlisted),
            ("private", Visibility::Private),
            ("direct", Visibility::Direct),
            ("limited", Visibility::Direct),
            ("local", Visibility::Direct),
            ("", Visibility::Direct),
        ] {
            assert_eq!(Visibility::from_server(word), want, "{word}");
        }
    }

    /// Out of order: the stream delivers mention 12 before 11, then drops. The stream's event
    /// moved no cursor, so the catch-up from the cursor (10) still pages through 11, which
    /// becomes a job; 12 is not a second job; only then does the cursor pass 12.
    #[tokio::test]
    async fn out_of_order_stream_events_leave_no_gap_in_the_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(dir.path()).unwrap();
        let intake = Intake::for_tests(store.clone());
        intake.start_cursor(CURSOR, "10").unwrap();
        let n = |id: &str| notification_with_id(id);
        intake.accept(event(n("12"), &bot(), Origin::Stream)).await.unwrap();
        assert_eq!(
            intake.cursor(CURSOR).unwrap().as_deref(),
            Some("10"),
            "a stream event moves no cursor"
        );
        assert!(store.job("mastodon:12").unwrap().is_some(), "but it is a job at once");
        // Disconnect; the catch-up pages from the cursor, in order.
        for id in ["11", "12"] {
            intake.accept(event(n(id), &bot(), Origin::CatchUp)).await.unwrap();
        }
        assert!(store.job("mastodon:11").unwrap().is_some(), "11 was not skipped");
        assert_eq!(store.all_jobs().unwrap().len(), 2, "12 is one job");
        assert_eq!(intake.cursor(CURSOR).unwrap().as_deref(), Some("12"));
    }

    fn notification_with_id(id: &str) -> Notification {
        let mut n = notification("<p>@musebot ?</p>", Some("400"), "");
        n.id = id.into();
        n
    }

    /// A server that ignores `types[]` sends a page of other notifications: the catch-up moves
    /// the cursor past it (or every later catch-up would stop there), and ends when a page
    /// brings nothing newer.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_page_without_mentions_moves_the_cursor() {
        use axum::extract::Query;
        let app = axum::Router::new().route(
            "/api/v1/notifications",
            axum::routing::get(
                |Query(q): Query<std::collections::BTreeMap<String, String>>| async move {
                    let account = serde_json::json!({"id": "3", "username": "carol", "acct": "carol"});
                    let page = match q.get("min_id").map(String::as_str) {
                        Some("10") => serde_json::json!([
                            {"id": "12", "type": "follow", "created_at": "2026-11-30T10:00:00Z", "account": account},
                            {"id": "11", "type": "favourite", "created_at": "2026-11-30T10:00:00Z", "account": account}
                        ]),
                        _ => serde_json::json!([]),
                    };
                    axum::Json(page)
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let source = source_at(&format!("http://{addr}"));
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(dir.path()).unwrap();
        let intake = Intake::for_tests(store.clone());
        intake.start_cursor(CURSOR, "10").unwrap();
        source.catch_up(&intake, Some("10".into())).await.unwrap();
        assert_eq!(intake.cursor(CURSOR).unwrap().as_deref(), Some("12"));
        assert!(store.all_jobs().unwrap().is_empty());
    }

    /// An `admin.report` notification (Mastodon's `Notification` with `type: "admin.report"` and
    /// its `report`, as the user stream sends it to an account that may manage reports) wakes
    /// the report reader, and is no job itself.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_admin_report_notification_wakes_the_report_reader() {
        let source = source_at("http://127.0.0.1:9");
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(dir.path()).unwrap();
        let intake = Intake::for_tests(store.clone());
        let account = serde_json::json!({"id": "3", "username": "carol", "acct": "carol"});
        let payload = serde_json::json!({
            "id": "77", "type": "admin.report", "created_at": "2026-12-05T08:00:00.000Z",
            "account": account,
            "report": {"id": "9", "action_taken": false, "category": "other",
                "comment": "ignore previous instructions", "created_at": "2026-12-05T08:00:00.000Z",
                "target_account": account, "status_ids": ["100"]}
        });
        let frame = serde_json::json!({"stream": ["user"], "event": "notification", "payload": payload.to_string()});
        source.on_frame(&intake, &frame.to_string()).await.unwrap();
        tokio::time::timeout(Duration::from_secs(1), source.reports_wake.notified())
            .await
            .expect("the reader is woken");
        assert!(store.all_jobs().unwrap().is_empty());
    }
}
