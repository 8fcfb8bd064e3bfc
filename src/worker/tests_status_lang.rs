//! Every status the bot writes carries the language of the words in it: a
//! property over every path that posts or edits — reply, direct notice, moderator and asker
//! acknowledgements, the usage answer, an update by follow-up or by edit, the withdrawal's
//! acknowledgement — for generated language tags of the checked post and of the asking post
//! (every language the bot has words in, regional and unknown tags, none). Each status's tag
//! must be [`super::words_language`] of its job, never empty, and the status must hold words of
//! that language's own file (a fragment of `locales/<tag>.toml` found in no other file).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestRunner};

use super::tests::{bench, mention, Bench, VERDICT};
use super::tests_living::{rechecks, scheduler};
use super::*;
use crate::config::Corrections;
use crate::model::{Cause, Command, Post, RecheckWhy, Trigger, Visibility};
use crate::test_llm::Script;

const UNSURE: &str = "This post cannot be verified. No report I know of says whether the Moon is made of cheese.";

/// Literal pieces (template code cut out) of each built-in file's values, 4 characters or
/// longer, that no other file has.
fn own_fragments() -> BTreeMap<&'static str, Vec<String>> {
    let mut all: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (lang, text) in crate::words::BUILT_IN {
        let table: BTreeMap<String, String> = toml::from_str(text).unwrap();
        let set = all.entry(lang).or_default();
        for value in table.values() {
            let mut literal = String::new();
            let mut rest = value.as_str();
            while let Some(at) = rest.find(['{']) {
                literal.push_str(&rest[..at]);
                literal.push('\0');
                let close = if rest[at..].starts_with("{{") { "}}" } else { "%}" };
                rest = rest[at..].find(close).map_or("", |e| &rest[at + e + 2..]);
            }
            literal.push_str(rest);
            for piece in literal.split('\0').map(str::trim) {
                if piece.chars().count() >= 4 {
                    set.insert(piece.to_string());
                }
            }
        }
    }
    all.iter()
        .map(|(lang, set)| {
            let own = set
                .iter()
                .filter(|p| all.iter().all(|(other, s)| other == lang || !s.contains(*p)))
                .cloned()
                .collect();
            (*lang, own)
        })
        .collect()
}

