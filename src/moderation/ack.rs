//! The bot's own words for each command's acknowledgement (short, plain, no untrusted text
//! but the moderator's own tag and id, already normalised by the parser).

use crate::model::{TagPolicy, TagWatch};

/// `watch` past `moderation.max_watched_tags`.
pub fn too_many_tags(tag: &str, max: usize) -> String {
    format!("Not watching #{tag}: {max} hashtags are watched already, the most allowed. Unwatch one first.")
}

pub fn watch(tag: &str, new: bool, p: &TagPolicy) -> String {
    if new {
        format!(
            "Watching #{tag}: new posts get a fact-check, at most {} a day, one per author every {} hours, none older than {} hours.",
            p.replies_per_day, p.author_window_hours, p.max_age_hours
        )
    } else {
        format!("#{tag} was already watched; nothing changed.")
    }
}

pub fn unwatch(tag: &str, was: bool) -> String {
    if was {
        format!("No longer watching #{tag}.")
    } else {
        format!("#{tag} was not watched; nothing changed.")
    }
}

pub fn pause(changed: bool) -> String {
    if changed {
        "Paused: hashtag auto-replies stop until `resume`; mentions are still answered.".into()
    } else {
        "Already paused.".into()
    }
}

pub fn resume(changed: bool) -> String {
    if changed {
        "Resumed: hashtag auto-replies go on.".into()
    } else {
        "Not paused; nothing changed.".into()
    }
}

/// `show_ids`: list the oldest held drafts' ids (only where the acknowledgement is private: on
/// Bluesky it is a public reply, and the ids name the posts under review).
pub fn status(watches: &[TagWatch], held: &[String], paused: bool, opted_out: usize, show_ids: bool) -> String {
    let tags: Vec<String> = watches.iter().map(|w| format!("#{}", w.tag)).collect();
    let mut text = format!(
        "Status: {}. Watching: {}. Opted-out users: {opted_out}. Drafts waiting for review: {}.",
        if paused { "auto-replies paused" } else { "running" },
        if tags.is_empty() {
            "no tags".into()
        } else {
            tags.join(" ")
        },
        held.len()
    );
    // The oldest few, so a moderator can approve or reject them by id.
    if show_ids {
        for id in held.iter().take(5) {
            text.push_str(&format!("\n- {id}"));
        }
    } else if !held.is_empty() {
        text.push_str(" Their ids are on the admin page.");
    }
    text
}

pub fn stop() -> String {
    "Done: the bot will not check your posts or mention you again. Reply \"start\" to undo.".into()
}

pub fn start() -> String {
    "Welcome back: the bot may check your posts again when asked.".into()
}

pub fn check(url: &str) -> String {
    format!("Checking this post; the answer goes under it: {url}")
}

pub fn not_found(url: &str, why: &str) -> String {
    let why: String = why.chars().take(120).collect();
    format!("Could not find a post at {url} ({why}).")
}

/// How to write a command the moderator got wrong.
pub fn usage(verb: &str) -> String {
    let how = match verb {
        "watch" | "unwatch" => format!("{verb} #tag (one tag)"),
        "approve" | "reject" => format!("{verb} <draft id> (the ids are in \"status\")"),
        other => format!("{other} (nothing after it)"),
    };
    format!("I did not understand that command. Write it alone after my handle: {how}.")
}

pub fn no_such_draft(id: &str) -> String {
    format!("No draft {id} is waiting for review.")
}

pub fn already_decided(id: &str) -> String {
    format!("Draft {id} was already decided; the first decision stands.")
}

pub fn approved(id: &str) -> String {
    format!("Approved: draft {id} will be posted.")
}

pub fn rejected(id: &str) -> String {
    format!("Rejected: draft {id} will not be posted.")
}
