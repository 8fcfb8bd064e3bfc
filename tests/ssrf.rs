//! SSRF suite: hostile URLs — literal private/loopback/link-local/metadata addresses in every
//! spelling, names resolving to loopback, and redirect chains from an allowed server into
//! them — are all refused, and a tripwire proves no connection was made.
//!
//! The tripwire is a loopback listener that counts connections. It is both the fetcher's HTTP
//! proxy (so a request that escaped the guard towards 10.x or 169.254.x would land there, not
//! on the network) and the port every loopback target names.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::Query;
use axum::response::{Html, IntoResponse, Redirect};
use axum::routing::get;
use musebot::fetch::{FetchConfig, FetchError, Fetcher};

async fn tripwire() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            h.fetch_add(1, Ordering::SeqCst);
            drop(sock);
        }
    });
    (port, hits)
}

#[derive(serde::Deserialize)]
struct To {
    to: String,
}

async fn redirector() -> SocketAddr {
    let app = axum::Router::new()
        .route(
            "/r",
            get(|Query(q): Query<To>| async move { Redirect::temporary(&q.to).into_response() }),
        )
        .route("/page", get(|| async { Html("<html><body><p>fine</p></body></html>") }))
        .route("/loop", get(|| async { Redirect::temporary("/loop") }))
        .route(
            "/pdf",
            get(|| async { ([("content-type", "application/pdf")], "%PDF-1.4") }),
        )
        .route("/big", get(|| async { Html("x".repeat(2_000_000)) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_urls_are_refused_and_no_connection_is_made() {
    let (trip, hits) = tripwire().await;
    let ok = redirector().await;
    let config = FetchConfig {
        proxy: format!("http://127.0.0.1:{trip}"),
        no_proxy: "127.0.0.1".into(),
        test_allow_addrs: vec![ok.to_string()],
        max_body_bytes: 1_000_000,
        ..FetchConfig::default()
    };
    let fetcher = Fetcher::new(&config).unwrap();

    // Positive control: the allowlisted server is reachable, so refusals below are the guard's.
    let page = fetcher
        .fetch(&format!("http://{ok}/page"))
        .await
        .expect("allowlisted page");
    assert!(page.html.contains("fine"));

    let p = trip;
    let loopback_targets: Vec<String> = vec![
        format!("http://127.0.0.1:{p}/"),
        format!("http://127.0.0.2:{p}/"),
        format!("http://127.1:{p}/"),
        format!("http://2130706433:{p}/"),
        format!("http://0x7f000001:{p}/"),
        format!("http://0x7f.0.0.1:{p}/"),
        format!("http://017700000001:{p}/"),
        format!("http://0177.0.0.1:{p}/"),
        format!("http://[::1]:{p}/"),
        format!("http://[::ffff:127.0.0.1]:{p}/"),
        format!("http://[::ffff:7f00:1]:{p}/"),
        format!("http://[0:0:0:0:0:ffff:127.0.0.1]:{p}/"),
        format!("http://[::127.0.0.1]:{p}/"),
        format!("http://localhost:{p}/"),
        format!("http://LOCALHOST:{p}/"),
        format!("http://localhost.:{p}/"),
        format!("http://anything.localhost:{p}/"),
        format!("http://0.0.0.0:{p}/"),
        format!("http://0:{p}/"),
        format!("http://[::]:{p}/"),
        // The allowlisted IP on another port is still refused: the allowlist is exact.
        format!("http://127.0.0.1:{}/page", ok.port() + 1),
    ];
    let private_targets: Vec<&str> = vec![
        "http://10.0.0.1/",
        "http://10.255.255.255:8080/",
        "http://172.16.0.1/",
        "http://192.168.1.1/admin",
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://100.100.100.200/latest/meta-data/",
        "http://100.64.0.1/",
        "http://[::ffff:169.254.169.254]/",
        "http://[::ffff:a00:1]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://224.0.0.1/",
        "http://255.255.255.255/",
        "http://2852039166/",
        "http://0xa9fea9fe/",
        "http://0251.0376.0251.0376/",
        "http://[2002:a9fe:a9fe::1]/",
        "http://198.18.0.1/",
    ];
    let mut hostile: Vec<String> = Vec::new();
    hostile.extend(loopback_targets.iter().cloned());
    hostile.extend(private_targets.iter().map(|s| s.to_string()));
    // Redirect chains from the allowed server into every target, one and three hops long.
    for t in loopback_targets
        .iter()
        .map(String::as_str)
        .chain(private_targets.iter().copied())
    {
        hostile.push(format!("http://{ok}/r?to={}", enc(t)));
        let two = format!("http://{ok}/r?to={}", enc(t));
        let three = format!("http://{ok}/r?to={}", enc(&two));
        hostile.push(format!("http://{ok}/r?to={}", enc(&three)));
    }
    // Schemes and credentials.
    hostile.extend(
        [
            "file:///etc/passwd",
            "gopher://127.0.0.1:70/",
            "ftp://example.com/x",
            "http://user:pw@example.com/",
        ]
        .map(String::from),
    );
    assert!(hostile.len() >= 30, "{}", hostile.len());

    for url in &hostile {
        match fetcher.fetch(url).await {
            Err(FetchError::Blocked { .. } | FetchError::BadUrl(_)) => {}
            other => panic!("{url} was not refused: {other:?}"),
        }
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a hostile URL reached the network");
    eprintln!("{} hostile URLs refused, 0 connections", hostile.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caps_and_content_checks() {
    let ok = redirector().await;
    let config = FetchConfig {
        test_allow_addrs: vec![ok.to_string()],
        max_body_bytes: 1_000_000,
        ..FetchConfig::default()
    };
    let fetcher = Fetcher::new(&config).unwrap();
    assert_eq!(
        fetcher.fetch(&format!("http://{ok}/loop")).await.unwrap_err(),
        FetchError::TooManyRedirects(5)
    );
    assert_eq!(
        fetcher.fetch(&format!("http://{ok}/pdf")).await.unwrap_err(),
        FetchError::NotHtml("application/pdf".into())
    );
    assert_eq!(
        fetcher.fetch(&format!("http://{ok}/big")).await.unwrap_err(),
        FetchError::TooLarge(1_000_000)
    );
    assert_eq!(
        fetcher.fetch(&format!("http://{ok}/missing")).await.unwrap_err(),
        FetchError::Status(404)
    );
    let page = fetcher.fetch(&format!("http://{ok}/r?to=/page")).await.unwrap();
    assert_eq!(page.redirects, 1);
    assert_eq!(page.url.path(), "/page");
}

/// A DNS server on loopback that answers the first question with a public address and every
/// later one with 127.0.0.1 (a rebinding attack); it counts the questions.
async fn rebinding_dns() -> (SocketAddr, Arc<AtomicUsize>) {
    let sock = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = sock.local_addr().unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    tokio::spawn(async move {
        let mut buf = [0u8; 512];
        while let Ok((n, from)) = sock.recv_from(&mut buf).await {
            let q = &buf[..n];
            let nth = count.fetch_add(1, Ordering::SeqCst);
            let ip: [u8; 4] = if nth == 0 { [93, 184, 216, 34] } else { [127, 0, 0, 1] };
            // Header: same id, a response with one question and one answer.
            let mut a = q[..2].to_vec();
            a.extend_from_slice(&[0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]);
            a.extend_from_slice(&q[12..]); // the question as asked
            a.extend_from_slice(&[0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4]); // name ptr, A, IN, TTL 0
            a.extend_from_slice(&ip);
            let _ = sock.send_to(&a, from).await;
        }
    });
    (addr, asked)
}

/// DNS rebinding: the name passes the pre-check (a public address), then resolves to loopback
/// when the client connects. The connect-time guard refuses it: the tripwire on that loopback
/// port sees no connection, and the DNS server was asked at both moments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_rebinding_is_refused_at_connect_time() {
    let (port, hits) = tripwire().await;
    let (dns, asked) = rebinding_dns().await;
    let fetcher = Fetcher::new(&FetchConfig {
        test_dns: dns.to_string(),
        ..FetchConfig::default()
    })
    .unwrap();
    let r = fetcher.fetch(&format!("http://rebind.example:{port}/page")).await;
    let e = r.expect_err("a rebinding name must not be fetched");
    assert!(asked.load(Ordering::SeqCst) >= 2, "resolved again at connect time: {e}");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "no connection reached loopback: {e}");
}

/// A credible page that redirects to a blocked domain: the hop is refused before
/// any request reaches the blocked host — not only the landing page dropped afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_a_blocked_domain_is_refused_at_the_hop() {
    let ok = redirector().await;
    let (trip_port, hits) = tripwire().await;
    let blocked = format!("127.0.0.1:{trip_port}");
    let config = FetchConfig {
        test_allow_addrs: vec![ok.to_string(), blocked.clone()],
        test_resolve: vec![
            format!("news.example={ok}"),
            format!("tracker.blocked.example={blocked}"),
        ],
        ..FetchConfig::default()
    };
    let fetcher = Fetcher::new(&config)
        .unwrap()
        .with_blocked_domains(&["blocked.example".to_string()]);
    let to = enc(&format!("http://tracker.blocked.example:{trip_port}/story"));
    let err = fetcher
        .fetch(&format!("http://news.example:{}/r?to={to}", ok.port()))
        .await
        .unwrap_err();
    assert!(
        matches!(err, FetchError::BadUrl(ref m) if m.contains("blocked domain")),
        "{err:?}"
    );
    // Without the block the same hop is taken (the tripwire sees it): the test can fail.
    let open = Fetcher::new(&config).unwrap();
    let _ = open
        .fetch(&format!("http://news.example:{}/r?to={to}", ok.port()))
        .await;
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "only the unblocked fetcher reached the host"
    );
    // A blocked domain asked for directly is refused too.
    let direct = fetcher
        .fetch(&format!("http://tracker.blocked.example:{trip_port}/x"))
        .await;
    assert!(direct.is_err());
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}
