//! What an image adds to a check (`cargo bench --bench images [N]`): the Muse pipeline's draft
//! (shipped defaults; a scripted vision and text model answering at once, a search server that
//! finds nothing) for a text post and for the same post carrying one image of the shared
//! corpus, served from loopback — and, per image, the parts of the describe step: download,
//! decode, perceptual hash, OCR (tesseract) and the merged description. Peak memory (VmHWM)
//! of the whole process is printed at the end. Changed settings: `fetch.test_allow_addrs`
//! (the loopback image server), and the search backend pointed at the empty local server.
//!
//! Arguments: [N] images (default 12) [DATA_DIR] (default ../shared/data).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use musebot::config::Config;
use musebot::model::{Media, MediaKind, Post, Retrieval, Visibility};
use musebot::search::{BackendConfig, BackendKind};
use serde_json::{json, Value};

mod common;
#[path = "../tests/common/llm.rs"]
mod llm;
#[path = "../tests/common/web.rs"]
mod web;

use common::percentile;

fn scripted(body: &Value) -> String {
    if body["messages"][0]["content"].is_array() {
        return json!({"caption": "a photo", "people": []}).to_string();
    }
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    if system.contains("informative descriptions of images") {
        return "A photo of a street scene with a sign.".into();
    }
    if system.contains("web search queries") {
        return json!({"queries": ["a", "b", "c"]}).to_string();
    }
    json!({"verdict": "unverifiable", "explanation": "Nothing found."}).to_string()
}

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let Some((n, data)) = common::args("images", 12) else {
        return;
    };
    let sandbox = common::sandbox();
    let mut names: Vec<String> = std::fs::read_dir(data.join("images"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.truncate(n);
    let files: BTreeMap<String, Vec<u8>> = names
        .iter()
        .map(|name| (name.clone(), std::fs::read(data.join("images").join(name)).unwrap()))
        .collect();
    let served = files.clone();
    let router = axum::Router::new().route(
        "/{name}",
        axum::routing::get(move |axum::extract::Path(name): axum::extract::Path<String>| {
            let bytes = served.get(&name).cloned().unwrap_or_default();
            async move { ([("content-type", "image/jpeg")], bytes) }
        }),
    );
    let site = web::serve(router).await;
    let search = web::SearchServer::start(|_| Vec::new()).await;
    let llm = llm::ScriptedLlm::start(llm::Script::routed(scripted)).await;

    let mut config = Config::default();
    config.llm.base_url = llm.base_url.clone();
    config.search.backends = vec![BackendConfig {
        kind: BackendKind::Searxng,
        base_url: search.base_url(),
        api_key_env: String::new(),
        api_key_file: String::new(),
        cx: String::new(),
    }];
    config.fetch.test_allow_addrs = vec![site.to_string()];
    config.relevance.onnxruntime = sandbox["MUSEBOT_ORT_DYLIB"].clone();
    config.relevance.model = sandbox["MUSEBOT_EMBED_MODEL"].clone();
    config.relevance.tokenizer = sandbox["MUSEBOT_EMBED_TOKENIZER"].clone();
    let pipeline = musebot::pipeline::build(&config, None, None, None).unwrap();
    let text = "Is this real? Seen downtown today, everybody is talking about it.";
    let post = |media: Vec<Media>| Post {
        media,
        ..Post::text_only("1", "someone", text, chrono::Utc::now(), Visibility::Public)
    };
    let draft = |p: Post| {
        let pipeline = &pipeline;
        async move {
            let mut r = Retrieval::default();
            let started = Instant::now();
            pipeline.draft(&p, &mut r, &mut |_| {}).await.unwrap();
            (started.elapsed(), r)
        }
    };
    // Warm up (model load, connections).
    draft(post(Vec::new())).await;

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let (mut text_only, mut with_image) = (Vec::new(), Vec::new());
    let (mut download, mut decode, mut hash, mut ocr_t, mut described) = (vec![], vec![], vec![], vec![], vec![]);
    let ocr = musebot::image::ocr::Ocr {
        binary: config.images.ocr.clone(),
        timeout: Duration::from_secs(config.images.ocr_timeout_secs),
        languages: config.images.ocr_languages.clone(),
    };
    let limits = musebot::image::ImageLimits {
        max_bytes: config.images.max_bytes,
        max_pixels: config.images.max_pixels,
    };
    let fetcher = musebot::fetch::Fetcher::new(&config.fetch).unwrap();
    for name in &names {
        let url = format!("http://{site}/{name}");
        text_only.push(ms(draft(post(Vec::new())).await.0));
        let media = vec![Media {
            kind: MediaKind::Image,
            url: url.clone(),
            preview_url: None,
            alt: None,
        }];
        let (took, r) = draft(post(media)).await;
        with_image.push(ms(took));
        if let Some(step) = r.steps.iter().find(|s| s.step == "describe") {
            described.push(step.millis as f64);
        }
        // The parts, one by one.
        let t = Instant::now();
        let (_, bytes) = fetcher.fetch_image(&url, limits.max_bytes).await.unwrap();
        download.push(ms(t.elapsed()));
        let t = Instant::now();
        let Ok(img) = musebot::image::decode(&bytes, limits) else {
            continue;
        };
        decode.push(ms(t.elapsed()));
        let t = Instant::now();
        let _ = musebot::image::perceptual_hash(&img.image);
        hash.push(ms(t.elapsed()));
        let t = Instant::now();
        let _ = ocr.read(&img.image).await;
        ocr_t.push(ms(t.elapsed()));
    }
    println!("images benchmark: {} images of the shared corpus, shipped defaults (changed: fetch.test_allow_addrs, the search backend)", names.len());
    println!("| path | p50 | p99 |");
    println!("|---|---|---|");
    for (label, v) in [
        ("Muse draft, text only", &mut text_only),
        ("Muse draft, text + one image", &mut with_image),
        ("  describe step (whole)", &mut described),
        ("  download (loopback)", &mut download),
        ("  decode", &mut decode),
        ("  perceptual hash", &mut hash),
        ("  OCR (3 versions, tesseract)", &mut ocr_t),
    ] {
        if v.is_empty() {
            continue;
        }
        println!(
            "| {label} | {:.1} ms | {:.1} ms |",
            percentile(v, 0.5),
            percentile(v, 0.99)
        );
    }
    println!("peak RSS of the benchmark process: {:.1} MiB", peak_rss_mib());
}
