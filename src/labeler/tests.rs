//! The labeler's policy, declaration and config, on their own.

use super::*;
use crate::config::Config;
use crate::model::{Draft, Post, Trigger, Verdict, Visibility};

fn job(cause: Cause, verdict: Option<Verdict>, outcome: Outcome, urls: &[&str]) -> Job {
    let mut job = Job::new(Trigger {
        cause,
        ..Trigger::test_mention("m1")
    });
    job.target = Some(Post::text_only(
        "at://did:plc:carol/app.bsky.feed.post/3k",
        "carol",
        "claim",
        chrono::Utc::now(),
        Visibility::Public,
    ));
    job.draft = Some(Draft {
        outcome,
        text: "x".into(),
        urls: urls.iter().map(|u| u.to_string()).collect(),
        verdict,
        stance: None,
    });
    job
}

fn on() -> LabelerConfig {
    LabelerConfig {
        enabled: true,
        min_confidence: Confidence::Drafted,
        ..LabelerConfig::default()
    }
}

#[test]
fn each_trigger_follows_its_channel_and_only_a_labelling_platform_labels() {
    let c = on();
    let hit = Cause::HashtagHit { tag: "moon".into() };
    let false_mention = job(Cause::Mention, Some(Verdict::Inaccurate), Outcome::Reply, &[]);
    // Defaults: mentions both, tags label only.
    let d = decide(&c, &false_mention, true, None);
    assert!(d.reply);
    assert_eq!(d.label.as_ref().unwrap().create, [LabelValue::False]);
    assert_eq!(
        d.label.as_ref().unwrap().uri,
        "at://did:plc:carol/app.bsky.feed.post/3k"
    );
    let d = decide(
        &c,
        &job(hit.clone(), Some(Verdict::Misleading), Outcome::Reply, &[]),
        true,
        None,
    );
    assert!(!d.reply);
    assert_eq!(d.label.unwrap().create, [LabelValue::Misleading]);
    // A moderator's channel for the tag wins over the default.
    let tagged = job(
        Cause::HashtagHit { tag: "moon".into() },
        Some(Verdict::Misleading),
        Outcome::Reply,
        &[],
    );
    assert_eq!(
        decide(&c, &tagged, true, Some(Channel::Reply)),
        Decision {
            label: None,
            reply: true
        }
    );
    assert!(decide(&c, &tagged, true, Some(Channel::Both)).reply);
    // Mastodon (no labels), or the labeler off: a reply, as before.
    assert_eq!(
        decide(&c, &false_mention, false, None),
        Decision {
            label: None,
            reply: true
        }
    );
    let off = LabelerConfig::default();
    assert_eq!(
        decide(&off, &false_mention, true, None),
        Decision {
            label: None,
            reply: true
        }
    );
    // Commands and notices are never labels.
    let notice = job(Cause::Mention, None, Outcome::NotPublic, &[]);
    assert_eq!(decide(&c, &notice, true, None).label, None);
    let cmd = job(
        Cause::Command {
            command: crate::model::Command::Status,
        },
        Some(Verdict::Inaccurate),
        Outcome::Reply,
        &[],
    );
    assert_eq!(
        decide(&c, &cmd, true, None),
        Decision {
            label: None,
            reply: true
        }
    );
    // A tag's post with no label (unverifiable) posts nothing; a mention is answered.
    let d = decide(
        &c,
        &job(hit, Some(Verdict::Unverifiable), Outcome::Reply, &[]),
        true,
        None,
    );
    assert_eq!(
        d,
        Decision {
            label: None,
            reply: false
        }
    );
    let label_only = LabelerConfig {
        mentions: Channel::Label,
        ..on()
    };
    let d = decide(
        &label_only,
        &job(Cause::Mention, Some(Verdict::Unverifiable), Outcome::Reply, &[]),
        true,
        None,
    );
    assert_eq!(
        d,
        Decision {
            label: None,
            reply: true
        }
    );
}

