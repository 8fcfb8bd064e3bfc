//! What a mention can ask of the bot besides a check: a moderator's command (`watch #tag`,
//! `unwatch #tag`, `check <post URL>`, `pause`, `resume`, `status`, `approve <id>`,
//! `reject <id>`, `withdraw[: reason]`, `label` and `unlabel` under the bot's answer, `watch
//! #tag label|reply|both`, `reports on|off`), the asker's or a moderator's
//! `recheck` (under the answer or the checked post), or anyone's opt-out (`stop`) and opt-in
//! (`start`). Parsed from the mention's
//! plain text: the leading `@handles` are dropped and what is left must be exactly one command
//! (case-insensitive, trailing punctuation ignored), so a request such as "@musebot is this
//! true? stop spreading this" is never read as one.

use serde::{Deserialize, Serialize};

/// Closed: the worker answers each, traces and metrics name each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "command", content = "arg")]
pub enum Command {
    /// Follow a hashtag and answer its posts (normalised: lower case, no `#`).
    Watch(String),
    Unwatch(String),
    /// Check the post at this URL.
    Check(String),
    /// Stop hashtag auto-replies (mentions go on).
    Pause,
    Resume,
    Status,
    /// Post a held draft (by job id or its short id).
    Approve(String),
    Reject(String),
    /// The author opts out: never checked or mentioned again until `start`.
    Stop,
    Start,
    /// Look at the answered post again (the asker or a moderator; given in reply to the bot's
    /// answer, or to the checked post).
    Recheck,
    /// Delete the bot's answer (a moderator; in reply to it), with the moderator's reason.
    Withdraw(String),
    /// Watch a hashtag (as `Watch`) and say where its verdicts go in labeler mode
    /// (`watch #tag label`, `… reply`, `… both`).
    WatchAs(String, super::label::Channel),
    /// Put the answer's verdict on the checked post as the bot's label (a moderator; in reply
    /// to the answer or the post), whatever the policy said.
    Label,
    /// Negate the bot's label on the checked post, keeping any reply (a moderator).
    Unlabel,
    /// Follow the platform's reports (`reports on`) or stop following them (`reports off`), a
    /// moderator's switch over `[moderation.reports] enabled`.
    Reports(bool),
    /// A moderator's mention that starts with a command word but does not parse
    /// (`watch #a #b`, `approve` without an id): answered with how to write it.
    Unclear(String),
}

impl Command {
    pub fn as_str(&self) -> &'static str {
        match self {
            Command::Watch(_) => "watch",
            Command::Unwatch(_) => "unwatch",
            Command::Check(_) => "check",
            Command::Pause => "pause",
            Command::Resume => "resume",
            Command::Status => "status",
            Command::Approve(_) => "approve",
            Command::Reject(_) => "reject",
            Command::Stop => "stop",
            Command::Start => "start",
            Command::Recheck => "recheck",
            Command::Withdraw(_) => "withdraw",
            Command::WatchAs(..) => "watch",
            Command::Label => "label",
            Command::Unlabel => "unlabel",
            Command::Reports(_) => "reports",
            Command::Unclear(_) => "unclear",
        }
    }

    /// Whether only a configured moderator may give it (all but `stop`, `start` and
    /// `recheck`, which the asker of the answer may give too: the resolve stage checks whom).
    pub fn for_moderators(&self) -> bool {
        !matches!(self, Command::Stop | Command::Start | Command::Recheck)
    }

    /// The command a mention's plain text gives, if it is exactly one.
    pub fn parse(text: &str) -> Option<Command> {
        let words: Vec<&str> = text
            .split_whitespace()
            .skip_while(|w| w.starts_with('@'))
            .map(|w| w.trim_end_matches(['.', '!', '?', ',', ';', ':']))
            .filter(|w| !w.is_empty())
            .collect();
        let verb = words.first()?.to_lowercase();
        let arg = words.get(1).copied();
        let command = match (verb.as_str(), arg, words.len()) {
            ("watch", Some(a), 2) => Command::Watch(tag(a)?),
            ("watch", Some(a), 3) => Command::WatchAs(tag(a)?, super::label::Channel::parse(words[2])?),
            ("label", None, 1) => Command::Label,
            ("reports", Some(a), 2) if a.eq_ignore_ascii_case("on") => Command::Reports(true),
            ("reports", Some(a), 2) if a.eq_ignore_ascii_case("off") => Command::Reports(false),
            ("unlabel", None, 1) => Command::Unlabel,
            ("unwatch", Some(a), 2) => Command::Unwatch(tag(a)?),
            ("check", Some(a), 2) => Command::Check(address(a)?),
            ("pause", None, 1) => Command::Pause,
            ("resume", None, 1) => Command::Resume,
            ("status", None, 1) => Command::Status,
            ("approve", Some(a), 2) => Command::Approve(id(a)?),
            ("reject", Some(a), 2) => Command::Reject(id(a)?),
            ("stop", None, 1) => Command::Stop,
            ("start", None, 1) => Command::Start,
            ("recheck", None, 1) => Command::Recheck,
            ("withdraw", None, 1) => Command::Withdraw(String::new()),
            // A reason only after a colon ("withdraw: wrong post"), so a request that starts
            // with the word ("@bot withdraw from NATO means…") is not a command.
            ("withdraw", Some(_), _) if verb_ends_with_colon(text) => Command::Withdraw(reason(text)),
            _ => return None,
        };
        Some(command)
    }
}

