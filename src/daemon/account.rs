//! One account's runtime: its platforms and their sources (mentions, hashtags, reports, the
//! network watch), its intake, moderation, admin and evidence pages, its living replies and its
//! dispatcher, over its own view of the store (`Store::account`) and its own metrics, with the
//! daemon's shared pipeline (models, evidence index, fact-check corpus, claim memory). Several
//! run side by side in one daemon; one's outage, 429s or revoked token stalls only itself.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use super::connect_with_retry;
use crate::config::Account;
use crate::intake::{Intake, Queues};
use crate::metrics::SharedMetrics;
use crate::moderation::Moderation;
use crate::pipeline::Pipeline;
use crate::platform::bluesky::{jetstream::NetworkWatch, Bluesky};
use crate::platform::mastodon::{public::PublicWatch, Mastodon};
use crate::platform::source::Source;
use crate::platform::{Platform, Platforms};
use crate::secret::{self, Secret};
use crate::store::{Retention, Store};
use crate::worker::{self, Worker};

/// An account and its secrets, read before anything starts.
pub(super) struct Secrets {
    pub account: Account,
    token: Option<Secret>,
    bluesky_password: Option<Secret>,
    admin_token: Option<Secret>,
}

impl Secrets {
    pub fn resolve(account: Account) -> anyhow::Result<Secrets> {
        let config = &account.config;
        let m = &config.mastodon;
        let token = if m.enabled {
            secret::resolve(
                &account.key("mastodon.access_token"),
                &m.access_token_env,
                &m.access_token_file,
                true,
            )?
        } else {
            None
        };
        let b = &config.bluesky;
        let bluesky_password = if b.enabled {
            secret::resolve(
                &account.key("bluesky.app_password"),
                &b.app_password_env,
                &b.app_password_file,
                true,
            )?
        } else {
            None
        };

        let ad = &config.admin;
        let admin_token = if ad.listen.is_empty() {
            None
        } else {
            let t = secret::resolve(&account.key("admin.token"), &ad.token_env, &ad.token_file, true)?;
            if t.as_ref().is_some_and(|t| t.expose().trim().chars().count() < 16) {
                anyhow::bail!("{}: shorter than 16 characters — put a long random token in the file or variable (e.g. `openssl rand -hex 32`)", account.key("admin.token"));
            }
            t
        };

        Ok(Secrets {
            token,
            bluesky_password,
            admin_token,
            account,
        })
    }
}

/// What the daemon gives each account: its store view and metrics, the shared pipeline.
pub(super) struct Shared {
    pub store: Store,
    pub metrics: SharedMetrics,
    pub pipeline: Pipeline,
    pub retention: Retention,
    pub shutdown: CancellationToken,
}

/// Spawns `task` in the current span (the account's), so its logs name the account.
fn spawn_here<F>(set: &mut tokio::task::JoinSet<()>, task: F)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    set.spawn(tracing::Instrument::in_current_span(task));
}

