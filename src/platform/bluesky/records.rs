//! Bluesky records and views → the crate's own shapes: a notification → a [`Trigger`], a post
//! view → a [`Post`] (text, link facets resolved to their full URI, link cards, images with alt
//! text, the quoted post). Every record is checked against the lexicon's limits first: a record
//! that breaks them (text over 300 graphemes or 3,000 bytes, facets outside the text, missing
//! fields) is refused with the reason, and the caller skips it and logs why.
//!
//! Types are `atrium-api`'s, decoded one item at a time, so one malformed item costs only
//! itself. An embed of a type this build does not know is ignored (the union is open by
//! design; the post's text is still checked) and logged.

use atrium_api::app::bsky::actor::defs::ProfileViewBasic;
use atrium_api::app::bsky::embed;
use atrium_api::app::bsky::feed::defs::{PostView, PostViewEmbedRefs};
use atrium_api::app::bsky::feed::post::{RecordData, RecordEmbedRefs};
use atrium_api::app::bsky::notification::list_notifications::Notification;
use atrium_api::app::bsky::richtext::facet::MainFeaturesItem;
use atrium_api::com::atproto::label::defs::Label;
use atrium_api::types::Union;
use chrono::{DateTime, Utc};
use unicode_segmentation::UnicodeSegmentation;

use crate::model::{Account, Cause, Media, MediaKind, PlatformKind, Post, Trigger, Visibility};

/// The lexicon's limits on a post's text.
pub const MAX_GRAPHEMES: usize = 300;
pub const MAX_TEXT_BYTES: usize = 3000;

/// The bot as notifications name it.
#[derive(Debug, Clone)]
pub struct BotId {
    pub did: String,
    pub handle: String,
}

/// A notification → a trigger: `Ok(None)` for reasons that are not a request (likes, follows,
/// quotes of the bot …), `Err(reason)` for an item or record that cannot be read.
pub fn trigger_of(item: &serde_json::Value, bot: &BotId) -> Result<Option<Trigger>, String> {
    let n: Notification = serde_json::from_value(item.clone()).map_err(|e| format!("unreadable notification: {e}"))?;
    if !matches!(n.reason.as_str(), "mention" | "reply") {
        return Ok(None);
    }
    let record = post_record(&serde_json::to_value(&n.record).unwrap_or_default())?;
    let mentions_bot = record_mentions(&record, &bot.did)
        || record.text.split_whitespace().any(|t| {
            t.trim_end_matches(['.', ',', '!', '?', ':'])
                .eq_ignore_ascii_case(&format!("@{}", bot.handle))
        });
    let author = &n.author;
    let created_at = parse_time(record.created_at.as_str())
        .or_else(|| parse_time(n.indexed_at.as_str()))
        .unwrap_or_else(Utc::now);
    Ok(Some(Trigger {
        platform: PlatformKind::Bluesky,
        cause: Cause::Mention,
        event_id: n.uri.clone(),
        status_id: n.uri.clone(),
        in_reply_to_id: record.reply.as_ref().map(|r| r.parent.uri.clone()),
        quote_of: quoted_uri(&record),
        // Bluesky clients do not pre-fill handles in replies: a mention is asked for when it
        // names the bot; a reply to the bot only when it names the bot too.
        asked_in_text: n.reason == "mention" || mentions_bot,
        author: Account {
            handle: author.handle.as_str().to_string(),
            is_bot: has_bot_label(author.labels.as_deref()),
            is_self: author.did.as_str() == bot.did,
            nobot: author.description.as_deref().is_some_and(has_nobot),
            id: Some(author.did.as_str().to_string()),
        },
        visibility: Visibility::Public,
        created_at,
        language: record
            .langs
            .as_ref()
            .and_then(|l| l.first())
            .map(|l| l.as_ref().to_string()),
        text: record.text,
    }))
}

