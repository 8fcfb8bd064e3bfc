//! Wiring of the long-running daemon: secrets → store → metrics/HTTP → the shared evidence
//! index and pipeline (models, fact-check corpus, claim memory) → one [`account`] runtime per
//! account (its platforms and their sources → intake → dispatcher). [`run`] takes the config and
//! a shutdown token (cancelled on SIGTERM/SIGINT by [`signals`]); when the token fires, intake
//! stops first, then in-flight jobs get the grace period. Beside the accounts, [`backup`]
//! answers `musebot state backup` while the daemon holds the store.

mod account;
pub mod backup;

use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::platform::PlatformError;
use crate::store::Store;

pub async fn run(config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    // Every account's secrets first: a missing one stops the start, named by account and key.
    let accounts = config
        .accounts()
        .into_iter()
        .map(account::Secrets::resolve)
        .collect::<anyhow::Result<Vec<_>>>()?;

    std::fs::create_dir_all(&config.daemon.state_dir).with_context(|| {
        format!(
            "daemon.state_dir: cannot create {} — make it writable by the bot's user",
            config.daemon.state_dir.display()
        )
    })?;
    let store = Store::open(&config.daemon.state_dir).with_context(|| {
        format!(
            "daemon.state_dir: cannot open the store in {}",
            config.daemon.state_dir.display()
        )
    })?;
    let retention = crate::store::Retention {
        jobs: chrono::Duration::days(config.daemon.keep_days as i64),
        cache: chrono::Duration::seconds(config.search.cache_ttl_secs as i64),
        quota: chrono::Duration::days(2),
    };

    let metrics = Metrics::new();
    let mut background = tokio::task::JoinSet::new();
    // `musebot state backup` while the daemon holds the store.
    // Read at start: a key that cannot be read stops the start, never an unsigned backup.
    let backup_key = crate::store::backup::BackupKey::load(&config.daemon.backup_key)?;
    background.spawn(backup::serve(
        store.clone(),
        config.daemon.state_dir.clone(),
        backup_key,
        shutdown.clone(),
    ));
    if !config.http.listen.is_empty() {
        let listener = tokio::net::TcpListener::bind(&config.http.listen)
            .await
            .with_context(|| {
                format!(
                    "http.listen: cannot listen on {} — pick a free port or set \"\" to disable",
                    config.http.listen
                )
            })?;
        tracing::info!(addr = %listener.local_addr()?, "health and metrics listening");
        let (metrics, token) = (metrics.clone(), shutdown.clone());
        background.spawn(async move {
            if let Err(e) = crate::http::serve(listener, metrics, token).await {
                tracing::error!(error = %e, "http listener failed");
            }
        });
    }

    let index_dir = (config.daemon.pipeline == crate::config::PipelineMode::Muse && config.index.enabled())
        .then(|| config.index.dir(&config.daemon.state_dir));
    let mut refresher = None;
    if let Some(dir) = &index_dir {
        // The index's one writer, opened before the pipeline's reader (which it creates).
        // Optional: a bot that cannot keep its index still answers (from the web backends),
        // and the supervisor below tries again every minute.
        match crate::index::refresh::Refresher::open(&config.index, dir, &config.fetch, Some(metrics.clone())) {
            Ok(r) => refresher = Some(r),
            Err(e) => {
                let why = format!("{e:#}");
                tracing::error!(error = %why, "the evidence index is not refreshed now; tried again every minute");
                metrics.set_index_refresher("retrying", Some(&why));
            }
        }
    }
    let pipeline = crate::pipeline::build(&config, Some(store.clone()), Some(metrics.clone()), None)?;
    if let Some(m) = &pipeline.muse {
        // Said once here, not at each answer: which sentences about a post the bot cannot say.
        if let Err(why) = crate::stance::availability(m.multilingual.is_some()) {
            tracing::warn!(%why, "the stance model cannot run: every post gets the neutral sentence");
        }
    }
    if let Some(dir) = index_dir {
        // The feeds' reviews join the fact-check corpus, embedded with the pipeline's models.
        let sink: Option<Box<dyn Fn() -> crate::index::refresh::ClaimsSink + Send>> =
            match (&pipeline.muse, config.claims.enabled) {
                (Some(m), true) => {
                    let (english, multilingual) = (m.embedder.clone(), m.multilingual.clone());
                    let models = crate::claims::Models {
                        model: crate::claims::model_id(&config.relevance.model),
                        multilingual: if m.multilingual.is_some() {
                            crate::claims::model_id(&config.relevance.multilingual_model)
                        } else {
                            String::new()
                        },
                    };
                    let (claims_dir, max) = (config.claims.dir(&config.daemon.state_dir), config.claims.max_reviews);
                    Some(Box::new(move || {
                        crate::index::refresh::ClaimsSink::new(
                            claims_dir.clone(),
                            english.clone(),
                            multilingual.clone(),
                            models.clone(),
                            max,
                        )
                    }))
                }
                _ => None,
            };
        background.spawn(supervise_refresher(
            refresher,
            config.clone(),
            dir,
            metrics.clone(),
            sink,
            shutdown.clone(),
        ));
    }
    let host = |a: &crate::config::Account| {
        let m = &a.config.mastodon;
        let url = m.enabled.then(|| url::Url::parse(&m.base_url).ok()).flatten();
        url.and_then(|u| u.host_str().map(str::to_string)).unwrap_or_default()
    };
    let default_host = accounts
        .iter()
        .find(|a| a.account.name.is_empty())
        .map(|a| host(&a.account))
        .unwrap_or_default();
    let mut runs = Vec::new();
    for a in accounts {
        let name = a.account.name.clone();
        let store = store
            .account(&name, &host(&a.account), &default_host)
            .with_context(|| {
                format!(
                    "daemon.state_dir: cannot open account `{}`'s trees in {}",
                    a.account.label(),
                    config.daemon.state_dir.display()
                )
            })?;
        let repaired = store.repair_pending()?;
        if repaired > 0 {
            tracing::warn!(
                repaired,
                account = a.account.label(),
                "re-indexed unfinished jobs after an unclean stop"
            );
        }
        let metrics = if name.is_empty() {
            metrics.clone()
        } else {
            metrics.account(&name)
        };
        runs.push((a, store, metrics));
    }
    // One claim memory: a claim one account answered is answered from memory by the others.
    let pipeline = pipeline.remembering(runs.iter().map(|(_, s, _)| s.clone()).collect());
    let several = runs.len() > 1;
    let mut accounts = tokio::task::JoinSet::new();
    for (a, store, metrics) in runs {
        let label = a.account.label().to_string();
        let span = tracing::info_span!("account", account = %label);
        let shared = account::Shared {
            store,
            metrics,
            pipeline: pipeline.clone(),
            retention,
            shutdown: shutdown.clone(),
        };
        accounts.spawn(tracing::Instrument::instrument(
            async move { (label, account::run(a, shared).await) },
            span,
        ));
    }
    // One account's failure (a revoked token, a refused start) stops that account only; a
    // daemon of one account stops with it, as it always has.
    let mut failed = None;
    while let Some(joined) = accounts.join_next().await {
        let (label, result) = match joined {
            Ok(x) => x,
            Err(e) => ("?".to_string(), Err(anyhow::anyhow!("an account's task ended: {e}"))),
        };
        if let Err(e) = result {
            if !several {
                failed = Some(e);
                break;
            }
            metrics.error("account");
            tracing::error!(account = %label, error = %format!("{e:#}"), "this account stopped; the others go on");
            failed.get_or_insert(e);
        }
    }
    background.abort_all();
    while background.join_next().await.is_some() {}
    store.flush()?;
    tracing::info!("stopped");
    match failed {
        Some(e) if !several || !shutdown.is_cancelled() => Err(e),
        _ => Ok(()),
    }
}

