//! Every metric name lives here (Prometheus, via `prometheus-client`), plus the per-platform
//! connection state that `/healthz` reports.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PlatformLabel {
    pub platform: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TriggerLabel {
    pub platform: String,
    /// `mention`, `hashtag`, `moderator`, `command`.
    pub cause: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StageLabel {
    pub stage: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TokenLabel {
    /// The stage that spent them: `draft` (retrieval, the image-context debate, the reply),
    /// `verify` (the draft's debate and revision).
    pub stage: String,
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReportLabel {
    pub platform: String,
    pub event: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabel {
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SearchFailureLabel {
    pub backend: String,
    pub kind: String,
}

/// A search backend's recent health, for `/healthz`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct BackendHealth {
    /// Failures since the last success.
    pub failures_in_a_row: u32,
    /// The last failure's kind, if it has failed since its last success.
    pub last_failure: Option<String>,
}

/// Each fate of a post the network watch saw (`musebot_watch_posts_total`'s `event`).
pub const WATCH_FATES: &[&str] = &[
    "language",
    "length",
    "words",
    "no_match",
    "not_asserted",
    "exempt",
    "seen_before",
    "capped",
    "taken",
    "failed",
];

/// Failures in a row after which a search backend counts as failing (`/healthz` degraded).
pub const FAILING_AFTER: u32 = 5;

/// Connection state of one platform's intake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnState {
    Connecting,
    Connected,
    Disconnected,
}

pub struct Metrics {
    /// The registry `/metrics` encodes: the default account's families at its top, each
    /// named account's in a sub-registry labelled `account="<name>"` ([`Metrics::account`]).
    registry: Mutex<Registry>,
    /// The named accounts' own metrics, shown in `/healthz` beside the default account's.
    accounts: Mutex<Vec<(String, SharedMetrics)>>,
    pub mentions_received: Family<PlatformLabel, Counter>,
    pub jobs: Family<OutcomeLabel, Counter>,
    pub triggers: Family<TriggerLabel, Counter>,
    pub stage_seconds: Family<StageLabel, Histogram>,
    pub llm_tokens: Family<TokenLabel, Counter>,
    pub errors: Family<ErrorLabel, Counter>,
    pub search_failures: Family<SearchFailureLabel, Counter>,
    pub verifications: Family<OutcomeLabel, Counter>,
    pub fact_checks: Family<OutcomeLabel, Counter>,
    /// Fact-checks of the post's own claim found by claim matching that a reply rested on.
    pub claim_matches: Counter,
    /// A reply's life after posting, by event (recheck|update|deletion|withdrawn|memory).
    pub living: Family<OutcomeLabel, Counter>,
    /// Reads of the evidence index's feeds by outcome, and the items it holds.
    pub feed_reads: Family<OutcomeLabel, Counter>,
    pub index_items: Gauge,
    /// Today's LLM tokens and the used share of the day's budget (0 without one).
    pub budget_tokens: Gauge,
    pub budget_used: Gauge<f64, std::sync::atomic::AtomicU64>,
    /// The budget as `/healthz` shows it.
    pub budget: Mutex<serde_json::Value>,
    pub connections: Mutex<BTreeMap<String, ConnState>>,
    /// The evidence index's refresher as `/healthz` shows it (`null` without one):
    /// `{state: running|retrying, reason, since}`.
    pub index_refresher: Mutex<serde_json::Value>,
    pub search_backends: Mutex<BTreeMap<String, BackendHealth>>,
    /// Reports by platform and event: seen (a reported post read from the queue), checked (a
    /// finding written), noted (a finding delivered to the moderators), skipped_<reason>.
    /// Counts only: never which post or who reported it.
    pub reports: Family<ReportLabel, Counter>,
    /// Posts the network watch saw, by platform and fate (language, length, words, no_match,
    /// not_asserted, capped, taken).
    pub watch_posts: Family<ReportLabel, Counter>,
    /// Each platform's report reader as `/healthz` shows it: `{state: following|forbidden|failing, reason}`.
    pub report_readers: Mutex<BTreeMap<String, serde_json::Value>>,
    /// When each long-lived connection last delivered something (a frame of the mention
    /// stream, a notifications or reports poll that answered, an event of the watch's stream):
    /// `/healthz`'s `last_event` and the gauge `musebot_stream_last_event_timestamp_seconds`.
    pub last_events: Mutex<BTreeMap<String, chrono::DateTime<chrono::Utc>>>,
    pub stream_last_event: Family<StreamLabel, Gauge>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StreamLabel {
    pub stream: String,
}

pub type SharedMetrics = Arc<Metrics>;

impl Metrics {
    pub fn new() -> SharedMetrics {
        let mut registry = Registry::with_prefix("musebot");
        let mut m = Self::register(&mut registry);
        m.registry = Mutex::new(registry);
        Arc::new(m)
    }

    /// A named account's metrics: the same families, in the same `/metrics`, each sample
    /// labelled `account="<name>"`; its connections, report readers and budget in `/healthz`
    /// as `<platform>@<name>` and under `accounts`.
    pub fn account(&self, name: &str) -> SharedMetrics {
        let child = {
            let mut registry = self.registry.lock().expect("metrics lock");
            let sub = registry.sub_registry_with_label(("account".into(), name.to_string().into()));
            Arc::new(Self::register(sub))
        };
        self.accounts
            .lock()
            .expect("metrics lock")
            .push((name.to_string(), child.clone()));
        child
    }

    /// The named accounts' metrics.
    pub fn named_accounts(&self) -> Vec<(String, SharedMetrics)> {
        self.accounts.lock().expect("metrics lock").clone()
    }

    fn register(registry: &mut Registry) -> Metrics {
        let mentions_received = Family::<PlatformLabel, Counter>::default();
        let jobs = Family::<OutcomeLabel, Counter>::default();
        let triggers = Family::<TriggerLabel, Counter>::default();
        registry.register(
            "triggers",
            "Triggers that became jobs, by platform and cause (mention|hashtag|moderator|command)",
            triggers.clone(),
        );
        let stage_seconds = Family::<StageLabel, Histogram>::new_with_constructor(|| {
            Histogram::new([0.005, 0.05, 0.25, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0])
        });
        let llm_tokens = Family::<TokenLabel, Counter>::default();
        let errors = Family::<ErrorLabel, Counter>::default();
        let search_failures = Family::<SearchFailureLabel, Counter>::default();
        let verifications = Family::<OutcomeLabel, Counter>::default();
        let fact_checks = Family::<OutcomeLabel, Counter>::default();
        let claim_matches = Counter::default();
        let living = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "living",
            "Living replies by event: recheck (a re-check job made), update (an update posted or an edit made), deletion (an answer deleted because its post was), withdrawn (an answer a moderator withdrew), memory (a post answered from a kept answer's evidence)",
            living.clone(),
        );
        let feed_reads = Family::<OutcomeLabel, Counter>::default();
        let index_items = Gauge::default();
        registry.register(
            "feed_reads",
            "Reads of the evidence index's feeds, by outcome (read|not_modified|failed)",
            feed_reads.clone(),
        );
        registry.register(
            "index_items",
            "Items held by the evidence index ([index])",
            index_items.clone(),
        );
        let budget_tokens = Gauge::default();
        let budget_used = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
        registry.register(
            "budget_tokens_today",
            "LLM tokens used today (UTC), every stage and model",
            budget_tokens.clone(),
        );
        registry.register(
            "budget_used_ratio",
            "Share of the day's LLM budget used (tokens or cost, the larger; 0 without a budget)",
            budget_used.clone(),
        );
        registry.register(
            "mentions_received",
            "Mentions received, by platform",
            mentions_received.clone(),
        );
        registry.register("jobs", "Jobs finished, by outcome", jobs.clone());
        registry.register("stage_seconds", "Time spent per stage", stage_seconds.clone());
        registry.register(
            "llm_tokens",
            "LLM tokens used, by stage (draft|verify) and kind (prompt|completion)",
            llm_tokens.clone(),
        );
        registry.register("errors", "Errors, by kind", errors.clone());
        registry.register(
            "verifications",
            "Drafts checked by debate, by outcome (upheld|revised|withdrawn)",
            verifications.clone(),
        );
        registry.register(
            "fact_checks",
            "Professional fact-checks, by outcome (found: by the API or a page's markup; named: in a reply)",
            fact_checks.clone(),
        );
        registry.register(
            "claim_matches",
            "Fact-checks of the post's own claim, found by claim matching in the fact-check corpus, that a reply rested on",
            claim_matches.clone(),
        );
        registry.register(
            "search_failures",
            "Failed search requests (after retries), by backend and kind",
            search_failures.clone(),
        );
        let reports = Family::<ReportLabel, Counter>::default();
        registry.register(
            "reports",
            "Reported posts, by platform and event (seen|checked|noted|skipped_<reason>)",
            reports.clone(),
        );
        // The kinds an alert reads, counted from 0: a counter's first sample is not an
        // increase, so one born at 1 would hide the first error.
        for kind in ["llm", "outage", "store"] {
            let _ = errors.get_or_create(&ErrorLabel { kind: kind.into() });
        }
        let watch_posts = Family::<ReportLabel, Counter>::default();
        registry.register(
            "watch_posts",
            "Posts the network watch saw, by platform and fate (language|length|words|no_match|not_asserted|exempt|seen_before|capped|taken|failed)",
            watch_posts.clone(),
        );
        let stream_last_event = Family::<StreamLabel, Gauge>::default();
        registry.register(
            "stream_last_event_timestamp_seconds",
            "Unix time of the last event each long-lived connection delivered (mastodon, bluesky: mentions; reports:<platform>; watch:<stream>)",
            stream_last_event.clone(),
        );
        Metrics {
            registry: Mutex::new(Registry::default()),
            last_events: Mutex::new(BTreeMap::new()),
            stream_last_event,
            accounts: Mutex::new(Vec::new()),
            watch_posts,
            mentions_received,
            jobs,
            triggers,
            stage_seconds,
            llm_tokens,
            errors,
            search_failures,
            verifications,
            fact_checks,
            claim_matches,
            living,
            feed_reads,
            index_items,
            budget_tokens,
            budget_used,
            budget: Mutex::new(serde_json::Value::Null),
            connections: Mutex::new(BTreeMap::new()),
            index_refresher: Mutex::new(serde_json::Value::Null),
            search_backends: Mutex::new(BTreeMap::new()),
            reports,
            report_readers: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn mention(&self, platform: &str) {
        self.mentions_received
            .get_or_create(&PlatformLabel {
                platform: platform.into(),
            })
            .inc();
    }

    pub fn trigger(&self, platform: &str, cause: &str) {
        self.triggers
            .get_or_create(&TriggerLabel {
                platform: platform.into(),
                cause: cause.into(),
            })
            .inc();
    }

    pub fn job_finished(&self, outcome: &str) {
        self.jobs
            .get_or_create(&OutcomeLabel {
                outcome: outcome.into(),
            })
            .inc();
    }

    pub fn stage(&self, stage: &str, seconds: f64) {
        self.stage_seconds
            .get_or_create(&StageLabel { stage: stage.into() })
            .observe(seconds);
    }

    pub fn tokens(&self, stage: &str, prompt: u64, completion: u64) {
        for (kind, n) in [("prompt", prompt), ("completion", completion)] {
            self.llm_tokens
                .get_or_create(&TokenLabel {
                    stage: stage.into(),
                    kind: kind.into(),
                })
                .inc_by(n);
        }
    }

    pub fn error(&self, kind: &str) {
        self.errors.get_or_create(&ErrorLabel { kind: kind.into() }).inc();
    }

    pub fn search_failed(&self, backend: &str, kind: &str) {
        self.search_failures
            .get_or_create(&SearchFailureLabel {
                backend: backend.into(),
                kind: kind.into(),
            })
            .inc();
        let mut backends = self.search_backends.lock().expect("metrics lock");
        let h = backends.entry(backend.into()).or_default();
        h.failures_in_a_row += 1;
        h.last_failure = Some(kind.into());
    }

    pub fn verification(&self, outcome: &str) {
        self.verifications
            .get_or_create(&OutcomeLabel {
                outcome: outcome.into(),
            })
            .inc();
    }

    /// A draft's fact-checks: how many were found and how many its reply names.
    pub fn fact_checks(&self, found: usize, named: usize) {
        for (outcome, n) in [("found", found), ("named", named)] {
            self.fact_checks
                .get_or_create(&OutcomeLabel {
                    outcome: outcome.into(),
                })
                .inc_by(n as u64);
        }
    }

    /// Matches of the fact-check corpus a reply rested on.
    pub fn claim_matches_used(&self, n: usize) {
        self.claim_matches.inc_by(n as u64);
    }

    /// One event of a reply's life after posting (`recheck`, `update`, `deletion`,
    /// `withdrawn`, `memory`).
    pub fn living(&self, event: &str) {
        self.living.get_or_create(&OutcomeLabel { outcome: event.into() }).inc();
    }

    /// One read of an index feed (`read`, `not_modified`, `failed`), and the items now held.
    pub fn feed_read(&self, outcome: &str, items_held: u64) {
        self.feed_reads
            .get_or_create(&OutcomeLabel {
                outcome: outcome.into(),
            })
            .inc();
        self.index_items.set(items_held as i64);
    }

    pub fn search_ok(&self, backend: &str) {
        self.search_backends
            .lock()
            .expect("metrics lock")
            .insert(backend.into(), BackendHealth::default());
    }

    pub fn search_health(&self) -> BTreeMap<String, BackendHealth> {
        self.search_backends.lock().expect("metrics lock").clone()
    }

    /// Today's spend against the budget, for `/metrics` and `/healthz`.
    pub fn set_budget(&self, tokens: u64, cost: f64, used: f64, state: &str) {
        self.budget_tokens.set(tokens as i64);
        self.budget_used.set(used);
        *self.budget.lock().expect("metrics lock") =
            serde_json::json!({"tokens_today": tokens, "cost_today": cost, "used": used, "state": state});
    }

    /// The refresher's state (`running`, or `retrying` with why).
    pub fn set_index_refresher(&self, state: &str, reason: Option<&str>) {
        *self.index_refresher.lock().expect("metrics lock") = serde_json::json!({
            "state": state, "reason": reason, "since": chrono::Utc::now().to_rfc3339(),
        });
    }

    pub fn index_refresher_state(&self) -> serde_json::Value {
        self.index_refresher.lock().expect("metrics lock").clone()
    }

    pub fn budget_state(&self) -> serde_json::Value {
        self.budget.lock().expect("metrics lock").clone()
    }

    /// One report event (`seen`, `checked`, `noted`, `skipped_<reason>`).
    pub fn report(&self, platform: &str, event: &str) {
        self.reports
            .get_or_create(&ReportLabel {
                platform: platform.into(),
                event: event.into(),
            })
            .inc();
    }

    /// A configured platform: its mentions counted from 0 (an alert on their increase reads
    /// a series that exists before the first one).
    pub fn platform(&self, platform: &str) {
        let _ = self.mentions_received.get_or_create(&PlatformLabel {
            platform: platform.into(),
        });
    }

    /// A platform the watch reads: each fate counted from 0.
    pub fn watching(&self, platform: &str) {
        for fate in WATCH_FATES {
            let _ = self.watch_posts.get_or_create(&ReportLabel {
                platform: platform.into(),
                event: fate.to_string(),
            });
        }
    }

    /// `n` posts the watch saw on `platform` met `fate`.
    pub fn watch(&self, platform: &str, fate: &str, n: u64) {
        self.watch_posts
            .get_or_create(&ReportLabel {
                platform: platform.into(),
                event: fate.into(),
            })
            .inc_by(n);
    }

    /// A report reader's state for `/healthz`: `following`, `forbidden` (the token lacks the
    /// role or scope: the reason says which) or `failing`.
    pub fn set_report_reader(&self, platform: &str, state: &str, reason: Option<&str>) {
        self.report_readers.lock().expect("metrics lock").insert(
            platform.into(),
            serde_json::json!({"state": state, "reason": reason, "since": chrono::Utc::now().to_rfc3339()}),
        );
    }

    /// Each report reader, the named accounts' as `<platform>@<account>`.
    pub fn report_readers(&self) -> BTreeMap<String, serde_json::Value> {
        let mut out = self.report_readers.lock().expect("metrics lock").clone();
        for (name, m) in self.named_accounts() {
            out.extend(m.report_readers().into_iter().map(|(k, v)| (format!("{k}@{name}"), v)));
        }
        out
    }

    pub fn set_connection(&self, platform: &str, state: ConnState) {
        self.connections
            .lock()
            .expect("metrics lock")
            .insert(platform.into(), state);
    }

    /// The connection `stream` delivered something now.
    pub fn heard(&self, stream: &str) {
        let now = chrono::Utc::now();
        self.last_events
            .lock()
            .expect("metrics lock")
            .insert(stream.into(), now);
        self.stream_last_event
            .get_or_create(&StreamLabel { stream: stream.into() })
            .set(now.timestamp());
    }

    /// When each connection last delivered something, the named accounts' as `<stream>@<account>`.
    pub fn last_events(&self) -> BTreeMap<String, chrono::DateTime<chrono::Utc>> {
        let mut out = self.last_events.lock().expect("metrics lock").clone();
        for (name, m) in self.named_accounts() {
            out.extend(m.last_events().into_iter().map(|(k, v)| (format!("{k}@{name}"), v)));
        }
        out
    }

    /// Each connection, the named accounts' as `<platform>@<account>`.
    pub fn connection_states(&self) -> BTreeMap<String, ConnState> {
        let mut out = self.connections.lock().expect("metrics lock").clone();
        for (name, m) in self.named_accounts() {
            out.extend(
                m.connection_states()
                    .into_iter()
                    .map(|(k, v)| (format!("{k}@{name}"), v)),
            );
        }
        out
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let registry = self.registry.lock().expect("metrics lock");
        prometheus_client::encoding::text::encode(&mut out, &registry).expect("encoding to a String cannot fail");
        out
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
