//! Posts in Spanish, Japanese and German answered end to end on mastodon-mock with the Muse
//! pipeline and a scripted LLM: the queries are asked for in the post's language and in
//! English, the multilingual relevance model (Universal Sentence Encoder multilingual v3, from
//! PyPI, as the sandbox installs it) keeps an English page about the claim and drops an
//! unrelated one, and the reply opens with the bot's own verdict sentence in the post's
//! language, is tagged with it, cites the page and fits Mastodon's parts. The pages are the
//! project's own text, served under their publishers' names (test-only DNS overrides).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

const WALL: &str = "Can the Great Wall of China be seen from the Moon? No. The astronauts who walked on the Moon have said again and again that no human structure can be made out with the naked eye from that distance; the Earth looks like a marble of blue, white and brown. Even from low orbit, some 400 kilometres up, the wall is very hard to see: it is only a few metres wide and built of stone and earth of much the same colour as the land around it. The first Chinese astronaut, Yang Liwei, said after his flight in 2003 that he had looked for the Great Wall and could not see it. NASA has written that the claim that the wall is the only man-made object visible from space is a myth that was in print long before anyone had been to space.";
const RATES: &str = "The central bank raised its main interest rate by a quarter of a percentage point on Tuesday, the third rise this year, citing inflation that has stayed above its target for eighteen months. The governor said the bank would watch wages and energy prices closely before deciding on any further move. Markets had expected the decision, and the currency barely moved after the announcement. Economists said the bank was likely to pause at its next meeting if prices kept cooling as they did last month, while mortgage lenders said they would pass the rise on to their customers within days.";

fn page(title: &str, body: &str) -> String {
    format!("<html lang=\"en\"><head><title>{title}</title></head><body><article><h1>{title}</h1><p>{body}</p></article></body></html>")
}

