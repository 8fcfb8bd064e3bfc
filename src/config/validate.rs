//! Config validation: one function per section, each naming the key, the problem and the fix
//! (`key: problem — fix`), so an operator's mistake is one line that says what to change.

use super::{Config, ConfigProblem, PipelineMode};

#[path = "validate_accounts.rs"]
mod accounts;
#[path = "validate_ops.rs"]
mod ops;
#[path = "validate_platforms.rs"]
mod platforms;

/// Collects problems as `key: problem — fix`.
#[derive(Default)]
pub(super) struct Problems(pub(super) Vec<ConfigProblem>);

impl Problems {
    fn bad(&mut self, key: &str, problem: String, fix: &str) {
        self.0.push(ConfigProblem {
            key: key.into(),
            problem,
            fix: fix.into(),
        });
    }
}

/// Every problem in the config, in section order.
pub(super) fn validate(c: &Config) -> Vec<ConfigProblem> {
    let mut p = Problems::default();
    for section in [
        daemon,
        llm,
        limits_and_reply,
        fetch,
        search,
        ops::index,
        ops::claims,
        relevance,
        credibility,
        platforms::mastodon,
        platforms::bluesky,
        platforms::watch,
        images,
        ops::moderation,
        ops::budget,
        ops::admin,
        ops::living,
        ops::eval,
        accounts::accounts,
    ] {
        section(c, &mut p);
    }
    p.0
}

/// `[daemon]` and `[http]`.
fn daemon(c: &Config, p: &mut Problems) {
    if c.verify.agents == 0 || c.verify.agents > 5 {
        p.bad(
            "verify.agents",
            format!("is {}", c.verify.agents),
            "use 1 to 5 agents (2 is the default)",
        );
    }
    if c.verify.rounds > 10 {
        p.bad(
            "verify.rounds",
            format!("is {}", c.verify.rounds),
            "use 0 to 10 rounds (3 is the default)",
        );
    }
    for (key, value) in [
        ("llm.max_response_bytes", c.llm.max_response_bytes),
        ("search.max_response_bytes", c.search.max_response_bytes),
        ("mastodon.max_response_bytes", c.mastodon.max_response_bytes),
        ("bluesky.max_response_bytes", c.bluesky.max_response_bytes),
    ] {
        if value < 10_000 {
            p.bad(
                key,
                format!("is {value}"),
                "use at least 10000 bytes (the defaults are 2000000 to 4000000)",
            );
        }
    }
    if c.daemon.keep_days == 0 {
        p.bad(
            "daemon.keep_days",
            "is 0".into(),
            "keep finished jobs at least 1 day (30 is the default)",
        );
    }
    if c.daemon.retry_base_secs == 0 || c.daemon.retry_base_secs > 3600 {
        p.bad(
            "daemon.retry_base_secs",
            format!("is {}", c.daemon.retry_base_secs),
            "use a number of seconds from 1 to 3600 (5 is the default)",
        );
    }
    if c.daemon.state_dir.as_os_str().is_empty() {
        p.bad(
            "daemon.state_dir",
            "is empty".into(),
            "set a writable folder, e.g. /var/lib/musebot",
        );
    }
    if c.daemon.max_jobs_in_flight == 0 || c.daemon.max_jobs_in_flight > 64 {
        p.bad(
            "daemon.max_jobs_in_flight",
            format!("is {}", c.daemon.max_jobs_in_flight),
            "use a number from 1 to 64",
        );
    }
    if c.daemon.queue_capacity == 0 || c.daemon.queue_capacity > 100_000 {
        p.bad(
            "daemon.queue_capacity",
            format!("is {}", c.daemon.queue_capacity),
            "use a number from 1 to 100000",
        );
    }
    if !c.http.listen.is_empty() {
        match c.http.listen.parse::<std::net::SocketAddr>() {
            Ok(a) if a.ip().is_loopback() => {}
            Ok(a) => p.bad(
                "http.listen",
                format!("`{a}` is not a loopback address"),
                "use 127.0.0.1:PORT or [::1]:PORT (metrics are not for the internet)",
            ),
            Err(_) => p.bad(
                "http.listen",
                format!("`{}` is not an address", c.http.listen),
                "write IP:PORT, e.g. 127.0.0.1:9187, or \"\" to disable",
            ),
        }
    }
}