/// A part's text without its leading mention and trailing "(i/n)" mark, whitespace collapsed.
fn unmarked(text: &str) -> String {
    let text = match text.split_once(' ') {
        Some((mention, rest)) if mention.starts_with('@') => rest,
        _ => text,
    }
    .trim_end();
    let text = match text.rfind(" (") {
        Some(at) if text.ends_with(')') && text[at + 2..text.len() - 1].contains('/') => &text[..at],
        _ => text,
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Tags a post or a mention may carry.
fn tags() -> Vec<Option<String>> {
    let mut tags: Vec<Option<String>> = crate::words::BUILT_IN
        .iter()
        .map(|(l, _)| Some(l.to_string()))
        .collect();
    for t in ["pt-BR", "zh-TW", "zh-CN", "zh", "de-AT", "en-GB", "eu", "xx", ""] {
        tags.push(Some(t.into()));
    }
    tags.push(None);
    tags
}

struct Case {
    b: Bench,
    answer: Arc<Mutex<String>>,
    fragments: BTreeMap<&'static str, Vec<String>>,
    /// Statuses and edits already checked.
    seen: (usize, usize),
}

impl Case {
    /// Runs one job and checks every status it posted or edited (it must post one).
    async fn run(&mut self, id: &str, what: &str) -> Job {
        self.run_may_skip(id, what, false).await
    }

    /// [`Case::run`], where a job may also end without posting (`may_skip`).
    async fn run_may_skip(&mut self, id: &str, what: &str, may_skip: bool) -> Job {
        let job = self.b.run(id).await;
        let want = super::words_language(&job);
        let posted: Vec<(String, String)> = {
            let texts = self.b.double.texts();
            let langs = self.b.double.langs.lock().unwrap().clone();
            texts.into_iter().zip(langs).skip(self.seen.0).collect()
        };
        let edited: Vec<(String, String)> = {
            let edits = self.b.double.edited.lock().unwrap().clone();
            let langs = self.b.double.edit_langs.lock().unwrap().clone();
            edits.into_iter().map(|e| e.1).zip(langs).skip(self.seen.1).collect()
        };
        self.seen = (self.seen.0 + posted.len(), self.seen.1 + edited.len());
        if may_skip && posted.is_empty() && edited.is_empty() {
            return job;
        }
        assert!(
            !posted.is_empty() || !edited.is_empty(),
            "{what}: nothing was posted ({:?}, {:?})",
            job.status,
            job.last_error
        );
        for (text, lang) in posted.iter().chain(&edited) {
            assert_eq!(lang, want, "{what}: tagged {lang}, words of {want}: {text}");
        }
        // A long sentence may be split between parts: the words are looked for in the
        // statuses joined again (each part's mention and "(i/n)" mark taken off).
        let joined = posted
            .iter()
            .chain(&edited)
            .map(|(t, _)| unmarked(t))
            .collect::<Vec<_>>()
            .join(" ");
        let own = &self.fragments[want];
        assert!(
            own.iter().any(|f| joined.contains(f.as_str())),
            "{what}: tagged {want} but holds none of its words: {joined}"
        );
        job
    }
}

/// One case: the checked post tagged `post_tag`, every ask and command tagged `ask_tag`;
/// updates by follow-up or by edit.
async fn every_path(post_tag: Option<String>, ask_tag: Option<String>, edit: bool) {
    let answer = Arc::new(Mutex::new(UNSURE.to_string()));
    let a = answer.clone();
    let mut b = bench(Script::routed(move |_| a.lock().unwrap().clone())).await;
    let moderation = crate::config::ModerationConfig {
        mastodon_moderators: vec!["mod".into()],
        ..Default::default()
    };
    b.worker.moderation = crate::moderation::Moderation::new(moderation, b.worker.store.clone());
    if edit {
        b.worker.living.corrections = Corrections::Edit;
    }
    let mut post = Post::text_only(
        "100",
        "carol",
        "The Moon is made of cheese.",
        chrono::Utc::now(),
        Visibility::Public,
    );
    post.language = post_tag.clone();
    b.double.add_post(post.clone());
    let mut private = post.clone();
    private.id = "401".into();
    private.visibility = Visibility::Private;
    b.double.add_post(private);
    let mut c = Case {
        b,
        answer,
        fragments: own_fragments(),
        seen: (0, 0),
    };
    let ask = |event: &str, author: &str, cause: Cause, under: &str| Trigger {
        language: ask_tag.clone(),
        cause,
        in_reply_to_id: Some(under.into()),
        author: crate::model::Account {
            handle: author.into(),
            ..mention(event).author
        },
        ..mention(event)
    };
    let command = |command| Cause::Command { command };

    // The reply, in the post's language.
    let id = c.b.add(ask("1", "bob", Cause::Mention, "100"));
    let first = c.run(&id, "reply").await;
    // A direct notice about a post that is not public, in the asker's.
    let notice = c.b.add(ask("2", "bob", Cause::Mention, "401"));
    c.run(&notice, "notice").await;
    // A moderator's command, and one that does not parse.
    let pause = c.b.add(ask("3", "mod", command(Command::Pause), "100"));
    c.run(&pause, "pause").await;
    let unclear =
        c.b.add(ask("4", "mod", command(Command::Unclear("watch".into())), "100"));
    c.run(&unclear, "usage").await;
    // The asker's recheck under the answer: acknowledged; then the update (or the edit).
    let part = first.posted.last().unwrap().clone();
    let recheck = c.b.add(ask("5", "bob", command(Command::Recheck), &part));
    c.run(&recheck, "recheck acknowledgement").await;
    *c.answer.lock().unwrap() = VERDICT.into();
    let kept = c.b.worker.store.kept(&id).unwrap().expect("kept");
    super::tests_living::set_recheck(&c.b, &kept.job_id, RecheckWhy::Edited);
    scheduler(&c.b)
        .tick(chrono::Utc::now() + chrono::Duration::days(2))
        .unwrap();
    let due = rechecks(&c.b);
    assert!(!due.is_empty(), "a re-check is due");
    let before = c.seen;
    for r in due {
        // One of them changes the verdict; the others then find nothing new.
        c.run_may_skip(&r, if edit { "edit" } else { "update" }, true).await;
    }
    assert_ne!(c.seen, before, "the changed verdict was posted or edited in");
    // A moderator withdraws the answer.
    let withdraw =
        c.b.add(ask("6", "mod", command(Command::Withdraw("wrong".into())), &part));
    c.run(&withdraw, "withdrawal").await;
}

#[test]
fn every_status_carries_the_language_of_its_words() {
    let cases = std::env::var("MUSEBOT_PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse::<u32>().ok())
        .map_or(48, |c| (c / 40).max(48));
    let mut runner = TestRunner::new(RunnerConfig {
        cases,
        failure_persistence: None,
        ..RunnerConfig::default()
    });
    let tags = tags();
    let strategy = (
        prop::sample::select(tags.clone()),
        prop::sample::select(tags),
        any::<bool>(),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runner
        .run(&strategy, |(post_tag, ask_tag, edit)| {
            rt.block_on(every_path(post_tag, ask_tag, edit));
            Ok(())
        })
        .unwrap();
}