fn scripted(body: &Value) -> String {
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    let user = body["messages"][1]["content"].as_str().unwrap_or("");
    if system.contains("web search queries") {
        return json!({"queries": ["claim in the post's language", "Great Wall of China visible from the Moon"]})
            .to_string();
    }
    if system.contains("You check a reply") {
        return json!({"verdict": "supported", "reasons": "ok", "objections": []}).to_string();
    }
    if system.contains("Quote passages") {
        let content = block(user, "page").split("content:\n").nth(1).unwrap_or("").to_string();
        let quote: String = content.split_whitespace().take(12).collect::<Vec<_>>().join(" ");
        return json!({"refute": [quote], "context": []}).to_string();
    }
    if system.contains("using only the facts given") {
        let url = evidence_urls(user, 1)
            .first()
            .map(|u| u.to_string())
            .unwrap_or_default();
        let explanation = if system.contains("written in Spanish") {
            format!("Los astronautas dicen que la muralla no se ve a simple vista desde la Luna ({url}).")
        } else if system.contains("written in Japanese") {
            format!("月面を歩いた宇宙飛行士は、月から肉眼で人工の建造物は見えないと繰り返し述べている。低軌道からでも城壁は幅が数メートルしかなく、周囲の土地と同じ色なので見分けるのは難しい。中国初の宇宙飛行士も見えなかったと語っている。{url}")
        } else {
            format!("Astronauten sagen, die Mauer sei vom Mond aus nicht zu sehen ({url}).")
        };
        return json!({"verdict": "inaccurate", "explanation": explanation}).to_string();
    }
    "none".into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_in_spanish_japanese_and_german_are_answered_in_their_language() {
    let sandbox = Sandbox::load();
    let site = Site::start(BTreeMap::from([
        (
            "/article/great-wall-moon".to_string(),
            page("Can you see the Great Wall from the Moon?", WALL),
        ),
        (
            "/markets/rates".to_string(),
            page("Central bank raises rates again", RATES),
        ),
    ]))
    .await;
    let search = SearchServer::start(|_| {
        vec![
            json!({"url": "http://www.reuters.com/markets/rates", "title": "Rates", "content": "c"}),
            json!({"url": "http://www.apnews.com/article/great-wall-moon", "title": "Wall", "content": "c"}),
        ]
    })
    .await;
    let llm = ScriptedLlm::start(Script::routed(scripted)).await;
    let resolve: Vec<String> = site
        .resolve_entries(&["www.apnews.com", "www.reuters.com"])
        .iter()
        .map(|e| format!("\"{e}\""))
        .collect();
    // Each post's own queries are what this test looks at: claim memory (which answers the
    // same claim in another language from the first post's evidence, unsearched) is off.
    let extra = format!(
        "\n[search]\nbackends = [{{ kind = \"searxng\", base_url = \"{}\" }}]\n\n[relevance]\nonnxruntime = \"{}\"\nmodel = \"{}\"\ntokenizer = \"{}\"\nmultilingual_model = \"{}\"\nmultilingual_tokenizer = \"{}\"\n\n[fetch]\ntest_allow_addrs = [\"{}\"]\ntest_resolve = [{}]\n\n[living]\nmemory = false\n",
        search.base_url(),
        sandbox.get("MUSEBOT_ORT_DYLIB"),
        sandbox.get("MUSEBOT_EMBED_MODEL"),
        sandbox.get("MUSEBOT_EMBED_TOKENIZER"),
        sandbox.get("MUSEBOT_EMBED_MODEL_MULTI"),
        sandbox.get("MUSEBOT_EMBED_TOKENIZER_MULTI"),
        site.addr,
        resolve.join(", ")
    );
    let mock = MockMastodon::start().await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, port, &extra);
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;

    let cases = [
        ("es", "La Gran Muralla China es la única construcción humana que se puede ver a simple vista desde la Luna, según confirmaron los astronautas.", "Esta publicación es falsa.", "Spanish"),
        ("ja", "万里の長城は月から肉眼で見える唯一の人工建造物だと宇宙飛行士が確認した。", "この投稿は誤りです。", "Japanese"),
        ("de", "Die Chinesische Mauer ist das einzige Bauwerk, das man vom Mond aus mit bloßem Auge sehen kann. Das haben die Astronauten bestätigt.", "Dieser Beitrag ist falsch.", "German"),
    ];
    let mut seen = 0;
    for (lang, claim, sentence, name) in cases {
        let target = mock.post(ALICE_TOKEN, claim, None).await;
        let tid = target["id"].as_str().unwrap().to_string();
        mock.post(BOB_TOKEN, "@musebot ?", Some(&tid)).await;
        daemon
            .wait_for_replies(&mock, Duration::from_secs(90), |s| {
                s.iter().any(|p| p["in_reply_to_id"] == json!(tid))
            })
            .await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let statuses = mock.bot_statuses().await;
        let parts: Vec<&Value> = statuses.iter().skip(seen).collect();
        seen = statuses.len();
        let reply: String = parts.iter().map(|p| text_of(p)).collect::<Vec<_>>().join(" ");
        assert!(
            reply.starts_with(&format!("@bob {sentence}")),
            "{lang}: {reply}\n{}",
            daemon.log_text()
        );
        assert!(
            reply.contains("http://www.apnews.com/article/great-wall-moon"),
            "{lang}: cites the page: {reply}"
        );
        assert!(
            !reply.contains("reuters.com"),
            "{lang}: the unrelated page is not cited: {reply}"
        );
        for p in &parts {
            assert_eq!(p["language"], lang, "{lang}: {p:#}");
            assert!(text_of(p).chars().count() <= 500, "{lang}: a part fits: {}", text_of(p));
        }
        let requests = llm.requests.lock().unwrap().clone();
        let systems: Vec<String> = requests
            .iter()
            .filter(|r| r["messages"][1]["content"].as_str().unwrap_or("").contains(claim))
            .map(|r| {
                r["messages"][0]["content"]
                    .as_str()
                    .unwrap_or("")
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        assert!(
            systems
                .iter()
                .any(|s| s.contains("web search queries") && s.contains(&format!("code \"{lang}\""))),
            "{lang}: queries asked in the post's language: {systems:#?}"
        );
        assert!(
            systems.iter().any(|s| s.contains(&format!("written in {name}"))),
            "{lang}: the reply asked in {name}"
        );
    }
    let _ = daemon.terminate(Duration::from_secs(10));
}