/// `[llm]`.
fn llm(c: &Config, p: &mut Problems) {
    check_url(
        p,
        "llm.base_url",
        &c.llm.base_url,
        "write the API root, e.g. http://127.0.0.1:8088/v1 or https://api.openai.com/v1",
    );
    if c.llm.model.trim().is_empty() {
        p.bad(
            "llm.model",
            "is empty".into(),
            "name the model the endpoint serves, e.g. gpt-4o-mini",
        );
    }
    if c.llm.timeout_secs == 0 {
        p.bad(
            "llm.timeout_secs",
            "is 0".into(),
            "use a positive number of seconds, e.g. 120",
        );
    }
    if c.llm.max_tokens == 0 {
        p.bad("llm.max_tokens", "is 0".into(), "use a positive number, e.g. 400");
    }
    if !(0.0..=2.0).contains(&c.llm.temperature) {
        p.bad(
            "llm.temperature",
            format!("is {}", c.llm.temperature),
            "use a value from 0.0 to 2.0",
        );
    }
}

/// `[limits]` and `[reply]`.
fn limits_and_reply(c: &Config, p: &mut Problems) {
    if c.limits.checks_per_requester_per_hour == 0 {
        p.bad(
            "limits.checks_per_requester_per_hour",
            "is 0".into(),
            "use a positive number, e.g. 5",
        );
    }
    if c.reply.max_parts == 0 || c.reply.max_parts > 20 {
        p.bad(
            "reply.max_parts",
            format!("is {}", c.reply.max_parts),
            "use a number from 1 to 20",
        );
    }
}

/// `[fetch]`.
fn fetch(c: &Config, p: &mut Problems) {
    let f = &c.fetch;
    if f.timeout_secs == 0 {
        p.bad(
            "fetch.timeout_secs",
            "is 0".into(),
            "use a positive number of seconds, e.g. 15",
        );
    }
    if f.max_body_bytes < 10_000 {
        p.bad(
            "fetch.max_body_bytes",
            format!("is {}", f.max_body_bytes),
            "use at least 10000 (pages are often 1–3 MB)",
        );
    }
    if f.per_host_concurrency == 0 {
        p.bad(
            "fetch.per_host_concurrency",
            "is 0".into(),
            "use a positive number, e.g. 2",
        );
    }
    if !f.proxy.is_empty() && reqwest::Proxy::all(&f.proxy).is_err() {
        p.bad(
            "fetch.proxy",
            format!("`{}` is not a proxy URL", f.proxy),
            "write e.g. http://127.0.0.1:3128 or \"\"",
        );
    }
    for a in &f.test_allow_addrs {
        if a.parse::<std::net::SocketAddr>().is_err() {
            p.bad(
                "fetch.test_allow_addrs",
                format!("`{a}` is not IP:port"),
                "write e.g. \"127.0.0.1:8080\" (tests only)",
            );
        }
    }
}

