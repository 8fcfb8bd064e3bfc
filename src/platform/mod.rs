//! The only code that talks to social platforms. [`Platform`] is a closed enum: adding
//! Bluesky is a new variant, and the compiler lists every place that must handle it.
//! [`Platforms`] holds one per kind, so one daemon serves several accounts at once and a
//! worker reaches each job's platform by the job's [`PlatformKind`]. [`dry_run`] resolves
//! posts but never posts (`musebot check`). [`source`] is the one shape intake understands.

pub mod bluesky;
#[cfg(test)]
pub mod double;
pub mod dry_run;
pub mod mastodon;
pub mod source;

use crate::compose::TextLimits;
use crate::model::{PlatformKind, Post, Trigger, Visibility};

/// How a platform call failed, as far as the job cares.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PlatformError {
    /// Worth retrying later (network, 429, 5xx).
    #[error("{0}")]
    Transient(String),
    /// The post is gone or hidden (404/410): nothing to answer.
    #[error("{0}")]
    Gone(String),
    /// The server refused a post as too long although it fit the advertised rules.
    #[error("{0}")]
    TooLong(String),
    /// Retrying will not help (bad token, rejected post).
    #[error("{0}")]
    Fatal(String),
    /// The server asked to wait minutes or hours (a rate limit that lasts): park the job until
    /// then, without spending an attempt.
    #[error("{message} (until {until})")]
    RateLimited {
        until: chrono::DateTime<chrono::Utc>,
        message: String,
    },
}

/// What a post the bot can no longer read turned out to be, asked of a reader the bot's
/// blocks do not apply to (Mastodon: the bot's server without its token; Bluesky: the
/// author's own repository). Only `Deleted` takes an answer down: a block, a deactivation or
/// a server that will not say leaves the correction up under a post that may still be there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Absence {
    /// The post no longer exists.
    Deleted,
    /// The post is there, but not for the bot (the author blocked it or its server): why.
    Hidden(String),
    /// The platform cannot tell (reads need a login, the account is deactivated or taken
    /// down, its repository cannot be found): why.
    Unknown(String),
}

/// One part of a reply thread, as the worker hands it to a platform.
#[derive(Debug, Clone, Copy)]
pub struct Part<'a> {
    pub text: &'a str,
    /// The post this part answers (the asking post or the previous part).
    pub reply_to: &'a str,
    pub visibility: Visibility,
    /// Stable per job and part: a repeat of the same part returns the first post.
    pub key: &'a str,
    /// When the job was created and the part's place in it (`2 × index`, +1 once re-split):
    /// what platforms that need time-ordered record keys derive them from.
    pub created: chrono::DateTime<chrono::Utc>,
    pub seq: u32,
    /// The language of the words in it (the bot's and the explanation's; every
    /// status carries one, so it is not optional): Mastodon's `language`, Bluesky's `langs`.
    pub lang: &'a str,
    /// The requester, as (handle, stable id) where the platform links mentions to an id (the
    /// DID on Bluesky, as the notification gave it): the one mention a part may carry.
    pub mention: Option<(&'a str, &'a str)>,
}

#[derive(Clone)]
pub enum Platform {
    Mastodon(mastodon::Mastodon),
    Bluesky(bluesky::Bluesky),
    /// Resolves posts, never posts (`musebot check`).
    DryRun(dry_run::DryRun),
    /// A scripted platform for the stage machine's own tests.
    #[cfg(test)]
    Double(std::sync::Arc<double::Double>),
}

impl Platform {
    pub fn kind(&self) -> PlatformKind {
        match self {
            Platform::Mastodon(_) => PlatformKind::Mastodon,
            Platform::Bluesky(_) => PlatformKind::Bluesky,
            Platform::DryRun(d) => d.kind,
            #[cfg(test)]
            Platform::Double(_) => PlatformKind::Mastodon,
        }
    }

    pub fn limits(&self) -> TextLimits {
        match self {
            Platform::Mastodon(m) => m.limits,
            Platform::Bluesky(b) => b.limits(),
            Platform::DryRun(d) => d.limits(),
            #[cfg(test)]
            Platform::Double(d) => d.limits,
        }
    }