/// A post view found on a watched hashtag → a hit: `Ok(None)` when the post does not carry
/// the tag (search matched the text elsewhere), `Err(reason)` for an unreadable record.
pub fn hit_of(view: &PostView, tag: &str, bot: &BotId) -> Result<Option<Trigger>, String> {
    let record = post_record(&serde_json::to_value(&view.record).unwrap_or_default())?;
    let tagged = record.facets.iter().flatten().any(|f| {
        f.features
            .iter()
            .any(|x| matches!(x, Union::Refs(MainFeaturesItem::Tag(t)) if t.tag.eq_ignore_ascii_case(tag)))
    }) || record.text.split_whitespace().any(|w| {
        w.trim_end_matches(['.', ',', '!', '?', ':', ';'])
            .strip_prefix('#')
            .is_some_and(|t| t.eq_ignore_ascii_case(tag))
    });
    if !tagged {
        return Ok(None);
    }
    let created_at = parse_time(record.created_at.as_str()).unwrap_or_else(Utc::now);
    Ok(Some(Trigger {
        platform: PlatformKind::Bluesky,
        cause: Cause::HashtagHit { tag: tag.to_string() },
        event_id: view.uri.clone(),
        status_id: view.uri.clone(),
        in_reply_to_id: record.reply.as_ref().map(|r| r.parent.uri.clone()),
        // The tagged post itself is checked, not a post it quotes.
        quote_of: None,
        asked_in_text: true,
        author: Account {
            handle: view.author.handle.as_str().to_string(),
            is_bot: has_bot_label(view.author.labels.as_deref()),
            is_self: view.author.did.as_str() == bot.did,
            // A basic profile view carries no description; the resolve stage reads it.
            nobot: false,
            id: Some(view.author.did.as_str().to_string()),
        },
        visibility: Visibility::Public,
        created_at,
        language: record
            .langs
            .as_ref()
            .and_then(|l| l.first())
            .map(|l| l.as_ref().to_string()),
        text: record.text,
    }))
}

/// Who wrote a post, as far as a view or a repo tells.
pub struct Author<'a> {
    pub handle: &'a str,
    pub display_name: Option<&'a str>,
    pub is_bot: bool,
}

impl<'a> From<&'a ProfileViewBasic> for Author<'a> {
    fn from(p: &'a ProfileViewBasic) -> Self {
        Author {
            handle: p.handle.as_str(),
            display_name: p.display_name.as_deref(),
            is_bot: has_bot_label(p.labels.as_deref()),
        }
    }
}

/// A post view → the post the pipeline reads.
pub fn to_post(view: &PostView) -> Result<Post, String> {
    let record = post_record(&serde_json::to_value(&view.record).unwrap_or_default())?;
    let mut post = from_record(&view.uri, Author::from(&view.author), &record);
    post.version = serde_json::to_value(&view.cid)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string));
    match &view.embed {
        Some(Union::Refs(e)) => embed_view(&mut post, e),
        Some(Union::Unknown(u)) => {
            tracing::info!(post = %view.uri, kind = %u.r#type, "embed of an unknown type skipped; the text is still checked")
        }
        None => {}
    }
    Ok(post)
}

/// A post read from its repo (no AppView: `bluesky.mode = "firehose"`): the record's own
/// embed — images as the PDS's `getBlob` URLs with their alt text, the link card's URI; a
/// quoted post is not read.
pub fn from_repo(uri: &str, author: Author<'_>, value: &serde_json::Value, service: &str) -> Result<Post, String> {
    let record = post_record(value)?;
    let mut post = from_record(uri, author, &record);
    let did = uri
        .strip_prefix("at://")
        .and_then(|r| r.split('/').next())
        .unwrap_or_default();
    let blob_url = |image: &embed::images::Image| {
        let cid = serde_json::to_value(&image.image)
            .ok()?
            .pointer("/ref/$link")?
            .as_str()?
            .to_string();
        Some(Media {
            kind: MediaKind::Image,
            url: format!("{service}/xrpc/com.atproto.sync.getBlob?did={did}&cid={cid}"),
            preview_url: None,
            alt: Some(image.alt.clone()).filter(|a| !a.trim().is_empty()),
        })
    };
    let images = match &record.embed {
        Some(Union::Refs(RecordEmbedRefs::AppBskyEmbedImagesMain(m))) => Some(&m.images),
        Some(Union::Refs(RecordEmbedRefs::AppBskyEmbedRecordWithMediaMain(m))) => match &m.media {
            Union::Refs(embed::record_with_media::MainMediaRefs::AppBskyEmbedImagesMain(i)) => Some(&i.images),
            _ => None,
        },
        _ => None,
    };
    post.media.extend(images.into_iter().flatten().filter_map(blob_url));
    Ok(post)
}

