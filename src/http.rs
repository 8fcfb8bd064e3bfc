//! The loopback HTTP listener: `/healthz` (per-platform connection state; 200 when every
//! platform is connected, else 503) and `/metrics` (Prometheus text).

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tokio_util::sync::CancellationToken;

use crate::metrics::{ConnState, SharedMetrics};

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
    let ok = !states.is_empty() && states.values().all(|s| *s == ConnState::Connected);
    let body = serde_json::json!({ "status": if ok { "ok" } else { "degraded" }, "platforms": states });
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