#[test]
fn confidence_orders_a_published_fact_check_over_a_debate_over_a_draft() {
    use crate::model::{Verification, Verified};
    let mut j = job(
        Cause::Mention,
        Some(Verdict::Inaccurate),
        Outcome::Reply,
        &["https://factcheck.example/a"],
    );
    assert_eq!(confidence(&j), Confidence::Drafted);
    j.verification = Some(Verification {
        outcome: Some(Verified::Upheld),
        ..Verification::default()
    });
    assert_eq!(confidence(&j), Confidence::Verified);
    let verified = LabelerConfig {
        min_confidence: Confidence::Verified,
        ..on()
    };
    assert_eq!(value(&verified, &j), Some(LabelValue::False));
    let sure = LabelerConfig {
        min_confidence: Confidence::FactCheck,
        ..on()
    };
    assert_eq!(value(&sure, &j), None);
    // Verification off with evidence counts as verified; without evidence it does not.
    j.verification = Some(Verification {
        outcome: Some(Verified::NotNeeded),
        ..Verification::default()
    });
    assert_eq!(confidence(&j), Confidence::Verified);
    let bare = job(Cause::Mention, Some(Verdict::Inaccurate), Outcome::Reply, &[]);
    assert_eq!(confidence(&bare), Confidence::Drafted);
    assert!(Confidence::Drafted < Confidence::Verified && Confidence::Verified < Confidence::FactCheck);
}

#[test]
fn the_declaration_names_every_value_in_every_language_within_the_lexicons_limits() {
    let r = declare::record(chrono::Utc::now(), "");
    assert_eq!(r["$type"], "app.bsky.labeler.service");
    let values: Vec<&str> = r["policies"]["labelValues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        values,
        ["fc-false", "fc-misleading", "fc-missing-context", "fc-accurate"]
    );
    let defs = r["policies"]["labelValueDefinitions"].as_array().unwrap();
    assert_eq!(defs.len(), values.len());
    let languages = crate::words::languages().len();
    assert!(languages >= 19);
    for d in defs {
        assert_eq!(
            (d["severity"].as_str(), d["blurs"].as_str()),
            (Some("inform"), Some("none"))
        );
        let locales = d["locales"].as_array().unwrap();
        assert_eq!(locales.len(), languages);
        let english = &locales.iter().find(|l| l["lang"] == "en").unwrap();
        for l in locales {
            let (name, desc) = (l["name"].as_str().unwrap(), l["description"].as_str().unwrap());
            assert!(!name.is_empty() && name.chars().count() <= 64, "{l}");
            assert!(!desc.is_empty() && desc.len() <= 10_000, "{l}");
            if l["lang"] != "en" {
                assert_ne!(l["name"], english["name"], "{} is not translated", l["lang"]);
            }
        }
    }
    // With evidence pages, every description names them.
    let with = declare::record(chrono::Utc::now(), "https://fc.example/labels");
    for d in with["policies"]["labelValueDefinitions"].as_array().unwrap() {
        for l in d["locales"].as_array().unwrap() {
            assert!(
                l["description"].as_str().unwrap().contains("https://fc.example/labels"),
                "{l}"
            );
        }
    }
    assert!(!declare::same(&r, &with));
    // The same declaration at another time is the same declaration.
    assert!(declare::same(
        &r,
        &declare::record(chrono::Utc::now() + chrono::Duration::days(1), "")
    ));
}

#[test]
fn a_labeler_without_bluesky_or_with_a_long_expiry_is_a_config_error() {
    let problems = |toml: &str| -> String {
        Config::parse(&format!("[daemon]\npipeline = \"baseline\"\n{toml}"))
            .unwrap()
            .validate()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let p = problems("[bluesky.labeler]\nenabled = true\nexpiry_days = 9999\nevidence_listen = \"everywhere\"\nevidence_url = \"factcheck.example/labels\"\n");
    assert!(
        p.contains("bluesky.labeler.evidence_listen: `everywhere` is not host:port"),
        "{p}"
    );
    assert!(p.contains("bluesky.labeler.evidence_url:"), "{p}");
    assert!(
        p.contains("bluesky.labeler.enabled: is true but bluesky.enabled is false"),
        "{p}"
    );
    assert!(p.contains("bluesky.labeler.expiry_days: is 9999"), "{p}");
    let ok = problems("[mastodon]\nenabled = false\n[bluesky]\nenabled = true\nidentifier = \"fc.bsky.social\"\n[bluesky.labeler]\nenabled = true\nmentions = \"label\"\nmin_confidence = \"fact_check\"\n");
    assert!(ok.is_empty(), "{ok}");
    match Config::parse("[bluesky.labeler]\nmentions = \"sometimes\"\n") {
        Err(crate::config::ConfigError::Parse(p)) => {
            assert!(p.to_string().starts_with("bluesky.labeler.mentions"), "{p}")
        }
        other => panic!("{other:?}"),
    }
}
