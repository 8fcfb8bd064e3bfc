//! The bot's labels, through its own PDS: the PDS forwards each call to the
//! labeler service its DID document names (`atproto-proxy: <bot DID>#atproto_labeler`, signed
//! for the account), which is Ozone (`@atproto/ozone`, run beside the daemon): it signs the
//! labels with the account's `#atproto_label` key and serves them to AppViews. So the daemon
//! needs no second credential, and only ever labels as itself.

use serde::Deserialize;
use serde_json::json;

use super::{Bluesky, POST};
use crate::model::{JobLabel, LabelValue};
use crate::platform::PlatformError;

/// One label as `queryLabels` serves it (what the daemon reads back of its own).
#[derive(Debug, Clone, Deserialize)]
pub struct Served {
    pub src: String,
    pub uri: String,
    #[serde(default)]
    pub cid: Option<String>,
    pub val: String,
    #[serde(default)]
    pub neg: bool,
    #[serde(default)]
    pub exp: Option<String>,
}

#[derive(Deserialize)]
struct QueryLabels {
    #[serde(default)]
    labels: Vec<Served>,
}

/// The declaration as read back (`getRecord`).
#[derive(Deserialize)]
struct Declared {
    value: serde_json::Value,
}

impl Bluesky {
    fn labeler_proxy(&self) -> String {
        super::ozone::labeler_proxy(&self.bot.did)
    }

    /// The CID of the post at `uri` as the bot reads it now (what a label is put on).
    pub async fn cid_of(&self, uri: &str) -> Result<String, PlatformError> {
        Ok(self.strong_ref(uri).await?.cid)
    }

    /// Emits one label event: `create` and `negate` on the post (`modEventLabel`), with the
    /// expiry as `durationInHours`. Only posts: any other URI is refused.
    pub async fn emit_label(&self, label: &JobLabel) -> Result<(), PlatformError> {
        if !label.uri.starts_with("at://") || !label.uri.contains(&format!("/{POST}/")) {
            return Err(PlatformError::Fatal(format!("{} is not a post", label.uri)));
        }
        let vals = |v: &[LabelValue]| v.iter().map(|v| v.as_str()).collect::<Vec<_>>();
        let mut event = json!({
            "$type": "tools.ozone.moderation.defs#modEventLabel",
            "createLabelVals": vals(&label.create),
            "negateLabelVals": vals(&label.negate),
            "comment": "musebot: the verdict of its fact-check",
        });
        if let Some(exp) = label.expires {
            let hours = (exp - chrono::Utc::now()).num_hours().max(1);
            event["durationInHours"] = json!(hours);
        }
        let body = json!({
            "event": event,
            "subject": { "$type": "com.atproto.repo.strongRef", "uri": label.uri, "cid": label.cid },
            "createdBy": self.bot.did,
        });
        let _: serde_json::Value = self
            .xrpc
            .procedure_via(
                "emitEvent",
                "tools.ozone.moderation.emitEvent",
                &body,
                &self.labeler_proxy(),
            )
            .await?;
        Ok(())
    }

    /// The bot's own labels on `uri`, as its labeler serves them (negations included: the
    /// latest state of each value is the one with `neg` as served).
    pub async fn labels_on(&self, uri: &str) -> Result<Vec<Served>, PlatformError> {
        let q: QueryLabels = self
            .xrpc
            .query_via(
                "queryLabels",
                "com.atproto.label.queryLabels",
                &[("uriPatterns", uri.to_string()), ("sources", self.bot.did.clone())],
                &self.labeler_proxy(),
            )
            .await?;
        Ok(q.labels
            .into_iter()
            .filter(|l| l.src == self.bot.did && l.uri == uri)
            .collect())
    }

