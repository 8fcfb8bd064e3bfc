//! Bluesky (AT Protocol): the session and calls ([`xrpc`]), notifications as triggers
//! ([`source`]), records and views → `Trigger`/`Post` ([`records`]), facets and record keys
//! ([`richtext`]).
//!
//! A reply goes under the post that asked (the mention), chained part to part with
//! `reply {root, parent}` strong refs. Each part's record key is derived from the job and the
//! part ([`richtext::tid`]) and written with `putRecord` + `swapRecord: null` (create if
//! absent): a retry or a post-crash repeat finds the existing record — the PDS answers the
//! same record for an identical write and `InvalidSwap` for a different one, which is then
//! read back — instead of posting the part twice.

pub mod absence;
pub mod firehose;
pub mod hashtag;
pub mod jetstream;
pub mod labels;
pub mod ozone;
pub mod records;
pub mod reports;
pub mod richtext;
pub mod source;
pub mod xrpc;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::compose::TextLimits;
use crate::config::{BlueskyConfig, BlueskyMode};
use crate::model::{Post, Trigger};
use crate::platform::{Part, PlatformError};
use crate::retry::Transient;
use crate::secret::Secret;
use crate::store::Store;
use firehose::FirehoseSource;
use records::BotId;
use source::BlueskySource;
use xrpc::{Login, Xrpc, XrpcError, CREATE_POINTS};

const POST: &str = "app.bsky.feed.post";

/// What the worker needs from Bluesky: resolve targets, post parts.
#[derive(Clone)]
pub struct Bluesky {
    pub xrpc: Xrpc,
    pub bot: BotId,
    /// Strong refs of posts seen or written: uri → (cid, root uri, root cid).
    refs: Arc<Mutex<HashMap<String, Ref>>>,
    /// Posts are read through the AppView (`app.bsky.*`); without one (firehose mode), from
    /// the repos on the PDS.
    appview: bool,
    /// Where `did:plc` identities are resolved (`bluesky.plc_directory`): an author's DID
    /// document names the PDS that holds their posts ([`absence`]).
    plc_directory: String,
    /// Tests only: an author's PDS on loopback is asked (the real rule asks public hosts only).
    #[cfg(test)]
    loopback_pds: bool,
}

/// What listens for mentions: notifications (through the AppView) or the PDS's firehose.
pub enum Listener {
    Notifications(BlueskySource),
    Firehose(FirehoseSource),
}

impl Listener {
    pub async fn run(self, intake: crate::intake::Intake, stop: tokio_util::sync::CancellationToken) {
        match self {
            Listener::Notifications(s) => s.run(intake, stop).await,
            Listener::Firehose(s) => s.run(intake, stop).await,
        }
    }
}

#[derive(Debug, Clone)]
struct Ref {
    cid: String,
    root: (String, String),
}

impl From<XrpcError> for PlatformError {
    fn from(e: XrpcError) -> Self {
        if let Some(wait) = crate::retry::long_wait(&e).filter(|_| e.is_transient()) {
            let until = chrono::Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default();
            return PlatformError::RateLimited {
                until,
                message: e.to_string(),
            };
        }
        match (e.status(), e.name()) {
            (_, Some("NotFound" | "RecordNotFound" | "BlockedActor" | "BlockedByActor")) => {
                PlatformError::Gone(e.to_string())
            }
            (Some(401 | 403), _) | (_, Some("AuthRequired" | "AccountTakedown" | "InvalidToken")) => {
                PlatformError::Fatal(e.to_string())
            }
            _ if e.is_transient() => PlatformError::Transient(e.to_string()),
            _ => PlatformError::Fatal(e.to_string()),
        }
    }
}

/// The text limits of a Bluesky post: 300 graphemes, URLs counted as written.
pub const LIMITS: TextLimits = TextLimits {
    max_chars: records::MAX_GRAPHEMES,
    chars_per_url: crate::compose::AS_WRITTEN,
};

