//! A scripted platform for the stage machine's in-process tests (`worker` tests): targets by
//! id, a queue of failures to answer with, and a record of every part "posted" with its key,
//! so a test sees exactly what a real server would have received.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::compose::TextLimits;
use crate::model::{Post, Trigger};
use crate::platform::PlatformError;

/// Which call a scripted failure answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Resolve,
    /// The look before the first part is posted: is the target still there?
    Recheck,
    Post,
    /// The follower's batch read of kept posts.
    LookMany,
    /// A label event (labeler mode).
    Label,
    /// The question whether a post the bot cannot read is deleted or hidden from it.
    Confirm,
    /// A report finding's item delivered to the moderators.
    Note,
}

pub struct Double {
    pub bot: String,
    pub limits: TextLimits,
    /// Posts by id (a trigger resolves to its parent, else to its own post).
    pub posts: Mutex<HashMap<String, Post>>,
    /// Scripted failures: (call, which call of that kind, counted from 0 over the double's
    /// life, error). Each answers once.
    pub failures: Mutex<Vec<(Call, usize, PlatformError)>>,
    /// Every accepted part: (key, reply_to, text). A repeated key returns the first id.
    pub posted: Mutex<Vec<(String, String, String)>>,
    /// Every call, in order (for "what was tried").
    pub calls: Mutex<Vec<Call>>,
    /// Parts deleted, and edits made (id, new text), in order.
    pub deleted: Mutex<Vec<String>>,
    pub edited: Mutex<Vec<(String, String)>>,
    /// The language each accepted part was tagged with, in the order of `posted`.
    pub langs: Mutex<Vec<String>>,
    /// The language each edit was tagged with, in the order of `edited`.
    pub edit_langs: Mutex<Vec<String>>,
    /// Every label event accepted, in order.
    pub labels: Mutex<Vec<crate::model::JobLabel>>,
    /// Report findings delivered, as (key, item), each key once.
    pub notes: Mutex<Vec<(String, crate::model::NoteItem)>>,
    /// Posts that still exist (they stay in `posts`) but are hidden from the bot, as when their
    /// author blocks it: every read of the bot's misses them, [`Double::confirm_deleted`]
    /// finds them.
    pub hidden: Mutex<std::collections::HashSet<String>>,
    /// Plays a platform without labels (Mastodon).
    pub no_labels: std::sync::atomic::AtomicBool,
    /// What a look at a reported post's reports says: may its subject be closed now.
    pub closable: std::sync::atomic::AtomicBool,
}

impl Double {
    pub fn new(limits: TextLimits) -> Double {
        Double {
            bot: "musebot".into(),
            limits,
            posts: Mutex::default(),
            failures: Mutex::default(),
            posted: Mutex::default(),
            calls: Mutex::default(),
            deleted: Mutex::default(),
            edited: Mutex::default(),
            langs: Mutex::default(),
            edit_langs: Mutex::default(),
            labels: Mutex::default(),
            notes: Mutex::default(),
            hidden: Mutex::default(),
            closable: std::sync::atomic::AtomicBool::new(true),
            no_labels: Default::default(),
        }
    }

    pub fn add_post(&self, post: Post) {
        self.posts.lock().unwrap().insert(post.id.clone(), post);
    }

    /// The next call of this kind not already scripted to fail answers `error`.
    pub fn fail(&self, call: Call, error: PlatformError) {
        let mut at = self.count(call);
        let mut failures = self.failures.lock().unwrap();
        while failures.iter().any(|(c, n, _)| *c == call && *n == at) {
            at += 1;
        }
        failures.push((call, at, error));
    }

    /// Call number `nth` of this kind (from 0, over the double's life) answers `error`.
    pub fn fail_at(&self, call: Call, nth: usize, error: PlatformError) {
        self.failures.lock().unwrap().push((call, nth, error));
    }

    /// How many calls of this kind were made.
    pub fn count(&self, call: Call) -> usize {
        self.calls.lock().unwrap().iter().filter(|c| **c == call).count()
    }

    fn scripted(&self, call: Call) -> Result<(), PlatformError> {
        let nth = self.count(call);
        self.calls.lock().unwrap().push(call);
        let mut failures = self.failures.lock().unwrap();
        match failures.iter().position(|(c, n, _)| *c == call && *n == nth) {
            Some(i) => Err(failures.remove(i).2),
            None => Ok(()),
        }
    }