/// The fields a record gives, without the AppView's rendering of its embed.
fn from_record(uri: &str, author: Author<'_>, record: &RecordData) -> Post {
    let handle = author.handle.to_string();
    let created_at = parse_time(record.created_at.as_str()).unwrap_or_else(Utc::now);
    let mut links = Vec::new();
    let mut mentions = Vec::new();
    for facet in record.facets.iter().flatten() {
        for feature in &facet.features {
            match feature {
                Union::Refs(MainFeaturesItem::Link(l)) => links.push(l.uri.clone()),
                Union::Refs(MainFeaturesItem::Mention(_)) => {
                    let (s, e) = (facet.index.byte_start, facet.index.byte_end);
                    if let Some(t) = record.text.get(s..e) {
                        mentions.push(t.trim_start_matches('@').to_string());
                    }
                }
                _ => {}
            }
        }
    }
    if let Some(Union::Refs(RecordEmbedRefs::AppBskyEmbedExternalMain(e))) = &record.embed {
        links.push(e.external.uri.clone());
    }
    links.dedup();
    // The repo the record lives in is its author's DID: who the post is by, whatever handle
    // the account shows today.
    let author_id = uri
        .strip_prefix("at://")
        .and_then(|r| r.split('/').next())
        .filter(|a| a.starts_with("did:"))
        .map(str::to_string);
    Post {
        id: uri.to_string(),
        url: web_url(uri, &handle),
        author: handle,
        author_id,
        author_display_name: author.display_name.unwrap_or_default().to_string(),
        author_is_bot: author.is_bot,
        author_nobot: false,
        version: None,
        text: record.text.clone(),
        created_at,
        visibility: Visibility::Public,
        language: record
            .langs
            .as_ref()
            .and_then(|l| l.first())
            .map(|l| l.as_ref().to_string()),
        media: Vec::new(),
        links,
        mentions,
        quote: None,
    }
}

/// What the AppView rendered of the embed: images (full size, thumbnail, alt text), the
/// link card, the quoted post.
fn embed_view(post: &mut Post, e: &PostViewEmbedRefs) {
    match e {
        PostViewEmbedRefs::AppBskyEmbedImagesView(v) => post.media.extend(images(v)),
        PostViewEmbedRefs::AppBskyEmbedVideoView(v) => post.media.push(Media {
            kind: MediaKind::Video,
            url: v.playlist.clone(),
            preview_url: v.thumbnail.clone(),
            alt: v.alt.clone().filter(|a| !a.trim().is_empty()),
        }),
        PostViewEmbedRefs::AppBskyEmbedExternalView(v) => {
            if !post.links.contains(&v.external.uri) {
                post.links.push(v.external.uri.clone());
            }
            if let Some(thumb) = v.external.thumb.clone() {
                post.media.push(Media {
                    kind: MediaKind::LinkPreview,
                    url: thumb,
                    preview_url: None,
                    alt: Some(format!("the preview of the linked page \"{}\"", v.external.title)),
                });
            }
        }
        PostViewEmbedRefs::AppBskyEmbedRecordView(v) => post.quote = quoted(v).map(Box::new),
        PostViewEmbedRefs::AppBskyEmbedRecordWithMediaView(v) => {
            post.quote = quoted(&v.record).map(Box::new);
            match &v.media {
                Union::Refs(embed::record_with_media::ViewMediaRefs::AppBskyEmbedImagesView(i)) => {
                    post.media.extend(images(i))
                }
                Union::Refs(embed::record_with_media::ViewMediaRefs::AppBskyEmbedExternalView(x)) => {
                    post.links.push(x.external.uri.clone())
                }
                _ => {}
            }
        }
        PostViewEmbedRefs::AppBskyEmbedGalleryView(_) => {
            tracing::info!(post = %post.id, "gallery embed skipped; the text is still checked")
        }
    }
}