impl Bluesky {
    /// Logs in (refreshing a stored session first), labels the profile as a bot.
    pub async fn connect(
        config: &BlueskyConfig,
        password: Secret,
        store: Option<Store>,
    ) -> Result<(Bluesky, Listener), PlatformError> {
        let xrpc = Xrpc::new(config, password, store).map_err(PlatformError::from)?;
        let how = xrpc.login().await.map_err(|e| match e.status() {
            Some(400..=403) if !e.is_transient() => PlatformError::Fatal(format!(
                "{e} — check bluesky.identifier and the app password in bluesky.app_password_env / _file"
            )),
            _ => PlatformError::from(e),
        })?;
        let (did, handle) = xrpc.account().await.expect("logged in");
        tracing::info!(account = %handle, session = if how == Login::Refreshed { "refreshed" } else { "created" }, "bluesky ready");
        let bot = BotId { did, handle };
        let me = Bluesky {
            xrpc: xrpc.clone(),
            bot: bot.clone(),
            refs: Arc::default(),
            appview: config.mode == BlueskyMode::Notifications,
            plc_directory: config.plc_directory.clone(),
            #[cfg(test)]
            loopback_pds: false,
        };
        if config.set_bot_label {
            if let Err(e) = me.label_as_bot().await {
                tracing::warn!(error = %e, "could not put the bot self-label on the profile; add it in the app's settings");
            }
        }
        let reconnect_max = Duration::from_secs(config.reconnect_max_secs);
        let source = match config.mode {
            BlueskyMode::Notifications => Listener::Notifications(BlueskySource {
                xrpc,
                bot,
                poll: Duration::from_secs(config.poll_secs),
                reconnect_max,
            }),
            BlueskyMode::Firehose => Listener::Firehose(FirehoseSource {
                xrpc,
                bot,
                reconnect_max,
            }),
        };
        Ok((me, source))
    }

    /// A client that only reads (`musebot check`).
    pub async fn reader(config: &BlueskyConfig, password: Secret) -> Result<Bluesky, PlatformError> {
        Ok(Bluesky::connect(
            &BlueskyConfig {
                set_bot_label: false,
                ..config.clone()
            },
            password,
            None,
        )
        .await?
        .0)
    }

    pub fn limits(&self) -> TextLimits {
        LIMITS
    }

    /// The post a trigger asks about. The post that asked is read in the same call: when its
    /// thread's gate keeps the bot from replying there, the job ends here.
    pub async fn resolve(&self, trigger: &Trigger) -> Result<Post, PlatformError> {
        let target = trigger.target_id().to_string();
        if !self.appview {
            return self.post_from_repo(&target).await;
        }
        let mut uris = vec![target.clone()];
        if trigger.status_id != target {
            uris.push(trigger.status_id.clone());
        }
        let views = self.posts(&uris).await?;
        if let Some(asking) = views.iter().find(|v| v.uri == trigger.status_id) {
            if asking.viewer.as_ref().and_then(|v| v.reply_disabled) == Some(true) {
                return Err(PlatformError::Gone(
                    "the thread's author allows no reply from the bot there (threadgate)".into(),
                ));
            }
        }
        let view = views
            .iter()
            .find(|v| v.uri == target)
            .ok_or_else(|| PlatformError::Gone(format!("{target} is deleted, blocked or not visible")))?;
        let mut post = records::to_post(view).map_err(|reason| PlatformError::Gone(format!("{target}: {reason}")))?;
        // A post view's author has no profile text: read it for the `#nobot` opt-out.
        post.author_nobot = self.profile_opts_out(view.author.did.as_str()).await?;
        Ok(post)
    }

    /// Whether an account's profile text carries `#nobot`.
    async fn profile_opts_out(&self, did: &str) -> Result<bool, PlatformError> {
        let profile: serde_json::Value = self
            .xrpc
            .query("getProfile", "app.bsky.actor.getProfile", &[("actor", did.to_string())])
            .await?;
        Ok(profile
            .get("description")
            .and_then(|d| d.as_str())
            .is_some_and(records::has_nobot))
    }

    /// The post at a bsky.app link or an at:// URI (`musebot check`).
    pub async fn post_at(&self, input: &str) -> Result<Post, PlatformError> {
        let (repo, rkey) = records::parse_post_ref(input).ok_or_else(|| {
            PlatformError::Fatal(format!("`{input}` is not a bsky.app post link or an at:// post URI"))
        })?;
        let did = if repo.starts_with("did:") {
            repo
        } else {
            self.resolve_did(&repo).await?
        };
        let uri = format!("at://{did}/{POST}/{rkey}");
        if !self.appview {
            return self.post_from_repo(&uri).await;
        }
        let views = self.posts(std::slice::from_ref(&uri)).await?;
        let view = views
            .first()
            .ok_or_else(|| PlatformError::Gone(format!("{input} is deleted, blocked or not visible")))?;
        records::to_post(view).map_err(|reason| PlatformError::Gone(format!("{input}: {reason}")))
    }

