//! `musebot labeler setup`: makes the bot's Bluesky account a labeler as far as its own repo
//! goes — writes the declaration (`app.bsky.labeler.service`, [`super::declare`]) when it is
//! missing or says something else — and reads the account's DID document for the two entries
//! only its PLC operation can add (`#atproto_labeler`: Ozone's URL; `#atproto_label`: Ozone's
//! signing key). It prints what it changed and what is still to do; it changes nothing else.

use crate::config::Config;
use crate::platform::bluesky::Bluesky;

/// What setup found and did, line by line (the command prints it).
#[derive(Debug, Default)]
pub struct Report {
    pub lines: Vec<String>,
    /// Every part is in place (exit 0).
    pub ready: bool,
}

/// Runs setup for the configured account.
pub async fn run(config: &Config) -> anyhow::Result<Report> {
    let b = &config.bluesky;
    if b.identifier.is_empty() {
        anyhow::bail!("bluesky.identifier: is empty — set [bluesky] identifier (the labeler is the bot's own account) and its app password");
    }
    let password = crate::secret::resolve("bluesky.app_password", &b.app_password_env, &b.app_password_file, true)?
        .expect("required");
    let bluesky = Bluesky::reader(b, password).await?;
    apply(&bluesky, &b.plc_directory, &b.labeler.evidence_url, chrono::Utc::now()).await
}

/// Setup on a logged-in account.
pub async fn apply(
    bluesky: &Bluesky,
    plc_directory: &str,
    evidence_url: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<Report> {
    let mut report = Report::default();
    let did = bluesky.bot.did.clone();
    report.lines.push(format!("account: {} ({did})", bluesky.bot.handle));
    let wanted = super::declare::record(now, evidence_url);
    let values = crate::model::LabelValue::ALL.map(|v| v.as_str()).join(", ");
    let languages = crate::words::languages().len();
    match bluesky.declaration().await? {
        Some(found) if super::declare::same(&found, &wanted) => {
            report
                .lines
                .push(format!("declaration: unchanged ({values}; {languages} languages)"));
        }
        found => {
            bluesky.declare(&wanted).await?;
            let what = if found.is_some() { "updated" } else { "written" };
            report.lines.push(format!(
                "declaration: {what} — app.bsky.labeler.service/self with {values}, each named and described in {languages} languages"
            ));
        }
    }
    let (endpoint, key) = bluesky.labeler_entries(plc_directory).await?;
    match &endpoint {
        Some(e) => report.lines.push(format!("DID document: #atproto_labeler is {e}")),
        None => report.lines.push(
            "DID document: no #atproto_labeler service — add Ozone's public URL with a PLC operation (README: Deploy → Labeler)".into(),
        ),
    }
    match &key {
        Some(k) => report.lines.push(format!("DID document: #atproto_label key is {k}")),
        None => report.lines.push(
            "DID document: no #atproto_label key — add Ozone's signing key (OZONE_SIGNING_KEY_HEX's public key) with the same PLC operation".into(),
        ),
    }
    report.ready = endpoint.is_some() && key.is_some();
    report.lines.push(if report.ready {
        "ready: labels emitted through the PDS reach this labeler".into()
    } else {
        "not ready: labels cannot be emitted until the DID document names the labeler".into()
    });
    Ok(report)
}