/// Runs one account until shutdown (or until its start fails for good).
pub(super) async fn run(secrets: Secrets, shared: Shared) -> anyhow::Result<()> {
    let Secrets {
        account,
        token,
        bluesky_password,
        admin_token,
    } = secrets;
    let Shared {
        store,
        metrics,
        pipeline,
        retention,
        shutdown,
    } = shared;
    let config = &account.config;
    let (m, b) = (&config.mastodon, &config.bluesky);
    let prompts = pipeline.prompts.clone();
    let mut background = tokio::task::JoinSet::new();
    let mut platforms = Platforms::default();
    let mut sources = Vec::new();
    // The network watch's sources (`[watch]`), started once intake is built.
    let mut watch_sources = Vec::new();
    if let Some(token) = token {
        metrics.set_connection("mastodon", crate::metrics::ConnState::Connecting);
        metrics.platform("mastodon");
        let connect = || Mastodon::connect(&config.mastodon, token.clone());
        let Some((mastodon, source)) = connect_with_retry("mastodon", m.reconnect_max_secs, connect, &shutdown).await?
        else {
            return Ok(());
        };
        platforms.insert(Platform::Mastodon(mastodon));
        sources.push(Source::MastodonHashtags(
            crate::platform::mastodon::hashtag::HashtagWatch {
                client: source.client.clone(),
                bot: source.bot.clone(),
                every: Duration::from_secs(config.moderation.hashtag_poll_secs),
                streaming_base: source.streaming_base.clone(),
                reconnect_max: Duration::from_secs(config.mastodon.reconnect_max_secs),
            },
        ));
        let reports = &config.moderation.reports;
        if reports.enabled {
            let wake = source.reports_wake.clone();
            if !reports.webhook_listen.is_empty() {
                let secret = secret::resolve(
                    &account.key("moderation.reports.webhook_secret"),
                    &reports.webhook_secret_env,
                    &reports.webhook_secret_file,
                    true,
                )?
                .expect("a required secret");
                let listener = tokio::net::TcpListener::bind(&reports.webhook_listen)
                    .await
                    .map_err(|e| {
                        anyhow::anyhow!(
                            "{}: cannot listen on {}: {e} — pick a free host:port",
                            account.key("moderation.reports.webhook_listen"),
                            reports.webhook_listen
                        )
                    })?;
                tracing::info!(listen = %reports.webhook_listen, "Mastodon's report.created webhook is received here");
                let (wake, metrics, stop) = (wake.clone(), metrics.clone(), shutdown.clone());
                spawn_here(&mut background, async move {
                    if let Err(e) = crate::webhook::serve(listener, secret, wake, metrics, stop).await {
                        tracing::error!(error = %e, "the report webhook's listener failed");
                    }
                });
            }
            sources.push(Source::MastodonReports(
                crate::platform::mastodon::reports::ReportWatch {
                    client: source.client.clone(),
                    bot: source.bot.clone(),
                    every: Duration::from_secs(reports.poll_secs),
                    max_age: chrono::Duration::hours(reports.max_age_hours as i64),
                    wake,
                    min_gap: crate::platform::mastodon::reports::MIN_GAP,
                },
            ));
        }
        if config.watch.enabled && config.watch.mastodon {
            watch_sources.push(crate::watch::WatchSource::Mastodon(PublicWatch {
                client: source.client.clone(),
                streaming_base: source.streaming_base.clone(),
                bot: source.bot.clone(),
                reconnect_max: Duration::from_secs(config.mastodon.reconnect_max_secs),
            }));
        }
        sources.push(Source::Mastodon(source));
    }
    if let Some(password) = bluesky_password {
        metrics.set_connection("bluesky", crate::metrics::ConnState::Connecting);
        metrics.platform("bluesky");
        let connect = || Bluesky::connect(b, password.clone(), Some(store.clone()));
        let Some((bluesky, source)) = connect_with_retry("bluesky", b.reconnect_max_secs, connect, &shutdown).await?
        else {
            return Ok(());
        };
        if matches!(source, crate::platform::bluesky::Listener::Notifications(_)) {
            sources.push(Source::BlueskyHashtags(
                crate::platform::bluesky::hashtag::BlueskyHashtags {
                    xrpc: bluesky.xrpc.clone(),
                    bot: bluesky.bot.clone(),
                    every: Duration::from_secs(config.moderation.hashtag_poll_secs),
                },
            ));
        } else {
            tracing::info!("bluesky.mode = \"firehose\": watched hashtags need an AppView's search and are not followed on Bluesky");
        }
        let reports = &config.moderation.reports;
        if reports.enabled && b.labeler.enabled {
            sources.push(Source::BlueskyReports(
                crate::platform::bluesky::reports::OzoneReports {
                    xrpc: bluesky.xrpc.clone(),
                    bot: bluesky.bot.clone(),
                    every: Duration::from_secs(reports.poll_secs),
                    max_age: chrono::Duration::hours(reports.max_age_hours as i64),
                },
            ));
        } else if reports.enabled {
            tracing::info!("moderation.reports: Bluesky's reports reach a labeler's Ozone, and bluesky.labeler.enabled is off: only Mastodon's are followed");
        }
        let (w, reconnect) = (&config.watch, Duration::from_secs(b.reconnect_max_secs));
        let watch = w
            .enabled
            .then(|| NetworkWatch::configured(w, bluesky.xrpc.service(), reconnect));
        watch_sources.extend(watch.flatten().map(crate::watch::WatchSource::Bluesky));
        platforms.insert(Platform::Bluesky(bluesky));
        sources.push(Source::Bluesky(source));
    }

    let (queues, first_rx, later_rx) = Queues::new(config.daemon.queue_capacity);
    // The bot's Mastodon server under both its names: the web host and the account domain.
    let mut local_domains: Vec<String> = url::Url::parse(&config.mastodon.base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .into_iter()
        .collect();
    if let Some(Platform::Mastodon(m)) = platforms.get(crate::model::PlatformKind::Mastodon) {
        local_domains.extend(m.account_domain.clone());
    }
    let resolved = match platforms.get(crate::model::PlatformKind::Bluesky) {
        Some(Platform::Bluesky(b)) => resolve_bluesky_handles(b, &config.moderation).await,
        _ => HashMap::new(),
    };
    let moderation = Moderation::new(config.moderation.clone(), store.clone())
        .with_budget(config.budget.clone(), &config.llm.model)
        .with_local_domains(local_domains)
        .with_bluesky_dids(&resolved);
    let moderation = match platforms.get(crate::model::PlatformKind::Mastodon) {
        Some(Platform::Mastodon(m)) => {
            let ids = resolve_mastodon_moderators(m, &moderation).await;
            moderation.with_mastodon_ids(ids)
        }
        _ => moderation,
    };
    // `/healthz` shows today's spend from the start, not only after the first stage.
    let spend = moderation.budget.today();
    metrics.set_budget(
        spend.prompt_tokens + spend.completion_tokens,
        spend.cost,
        moderation.budget.used(),
        moderation.budget.state().as_str(),
    );
    let allowed_bots = crate::intake::AllowedBots {
        mastodon: config.mastodon.allowed_bots.clone(),
        bluesky_dids: match platforms.get(crate::model::PlatformKind::Bluesky) {
            Some(Platform::Bluesky(b)) => bluesky_dids(b, &config.bluesky.allowed_bots, "bluesky.allowed_bots").await,
            _ => Vec::new(),
        },
    };
    let intake = Intake::new(
        store.clone(),
        metrics.clone(),
        queues,
        allowed_bots,
        moderation.clone(),
        config.limits.checks_per_requester_per_hour,
    );
    if let Some(token) = admin_token {
        let listener = tokio::net::TcpListener::bind(&config.admin.listen)
            .await
            .with_context(|| {
                format!(
                    "{}: cannot listen on {} — pick a free loopback port or set \"\" to disable",
                    account.key("admin.listen"),
                    config.admin.listen
                )
            })?;
        tracing::info!(addr = %listener.local_addr()?, "admin page listening");
        let admin = Arc::new(crate::admin::Admin::new(
            moderation.clone(),
            token,
            config.admin.recent_jobs,
        ));
        let stop = shutdown.clone();
        spawn_here(&mut background, async move {
            if let Err(e) = crate::admin::serve(listener, admin, stop).await {
                tracing::error!(error = %e, "admin page failed");
            }
        });
    }
    let l = &config.bluesky.labeler;
    if config.bluesky.enabled && l.enabled && !l.evidence_listen.is_empty() {
        let listener = tokio::net::TcpListener::bind(&l.evidence_listen)
            .await
            .with_context(|| {
                format!(
                    "{}: cannot listen on {} — pick a free port or set \"\" to serve no evidence pages",
                    account.key("bluesky.labeler.evidence_listen"),
                    l.evidence_listen
                )
            })?;
        tracing::info!(addr = %listener.local_addr()?, "evidence pages listening at /labels");
        let pages = Arc::new(crate::labeler::evidence::Evidence::new(
            store.clone(),
            crate::labeler::evidence::resolver(&platforms),
        ));
        let stop = shutdown.clone();
        spawn_here(&mut background, async move {
            if let Err(e) = crate::labeler::evidence::serve(listener, pages, stop).await {
                tracing::error!(error = %e, "evidence pages failed");
            }
        });
    }
    let worker = Arc::new(Worker {
        store: store.clone(),
        moderation,
        platforms,
        pipeline,
        prompts,
        metrics,
        reply: config.reply.clone(),
        limits: config.limits.clone(),
        privacy: config.privacy.clone(),
        living: config.living.clone(),
        labeler: config.bluesky.labeler.clone(),
        watch_auto_label: config.watch.auto_label,
        watch_label_verdicts: config.watch.label_verdicts(),
        retry_base: std::time::Duration::from_secs(config.daemon.retry_base_secs),
    });

    if config.living.enabled {
        // A reply's life after posting (`living/`): timers → re-check jobs, the posts
        // followed, and kept claims matched against new reviews.
        spawn_here(
            &mut background,
            crate::living::schedule::Scheduler {
                store: store.clone(),
                config: config.living.clone(),
                metrics: Some(worker.metrics.clone()),
            }
            .run(shutdown.clone()),
        );
        spawn_here(
            &mut background,
            crate::living::follow::Follower {
                store: store.clone(),
                config: config.living.clone(),
                platforms: worker.platforms.clone(),
                metrics: Some(worker.metrics.clone()),
            }
            .run(shutdown.clone()),
        );
        if let Some(m) = &worker.pipeline.muse {
            if let Some(matcher) = &m.matcher {
                spawn_here(
                    &mut background,
                    crate::living::rematch::Rematcher {
                        store: store.clone(),
                        config: config.living.clone(),
                        matcher: matcher.clone(),
                        credibility: m.credibility.clone(),
                        candidates: config.claims.candidates,
                    }
                    .run(shutdown.clone()),
                );
            }
        }
    }
    if let Some(Platform::Bluesky(b)) = worker.platforms.get(crate::model::PlatformKind::Bluesky) {
        // Blocked handles that did not resolve at start are refused by handle meanwhile and
        // tried again every minute until they resolve.
        let (b, moderation, stop) = (b.clone(), worker.moderation.clone(), shutdown.clone());
        if !moderation.unresolved_blocked().is_empty() {
            spawn_here(&mut background, async move {
                let mut tick = tokio::time::interval(Duration::from_secs(60));
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tick.tick() => {}
                    }
                    let left = moderation.unresolved_blocked();
                    if left.is_empty() {
                        return;
                    }
                    for handle in left {
                        if let Ok(did) = b.resolve_did(&handle).await {
                            tracing::info!(
                                handle,
                                did,
                                "a blocked bluesky account resolved; blocked by its DID now"
                            );
                            moderation.blocked_resolved(&handle, &did);
                        }
                    }
                }
            });
        }
    }
    spawn_here(
        &mut background,
        crate::store::prune::hourly(store.clone(), retention, shutdown.clone()),
    );
    let intake_stop = shutdown.child_token();
    for source in sources {
        spawn_here(&mut background, source.run(intake.clone(), intake_stop.clone()));
    }
    if config.watch.enabled {
        let matcher = worker.pipeline.muse.as_ref().and_then(|m| m.matcher.clone());
        let (w, stop) = (&config.watch, &intake_stop);
        crate::watch::start(w, matcher, &intake, &store, watch_sources, &mut background, stop);
    }
    let grace = Duration::from_secs(config.daemon.shutdown_grace_secs);
    tracing::info!(pending = store.pending_jobs()?.len(), "musebot running");
    worker::dispatch(
        worker,
        (first_rx, later_rx),
        config.daemon.max_jobs_in_flight,
        grace,
        shutdown.clone(),
    )
    .await;

    background.abort_all();
    while background.join_next().await.is_some() {}
    store.flush()?;
    Ok(())
}

