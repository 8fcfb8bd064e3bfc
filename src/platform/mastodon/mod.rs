//! Mastodon: intake ([`stream`]), REST ([`client`]), types ([`api`]) and HTML to text ([`text`]).

pub mod api;
pub mod client;
pub mod hashtag;
pub mod public;
pub mod reports;
pub mod stream;
pub mod text;

use std::time::Duration;

use crate::compose::TextLimits;
use crate::config::MastodonConfig;
use crate::model::{Media, MediaKind, Post, Trigger, Visibility};
use crate::platform::PlatformError;
use crate::retry::Transient;
use crate::secret::Secret;
use api::Status;
use client::{MastodonClient, MastodonError};
use stream::MastodonSource;

/// What the worker needs from Mastodon: resolve targets, post parts.
#[derive(Clone)]
pub struct Mastodon {
    pub client: MastodonClient,
    pub limits: TextLimits,
    /// The bot's own handle (`acct`).
    pub bot_acct: String,
    pub bot_account_id: String,
    /// The domain this server's accounts are named under (the instance's `domain`), which
    /// may differ from the host of `mastodon.base_url`.
    pub account_domain: Option<String>,
}

/// Whether a 422 says the post is too long, in the words of the servers we know.
fn is_length_refusal(message: &str) -> bool {
    let m = message.to_lowercase();
    m.contains("too long") || m.contains("character limit") || m.contains("characters limit")
}

impl From<MastodonError> for PlatformError {
    fn from(e: MastodonError) -> Self {
        if let Some(wait) = crate::retry::long_wait(&e).filter(|_| e.is_transient()) {
            let until = chrono::Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default();
            return PlatformError::RateLimited {
                until,
                message: e.to_string(),
            };
        }
        match e.status() {
            Some(404) | Some(410) => PlatformError::Gone(e.to_string()),
            Some(401) | Some(403) => PlatformError::Fatal(e.to_string()),
            // Mastodon: "Text character limit of 500 exceeded"; Pleroma/Akkoma: "... over the
            // character limit"; mastodon-mock: "Text is too long".
            Some(422) if is_length_refusal(&e.to_string()) => PlatformError::TooLong(e.to_string()),
            _ if e.is_transient() => PlatformError::Transient(e.to_string()),
            _ => PlatformError::Fatal(e.to_string()),
        }
    }
}

impl Mastodon {
    /// Checks the token, reads the instance's limits, flags the account as a bot.
    pub async fn connect(config: &MastodonConfig, token: Secret) -> Result<(Mastodon, MastodonSource), PlatformError> {
        let client = MastodonClient::new(config, token).map_err(PlatformError::from)?;
        let me = verify_credentials(&client).await?;
        let instance = instance_of(&client).await;
        let limits = limits_of(&instance);
        if config.set_bot_flag && !me.bot {
            match client.set_bot_flag().await {
                Ok(a) if a.bot => tracing::info!("account flagged as a bot"),
                Ok(_) => tracing::warn!("the server ignored the bot flag; set it in the account's profile settings"),
                Err(e) => {
                    tracing::warn!(error = %e, "could not set the bot flag; set it in the account's profile settings")
                }
            }
        }
        let streaming_base = instance
            .streaming_base()
            .unwrap_or_else(|| client.base_url().to_string())
            .replacen("https://", "wss://", 1)
            .replacen("http://", "ws://", 1);
        tracing::info!(account = %me.acct, max_chars = limits.max_chars, "mastodon ready");
        let source = MastodonSource {
            client: client.clone(),
            streaming_base,
            bot: stream::BotIdentity {
                account_id: me.id.clone(),
                username: me.username.clone(),
            },
            reconnect_max: Duration::from_secs(config.reconnect_max_secs),
            reports_wake: Default::default(),
        };
        Ok((
            Mastodon {
                client,
                limits,
                bot_acct: me.acct,
                bot_account_id: me.id,
                account_domain: instance.account_domain(),
            },
            source,
        ))
    }

    /// A client that only reads (`musebot check`): the instance's limits, no identity check.
    pub async fn reader(config: &MastodonConfig, token: Secret) -> Result<Mastodon, PlatformError> {
        let client = MastodonClient::new(config, token).map_err(PlatformError::from)?;
        let instance = instance_of(&client).await;
        Ok(Mastodon {
            client,
            limits: limits_of(&instance),
            bot_acct: String::new(),
            bot_account_id: String::new(),
            account_domain: instance.account_domain(),
        })
    }

