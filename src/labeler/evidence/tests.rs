//! The evidence pages in-process: a page only for the post a link names (author and record
//! key), handles resolved through a scripted resolver, each client's allowance under the
//! ceiling (directly and through a real listener behind a loopback proxy), the bounded tables.

use std::sync::atomic::AtomicUsize;

use governor::Quota;

use super::*;
use crate::model::{LabelValue, Trigger};

const RKEY: &str = "3kalice0000a";

/// A kept Bluesky answer about `target`, labelled `fc-false` when `labelled`.
fn kept(job: &str, target: &str, labelled: bool) -> Kept {
    let now = chrono::Utc::now();
    serde_json::from_value(json!({
        "job_id": job, "platform": PlatformKind::Bluesky, "trigger": Trigger::test_mention(job),
        "target_id": target, "claim": "fish sleep upside down", "language": null,
        "verdict": Verdict::Inaccurate, "outcome": "reply", "evidence": ["https://e.example/fish"],
        "reviews": [], "parts": [format!("at://did:plc:bot/app.bsky.feed.post/{job}")],
        "digest": "d", "kept_at": now, "until": now + chrono::Duration::days(7),
        "timers": 0, "updates": [],
        "label": labelled.then_some((LabelValue::False, "cid")),
    }))
    .expect("a kept answer")
}

/// Handles the scripted resolver knows; `down.test` fails for now; each call counted.
fn scripted(calls: Arc<AtomicUsize>) -> Resolve {
    Arc::new(move |handle: String| {
        calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            match handle.as_str() {
                "alice.test" => Resolved::Did("did:plc:alice".into()),
                "mallory.test" => Resolved::Did("did:plc:mallory".into()),
                "down.test" => Resolved::Unavailable,
                _ => Resolved::Unknown,
            }
        })
    })
}

/// Pages over alice's labelled post (and bob's, unlabelled, with the same record key); every
/// client may ask `allowance` times (nothing comes back within a test).
fn pages(allowance: u32) -> (Evidence, Arc<AtomicUsize>) {
    let store = Store::open_temporary().unwrap();
    let alice = kept("a1", &format!("at://did:plc:alice/app.bsky.feed.post/{RKEY}"), true);
    let bob = kept("b1", &format!("at://did:plc:bob/app.bsky.feed.post/{RKEY}"), false);
    store.create_kept(&alice).unwrap();
    store.create_kept(&bob).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let mut e = Evidence::new(store, Some(scripted(calls.clone())));
    e.limits = guard::Limits::new(Quota::per_hour(guard::nz(1)).allow_burst(guard::nz(allowance)));
    (e, calls)
}

async fn get(e: &Evidence, client: &str, post: &str) -> (StatusCode, String) {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("post", post)
        .finish();
    let r = e.answer(client.parse().unwrap(), Some(&query)).await;
    let status = r.status();
    let body = axum::body::to_bytes(r.into_body(), usize::MAX).await.unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}

fn link(repo: &str, rkey: &str) -> String {
    format!("https://bsky.app/profile/{repo}/post/{rkey}")
}

