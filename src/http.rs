//! The loopback HTTP listener: `/healthz` (per-platform connection state and per-backend
//! search health, each report reader's state; 200 when every platform is connected, no search
//! backend has failed `FAILING_AFTER` times in a row and every report reader is following,
//! else 503) and `/metrics` (Prometheus text).

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tokio_util::sync::CancellationToken;

use crate::metrics::{ConnState, SharedMetrics, FAILING_AFTER};

pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: SharedMetrics,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics_text))
        .with_state(metrics);
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}

async fn healthz(State(m): State<SharedMetrics>) -> impl IntoResponse {
    let states = m.connection_states();
    let search = m.search_health();
    let failing: Vec<&String> = search
        .iter()
        .filter(|(_, h)| h.failures_in_a_row >= FAILING_AFTER)
        .map(|(b, _)| b)
        .collect();
    let reports = m.report_readers();
    let readers_ok = reports.values().all(|r| r["state"] == "following");
    let ok =
        !states.is_empty() && states.values().all(|s| *s == ConnState::Connected) && failing.is_empty() && readers_ok;
    let body = serde_json::json!({
        "status": if ok { "ok" } else { "degraded" },
        "platforms": states,
        "search": search,
        "failing_search_backends": failing,
        "budget": m.budget_state(),
        "index_refresher": m.index_refresher_state(),
        "reports": reports,
        "last_event": m.last_events(),
        "accounts": m
            .named_accounts()
            .into_iter()
            .map(|(name, a)| (name, serde_json::json!({"budget": a.budget_state()})))
            .collect::<serde_json::Map<_, _>>(),
    });
    let code = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, [(header::CONTENT_TYPE, "application/json")], body.to_string())
}

async fn metrics_text(State(m): State<SharedMetrics>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        m.encode(),
    )
}