/// `[search]` (and what `daemon.pipeline = "muse"` needs).
fn search(c: &Config, p: &mut Problems) {
    if c.daemon.pipeline == PipelineMode::Muse {
        if c.search.backends.is_empty() && !c.index.enabled() {
            p.bad("search.backends", "is empty and [index] follows no feeds, but daemon.pipeline = \"muse\" needs a source of evidence".into(), "add a backend (e.g. { kind = \"brave\", api_key_env = \"BRAVE_API_KEY\" }), list feeds under [index] feeds, or set daemon.pipeline = \"baseline\"");
        }
        for (key, value) in [
            ("relevance.onnxruntime", &c.relevance.onnxruntime),
            ("relevance.model", &c.relevance.model),
            ("relevance.tokenizer", &c.relevance.tokenizer),
        ] {
            if value.is_empty() {
                p.bad(key, "is empty but daemon.pipeline = \"muse\" needs it".into(), "run scripts/setup-sandbox.sh and use the paths it prints in sandbox.env, or set daemon.pipeline = \"baseline\"");
            }
        }
    }
    let r = &c.relevance;
    if r.multilingual_model.is_empty() != r.multilingual_tokenizer.is_empty() {
        let (key, other) = if r.multilingual_model.is_empty() {
            ("relevance.multilingual_model", "relevance.multilingual_tokenizer")
        } else {
            ("relevance.multilingual_tokenizer", "relevance.multilingual_model")
        };
        p.bad(
            key,
            format!("is empty but {other} is set"),
            "set both (scripts/setup-sandbox.sh prints MUSEBOT_EMBED_MODEL_MULTI and MUSEBOT_EMBED_TOKENIZER_MULTI), or neither",
        );
    }
    if !(-1.0..=1.0).contains(&r.multilingual_threshold) {
        p.bad(
            "relevance.multilingual_threshold",
            format!("is {}", r.multilingual_threshold),
            "use a cosine between -1 and 1 (0.29 is calibrated for the shipped model)",
        );
    }
    for (i, b) in c.search.backends.iter().enumerate() {
        if b.kind == crate::search::BackendKind::Searxng && b.base_url.is_empty() {
            p.bad(
                &format!("search.backends[{i}].base_url"),
                "is empty for searxng".into(),
                "set your SearXNG instance's URL",
            );
        }
        if b.kind == crate::search::BackendKind::Index && !c.index.enabled() {
            p.bad(
                &format!("search.backends[{i}].kind"),
                "is \"index\" but [index] follows no feeds".into(),
                "list RSS or Atom feeds under [index] feeds, or remove this backend",
            );
        }
        if b.kind == crate::search::BackendKind::Google && b.cx.is_empty() {
            p.bad(
                &format!("search.backends[{i}].cx"),
                "is empty for google".into(),
                "set your Programmable Search Engine id",
            );
        }
        if b.kind.needs_key() && b.api_key_env.is_empty() && b.api_key_file.is_empty() {
            p.bad(
                &format!("search.backends[{i}].api_key_env"),
                "and api_key_file are both empty".into(),
                "name the environment variable or file holding the API key",
            );
        }
    }
    if !c.search.before.is_empty() && chrono::DateTime::parse_from_rfc3339(&c.search.before).is_err() {
        p.bad(
            "search.before",
            format!("`{}` is not an RFC 3339 time", c.search.before),
            "write e.g. 2024-01-31T00:00:00Z or \"\"",
        );
    }
}

/// `[relevance]`.
fn relevance(c: &Config, p: &mut Problems) {
    if !(c.relevance.image_threshold > 0.0 && c.relevance.image_threshold <= 1.0) {
        p.bad(
            "relevance.image_threshold",
            format!("is {}", c.relevance.image_threshold),
            "use a cosine above 0 and at most 1 (Muse used 0.7 with DINO ViT-B/8)",
        );
    }
    if !(1..=6).contains(&c.relevance.evidence_parallel) {
        p.bad(
            "relevance.evidence_parallel",
            format!("is {}", c.relevance.evidence_parallel),
            "use 1 to 6 (1, Muse's one-after-another order, is the default)",
        );
    }
    if !(16..=1024).contains(&c.relevance.image_size) {
        p.bad(
            "relevance.image_size",
            format!("is {}", c.relevance.image_size),
            "use the model's input size, 16 to 1024 (224 for ViT models)",
        );
    }
    if c.relevance.threads == 0 || c.relevance.threads > 64 {
        p.bad(
            "relevance.threads",
            format!("is {}", c.relevance.threads),
            "use a number from 1 to 64 (at most your CPU count)",
        );
    }
    let r = &c.relevance;
    if r.passage_words < 10 {
        p.bad(
            "relevance.passage_words",
            format!("is {}", r.passage_words),
            "use at least 10 (60 is calibrated)",
        );
    }
    if r.max_passages == 0 || (r.prefilter != 0 && r.prefilter < r.max_passages) {
        p.bad(
            "relevance.max_passages",
            format!("is {} with prefilter {}", r.max_passages, r.prefilter),
            "use at least 1, and no more than relevance.prefilter (or prefilter = 0, no prefilter)",
        );
    }
    if r.prefilter_first != 0 && r.prefilter_first < r.prefilter && r.prefilter_first < r.max_passages {
        p.bad(
            "relevance.prefilter_first",
            format!("is {} with max_passages {}", r.prefilter_first, r.max_passages),
            "use at least relevance.max_passages (a passing page sends that many to the evidence step), or 0 to embed the prefilter's passages all at once",
        );
    }
    if r.max_pages == 0 {
        p.bad(
            "relevance.max_pages",
            "is 0".into(),
            "use at least 1 (6 is the default)",
        );
    }
    if !(0.0..=1.0).contains(&c.relevance.threshold) {
        p.bad(
            "relevance.threshold",
            format!("is {}", c.relevance.threshold),
            "use a cosine between 0 and 1",
        );
    }
}