    /// The post a trigger asks about: a reply's parent, else the trigger's own post.
    pub async fn resolve(&self, trigger: &Trigger) -> Result<Post, PlatformError> {
        match self {
            Platform::Mastodon(m) => m.resolve(trigger).await,
            Platform::Bluesky(b) => b.resolve(trigger).await,
            Platform::DryRun(d) => d.resolve().await,
            #[cfg(test)]
            Platform::Double(d) => d.resolve(trigger),
        }
    }

    /// Whether the trigger's target is still there, just before the first part is posted (a
    /// post deleted while the reply was drafted is not answered). `musebot check` posts
    /// nothing and looks at nothing again.
    pub async fn recheck(&self, trigger: &Trigger) -> Result<(), PlatformError> {
        match self {
            Platform::Mastodon(m) => m.resolve(trigger).await.map(|_| ()),
            Platform::Bluesky(b) => b.resolve(trigger).await.map(|_| ()),
            Platform::DryRun(_) => Ok(()),
            #[cfg(test)]
            Platform::Double(d) => d.recheck(trigger),
        }
    }

    /// The post at a URL (Mastodon: any server's status URL, resolved through search;
    /// Bluesky: a bsky.app link or an at:// URI), for a moderator's `check`.
    pub async fn post_at_url(&self, url: &str) -> Result<Post, PlatformError> {
        match self {
            Platform::Mastodon(m) => m.status_for_url(url).await,
            Platform::Bluesky(b) => b.post_at(url).await,
            Platform::DryRun(_) => Err(PlatformError::Fatal("a dry run reads no other post".into())),
            #[cfg(test)]
            Platform::Double(_) => Err(PlatformError::Fatal("the test double reads no other post".into())),
        }
    }

    /// Posts one thread part; returns its id and public URL. The part's key makes a repeat
    /// return the first post instead of a second one.
    pub async fn post(&self, part: &Part<'_>) -> Result<(String, Option<String>), PlatformError> {
        match self {
            Platform::Mastodon(m) => {
                m.post(part.text, part.reply_to, part.visibility, part.key, Some(part.lang))
                    .await
            }
            Platform::Bluesky(b) => b.post(part).await,
            Platform::DryRun(d) => Ok(d.post(part.key)),
            #[cfg(test)]
            Platform::Double(d) => d.post(part.text, part.reply_to, part.key, part.lang),
        }
    }

    /// Delivers one item of a report's finding to the platform's moderators (Mastodon: a
    /// direct message part, under `previous`; Bluesky: an event on the subject in the
    /// labeler's Ozone) and returns its id. `key` makes a repeat return the first delivery.
    pub async fn deliver_note(
        &self,
        item: &crate::model::NoteItem,
        target: &Post,
        previous: &str,
        key: &str,
        lang: &str,
    ) -> Result<String, PlatformError> {
        use crate::model::NoteItem;
        match (self, item) {
            (Platform::Mastodon(m), NoteItem::Message(text)) => {
                Ok(m.post(text, previous, Visibility::Direct, key, Some(lang)).await?.0)
            }
            (Platform::Mastodon(_), other) => Err(PlatformError::Fatal(format!(
                "Mastodon has no {} for reports",
                other.as_str()
            ))),
            (Platform::Bluesky(b), item) => {
                let cid = target.version.clone().unwrap_or_default();
                b.ozone_event(item, &target.id, &cid, key).await
            }
            (Platform::DryRun(_), _) => Ok(key.to_string()),
            #[cfg(test)]
            (Platform::Double(d), item) => d.note(item, key),
        }
    }

    /// Whether the bot may close the reported post's subject now (Bluesky: every report on it,
    /// read again, is one a fact-check judges and none is newer than `since`); elsewhere
    /// nothing is closed, so nothing stands in the way.
    pub async fn may_close(&self, target: &Post, since: chrono::DateTime<chrono::Utc>) -> Result<bool, PlatformError> {
        match self {
            Platform::Bluesky(b) => b.may_close(&target.id, since).await,
            #[cfg(test)]
            Platform::Double(d) => Ok(d.closable.load(std::sync::atomic::Ordering::SeqCst)),
            _ => Ok(true),
        }
    }