    pub fn resolve(&self, trigger: &Trigger) -> Result<Post, PlatformError> {
        self.scripted(Call::Resolve)?;
        let id = trigger.target_id();
        // A bug some input meets: the stage machine must survive it.
        assert!(id != "panic", "scripted panic while resolving {id}");
        self.visible()
            .get(id)
            .cloned()
            .ok_or_else(|| PlatformError::Gone(format!("no post {id}")))
    }

    /// Whether the trigger's target is still there (a post removed from `posts`, or hidden from
    /// the bot, is gone).
    pub fn recheck(&self, trigger: &Trigger) -> Result<(), PlatformError> {
        self.scripted(Call::Recheck)?;
        let id = trigger.target_id();
        match self.visible().contains_key(id) {
            true => Ok(()),
            false => Err(PlatformError::Gone(format!("post {id} was deleted"))),
        }
    }

    pub fn post(
        &self,
        text: &str,
        reply_to: &str,
        key: &str,
        lang: &str,
    ) -> Result<(String, Option<String>), PlatformError> {
        self.scripted(Call::Post)?;
        let mut posted = self.posted.lock().unwrap();
        if let Some(i) = posted.iter().position(|(k, _, _)| k == key) {
            return Ok((format!("p{i}"), None));
        }
        posted.push((key.into(), reply_to.into(), text.into()));
        self.langs.lock().unwrap().push(lang.into());
        let i = posted.len() - 1;
        Ok((format!("p{i}"), Some(format!("https://double.example/p{i}"))))
    }

    pub fn delete(&self, id: &str) -> Result<(), PlatformError> {
        self.deleted.lock().unwrap().push(id.into());
        Ok(())
    }

    pub fn edit(&self, id: &str, text: &str, lang: &str) -> Result<(), PlatformError> {
        self.edited.lock().unwrap().push((id.into(), text.into()));
        self.edit_langs.lock().unwrap().push(lang.into());
        Ok(())
    }

    /// A report finding's item, delivered once per key.
    /// The version (CID) of post `uri` as it stands; empty for a post without one.
    pub fn cid_of(&self, uri: &str) -> String {
        let posts = self.posts.lock().unwrap();
        posts.get(uri).and_then(|p| p.version.clone()).unwrap_or_default()
    }

    pub fn note(&self, item: &crate::model::NoteItem, key: &str) -> Result<String, PlatformError> {
        self.scripted(Call::Note)?;
        let mut notes = self.notes.lock().unwrap();
        if !notes.iter().any(|(k, _)| k == key) {
            notes.push((key.into(), item.clone()));
        }
        Ok(format!("n:{key}"))
    }

    pub fn emit_label(&self, label: &crate::model::JobLabel) -> Result<(), PlatformError> {
        self.scripted(Call::Label)?;
        self.labels.lock().unwrap().push(label.clone());
        Ok(())
    }

    /// The values in force on `uri` after every accepted event.
    pub fn labels_on(&self, uri: &str) -> Vec<crate::model::LabelValue> {
        let mut on = Vec::new();
        for l in self.labels.lock().unwrap().iter().filter(|l| l.uri == uri) {
            on.retain(|v| !l.negate.contains(v) && !l.create.contains(v));
            on.extend(l.create.iter().copied());
        }
        on
    }

    pub fn look_many(&self, ids: &[String]) -> Vec<Post> {
        self.calls.lock().unwrap().push(Call::LookMany);
        let posts = self.visible();
        ids.iter().filter_map(|i| posts.get(i).cloned()).collect()
    }

    pub fn exists(&self, id: &str) -> bool {
        self.visible().contains_key(id)
    }

    /// The posts the bot can read: those not hidden from it.
    fn visible(&self) -> HashMap<String, Post> {
        let hidden = self.hidden.lock().unwrap();
        let posts = self.posts.lock().unwrap();
        posts
            .iter()
            .filter(|(id, _)| !hidden.contains(*id))
            .map(|(id, p)| (id.clone(), p.clone()))
            .collect()
    }

    /// A post the bot cannot read: hidden from it when it is still in `posts`, else deleted.
    pub fn confirm_deleted(&self, id: &str) -> Result<crate::platform::Absence, PlatformError> {
        self.scripted(Call::Confirm)?;
        if !self.posts.lock().unwrap().contains_key(id) {
            return Ok(crate::platform::Absence::Deleted);
        }
        Ok(match self.hidden.lock().unwrap().contains(id) {
            true => crate::platform::Absence::Hidden("the author blocks the bot".into()),
            false => crate::platform::Absence::Unknown(format!("post {id} reads as there")),
        })
    }

    pub fn texts(&self) -> Vec<String> {
        self.posted.lock().unwrap().iter().map(|p| p.2.clone()).collect()
    }
}