    /// The posts of `uris` still visible, 25 a request (`getPosts`; without an AppView, one
    /// record at a time). A gone one is left out.
    pub async fn look_many(&self, uris: &[String]) -> Result<Vec<Post>, PlatformError> {
        let mut out = Vec::new();
        if !self.appview {
            for uri in uris {
                match self.post_from_repo(uri).await {
                    Ok(p) => out.push(p),
                    Err(PlatformError::Gone(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            return Ok(out);
        }
        for chunk in uris.chunks(25) {
            for view in self.posts(chunk).await? {
                match records::to_post(&view) {
                    Ok(p) => out.push(p),
                    Err(reason) => tracing::warn!(uri = %view.uri, reason, "unreadable post view skipped"),
                }
            }
        }
        Ok(out)
    }

    /// Deletes one of the bot's posts (`com.atproto.repo.deleteRecord`; a record already gone
    /// counts as deleted). Only the bot's own repo: any other URI is refused.
    pub async fn delete(&self, uri: &str) -> Result<(), PlatformError> {
        let own_prefix = format!("at://{}/{POST}/", self.bot.did);
        let Some(rkey) = uri.strip_prefix(&own_prefix) else {
            return Err(PlatformError::Fatal(format!("{uri} is not one of the bot's posts")));
        };
        let body = json!({ "repo": self.bot.did, "collection": POST, "rkey": rkey });
        let done: Result<serde_json::Value, XrpcError> = self
            .xrpc
            .procedure("deleteRecord", "com.atproto.repo.deleteRecord", &body, 1)
            .await;
        self.refs.lock().expect("refs lock").remove(uri);
        match done {
            Ok(_) => Ok(()),
            Err(e) if e.name() == Some("RecordNotFound") => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether a post is still there (deleted, blocked or hidden: `false`).
    pub async fn exists(&self, uri: &str) -> Result<bool, PlatformError> {
        if !self.appview {
            return match self.record_at(uri).await {
                Ok(_) => Ok(true),
                Err(PlatformError::Gone(_)) => Ok(false),
                Err(e) => Err(e),
            };
        }
        Ok(self.posts(&[uri.to_string()]).await?.iter().any(|v| v.uri == uri))
    }

    /// Posts one part under `part.reply_to`; returns its at-URI and bsky.app link.
    pub async fn post(&self, part: &Part<'_>) -> Result<(String, Option<String>), PlatformError> {
        let parent = self.strong_ref(part.reply_to).await?;
        let rkey = richtext::tid(part.created.timestamp_micros(), part.seq, part.key);

        let mut record = json!({
            "$type": POST,
            "text": part.text,
            "createdAt": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "reply": {
                "root": { "uri": parent.root.0, "cid": parent.root.1 },
                "parent": { "uri": part.reply_to, "cid": parent.cid },
            },
        });
        // The one mention facet is the requester's, to the DID the notification gave.
        let facets = richtext::facets(part.text, part.mention);
        if !facets.is_empty() {
            record["facets"] = json!(facets);
        }
        record["langs"] = json!([part.lang]);
        let body = json!({
            "repo": self.bot.did,
            "collection": POST,
            "rkey": rkey,
            "record": record,
            "swapRecord": null,
        });
        let written: Result<Written, XrpcError> = self
            .xrpc
            .procedure("putRecord", "com.atproto.repo.putRecord", &body, CREATE_POINTS)
            .await;
        let (uri, cid) = match written {
            Ok(w) => (w.uri, w.cid),
            Err(e) if e.name() == Some("InvalidSwap") => {
                // Written before (a crash or a lost answer): that record is the part.
                let r = self.own_record(&rkey).await?;
                tracing::info!(uri = %r.uri, "part already posted; using it");
                (r.uri, r.cid)
            }
            // "Invalid app.bsky.feed.post record: Record/text must not be longer than 300 graphemes"
            Err(e) if e.status() == Some(400) && e.to_string().contains("must not be longer than") => {
                return Err(PlatformError::TooLong(e.to_string()));
            }
            Err(e) => return Err(e.into()),
        };
        self.refs.lock().expect("refs lock").insert(
            uri.clone(),
            Ref {
                cid,
                root: parent.root.clone(),
            },
        );
        let url = records::web_url(&uri, &self.bot.handle);
        Ok((uri, url))
    }

    /// The cid and thread root of a post: remembered, read from the bot's own repo, or from
    /// the AppView.
    async fn strong_ref(&self, uri: &str) -> Result<Ref, PlatformError> {
        if let Some(r) = self.refs.lock().expect("refs lock").get(uri).cloned() {
            return Ok(r);
        }
        let own_prefix = format!("at://{}/{POST}/", self.bot.did);
        let (cid, value) = if let Some(rkey) = uri.strip_prefix(&own_prefix) {
            let r = self.own_record(rkey).await?;
            (r.cid, r.value)
        } else if !self.appview {
            let r = self.record_at(uri).await?;
            (r.cid, r.value)
        } else {
            let views = self.posts(&[uri.to_string()]).await?;
            let v = views
                .into_iter()
                .next()
                .ok_or_else(|| PlatformError::Gone(format!("{uri} is deleted, blocked or not visible")))?;
            (
                v.cid.as_ref().to_string(),
                serde_json::to_value(&v.record).unwrap_or_default(),
            )
        };
        let root = value
            .pointer("/reply/root")
            .and_then(|r| Some((r.get("uri")?.as_str()?.to_string(), r.get("cid")?.as_str()?.to_string())))
            .unwrap_or_else(|| (uri.to_string(), cid.clone()));
        let r = Ref { cid, root };
        self.refs.lock().expect("refs lock").insert(uri.to_string(), r.clone());
        Ok(r)
    }

    /// A post read from its repo (no AppView), with its author's handle and `#nobot`.
    async fn post_from_repo(&self, uri: &str) -> Result<Post, PlatformError> {
        let record = self.record_at(uri).await?;
        let did = uri
            .strip_prefix("at://")
            .and_then(|r| r.split('/').next())
            .unwrap_or_default();
        #[derive(Deserialize)]
        struct Described {
            handle: String,
        }
        let described: Described = self
            .xrpc
            .query(
                "describeRepo",
                "com.atproto.repo.describeRepo",
                &[("repo", did.to_string())],
            )
            .await?;
        let author = records::Author {
            handle: &described.handle,
            display_name: None,
            is_bot: false,
        };
        let mut post = records::from_repo(uri, author, &record.value, self.xrpc.service())
            .map_err(|reason| PlatformError::Gone(format!("{uri}: {reason}")))?;
        let profile = self.record_at(&format!("at://{did}/app.bsky.actor.profile/self")).await;
        post.author_nobot = profile
            .ok()
            .and_then(|p| {
                p.value
                    .get("description")
                    .and_then(|d| d.as_str())
                    .map(records::has_nobot)
            })
            .unwrap_or(false);
        Ok(post)
    }

    /// Any record by its at-URI, from the PDS (`getRecord`).
    async fn record_at(&self, uri: &str) -> Result<Record, PlatformError> {
        let mut parts = uri.strip_prefix("at://").unwrap_or(uri).splitn(3, '/');
        let (repo, collection, rkey) = (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
        );
        let params = [
            ("repo", repo.to_string()),
            ("collection", collection.to_string()),
            ("rkey", rkey.to_string()),
        ];
        Ok(self
            .xrpc
            .query("getRecord", "com.atproto.repo.getRecord", &params)
            .await?)
    }

    async fn own_record(&self, rkey: &str) -> Result<Record, PlatformError> {
        let params = [
            ("repo", self.bot.did.clone()),
            ("collection", POST.to_string()),
            ("rkey", rkey.to_string()),
        ];
        Ok(self
            .xrpc
            .query("getRecord", "com.atproto.repo.getRecord", &params)
            .await?)
    }

    async fn posts(&self, uris: &[String]) -> Result<Vec<atrium_api::app::bsky::feed::defs::PostView>, PlatformError> {
        let params: Vec<(&str, String)> = uris.iter().map(|u| ("uris", u.clone())).collect();
        let page: serde_json::Value = self.xrpc.query("getPosts", "app.bsky.feed.getPosts", &params).await?;
        let mut out = Vec::new();
        for item in page.get("posts").and_then(|p| p.as_array()).into_iter().flatten() {
            match serde_json::from_value(item.clone()) {
                Ok(v) => out.push(v),
                Err(e) => {
                    let uri = item.get("uri").and_then(|u| u.as_str()).unwrap_or("?");
                    tracing::warn!(uri, error = %e, "unreadable post view skipped");
                }
            }
        }
        Ok(out)
    }

    /// A handle's DID now (not remembered: handles change hands). For the config's handles at
    /// start.
    pub async fn resolve_did(&self, handle: &str) -> Result<String, PlatformError> {
        Ok(self.xrpc.resolve_handle(handle).await?)
    }

    /// Puts the `bot` self-label on the account's profile (keeping everything else in it).
    async fn label_as_bot(&self) -> Result<(), PlatformError> {
        let params = [
            ("repo", self.bot.did.clone()),
            ("collection", "app.bsky.actor.profile".to_string()),
            ("rkey", "self".to_string()),
        ];
        let current: Result<Record, XrpcError> = self
            .xrpc
            .query("getProfile", "com.atproto.repo.getRecord", &params)
            .await;
        let (mut profile, swap) = match current {
            Ok(r) => (r.value, json!(r.cid)),
            Err(e) if e.name() == Some("RecordNotFound") => (json!({"$type": "app.bsky.actor.profile"}), json!(null)),
            Err(e) => return Err(e.into()),
        };
        let labelled = profile
            .pointer("/labels/values")
            .and_then(|v| v.as_array())
            .is_some_and(|v| v.iter().any(|l| l.get("val").and_then(|x| x.as_str()) == Some("bot")));
        if labelled {
            return Ok(());
        }
        let mut values = profile
            .pointer("/labels/values")
            .and_then(|v| v.as_array())
            .cloned()
            .unwrap_or_default();
        values.push(json!({"val": "bot"}));
        profile["labels"] = json!({"$type": "com.atproto.label.defs#selfLabels", "values": values});
        let body = json!({
            "repo": self.bot.did,
            "collection": "app.bsky.actor.profile",
            "rkey": "self",
            "record": profile,
            "swapRecord": swap,
        });
        let _: serde_json::Value = self
            .xrpc
            .procedure("putProfile", "com.atproto.repo.putRecord", &body, 2)
            .await?;
        tracing::info!("profile self-labelled as a bot");
        Ok(())
    }
}

/// `putRecord`'s answer.
#[derive(Deserialize)]
struct Written {
    uri: String,
    cid: String,
}

/// `getRecord`'s answer.
#[derive(Deserialize)]
struct Record {
    uri: String,
    cid: String,
    value: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16, name: &str, retry_after: Option<Duration>) -> XrpcError {
        XrpcError::Status {
            status,
            what: "putRecord",
            error: name.into(),
            message: "m".into(),
            retry_after,
        }
    }

    #[test]
    fn a_long_rate_limit_parks_the_job_and_errors_map_by_name() {
        // Bluesky's 429 carries `ratelimit-reset` (epoch seconds): an hour away parks the job.
        match PlatformError::from(status(429, "RateLimitExceeded", Some(Duration::from_secs(3600)))) {
            PlatformError::RateLimited { until, .. } => {
                let wait = until - chrono::Utc::now();
                assert!(wait > chrono::Duration::minutes(59), "{wait}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            PlatformError::from(status(429, "RateLimitExceeded", Some(Duration::from_secs(5)))),
            PlatformError::Transient(_)
        ));
        assert!(matches!(
            PlatformError::from(status(400, "RecordNotFound", None)),
            PlatformError::Gone(_)
        ));
        assert!(matches!(
            PlatformError::from(status(400, "AccountTakedown", None)),
            PlatformError::Fatal(_)
        ));
        assert!(matches!(
            PlatformError::from(status(502, "Unknown", None)),
            PlatformError::Transient(_)
        ));
    }
}