    /// Where the platform's moderators open a report (Mastodon's admin page); `None` where
    /// the finding sits on the report itself (Bluesky's Ozone).
    pub fn report_link(&self, report: &str) -> Option<String> {
        match self {
            Platform::Mastodon(m) if !report.is_empty() => {
                Some(format!("{}/admin/reports/{report}", m.client.base_url()))
            }
            _ => None,
        }
    }

    /// The posts of `ids` that are still there for the bot, in as few requests as the
    /// platform allows (the follower's round); one missing is deleted, hidden — or missing
    /// from a partial answer, so a caller confirms with [`Platform::resolve`] before acting.
    pub async fn look_many(&self, ids: &[String]) -> Result<Vec<Post>, PlatformError> {
        match self {
            Platform::Mastodon(m) => m.look_many(ids).await,
            Platform::Bluesky(b) => b.look_many(ids).await,
            Platform::DryRun(_) => Ok(Vec::new()),
            #[cfg(test)]
            Platform::Double(d) => Ok(d.look_many(ids)),
        }
    }

    /// Whether a post the bot could not read (`Gone`) is deleted or only hidden from the bot,
    /// asked where blocks do not apply. A failure to ask (network, a rate limit) is an error:
    /// nothing is decided until it can be asked again.
    pub async fn confirm_deleted(&self, id: &str) -> Result<Absence, PlatformError> {
        match self {
            Platform::Mastodon(m) => m.confirm_deleted(id).await,
            Platform::Bluesky(b) => b.confirm_deleted(id).await,
            Platform::DryRun(_) => Ok(Absence::Unknown("a dry run reads nothing again".into())),
            #[cfg(test)]
            Platform::Double(d) => d.confirm_deleted(id),
        }
    }

    /// At most how many kept posts a follower's round may read here: unbounded where posts are
    /// read in batches; 10 on a Mastodon server that reads one status a request (each is a
    /// request on the budget replies share).
    pub fn follow_cap(&self) -> usize {
        match self {
            Platform::Mastodon(m) if !m.client.reads_in_batches() => 10,
            _ => usize::MAX,
        }
    }

    /// Deletes one of the bot's own posts (a part of its answer); one already gone counts as
    /// deleted. `musebot check` deletes nothing.
    pub async fn delete(&self, id: &str) -> Result<(), PlatformError> {
        match self {
            Platform::Mastodon(m) => m.delete(id).await,
            Platform::Bluesky(b) => b.delete(id).await,
            Platform::DryRun(_) => Ok(()),
            #[cfg(test)]
            Platform::Double(d) => d.delete(id),
        }
    }

    /// Edits one of the bot's own posts (Mastodon only; elsewhere `Fatal`: post a follow-up).
    pub async fn edit(&self, id: &str, text: &str, lang: &str) -> Result<(), PlatformError> {
        match self {
            Platform::Mastodon(m) => m.edit(id, text, Some(lang)).await,
            Platform::Bluesky(_) => Err(PlatformError::Fatal("Bluesky has no edit".into())),
            Platform::DryRun(_) => Ok(()),
            #[cfg(test)]
            Platform::Double(d) => d.edit(id, text, lang),
        }
    }

    /// Whether a post is still there (the post that asked, when the operator deletes answers
    /// whose asker deleted it).
    pub async fn exists(&self, id: &str) -> Result<bool, PlatformError> {
        match self {
            Platform::Mastodon(m) => m.exists(id).await,
            Platform::Bluesky(b) => b.exists(id).await,
            Platform::DryRun(_) => Ok(true),
            #[cfg(test)]
            Platform::Double(d) => Ok(d.exists(id)),
        }
    }

