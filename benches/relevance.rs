//! Relevance across languages (`cargo bench --bench relevance`): the shipped English model
//! (all-MiniLM-L6-v2, int8) beside the multilingual one (Universal Sentence Encoder
//! multilingual v3, `scripts/convert_use_m3.py`), both as the sandbox installs them, on the
//! project's own small set: six claims, each written in English, German, Spanish, French,
//! Japanese and Portuguese, against an English passage about each. Per language pair: the mean
//! cosine of a claim with its own passage, with the other claims' passages (unrelated), the gap,
//! and how many claims clear each model's threshold while no unrelated pair does; then the time
//! to embed a 60-word passage (one thread) and each model file's size. Shipped defaults
//! (thresholds 0.28 and 0.29, one text per run); nothing is changed.

mod common;
#[path = "../tests/common/llm.rs"]
mod llm;

use std::time::Instant;

use musebot::relevance::{cosine, Embedder, RelevanceConfig};

const PASSAGES: [&str; 6] = [
    "Astronauts who walked on the Moon have said that no human structure, the Great Wall of China included, can be made out with the naked eye from there; even from low orbit the wall is too narrow and the same colour as the land around it.",
    "Large studies of millions of children found no link between the measles, mumps and rubella vaccine and autism; the 1998 paper that claimed one was retracted and its author lost his licence.",
    "Lightning often strikes the same place more than once: tall buildings such as the Empire State Building are hit around twenty times a year.",
    "Goldfish remember things for months, not seconds: in experiments they learned to push a lever for food and still did it weeks later.",
    "The central bank raised its main interest rate by a quarter point on Tuesday, citing inflation that has stayed above its target for a year and a half.",
    "Drinking eight glasses of water a day is not a rule from any health agency; most people get enough water from food and other drinks, and thirst is a reliable guide.",
];

/// Each claim (the same order as the passages) in en, de, es, fr, ja, pt.
const CLAIMS: [[&str; 6]; 6] = [
    [
        "The Great Wall of China is the only man-made structure visible from the Moon with the naked eye.",
        "Die Chinesische Mauer ist das einzige Bauwerk, das man vom Mond aus mit bloßem Auge sehen kann.",
        "La Gran Muralla China es la única construcción humana visible a simple vista desde la Luna.",
        "La Grande Muraille de Chine est la seule construction humaine visible à l'œil nu depuis la Lune.",
        "万里の長城は月から肉眼で見える唯一の人工建造物だ。",
        "A Grande Muralha da China é a única construção humana visível a olho nu da Lua.",
    ],
    [
        "The MMR vaccine causes autism in children.",
        "Die MMR-Impfung verursacht bei Kindern Autismus.",
        "La vacuna triple vírica provoca autismo en los niños.",
        "Le vaccin ROR provoque l'autisme chez les enfants.",
        "MMRワクチンは子どもに自閉症を引き起こす。",
        "A vacina tríplice viral causa autismo em crianças.",
    ],
    [
        "Lightning never strikes the same place twice.",
        "Der Blitz schlägt nie zweimal an derselben Stelle ein.",
        "Un rayo nunca cae dos veces en el mismo lugar.",
        "La foudre ne frappe jamais deux fois au même endroit.",
        "雷は同じ場所に二度落ちることはない。",
        "Um raio nunca cai duas vezes no mesmo lugar.",
    ],
    [
        "Goldfish have a memory of only three seconds.",
        "Goldfische haben ein Gedächtnis von nur drei Sekunden.",
        "Los peces de colores solo tienen una memoria de tres segundos.",
        "Les poissons rouges n'ont que trois secondes de mémoire.",
        "金魚の記憶はたった3秒しかもたない。",
        "Os peixes-dourados têm memória de apenas três segundos.",
    ],
    [
        "The central bank cut interest rates this week to fight unemployment.",
        "Die Zentralbank hat diese Woche die Zinsen gesenkt, um die Arbeitslosigkeit zu bekämpfen.",
        "El banco central bajó los tipos de interés esta semana para combatir el desempleo.",
        "La banque centrale a baissé ses taux cette semaine pour lutter contre le chômage.",
        "中央銀行は失業対策のため今週金利を引き下げた。",
        "O banco central cortou os juros esta semana para combater o desemprego.",
    ],
    [
        "Health authorities say everyone must drink eight glasses of water a day.",
        "Gesundheitsbehörden sagen, jeder müsse acht Gläser Wasser am Tag trinken.",
        "Las autoridades sanitarias dicen que todos deben beber ocho vasos de agua al día.",
        "Les autorités sanitaires disent que chacun doit boire huit verres d'eau par jour.",
        "保健当局は、誰もが1日にコップ8杯の水を飲むべきだと言っている。",
        "As autoridades de saúde dizem que todos devem beber oito copos de água por dia.",
    ],
];
const LANGS: [&str; 6] = ["en", "de", "es", "fr", "ja", "pt"];