fn images(v: &embed::images::View) -> impl Iterator<Item = Media> + '_ {
    v.images.iter().map(|i| Media {
        kind: MediaKind::Image,
        url: i.fullsize.clone(),
        preview_url: Some(i.thumb.clone()),
        alt: Some(i.alt.clone()).filter(|a| !a.trim().is_empty()),
    })
}

/// The quoted post, when it is a readable post (not deleted, blocked or detached).
fn quoted(v: &embed::record::View) -> Option<Post> {
    let Union::Refs(embed::record::ViewRecordRefs::ViewRecord(r)) = &v.record else {
        return None;
    };
    let record = post_record(&serde_json::to_value(&r.value).ok()?).ok()?;
    Some(from_record(&r.uri, Author::from(&r.author), &record))
}

/// Reads a post record and checks it against the lexicon's limits.
pub fn post_record(value: &serde_json::Value) -> Result<RecordData, String> {
    let kind = value.get("$type").and_then(|t| t.as_str()).unwrap_or("");
    if kind != "app.bsky.feed.post" {
        return Err(format!("record of type `{kind}` is not a post"));
    }
    let record: RecordData =
        serde_json::from_value(value.clone()).map_err(|e| format!("malformed post record: {e}"))?;
    let graphemes = record.text.graphemes(true).count();
    if graphemes > MAX_GRAPHEMES || record.text.len() > MAX_TEXT_BYTES {
        return Err(format!(
            "post text is {graphemes} graphemes / {} bytes (the lexicon allows {MAX_GRAPHEMES} / {MAX_TEXT_BYTES})",
            record.text.len()
        ));
    }
    for facet in record.facets.iter().flatten() {
        let (s, e) = (facet.index.byte_start, facet.index.byte_end);
        if s >= e || e > record.text.len() || !record.text.is_char_boundary(s) || !record.text.is_char_boundary(e) {
            return Err(format!(
                "facet at bytes {s}..{e} lies outside the text's {} bytes or splits a character",
                record.text.len()
            ));
        }
    }
    Ok(record)
}

/// Whether a mention facet names `did`.
fn record_mentions(record: &RecordData, did: &str) -> bool {
    record.facets.iter().flatten().any(|f| {
        f.features
            .iter()
            .any(|x| matches!(x, Union::Refs(MainFeaturesItem::Mention(m)) if m.did.as_str() == did))
    })
}

/// The post a record quotes (`embed.record`, `embed.recordWithMedia`), when it is a post.
fn quoted_uri(record: &RecordData) -> Option<String> {
    let uri = match record.embed.as_ref()? {
        Union::Refs(RecordEmbedRefs::AppBskyEmbedRecordMain(r)) => r.record.uri.clone(),
        Union::Refs(RecordEmbedRefs::AppBskyEmbedRecordWithMediaMain(r)) => r.record.record.uri.clone(),
        _ => return None,
    };
    uri.contains("/app.bsky.feed.post/").then_some(uri)
}

fn has_bot_label(labels: Option<&[Label]>) -> bool {
    labels
        .into_iter()
        .flatten()
        .any(|l| l.val == "bot" && l.neg != Some(true))
}

/// Whether a profile text opts out with `#nobot`.
pub fn has_nobot(text: &str) -> bool {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '#'))
        .any(|w| w == "#nobot")
}

fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc))
}