/// The moderator's command word a mention starts with, when the rest does not parse as that
/// command (`check` excluded: "@bot check this" is an ordinary request).
pub fn attempted(text: &str) -> Option<&'static str> {
    let word = text
        .split_whitespace()
        .find(|w| !w.starts_with('@'))?
        .trim_end_matches(['.', '!', '?', ',', ';', ':'])
        .to_lowercase();
    [
        "watch", "unwatch", "pause", "resume", "status", "approve", "reject", "unlabel", "reports",
    ]
    .into_iter()
    .find(|v| *v == word)
}

fn verb_ends_with_colon(text: &str) -> bool {
    text.split_whitespace()
        .find(|w| !w.starts_with('@'))
        .is_some_and(|w| w.ends_with(':'))
}

/// A moderator's reason: the text after the command's colon, whitespace collapsed, cut at
/// 300 characters (logged, never posted).
fn reason(text: &str) -> String {
    let rest = text.split_once(':').map_or("", |(_, r)| r);
    rest.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .take(300)
        .collect()
}

/// A hashtag as the bot keys it: without `#`, lower case, letters, digits and `_` only.
pub fn tag(word: &str) -> Option<String> {
    let t = word.trim_start_matches('#').to_lowercase();
    let ok = !t.is_empty() && t.chars().count() <= 100 && t.chars().all(|c| c.is_alphanumeric() || c == '_');
    ok.then_some(t)
}

/// A job id: `mastodon:tag:123`, or Bluesky's `bluesky:at://did:plc:x/app.bsky.feed.post/y`.
fn id(word: &str) -> Option<String> {
    let ok = !word.is_empty()
        && word.len() <= 300
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '-' | '_' | '.' | '/'));
    ok.then(|| word.to_string())
}

/// A post's address: a URL, an `at://` URI, or a link as Bluesky's app shortens it in the
/// text (`bsky.app/profile/…`, no scheme: `https://` is put back).
fn address(word: &str) -> Option<String> {
    if word.starts_with("https://") || word.starts_with("http://") || word.starts_with("at://") {
        return Some(word.to_string());
    }
    let (host, path) = word.split_once('/')?;
    let looks_like_host = host.contains('.')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'));
    (looks_like_host && !path.is_empty()).then(|| format!("https://{word}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_read_after_the_leading_mentions() {
        assert_eq!(
            Command::parse("@musebot watch #Election2026"),
            Some(Command::Watch("election2026".into()))
        );
        assert_eq!(
            Command::parse("@musebot@bots.example @alice UNWATCH outbreak."),
            Some(Command::Unwatch("outbreak".into()))
        );
        assert_eq!(Command::parse("@musebot pause!"), Some(Command::Pause));
        assert_eq!(Command::parse("@musebot.bsky.social stop"), Some(Command::Stop));
        assert_eq!(Command::parse("@musebot @bob Start"), Some(Command::Start));
        assert_eq!(
            Command::parse("@musebot check https://mastodon.social/@a/1"),
            Some(Command::Check("https://mastodon.social/@a/1".into()))
        );
        assert_eq!(
            Command::parse("@musebot approve mastodon:42"),
            Some(Command::Approve("mastodon:42".into()))
        );
        let bluesky = "bluesky:tag:at://did:plc:abc/app.bsky.feed.post/3kx";
        assert_eq!(
            Command::parse(&format!("@musebot.bsky.social reject {bluesky}")),
            Some(Command::Reject(bluesky.into()))
        );
        assert_eq!(Command::parse("@musebot recheck"), Some(Command::Recheck));
        assert_eq!(
            Command::parse("@musebot withdraw"),
            Some(Command::Withdraw(String::new()))
        );
        assert_eq!(
            Command::parse("@musebot Withdraw: wrong post, sorry"),
            Some(Command::Withdraw("wrong post, sorry".into()))
        );
        assert_eq!(
            Command::parse("@musebot watch #Moon LABEL"),
            Some(Command::WatchAs("moon".into(), crate::model::Channel::Label))
        );
        assert_eq!(
            Command::parse("@musebot watch #moon both."),
            Some(Command::WatchAs("moon".into(), crate::model::Channel::Both))
        );
        assert_eq!(Command::parse("@musebot label"), Some(Command::Label));
        assert_eq!(Command::parse("@musebot Unlabel."), Some(Command::Unlabel));
        assert!(Command::Label.for_moderators() && Command::Unlabel.for_moderators());
        assert!(!Command::Recheck.for_moderators());
        assert!(Command::Withdraw(String::new()).for_moderators());
        // The Bluesky app writes links without their scheme in the text.
        assert_eq!(
            Command::parse("@musebot.bsky.social check bsky.app/profile/a.bsky.social/post/3kx"),
            Some(Command::Check("https://bsky.app/profile/a.bsky.social/post/3kx".into()))
        );
    }

    #[test]
    fn requests_that_merely_contain_a_command_word_are_not_commands() {
        for text in [
            "@musebot is this true? stop spreading this",
            "@musebot stop it please",
            "@musebot check this",
            "@musebot check this/that",
            "@musebot watch #a #b",
            "@musebot watch #",
            "@musebot status?? of the vaccine",
            "@musebot withdraw from NATO would cost nothing?",
            "@musebot recheck this one",
            "@musebot label this as false",
            "@musebot watch #moon sometimes",
            "stop @musebot is wrong",
            "@musebot",
            "",
        ] {
            assert_eq!(Command::parse(text), None, "{text}");
        }
        assert!(!Command::Stop.for_moderators());
        assert_eq!(attempted("@musebot watch #a #b"), Some("watch"));
        assert_eq!(attempted("@musebot Approve"), Some("approve"));
        assert_eq!(attempted("@musebot check this"), None);
        assert_eq!(attempted("@musebot is this true?"), None);
        assert!(Command::Pause.for_moderators());
    }
}
