//! The labeler's declaration: the `app.bsky.labeler.service` record (rkey `self`) that makes the
//! bot's account a labeler. Every value of the closed set, each with its name and description
//! in every language of `locales/` (`label_*_name`, `label_*_description`), severity `inform`
//! (a note under the post, no warning screen), blurs `none` (nothing is hidden), default
//! setting `warn` (shown to subscribers unless they turn it off).

use serde_json::{json, Value};

use crate::model::LabelValue;

/// The declaration record as of `now`; each description ends with where the evidence pages
/// are (`evidence_url`), when there are some.
pub fn record(now: chrono::DateTime<chrono::Utc>, evidence_url: &str) -> Value {
    let definitions: Vec<Value> = LabelValue::ALL
        .into_iter()
        .map(|v| {
            let locales: Vec<Value> = crate::words::languages()
                .iter()
                .map(|lang| {
                    json!({
                        "lang": lang,
                        "name": crate::words::say(lang, &format!("{}_name", v.key()), ()),
                        "description": description(lang, v, evidence_url),
                    })
                })
                .collect();
            json!({
                "identifier": v.as_str(),
                "severity": "inform",
                "blurs": "none",
                "defaultSetting": "warn",
                "adultOnly": false,
                "locales": locales,
            })
        })
        .collect();
    json!({
        "$type": "app.bsky.labeler.service",
        "policies": {
            "labelValues": LabelValue::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>(),
            "labelValueDefinitions": definitions,
        },
        "subjectTypes": ["record"],
        // The reports this labeler takes: what it can judge (a misleading post; "other").
        "reasonTypes": REASON_TYPES,
        "subjectCollections": ["app.bsky.feed.post"],
        "createdAt": now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    })
}

/// The report reasons the labeler declares it takes: a fact-check can judge a misleading
/// post; "other" lets a reporter say what they mean. Harassment, spam, sexual content and
/// the rest belong to the moderation services that handle them.
pub const REASON_TYPES: [&str; 2] = [
    "com.atproto.moderation.defs#reasonMisleading",
    "com.atproto.moderation.defs#reasonOther",
];

/// Whether two declarations say the same (their `createdAt` aside): setup rewrites only a
/// declaration that changed.
pub fn same(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("createdAt");
        }
        v
    };
    strip(a) == strip(b)
}

fn description(lang: &str, v: LabelValue, evidence_url: &str) -> String {
    let text = crate::words::say(lang, &format!("{}_description", v.key()), ());
    if evidence_url.is_empty() {
        return text;
    }
    let at = crate::words::say(lang, "label_evidence_at", minijinja::context! { url => evidence_url });
    format!("{text} {at}")
}