/// `[credibility]`.
fn credibility(c: &Config, p: &mut Problems) {
    let cuts = c.credibility.pc1_cuts;
    if !(cuts[0] >= cuts[1] && cuts[1] >= cuts[2] && cuts[2] >= 0.0 && cuts[0] <= 1.0) {
        p.bad(
            "credibility.pc1_cuts",
            format!("{cuts:?} is not descending within [0, 1]"),
            "write [high, medium, low], e.g. [0.90, 0.75, 0.60]",
        );
    }
    for (i, f) in c.credibility.fact_checkers.iter().enumerate() {
        if crate::credibility::host_of(&format!("https://{}/", f.domain)).is_none() || f.domain.contains('/') {
            p.bad(
                &format!("credibility.fact_checkers[{i}].domain"),
                format!("`{}` is not a host name", f.domain),
                "write the site's host, e.g. \"factcheck.example.org\" (and its path apart, in path)",
            );
        }
        if f.name.trim().is_empty() {
            p.bad(
                &format!("credibility.fact_checkers[{i}].name"),
                "is empty".into(),
                "write the name replies give it, e.g. \"Example Fact Check\"",
            );
        }
        if !f.path.is_empty() && !f.path.starts_with('/') {
            p.bad(
                &format!("credibility.fact_checkers[{i}].path"),
                format!("`{}` does not start with /", f.path),
                "write the path its checks live under, e.g. \"/fact-check/\", or leave it empty",
            );
        }
    }
    for (i, f) in c.credibility.files.iter().enumerate() {
        if f.format == crate::credibility::load::FileFormat::TierList && f.tier.is_none() {
            p.bad(
                &format!("credibility.files[{i}].tier"),
                "is missing for a tier_list file".into(),
                "add tier = \"high\" | \"medium\" | \"low\"",
            );
        }
    }
}

/// `[images]` and `[vision]`.
fn images(c: &Config, p: &mut Problems) {
    let i = &c.images;
    if i.max_images > 10 {
        p.bad(
            "images.max_images",
            format!("is {}", i.max_images),
            "use 0 to 10 (posts carry at most 4)",
        );
    }
    if i.max_bytes < 10_000 {
        p.bad(
            "images.max_bytes",
            format!("is {}", i.max_bytes),
            "use at least 10000 bytes (10000000 is the default)",
        );
    }
    if i.max_pixels < 10_000 {
        p.bad(
            "images.max_pixels",
            format!("is {}", i.max_pixels),
            "use at least 10000 (40000000 is the default)",
        );
    }
    if !i.ocr.is_empty() && i.ocr_timeout_secs == 0 {
        p.bad(
            "images.ocr_timeout_secs",
            "is 0".into(),
            "use a positive number, e.g. 20",
        );
    }
    if !c.vision.base_url.is_empty() {
        check_url(
            p,
            "vision.base_url",
            &c.vision.base_url,
            "set it to an OpenAI-compatible API root, or \"\" to use llm.base_url",
        );
    }
}

pub(super) fn check_url(p: &mut Problems, key: &str, value: &str, fix: &str) {
    match url::Url::parse(value) {
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {}
        Ok(u) => p.bad(key, format!("scheme `{}` is not http or https", u.scheme()), fix),
        Err(e) => p.bad(key, format!("`{value}` is not a URL ({e})"), fix),
    }
}