fn main() {
    if common::args("relevance", 0).is_none() {
        return;
    }
    let sandbox = common::sandbox();
    let defaults = RelevanceConfig::default();
    let models = [
        (
            "english (MiniLM-L6 int8)",
            "MUSEBOT_EMBED_MODEL",
            "MUSEBOT_EMBED_TOKENIZER",
            defaults.threshold,
        ),
        (
            "multilingual (USE-m3)",
            "MUSEBOT_EMBED_MODEL_MULTI",
            "MUSEBOT_EMBED_TOKENIZER_MULTI",
            defaults.multilingual_threshold,
        ),
    ];
    println!("relevance across languages: a claim vs its English passage (related) and the 5 others' (unrelated)");
    println!(
        "{:<26} {:<6} {:>8} {:>10} {:>6}  {:>18}",
        "model", "pair", "related", "unrelated", "gap", "kept / wrongly kept"
    );
    for (name, model, tokenizer, threshold) in models {
        let e = Embedder::load(&RelevanceConfig {
            onnxruntime: sandbox["MUSEBOT_ORT_DYLIB"].clone(),
            model: sandbox[model].clone(),
            tokenizer: sandbox[tokenizer].clone(),
            threads: 1,
            ..RelevanceConfig::default()
        })
        .expect("the sandbox's models load");
        let passages = e.embed(&PASSAGES.map(String::from)).unwrap();
        for (l, lang) in LANGS.iter().enumerate() {
            let claims = e.embed(&CLAIMS.map(|c| c[l].to_string())).unwrap();
            let (mut related, mut unrelated, mut kept, mut wrong) = (0.0, 0.0, 0, 0);
            for (i, c) in claims.iter().enumerate() {
                for (j, p) in passages.iter().enumerate() {
                    let s = cosine(c, p);
                    if i == j {
                        related += s / 6.0;
                        kept += usize::from(s >= threshold);
                    } else {
                        unrelated += s / 30.0;
                        wrong += usize::from(s >= threshold);
                    }
                }
            }
            println!(
                "{name:<26} {:<6} {related:>8.3} {unrelated:>10.3} {:>6.3}  {:>8} / {:<2} of 30   (threshold {threshold})",
                format!("{lang}-en"),
                related - unrelated,
                format!("{kept} of 6"),
                wrong
            );
        }
        // Speed: one 60-word passage, 200 runs, one thread.
        let passage = PASSAGES.iter().cycle().take(3).copied().collect::<Vec<_>>().join(" ");
        let passage: String = passage.split_whitespace().take(60).collect::<Vec<_>>().join(" ");
        let texts = vec![passage; 200];
        let start = Instant::now();
        e.embed(&texts).unwrap();
        let ms = start.elapsed().as_secs_f64() * 1000.0 / 200.0;
        let bytes = std::fs::metadata(&sandbox[model]).map(|m| m.len()).unwrap_or(0);
        println!(
            "{name:<26} {ms:.2} ms per 60-word passage (1 thread); model file {:.1} MB",
            bytes as f64 / 1e6
        );
    }
}