    /// The post a trigger asks about: its parent, or the trigger's own post when top-level.
    pub async fn resolve(&self, trigger: &Trigger) -> Result<Post, PlatformError> {
        Ok(to_post(self.client.status(trigger.target_id()).await?))
    }

    /// Posts one part of a reply; the key makes a repeat return the first post.
    pub async fn post(
        &self,
        text: &str,
        reply_to: &str,
        visibility: Visibility,
        key: &str,
        language: Option<&str>,
    ) -> Result<(String, Option<String>), PlatformError> {
        let s = self
            .client
            .post_status(text, reply_to, visibility, key, language)
            .await?;
        Ok((s.id, s.url))
    }

    /// The posts of `ids` still visible to the bot, by id: 20 a request where the server
    /// reads several at once, else one by one (a gone one is left out).
    pub async fn look_many(&self, ids: &[String]) -> Result<Vec<Post>, PlatformError> {
        let mut out = Vec::new();
        for chunk in ids.chunks(20) {
            match self.client.statuses(chunk).await? {
                Some(list) => out.extend(list.into_iter().map(to_post)),
                None => {
                    for id in chunk {
                        match self.client.status(id).await.map_err(PlatformError::from) {
                            Ok(s) => out.push(to_post(s)),
                            Err(PlatformError::Gone(_)) => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// Deletes one of the bot's posts (gone already: done).
    pub async fn delete(&self, id: &str) -> Result<(), PlatformError> {
        Ok(self.client.delete_status(id).await?)
    }

    /// Edits one of the bot's posts.
    pub async fn edit(&self, id: &str, text: &str, language: Option<&str>) -> Result<(), PlatformError> {
        self.client.edit_status(id, text, language).await?;
        Ok(())
    }

    /// Whether a status the bot's own read misses (404) is deleted or hidden from the bot,
    /// asked of the bot's server without its token: shown → hidden (the author blocks the
    /// bot or its server; a logged-out reader is blocked by no one); 404 or 410 → deleted; a
    /// server that shows logged-out readers nothing (401, 403) cannot tell.
    pub async fn confirm_deleted(&self, id: &str) -> Result<crate::platform::Absence, PlatformError> {
        use crate::platform::Absence;
        match self.client.status_unsigned(id).await {
            Ok(_) => Ok(Absence::Hidden(
                "the post is public but hidden from the bot (its author blocks the bot or its server)".into(),
            )),
            Err(e) => match e.status() {
                Some(404 | 410) => Ok(Absence::Deleted),
                Some(401 | 403) => Ok(Absence::Unknown(format!(
                    "the server shows logged-out readers nothing, so a block cannot be told from a deletion: {e}"
                ))),
                _ if e.is_transient() => Err(e.into()),
                _ => Ok(Absence::Unknown(e.to_string())),
            },
        }
    }

    /// The id of the account named `acct` on the bot's server (what rights are checked by:
    /// an `acct` can be renamed, and then taken by another account).
    /// Looked up by `acct` first; an account of another server this one has not seen yet
    /// (lookup answers 404: it reads only what the server holds) is fetched through search.
    pub async fn account_id(&self, acct: &str) -> Result<String, PlatformError> {
        match self.client.lookup_account(acct).await {
            Ok(a) => Ok(a.id),
            Err(e) if e.status() == Some(404) && acct.contains('@') => match self.client.search_account(acct).await? {
                Some(a) => Ok(a.id),
                None => Err(PlatformError::Gone(format!("no account {acct} found (lookup: {e})"))),
            },
            Err(e) => Err(e.into()),
        }
    }

    /// Whether a post is still there (a 404 or 410 is `false`).
    pub async fn exists(&self, id: &str) -> Result<bool, PlatformError> {
        match self.client.status(id).await.map_err(PlatformError::from) {
            Ok(_) => Ok(true),
            Err(PlatformError::Gone(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    pub async fn status_for_url(&self, url: &str) -> Result<Post, PlatformError> {
        let own_host = url::Url::parse(self.client.base_url())
            .ok()
            .and_then(|u| u.host_str().map(str::to_string));
        let parsed = url::Url::parse(url).map_err(|e| PlatformError::Fatal(format!("`{url}` is not a URL: {e}")))?;
        if parsed.host_str().map(str::to_string) == own_host {
            if let Some(id) = parsed
                .path_segments()
                .and_then(|mut s| s.next_back())
                .filter(|s| s.chars().all(|c| c.is_ascii_digit()))
            {
                return Ok(to_post(self.client.status(id).await?));
            }
        }
        match self.client.search_status(url).await? {
            Some(s) => Ok(to_post(s)),
            None => Err(PlatformError::Gone(format!("no status found at {url}"))),
        }
    }
}

/// The bot's own identity. 401/403 is fatal (the token is wrong or lacks scopes), and so is an
/// account JSON that is not Mastodon's (the URL is not a Mastodon-compatible server).
async fn verify_credentials(client: &MastodonClient) -> Result<Me, PlatformError> {
    match client.verify_credentials().await {
        Ok(a) => Ok(Me {
            id: a.id,
            username: a.username,
            acct: a.acct,
            bot: a.bot,
        }),
        Err(e) if matches!(e.status(), Some(401) | Some(403)) => Err(PlatformError::Fatal(format!(
            "the server refused the access token (HTTP {}) — check mastodon.access_token_env / _file and the token's scopes (read write:statuses; write:accounts to set the bot flag; admin:read:reports for [moderation.reports])",
            e.status().unwrap_or_default()
        ))),
        Err(e @ MastodonError::Decode { .. }) => Err(PlatformError::Fatal(format!(
            "{e} — is mastodon.base_url a Mastodon-compatible server?"
        ))),
        Err(e) => Err(PlatformError::Transient(e.to_string())),
    }
}

/// The instance's description; the defaults (500 characters, URLs 23) when it is unavailable.
async fn instance_of(client: &MastodonClient) -> api::Instance {
    client.instance().await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "instance info unavailable; assuming 500 characters, URLs 23");
        api::Instance::default()
    })
}

/// How the instance counts a post's length.
fn limits_of(instance: &api::Instance) -> TextLimits {
    TextLimits {
        max_chars: instance.configuration.statuses.max_characters,
        chars_per_url: instance.configuration.statuses.characters_reserved_per_url,
    }
}

/// Who the bot is.
struct Me {
    id: String,
    username: String,
    acct: String,
    bot: bool,
}

/// A Mastodon status as the post the pipeline reads: plain text (content warning first), the
/// links' full hrefs, attachments with alt text, and the quoted post when its quote is
/// accepted (Mastodon 4.5; a shallow quote carries only an id, resolved later if needed).
pub fn to_post(s: Status) -> Post {
    let text = text::status_text(&s.content, &s.spoiler_text);
    let mut media: Vec<Media> = s
        .media_attachments
        .iter()
        .filter_map(|a| {
            let url = a.url.clone().or_else(|| a.remote_url.clone())?;
            Some(Media {
                kind: MediaKind::parse(&a.kind),
                url,
                preview_url: a.preview_url.clone(),
                alt: a.description.clone().filter(|d| !d.trim().is_empty()),
            })
        })
        .collect();
    if let Some(card) = s.card.as_ref() {
        if let Some(image) = card.image.clone().filter(|i| !i.is_empty()) {
            media.push(Media {
                kind: MediaKind::LinkPreview,
                url: image,
                preview_url: None,
                alt: card
                    .image_description
                    .clone()
                    .filter(|d| !d.trim().is_empty())
                    .or_else(|| Some(format!("the preview of the linked page \"{}\"", card.title))),
            });
        }
    }
    let quote = s
        .quote
        .filter(|q| q.state == "accepted")
        .and_then(|q| q.quoted_status)
        .map(|q| Box::new(to_post(*q)));
    Post {
        links: text::links(&s.content),
        mentions: s.mentions.iter().map(|m| m.acct.clone()).collect(),
        id: s.id,
        url: s.url,
        author: s.account.acct.clone(),
        // The account's id on the bot's server: an `acct` can be renamed and taken again.
        author_id: Some(s.account.id.clone()).filter(|i| !i.is_empty()),
        author_display_name: s.account.display_name.clone(),
        author_is_bot: s.account.bot,
        author_nobot: s.account.opted_out(),
        version: None,
        text,
        created_at: s.created_at,
        visibility: Visibility::from_server(&s.visibility),
        language: s.language,
        media,
        quote,
    }
}

#[cfg(test)]
mod tests {
    use super::is_length_refusal;

    /// The account domain as servers give it: `/api/v2/instance` `domain` (Mastodon 4.x, the
    /// `LOCAL_DOMAIN`, here different from the web host, as on servers that run at
    /// `social.example.com` with accounts `@alice@example.com`), and v1's `uri`.
    #[test]
    fn the_account_domain_is_read_from_the_instance() {
        let v2: super::api::Instance = serde_json::from_str(
            r#"{"domain":"example.com","title":"Example","version":"4.3.2","source_url":"https://github.com/mastodon/mastodon",
                "configuration":{"urls":{"streaming":"wss://social.example.com"},"statuses":{"max_characters":500,"characters_reserved_per_url":23}}}"#,
        )
        .unwrap();
        assert_eq!(v2.account_domain().as_deref(), Some("example.com"));
        let v1: super::api::Instance = serde_json::from_str(
            r#"{"uri":"Example.com","title":"Example","urls":{"streaming_api":"wss://social.example.com"}}"#,
        )
        .unwrap();
        assert_eq!(v1.account_domain().as_deref(), Some("example.com"));
        let none: super::api::Instance = serde_json::from_str("{}").unwrap();
        assert_eq!(none.account_domain(), None);
    }

    #[test]
    fn length_refusals_of_known_servers_are_recognised() {
        for m in [
            "Mastodon answered HTTP 422 for post_status: {\"error\":\"Validation failed: Text character limit of 500 exceeded\"}",
            "{\"error\":\"The status is over the character limit\"}",
            "{\"error\":\"Validation failed: Text is too long (maximum is 500 characters)\"}",
        ] {
            assert!(is_length_refusal(m), "{m}");
        }
        assert!(!is_length_refusal(
            "{\"error\":\"Validation failed: Visibility is not included\"}"
        ));
    }

    /// A status in Mastodon 4.5's JSON (documented in the Status entity: `media_attachments`,
    /// `quote {state, quoted_status}`), with a link, a mention and a hashtag as the server
    /// renders them.
    #[test]
    fn a_status_carries_its_media_links_and_quote() {
        let json = r##"{"id":"2","url":"https://m.example/@a/2","created_at":"2026-11-30T10:00:00.000Z","visibility":"public","language":"en","spoiler_text":"","in_reply_to_id":null,
          "account":{"id":"1","username":"a","acct":"a","display_name":"A","bot":false,"note":""},
          "content":"<p><span class=\"h-card\" translate=\"no\"><a href=\"https://m.example/@bob\" class=\"u-url mention\">@<span>bob</span></a></span> see <a href=\"https://news.example/2026/11/a-very-long-article-path\" target=\"_blank\" rel=\"nofollow noopener\"><span class=\"invisible\">https://</span><span class=\"ellipsis\">news.example/2026/11/a-very-lo</span><span class=\"invisible\">ng-article-path</span></a> <a href=\"https://m.example/tags/moon\" class=\"mention hashtag\" rel=\"tag\">#<span>moon</span></a></p>",
          "media_attachments":[{"id":"9","type":"image","url":"https://files.example/a.png","preview_url":"https://files.example/a_small.png","remote_url":null,"description":"A chart of moon cheese"},
                               {"id":"10","type":"video","url":null,"remote_url":"https://remote.example/v.mp4","description":""}],
          "card":{"url":"https://news.example/2026/11/a-very-long-article-path","title":"A very long article","type":"link","image":"https://files.example/card.png","image_description":""},
          "quote":{"state":"accepted","quoted_status":{"id":"1","created_at":"2026-11-29T10:00:00.000Z","account":{"id":"3","acct":"c@else.example"},"content":"<p>The moon is cheese</p>"}}}"##;
        let post = super::to_post(serde_json::from_str(json).unwrap());
        assert_eq!(post.links, ["https://news.example/2026/11/a-very-long-article-path"]);
        assert_eq!(post.media.len(), 3);
        // The link's preview card: its thumbnail is read like an image, named by the card.
        assert_eq!(post.media[2].kind, crate::model::MediaKind::LinkPreview);
        assert_eq!(post.media[2].url, "https://files.example/card.png");
        assert_eq!(
            post.media[2].alt.as_deref(),
            Some("the preview of the linked page \"A very long article\"")
        );
        assert_eq!(post.media[0].kind, crate::model::MediaKind::Image);
        assert_eq!(post.media[0].alt.as_deref(), Some("A chart of moon cheese"));
        assert_eq!(post.media[1].url, "https://remote.example/v.mp4");
        assert_eq!(post.media[1].alt, None);
        let quote = post.quote.expect("accepted quote");
        assert_eq!(quote.text, "The moon is cheese");
        assert_eq!(quote.author, "c@else.example");
        // A quote not (or no longer) accepted is not shown to the pipeline.
        let pending = json.replace("\"accepted\"", "\"pending\"");
        assert!(super::to_post(serde_json::from_str(&pending).unwrap()).quote.is_none());
    }
}

#[cfg(test)]
#[path = "peer_tests.rs"]
mod peer_tests;
