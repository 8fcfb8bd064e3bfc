//! The metrics' tests: a named account's samples carry its label; every series an alert reads
//! has its zero from the start.

use super::{ConnState, Metrics, WATCH_FATES};

/// A named account's samples carry `account="<name>"` in the one exposition, and its
/// connections show in `/healthz` as `<platform>@<name>`.
#[test]
fn each_account_is_labelled_in_metrics_and_health() {
    let m = Metrics::new();
    let es = m.account("es");
    m.mention("mastodon");
    es.mention("mastodon");
    es.mention("mastodon");
    m.set_connection("mastodon", ConnState::Connected);
    es.set_connection("mastodon", ConnState::Connecting);
    let text = m.encode();
    assert!(
        text.contains("musebot_mentions_received_total{platform=\"mastodon\"} 1"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("musebot_mentions_received_total")
            && l.contains("account=\"es\"")
            && l.ends_with(" 2")),
        "{text}"
    );
    assert_eq!(text.matches("# EOF").count(), 1);
    let states = m.connection_states();
    assert_eq!(states.get("mastodon"), Some(&ConnState::Connected));
    assert_eq!(states.get("mastodon@es"), Some(&ConnState::Connecting));
}

/// An alert on a counter's increase cannot fire for a series that has no sample: the error
/// kinds alerts watch, each configured platform's mentions and each watched platform's
/// fates are written as 0 from the start, before their first event.
#[test]
fn every_series_an_alert_reads_has_its_zero_from_the_start() {
    let m = Metrics::new();
    let text = m.encode();
    for kind in ["llm", "outage", "store"] {
        assert!(
            text.contains(&format!("musebot_errors_total{{kind=\"{kind}\"}} 0")),
            "{kind}: {text}"
        );
    }
    assert!(
        !text.contains("musebot_watch_posts_total{"),
        "nothing watched yet: {text}"
    );
    m.platform("mastodon");
    m.watching("bluesky");
    let text = m.encode();
    assert!(
        text.contains("musebot_mentions_received_total{platform=\"mastodon\"} 0"),
        "{text}"
    );
    assert!(
        !text.contains("platform=\"mastodon\",event="),
        "mastodon is not watched: {text}"
    );
    for fate in WATCH_FATES {
        assert!(
            text.contains(&format!(
                "musebot_watch_posts_total{{platform=\"bluesky\",event=\"{fate}\"}} 0"
            )),
            "{fate}: {text}"
        );
    }
    m.watch("bluesky", "taken", 2);
    assert!(m
        .encode()
        .contains("musebot_watch_posts_total{platform=\"bluesky\",event=\"taken\"} 2"));
}