#[tokio::test]
async fn a_link_shows_the_page_only_for_the_post_its_author_and_record_key_name() {
    let (e, calls) = pages(1_000);
    let ip = "198.51.100.1";
    // The author's handle, the DID, the at:// URI: the page.
    for post in [
        link("alice.test", RKEY),
        link("@Alice.Test", RKEY),
        link("did:plc:alice", RKEY),
        format!("at://did:plc:alice/app.bsky.feed.post/{RKEY}"),
    ] {
        let (status, html) = get(&e, ip, &post).await;
        assert_eq!(status, StatusCode::OK, "{post}: {html}");
        assert!(html.contains("fc-false") && html.contains("e.example"), "{html}");
        // The page links the labelled post by its DID (the template escapes every `/`).
        let by_did = format!("https://bsky.app/profile/did:plc:alice/post/{RKEY}").replace('/', "&#x2f;");
        assert!(html.contains(&by_did), "{html}");
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "alice.test resolved once, then remembered"
    );
    // Another author's handle or DID with the labelled post's record key: that author never
    // wrote the labelled post.
    for post in [
        link("mallory.test", RKEY),
        link("did:plc:mallory", RKEY),
        format!("at://mallory.test/app.bsky.feed.post/{RKEY}"),
        link("bob.test", RKEY),
        link("did:plc:bob", RKEY),
    ] {
        let (status, html) = get(&e, ip, &post).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{post}: {html}");
        assert!(!html.contains("fc-false"), "{html}");
    }
    // A handle that does not resolve, or cannot be one: 404.
    for post in [link("nobody.test", RKEY), link("not a handle", RKEY)] {
        assert_eq!(get(&e, ip, &post).await.0, StatusCode::NOT_FOUND, "{post}");
    }
    // A record key no kept answer has: 404 without asking the resolver.
    let before = calls.load(Ordering::SeqCst);
    assert_eq!(
        get(&e, ip, &link("carol.test", "3kzzzzzzzzzzz")).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        before,
        "no resolution for an unknown record key"
    );
    // A resolver that cannot answer now: try again (and it is asked again next time).
    assert_eq!(
        get(&e, ip, &link("down.test", RKEY)).await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(
        get(&e, ip, &link("down.test", RKEY)).await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(calls.load(Ordering::SeqCst), before + 2);
}

#[tokio::test]
async fn a_withdrawn_answer_or_no_resolver_shows_nothing_by_handle() {
    let (e, _) = pages(1_000);
    e.store
        .update_kept("a1", |k| {
            k.label = None;
            k.gone = Some("withdrawn".into());
        })
        .unwrap();
    assert_eq!(
        get(&e, "198.51.100.1", &link("did:plc:alice", RKEY)).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(&e, "198.51.100.1", &link("alice.test", RKEY)).await.0,
        StatusCode::NOT_FOUND
    );
    let store = Store::open_temporary().unwrap();
    store
        .create_kept(&kept(
            "a1",
            &format!("at://did:plc:alice/app.bsky.feed.post/{RKEY}"),
            true,
        ))
        .unwrap();
    let e = Evidence::new(store, None);
    assert_eq!(
        get(&e, "198.51.100.1", &link("alice.test", RKEY)).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(&e, "198.51.100.1", &link("did:plc:alice", RKEY)).await.0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn one_client_over_its_limit_is_refused_while_another_is_served() {
    let (e, _) = pages(guard::CLIENT_BURST);
    let post = link("did:plc:alice", RKEY);
    let mut refused = 0;
    for _ in 0..guard::CLIENT_BURST + 5 {
        if get(&e, "198.51.100.1", &post).await.0 == StatusCode::TOO_MANY_REQUESTS {
            refused += 1;
        }
    }
    assert_eq!(refused, 5, "the client's allowance is {}", guard::CLIENT_BURST);
    let (status, html) = get(&e, "198.51.100.2", &post).await;
    assert_eq!(status, StatusCode::OK, "another client is served: {html}");
    // A resolution costs the client more than a page: distinct handles run its allowance out
    // in a few requests.
    let mut served = 0;
    for n in 0..guard::CLIENT_BURST {
        if get(&e, "198.51.100.3", &link(&format!("h{n}.test"), RKEY)).await.0 == StatusCode::TOO_MANY_REQUESTS {
            break;
        }
        served += 1;
    }
    assert_eq!(
        served,
        guard::CLIENT_BURST / (1 + guard::RESOLVE_COST),
        "resolutions counted"
    );
}

#[tokio::test]
async fn visitors_together_resolve_a_few_handles_a_second_whatever_their_addresses() {
    let (e, _) = pages(guard::CLIENT_BURST);
    // Fresh handles from fresh addresses: each client's allowance is untouched, but the
    // resolutions go through the bot's own client, so all of them share one small ceiling.
    let mut refused = 0;
    for n in 0..20u32 {
        let client = format!("198.51.100.{}", 10 + n);
        if get(&e, &client, &link(&format!("v{n}.test"), RKEY)).await.0 == StatusCode::TOO_MANY_REQUESTS {
            refused += 1;
        }
    }
    let burst = guard::RESOLUTIONS_PER_SECOND * 10;
    assert!(refused >= 20 - burst as usize - 1, "{refused} of 20 refused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_loopback_proxy_each_forwarded_client_has_its_own_allowance() {
    let (e, _) = pages(guard::CLIENT_BURST);
    let e = Arc::new(e);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/labels", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let server = tokio::spawn(serve(listener, e, stop.clone()));
    let http = reqwest::Client::new();
    let ask = |forwarded: &'static str| {
        let (http, url) = (http.clone(), url.clone());
        async move {
            http.get(url)
                .query(&[("post", link("did:plc:alice", RKEY))])
                .header("x-forwarded-for", forwarded)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let mut statuses = Vec::new();
    for _ in 0..guard::CLIENT_BURST + 5 {
        statuses.push(ask("203.0.113.7").await);
    }
    assert!(
        statuses[..guard::CLIENT_BURST as usize].iter().all(|s| *s == 200),
        "{statuses:?}"
    );
    assert!(
        statuses[guard::CLIENT_BURST as usize..].iter().all(|s| *s == 429),
        "{statuses:?}"
    );
    // The proxy appends the address it saw: a client's own entry before it changes nothing.
    assert_eq!(ask("203.0.113.8, 203.0.113.7").await, 429);
    assert_eq!(ask("203.0.113.7, 203.0.113.8").await, 200, "another client is served");
    stop.cancel();
    server.await.unwrap().unwrap();
}

#[test]
fn the_client_is_the_peer_unless_the_proxy_on_loopback_names_it() {
    let headers = |v: &[&str]| {
        let mut h = HeaderMap::new();
        for v in v {
            h.append("x-forwarded-for", HeaderValue::from_str(v).unwrap());
        }
        h
    };
    let peer = |s: &str| s.parse::<SocketAddr>().unwrap();
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    // Straight in: the header is the client's own word.
    assert_eq!(
        guard::client(peer("198.51.100.1:5000"), &headers(&["203.0.113.7"])),
        ip("198.51.100.1")
    );
    // From the proxy on loopback: the last address, the one the proxy appended.
    assert_eq!(
        guard::client(peer("127.0.0.1:5000"), &headers(&["1.2.3.4, 203.0.113.7"])),
        ip("203.0.113.7")
    );
    assert_eq!(
        guard::client(peer("[::1]:5000"), &headers(&["1.2.3.4", "203.0.113.9 "])),
        ip("203.0.113.9")
    );
    assert_eq!(
        guard::client(peer("127.0.0.1:5000"), &headers(&["junk"])),
        ip("127.0.0.1")
    );
    assert_eq!(
        guard::client(peer("127.0.0.1:5000"), &HeaderMap::new()),
        ip("127.0.0.1")
    );
    // IPv6 by /64; an IPv4-mapped address as IPv4.
    assert_eq!(
        guard::client(peer("[2001:db8:1:2:aaaa::1]:5000"), &HeaderMap::new()),
        guard::client(peer("[2001:db8:1:2:bbbb::9]:5000"), &HeaderMap::new()),
    );
    assert_eq!(
        guard::client(peer("[2001:db8:1:2::1]:5000"), &HeaderMap::new()),
        ip("2001:db8:1:2::")
    );
    assert_eq!(
        guard::client(peer("[::ffff:198.51.100.1]:5000"), &HeaderMap::new()),
        ip("198.51.100.1")
    );
}

#[test]
fn the_clients_and_handles_tables_stay_bounded() {
    let limits = guard::Limits::new(guard::client_quota());
    for n in 0..200u32 {
        limits.admit(IpAddr::from(n.to_be_bytes()));
    }
    assert_eq!(limits.clients(), 200);
    // Once their allowance is full again, the next housekeeping forgets them.
    std::thread::sleep(Duration::from_millis(600));
    for _ in 0..256 {
        limits.admit(ip_of("198.51.100.1"));
    }
    assert!(limits.clients() <= 1, "{} clients kept", limits.clients());

    let handles = guard::Handles::default();
    for n in 0..5_000 {
        handles.put(&format!("h{n}.test"), &Resolved::Unknown);
    }
    assert!(handles.len() <= guard::MAX_HANDLES, "{}", handles.len());
    assert_eq!(handles.get("h4999.test"), Some(Resolved::Unknown), "the newest kept");
    handles.put("down.test", &Resolved::Unavailable);
    assert_eq!(handles.get("down.test"), None, "a failure is not remembered");
}

fn ip_of(s: &str) -> IpAddr {
    s.parse().unwrap()
}