    /// The declaration record in the bot's repo, if any.
    pub async fn declaration(&self) -> Result<Option<serde_json::Value>, PlatformError> {
        let params = [
            ("repo", self.bot.did.clone()),
            ("collection", "app.bsky.labeler.service".to_string()),
            ("rkey", "self".to_string()),
        ];
        match self
            .xrpc
            .query::<Declared>("getRecord", "com.atproto.repo.getRecord", &params)
            .await
        {
            Ok(d) => Ok(Some(d.value)),
            Err(e) if e.name() == Some("RecordNotFound") => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes the declaration record (rkey `self`).
    pub async fn declare(&self, record: &serde_json::Value) -> Result<(), PlatformError> {
        let body = json!({
            "repo": self.bot.did,
            "collection": "app.bsky.labeler.service",
            "rkey": "self",
            "record": record,
        });
        let _: serde_json::Value = self
            .xrpc
            .procedure("putRecord", "com.atproto.repo.putRecord", &body, 2)
            .await?;
        Ok(())
    }

    /// The account's DID document's labeler entries: the `#atproto_labeler` service endpoint
    /// and the `#atproto_label` key, each if declared. The document comes with the session
    /// when the PDS sends it; else from the PLC directory (`did:plc`) or the DID's own host
    /// (`did:web`, `/.well-known/did.json`).
    pub async fn labeler_entries(
        &self,
        plc_directory: &str,
    ) -> Result<(Option<String>, Option<String>), PlatformError> {
        #[derive(Deserialize)]
        struct Resolved {
            #[serde(rename = "didDoc", default)]
            did_doc: serde_json::Value,
        }
        let r: Resolved = self
            .xrpc
            .query("getSession", "com.atproto.server.getSession", &[])
            .await?;
        let doc = if r.did_doc.is_object() {
            r.did_doc
        } else {
            did_document(&self.bot.did, plc_directory).await?
        };
        Ok(entries(&self.bot.did, &doc))
    }
}

/// A DID document from where the DID method says it lives.
pub(super) async fn did_document(did: &str, plc_directory: &str) -> Result<serde_json::Value, PlatformError> {
    let url = if did.starts_with("did:plc:") {
        format!("{}/{did}", plc_directory.trim_end_matches('/'))
    } else if let Some(host) = did.strip_prefix("did:web:") {
        // Anyone can name any host in a did:web: only one that resolves to public addresses is
        // asked (and no redirect is followed).
        if !super::absence::resolves_public(host).await {
            return Err(PlatformError::Fatal(format!(
                "{did}: its host does not resolve to public addresses only"
            )));
        }
        format!("https://{host}/.well-known/did.json")
    } else {
        return Err(PlatformError::Fatal(format!("{did}: not a did:plc or did:web")));
    };
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| PlatformError::Fatal(e.to_string()))?;
    let resp = http
        .get(&url)
        .send()
        .await
        .map_err(|e| PlatformError::Transient(format!("{url}: {}", e.without_url())))?;
    if !resp.status().is_success() {
        return Err(PlatformError::Fatal(format!("{url}: HTTP {}", resp.status())));
    }
    let bytes = crate::body::read_capped(resp, 1_000_000)
        .await
        .map_err(|e| PlatformError::Transient(format!("{url}: {e}")))?;
    serde_json::from_slice(&bytes).map_err(|e| PlatformError::Fatal(format!("{url}: not a DID document: {e}")))
}

/// The bot's values in force among served labels: a value counts when its latest label (by
/// the order served, which is the labeler's) is not a negation and has not expired.
pub fn in_force(served: &[Served]) -> Vec<LabelValue> {
    let now = chrono::Utc::now();
    let mut on: Vec<LabelValue> = Vec::new();
    for l in served {
        let Some(v) = LabelValue::parse(&l.val) else { continue };
        let expired = l
            .exp
            .as_deref()
            .and_then(|e| chrono::DateTime::parse_from_rfc3339(e).ok())
            .is_some_and(|e| e < now);
        on.retain(|x| *x != v);
        if !l.neg && !expired {
            on.push(v);
        }
    }
    on
}

/// The labeler endpoint and label key in a DID document (ids written `#x` or `<did>#x`).
pub fn entries(did: &str, doc: &serde_json::Value) -> (Option<String>, Option<String>) {
    let is =
        |id: Option<&str>, name: &str| id.is_some_and(|id| id == format!("#{name}") || id == format!("{did}#{name}"));
    let endpoint = doc["service"].as_array().into_iter().flatten().find_map(|s| {
        is(s["id"].as_str(), "atproto_labeler").then(|| s["serviceEndpoint"].as_str().map(str::to_string))?
    });
    // A `Multikey` is written as its did:key; the PLC directory's legacy form
    // (`EcdsaSecp256k1VerificationKey2019`, the raw key) as the key and its type.
    let key = doc["verificationMethod"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|m| {
            is(m["id"].as_str(), "atproto_label").then(|| {
                let k = m["publicKeyMultibase"].as_str()?;
                Some(match m["type"].as_str() {
                    Some("Multikey") | None => format!("did:key:{k}"),
                    Some(other) => format!("{k} ({other})"),
                })
            })?
        });
    (endpoint, key)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_did_documents_labeler_entries_are_found_by_either_id_form() {
        let doc = serde_json::json!({
            "id": "did:plc:abc",
            "verificationMethod": [
                {"id": "did:plc:abc#atproto", "type": "Multikey", "controller": "did:plc:abc", "publicKeyMultibase": "zQ3shA"},
                {"id": "#atproto_label", "type": "Multikey", "controller": "did:plc:abc", "publicKeyMultibase": "zQ3shB"}
            ],
            "service": [
                {"id": "#atproto_pds", "type": "AtprotoPersonalDataServer", "serviceEndpoint": "https://pds.example"},
                {"id": "did:plc:abc#atproto_labeler", "type": "AtprotoLabeler", "serviceEndpoint": "https://ozone.example"}
            ]
        });
        let (endpoint, key) = super::entries("did:plc:abc", &doc);
        assert_eq!(endpoint.as_deref(), Some("https://ozone.example"));
        assert_eq!(key.as_deref(), Some("did:key:zQ3shB"));
        let (e, k) = super::entries("did:plc:other", &doc);
        assert_eq!(e, None, "another DID's absolute ids do not count");
        assert_eq!(
            k.as_deref(),
            Some("did:key:zQ3shB"),
            "a relative id is the document's own"
        );
        let legacy = serde_json::json!({"verificationMethod": [{"id": "#atproto_label", "type": "EcdsaSecp256k1VerificationKey2019", "publicKeyMultibase": "zQtRW"}]});
        let (_, k) = super::entries("did:plc:old", &legacy);
        assert_eq!(k.as_deref(), Some("zQtRW (EcdsaSecp256k1VerificationKey2019)"));
    }
}