/// Connects to a platform, retrying transient failures (the server may start after us);
/// `None` when shutdown came first.
pub(crate) async fn connect_with_retry<T, F, Fut>(
    name: &'static str,
    max_wait_secs: u64,
    connect: F,
    shutdown: &CancellationToken,
) -> anyhow::Result<Option<T>>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, PlatformError>>,
{
    let mut wait = Duration::from_secs(1);
    loop {
        match connect().await {
            Ok(pair) => return Ok(Some(pair)),
            Err(PlatformError::Fatal(e)) => anyhow::bail!("{name}: {e}"),
            Err(e) => {
                tracing::warn!(platform = name, error = %e, wait_s = wait.as_secs(), "not reachable yet; retrying")
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(None),
            _ = tokio::time::sleep(wait) => {}
        }
        wait = (wait * 2).min(Duration::from_secs(max_wait_secs));
    }
}

/// Runs the evidence index's refresher and keeps it running: a refresher that could not be
/// opened (another one holds the writer lock, the folder is not writable) is opened again
/// every minute, and one that stops by a panic (feed parsing, tantivy, the prune) is reopened
/// a minute later — each logged, and shown in `/healthz` as `index_refresher`.
async fn supervise_refresher(
    mut first: Option<crate::index::refresh::Refresher>,
    config: Config,
    dir: std::path::PathBuf,
    metrics: crate::metrics::SharedMetrics,
    sink: Option<Box<dyn Fn() -> crate::index::refresh::ClaimsSink + Send>>,
    shutdown: CancellationToken,
) {
    const AGAIN: Duration = Duration::from_secs(60);
    loop {
        let opened = match first.take() {
            Some(r) => Ok(r),
            None => crate::index::refresh::Refresher::open(&config.index, &dir, &config.fetch, Some(metrics.clone())),
        };
        match opened {
            Ok(mut r) => {
                if let Some(make) = &sink {
                    r = r.with_claims(make());
                }
                metrics.set_index_refresher("running", None);
                match tokio::spawn(r.run(shutdown.clone())).await {
                    Ok(()) => return,
                    Err(e) => {
                        let why = format!("the refresher stopped: {e}");
                        metrics.error("panic");
                        tracing::error!(error = %why, "the evidence index refresher stopped; reopened in a minute");
                        metrics.set_index_refresher("retrying", Some(&why));
                    }
                }
            }
            Err(e) => {
                let why = format!("{e:#}");
                tracing::warn!(error = %why, "the evidence index could not be opened; trying again in a minute");
                metrics.set_index_refresher("retrying", Some(&why));
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(AGAIN) => {}
        }
    }
}

/// Cancels `token` on SIGTERM or SIGINT.
pub async fn signals(token: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => tracing::info!("SIGTERM: stopping"),
                    _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: stopping"),
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    token.cancel();
}