/// Bluesky accounts named in the config by handle or DID, as DIDs, resolved once at start and
/// logged in pairs; rights and blocks then follow the DID, whatever handle the account shows
/// later. A handle that does not resolve is logged and allows nothing until the next start.
async fn bluesky_dids(bluesky: &Bluesky, entries: &[String], key: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in entries {
        let e = e.trim().trim_start_matches('@');
        if e.starts_with("did:") {
            out.push(e.to_string());
            continue;
        }
        match bluesky.resolve_did(e).await {
            Ok(did) => {
                tracing::info!(handle = e, did, key, "bluesky account resolved");
                out.push(did);
            }
            Err(err) => {
                tracing::warn!(handle = e, error = %err, key, "bluesky account does not resolve; it is ignored until the next start (or write its DID)")
            }
        }
    }
    out
}

/// The account ids of the config's Mastodon moderators on the bot's server. A moderator
/// whose lookup fails is logged with the fix and has no rights until the next start: rights
/// are never given by the `acct` alone, which a rename can pass to another account.
async fn resolve_mastodon_moderators(
    mastodon: &crate::platform::mastodon::Mastodon,
    moderation: &Moderation,
) -> Vec<String> {
    let mut out = Vec::new();
    for acct in moderation.mastodon_moderator_accts() {
        match mastodon.account_id(&acct).await {
            Ok(id) => {
                tracing::info!(acct, id, "mastodon moderator resolved to its account id");
                out.push(id);
            }
            Err(e) => tracing::warn!(
                acct,
                error = %e,
                "mastodon moderator in moderation.mastodon_moderators not found on the bot's server: it has no moderator rights until the next start — check the spelling (`user` for the bot's server, `user@domain` for another)"
            ),
        }
    }
    out
}

async fn resolve_bluesky_handles(
    bluesky: &Bluesky,
    config: &crate::config::ModerationConfig,
) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for handle in Moderation::bluesky_handles(config) {
        match bluesky.resolve_did(&handle).await {
            Ok(did) => {
                tracing::info!(handle, did, "bluesky account in [moderation] resolved");
                out.insert(handle, did);
            }
            Err(e) => tracing::warn!(
                handle,
                error = %e,
                "bluesky account in [moderation] does not resolve yet: as a moderator it is ignored until the next start, as a blocked account it is refused by its handle and tried again every minute (or write its DID)"
            ),
        }
    }
    out
}