/// The post's page on bsky.app: `https://bsky.app/profile/{handle}/post/{rkey}`.
pub fn web_url(uri: &str, handle: &str) -> Option<String> {
    let rkey = uri.strip_prefix("at://")?.split('/').nth(2)?;
    Some(format!("https://bsky.app/profile/{handle}/post/{rkey}"))
}

/// A post's at-URI from a `https://bsky.app/profile/{handle|did}/post/{rkey}` link or an
/// `at://` URI; the first element is the handle or DID to resolve.
pub fn parse_post_ref(input: &str) -> Option<(String, String)> {
    let input = input.trim();
    if let Some(rest) = input.strip_prefix("at://") {
        let mut parts = rest.split('/');
        let (repo, collection, rkey) = (parts.next()?, parts.next()?, parts.next()?);
        return (collection == "app.bsky.feed.post" && !rkey.is_empty()).then(|| (repo.to_string(), rkey.to_string()));
    }
    let url = url::Url::parse(input).ok()?;
    if !matches!(
        url.host_str(),
        Some("bsky.app") | Some("www.bsky.app") | Some("staging.bsky.app")
    ) {
        return None;
    }
    let segs: Vec<&str> = url.path_segments()?.filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["profile", repo, "post", rkey] => Some((repo.to_string(), rkey.to_string())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bot() -> BotId {
        BotId {
            did: "did:plc:bot".into(),
            handle: "musebot.test".into(),
        }
    }

    /// A notification as the reference AppView (`@atproto/dev-env` 0.6.7) sent it.
    fn notification(reason: &str, record: serde_json::Value) -> serde_json::Value {
        json!({"uri":"at://did:plc:bob/app.bsky.feed.post/3n3lcpcnlcc2b","cid":"bafyreih5fmvdhcij47ev7jyhqxaq5pzzd7cl4oywxadew2i6tuig7xeyku",
               "author":{"did":"did:plc:bob","handle":"bob.test","labels":[]},
               "reason":reason,"record":record,"isRead":false,"indexedAt":"2026-12-01T03:31:47.000Z","labels":[]})
    }

    fn reply_record(text: &str, facets: serde_json::Value) -> serde_json::Value {
        let parent = json!({"cid":"bafyreifww75oqgkkbd56sj7gndgqk7nuj5ksegehvwqcdm54n7cmbtgreu","uri":"at://did:plc:alice/app.bsky.feed.post/3n3lcpcglo22b"});
        json!({"text":text,"$type":"app.bsky.feed.post","reply":{"root":parent,"parent":parent},"facets":facets,"createdAt":"2026-12-01T03:31:47.000Z"})
    }

    #[test]
    fn a_mention_under_a_post_asks_about_the_parent() {
        let facets = json!([{"index":{"byteEnd":13,"byteStart":0},"features":[{"did":"did:plc:bot","$type":"app.bsky.richtext.facet#mention"}]}]);
        let t = trigger_of(
            &notification("mention", reply_record("@musebot.test is this true?", facets)),
            &bot(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(t.platform, PlatformKind::Bluesky);
        assert_eq!(t.target_id(), "at://did:plc:alice/app.bsky.feed.post/3n3lcpcglo22b");
        assert!(t.asked_in_text && !t.may_be_inherited());
        assert_eq!(t.author.handle, "bob.test");
        assert!(
            t.author.id.as_deref().is_some_and(|d| d.starts_with("did:")),
            "{:?}",
            t.author
        );
        assert_eq!(t.job_id(), "bluesky:at://did:plc:bob/app.bsky.feed.post/3n3lcpcnlcc2b");
    }

    #[test]
    fn a_reply_to_the_bot_that_does_not_name_it_is_not_a_request() {
        let t = trigger_of(&notification("reply", reply_record("thanks!", json!([]))), &bot())
            .unwrap()
            .unwrap();
        assert!(!t.asked_in_text);
        assert!(trigger_of(&notification("like", json!({})), &bot()).unwrap().is_none());
    }

    #[test]
    fn malformed_records_are_refused_with_a_reason() {
        let long = "x".repeat(3000);
        let cases = [
            (reply_record(&long, json!([])), "graphemes"),
            (
                reply_record("short", json!([{"index":{"byteStart":2,"byteEnd":90},"features":[]}])),
                "outside",
            ),
            (json!({"$type":"app.bsky.feed.post","text":"no date"}), "malformed"),
            (json!({"$type":"app.bsky.feed.like"}), "not a post"),
        ];
        for (record, want) in cases {
            let err = trigger_of(&notification("mention", record), &bot()).unwrap_err();
            assert!(err.contains(want), "{err}");
        }
        let err = trigger_of(&json!({"uri": 3}), &bot()).unwrap_err();
        assert!(err.contains("unreadable notification"), "{err}");
    }

    /// A post view as the reference AppView renders one with a link facet, an image with alt
    /// text and a quoted post (`app.bsky.embed.recordWithMedia#view`).
    #[test]
    fn a_post_view_carries_links_images_and_quote() {
        let view = json!({
          "uri":"at://did:plc:alice/app.bsky.feed.post/3abc","cid":"bafyreifww75oqgkkbd56sj7gndgqk7nuj5ksegehvwqcdm54n7cmbtgreu",
          "author":{"did":"did:plc:alice","handle":"alice.test","displayName":"Alice","labels":[]},
          "record":{"$type":"app.bsky.feed.post","text":"Look: example.com/long… wow","createdAt":"2026-12-01T03:31:47.000Z","langs":["en"],
                    "facets":[{"index":{"byteStart":6,"byteEnd":25},"features":[{"$type":"app.bsky.richtext.facet#link","uri":"https://example.com/long/path"}]}]},
          "embed":{"$type":"app.bsky.embed.recordWithMedia#view",
            "media":{"$type":"app.bsky.embed.images#view","images":[{"thumb":"http://localhost/t.jpg","fullsize":"http://localhost/f.jpg","alt":"A chart"}]},
            "record":{"record":{"$type":"app.bsky.embed.record#viewRecord","uri":"at://did:plc:carol/app.bsky.feed.post/3q","cid":"bafyreifww75oqgkkbd56sj7gndgqk7nuj5ksegehvwqcdm54n7cmbtgreu",
              "author":{"did":"did:plc:carol","handle":"carol.test"},"value":{"$type":"app.bsky.feed.post","text":"The moon is cheese","createdAt":"2026-11-30T10:00:00Z"},
              "indexedAt":"2026-11-30T10:00:00Z"}}},
          "indexedAt":"2026-12-01T03:31:47.000Z"});
        let post = to_post(&serde_json::from_value(view).unwrap()).unwrap();
        assert_eq!(
            post.version.as_deref(),
            Some("bafyreifww75oqgkkbd56sj7gndgqk7nuj5ksegehvwqcdm54n7cmbtgreu"),
            "the version read: a label goes on it"
        );
        assert_eq!(post.links, ["https://example.com/long/path"]);
        assert_eq!(post.media.len(), 1);
        assert_eq!(post.media[0].alt.as_deref(), Some("A chart"));
        assert_eq!(post.quote.as_ref().unwrap().text, "The moon is cheese");
        assert_eq!(post.language.as_deref(), Some("en"));
        assert_eq!(
            post.url.as_deref(),
            Some("https://bsky.app/profile/alice.test/post/3abc")
        );
    }

    #[test]
    fn post_references_parse() {
        let want = Some(("alice.test".to_string(), "3abc".to_string()));
        assert_eq!(parse_post_ref("https://bsky.app/profile/alice.test/post/3abc"), want);
        assert_eq!(parse_post_ref("at://alice.test/app.bsky.feed.post/3abc"), want);
        assert_eq!(parse_post_ref("at://alice.test/app.bsky.feed.like/3abc"), None);
        assert_eq!(parse_post_ref("https://evil.example/profile/a/post/b"), None);
    }
}
