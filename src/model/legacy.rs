//! Reading records written by earlier builds. Schema 1 (no `schema` field) stored the trigger
//! as `mention` with the requester's fields flat; it is upgraded on read, so a store written
//! before the records moved here still loads. A record from a newer build is refused with a
//! message that names what to do.

use serde_json::{json, Value};

use super::job::{Job, SCHEMA};

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("not a job record this build can read: {0}")]
    Malformed(String),
    #[error(
        "written by a newer musebot (record schema {found}, this build reads up to {SCHEMA}) — run that version, or move the state directory aside to start afresh"
    )]
    Newer { found: u64 },
}

/// Decodes a stored job of any schema this build knows.
pub fn decode_job(bytes: &[u8]) -> Result<Job, DecodeError> {
    let mut value: Value = serde_json::from_slice(bytes).map_err(|e| DecodeError::Malformed(e.to_string()))?;
    match value.get("schema").and_then(Value::as_u64) {
        Some(found) if found > u64::from(SCHEMA) => return Err(DecodeError::Newer { found }),
        Some(_) => {}
        None => upgrade_v1(&mut value)?,
    }
    serde_json::from_value(value).map_err(|e| DecodeError::Malformed(e.to_string()))
}

/// Schema 1 → 2: `mention {notification_id, requester, requester_is_bot, requester_is_self,
/// requester_nobot, …}` becomes `trigger {cause: mention, event_id, author {…}, …}`.
fn upgrade_v1(job: &mut Value) -> Result<(), DecodeError> {
    let obj = job
        .as_object_mut()
        .ok_or_else(|| DecodeError::Malformed("a job record is a JSON object".into()))?;
    let mention = obj
        .remove("mention")
        .ok_or_else(|| DecodeError::Malformed("schema 1 record without `mention`".into()))?;
    let field = |k: &str| mention.get(k).cloned().unwrap_or(Value::Null);
    let flag = |k: &str| mention.get(k).and_then(Value::as_bool).unwrap_or(false);
    obj.insert(
        "trigger".into(),
        json!({
            "platform": field("platform"),
            "cause": {"kind": "mention"},
            "event_id": field("notification_id"),
            "status_id": field("status_id"),
            "in_reply_to_id": field("in_reply_to_id"),
            "author": {
                "handle": field("requester"),
                "is_bot": flag("requester_is_bot"),
                "is_self": flag("requester_is_self"),
                "nobot": flag("requester_nobot"),
            },
            "visibility": field("visibility"),
            "created_at": field("created_at"),
            "text": field("text"),
        }),
    );
    obj.insert("schema".into(), json!(SCHEMA));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Cause, Stage};

    /// A job as the schema-1 build (commit 7603d62) wrote it: mid-way, after resolve, with a
    /// retrieval checkpoint.
    const V1: &str = r#"{"id":"mastodon:42","mention":{"platform":"mastodon","notification_id":"42","status_id":"107","in_reply_to_id":"100","requester":"alice","requester_is_bot":false,"requester_is_self":false,"requester_nobot":false,"visibility":"public","created_at":"2026-11-30T10:00:00Z","text":"@musebot is this true?"},"status":"pending","created_at":"2026-11-30T10:00:01Z","updated_at":"2026-11-30T10:00:02Z","attempts":0,"retry_at":null,"target":{"id":"100","url":"https://x.example/@bob/100","author":"bob","author_display_name":"Bob","author_is_bot":false,"author_nobot":false,"text":"The moon is cheese","created_at":"2026-11-30T09:00:00Z","visibility":"public","language":"en"},"draft":null,"plan":null,"retrieval":{"steps":[{"step":"queries","millis":5,"prompt_tokens":10,"completion_tokens":3}],"queries":["moon cheese"],"candidates":null,"pages":null,"evidence":null,"dropped":[{"url":"https://a.example/","reason":{"unreachable":"timeout"}}],"unverified_quotes":0},"posted":[],"trace":[{"stage":"resolve","millis":3,"prompt_tokens":0,"completion_tokens":0}]}"#;

    #[test]
    fn a_schema_1_record_loads_and_resumes_where_it_stopped() {
        let job = decode_job(V1.as_bytes()).unwrap();
        assert_eq!(job.schema, SCHEMA);
        assert_eq!(job.id, "mastodon:42");
        assert_eq!(job.trigger.job_id(), job.id, "the id scheme is unchanged for mentions");
        assert_eq!(job.trigger.cause, Cause::Mention);
        assert_eq!(job.trigger.requester().unwrap().handle, "alice");
        assert_eq!(job.trigger.in_reply_to_id.as_deref(), Some("100"));
        let target = job.target.as_ref().unwrap();
        assert!(target.media.is_empty() && target.links.is_empty() && target.quote.is_none());
        assert_eq!(
            job.retrieval.as_ref().unwrap().queries.as_deref(),
            Some(&["moon cheese".to_string()][..])
        );
        assert_eq!(job.next_stage(), Some(Stage::Draft));
        // Written again, it reads back the same.
        let again = decode_job(&serde_json::to_vec(&job).unwrap()).unwrap();
        assert_eq!(again, job);
    }

    #[test]
    fn a_newer_record_is_refused_with_what_to_do() {
        let e = decode_job(br#"{"schema": 99, "id": "x"}"#).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("newer musebot") && text.contains("schema 99"), "{text}");
    }

    #[test]
    fn garbage_is_malformed_not_a_panic() {
        assert!(matches!(decode_job(b"not json"), Err(DecodeError::Malformed(_))));
        assert!(matches!(decode_job(b"[1,2]"), Err(DecodeError::Malformed(_))));
    }
}
