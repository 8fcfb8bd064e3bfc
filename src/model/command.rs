//! What a mention can ask of the bot besides a check: a moderator's command (`watch #tag`,
//! `unwatch #tag`, `check <post URL>`, `pause`, `resume`, `status`, `approve <id>`,
//! `reject <id>`) or anyone's opt-out (`stop`) and opt-in (`start`). Parsed from the mention's
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
            Command::Unclear(_) => "unclear",
        }
    }

    /// Whether only a configured moderator may give it (all but `stop` and `start`).
    pub fn for_moderators(&self) -> bool {
        !matches!(self, Command::Stop | Command::Start)
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
            ("unwatch", Some(a), 2) => Command::Unwatch(tag(a)?),
            ("check", Some(a), 2) => Command::Check(address(a)?),
            ("pause", None, 1) => Command::Pause,
            ("resume", None, 1) => Command::Resume,
            ("status", None, 1) => Command::Status,
            ("approve", Some(a), 2) => Command::Approve(id(a)?),
            ("reject", Some(a), 2) => Command::Reject(id(a)?),
            ("stop", None, 1) => Command::Stop,
            ("start", None, 1) => Command::Start,
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
    ["watch", "unwatch", "pause", "resume", "status", "approve", "reject"]
        .into_iter()
        .find(|v| *v == word)
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