    /// Emits a label event on a post (Bluesky's labeler mode, through Ozone); Mastodon has
    /// no labels (`Fatal`), `musebot check` labels nothing.
    pub async fn emit_label(&self, label: &crate::model::JobLabel) -> Result<(), PlatformError> {
        match self {
            Platform::Mastodon(_) => Err(PlatformError::Fatal("Mastodon has no labels".into())),
            Platform::Bluesky(b) => b.emit_label(label).await,
            Platform::DryRun(_) => Ok(()),
            #[cfg(test)]
            Platform::Double(d) => d.emit_label(label),
        }
    }

    /// The bot's label values in force on a post (created and not negated since), as its
    /// labeler serves them.
    pub async fn labels_on(&self, uri: &str) -> Result<Vec<crate::model::LabelValue>, PlatformError> {
        match self {
            Platform::Mastodon(_) | Platform::DryRun(_) => Ok(Vec::new()),
            Platform::Bluesky(b) => Ok(bluesky::labels::in_force(&b.labels_on(uri).await?)),
            #[cfg(test)]
            Platform::Double(d) => Ok(d.labels_on(uri)),
        }
    }

    /// Whether the platform can carry labels (Bluesky; Mastodon has none).
    pub fn has_labels(&self) -> bool {
        match self {
            Platform::Bluesky(_) => true,
            Platform::Mastodon(_) | Platform::DryRun(_) => false,
            #[cfg(test)]
            Platform::Double(d) => !d.no_labels.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// The version of a post a label is put on (Bluesky: its CID; elsewhere empty).
    pub async fn cid_of(&self, uri: &str) -> Result<String, PlatformError> {
        match self {
            Platform::Bluesky(b) => b.cid_of(uri).await,
            #[cfg(test)]
            Platform::Double(d) => Ok(d.cid_of(uri)),
            _ => Ok(String::new()),
        }
    }

    /// Whether the platform can edit a post in place (Mastodon).
    pub fn can_edit(&self) -> bool {
        matches!(self, Platform::Mastodon(_))
    }

    /// Where a reply thread hangs: under the checked post on Mastodon (where the thread of the
    /// claim is read), under the post that asked on Bluesky (where replies to a reply are
    /// what the asker and the thread see; the AppView shows them there).
    pub fn reply_anchor(&self, trigger: &Trigger, target: &Post) -> String {
        match self {
            Platform::Bluesky(_) => trigger.status_id.clone(),
            Platform::DryRun(d) if d.kind == PlatformKind::Bluesky => trigger.status_id.clone(),
            _ => target.id.clone(),
        }
    }

    /// The handle a reply addresses (`@user` or `@user@domain`).
    pub fn handle(&self, acct: &str) -> String {
        match self {
            Platform::Mastodon(_) | Platform::Bluesky(_) | Platform::DryRun(_) => format!("@{acct}"),
            #[cfg(test)]
            Platform::Double(_) => format!("@{acct}"),
        }
    }

    pub fn is_self(&self, acct: &str) -> bool {
        match self {
            Platform::Mastodon(m) => m.bot_acct.eq_ignore_ascii_case(acct),
            Platform::Bluesky(b) => b.bot.handle.eq_ignore_ascii_case(acct),
            Platform::DryRun(_) => false,
            #[cfg(test)]
            Platform::Double(d) => d.bot.eq_ignore_ascii_case(acct),
        }
    }
}

/// The platforms a daemon serves, at most one per kind.
#[derive(Clone, Default)]
pub struct Platforms(Vec<Platform>);

impl Platforms {
    pub fn new(platforms: impl IntoIterator<Item = Platform>) -> Platforms {
        let mut out = Platforms::default();
        for p in platforms {
            out.insert(p);
        }
        out
    }

    /// Adds a platform, replacing one of the same kind.
    pub fn insert(&mut self, platform: Platform) {
        self.0.retain(|p| p.kind() != platform.kind());
        self.0.push(platform);
    }

    pub fn get(&self, kind: PlatformKind) -> Option<&Platform> {
        self.0.iter().find(|p| p.kind() == kind)
    }
}
