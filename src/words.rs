//! The bot's own words in the languages it speaks: verdict sentences, the honest "could not
//! verify", every notice, the fact-check sentences and every command acknowledgement, one
//! file per language (`locales/<lang>.toml`, built in; minijinja templates over the bot's own
//! values). A language without a file gets English; a key is the same in every file (a test
//! fails on one missing), and the closed verdict set is the same in every language.
//!
//! An operator may override any key: `daemon.prompts_dir/locales/<lang>.toml` ([`init`], at
//! start; a file there may add a language).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use minijinja::Environment;
use serde::Serialize;

/// The languages with a built-in file, English first. Chinese is two: `zh-Hans` (simplified,
/// mainland usage) and `zh-Hant` (traditional, Taiwan usage), told apart by [`language`].
pub const BUILT_IN: [(&str, &str); 19] = [
    ("en", include_str!("../locales/en.toml")),
    ("de", include_str!("../locales/de.toml")),
    ("fr", include_str!("../locales/fr.toml")),
    ("es", include_str!("../locales/es.toml")),
    ("pt", include_str!("../locales/pt.toml")),
    ("it", include_str!("../locales/it.toml")),
    ("nl", include_str!("../locales/nl.toml")),
    ("ja", include_str!("../locales/ja.toml")),
    ("ko", include_str!("../locales/ko.toml")),
    ("zh-Hans", include_str!("../locales/zh-Hans.toml")),
    ("zh-Hant", include_str!("../locales/zh-Hant.toml")),
    ("ar", include_str!("../locales/ar.toml")),
    ("ru", include_str!("../locales/ru.toml")),
    ("uk", include_str!("../locales/uk.toml")),
    ("pl", include_str!("../locales/pl.toml")),
    ("tr", include_str!("../locales/tr.toml")),
    ("id", include_str!("../locales/id.toml")),
    ("ca", include_str!("../locales/ca.toml")),
    ("sv", include_str!("../locales/sv.toml")),
];

struct Words {
    env: Environment<'static>,
    languages: Vec<String>,
}

static WORDS: OnceLock<Words> = OnceLock::new();

#[derive(Debug, thiserror::Error)]
pub enum WordsError {
    #[error("daemon.prompts_dir: `{path}`: {reason} — fix the file (keys as in locales/en.toml) or remove it")]
    Bad { path: String, reason: String },
}

fn build(dir: &Path) -> Result<Words, WordsError> {
    let mut tables: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (lang, text) in BUILT_IN {
        let table: BTreeMap<String, String> = toml::from_str(text).expect("built-in locale files parse");
        tables.insert(lang.to_string(), table);
    }
    let folder = dir.join("locales");
    if !dir.as_os_str().is_empty() && folder.is_dir() {
        let bad = |path: &Path, reason: String| WordsError::Bad {
            path: path.display().to_string(),
            reason,
        };
        let entries = std::fs::read_dir(&folder).map_err(|e| bad(&folder, e.to_string()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(lang) = path
                .file_stem()
                .and_then(|s| s.to_str())
                .filter(|_| path.extension().is_some_and(|e| e == "toml"))
            else {
                continue;
            };
            let text = std::fs::read_to_string(&path).map_err(|e| bad(&path, e.to_string()))?;
            let own: BTreeMap<String, String> = toml::from_str(&text).map_err(|e| bad(&path, e.to_string()))?;
            let english = &tables["en"];
            if let Some(k) = own.keys().find(|k| !english.contains_key(*k)) {
                return Err(bad(&path, format!("`{k}` is not a key of the bot's words")));
            }
            // `pt-BR.toml` speaks for `pt` (the bot answers by a tag's primary subtag).
            let lang = match crate::lang::primary(Some(lang)) {
                Some(p) if p == "zh" => crate::lang::chinese_variant(lang, "").to_string(),
                Some(p) => p,
                None => lang.to_ascii_lowercase(),
            };
            tables.entry(lang).or_default().extend(own);
        }
    }
    let mut env = Environment::new();
    env.set_keep_trailing_newline(false);
    for (lang, table) in &tables {
        for (key, text) in table {
            env.add_template_owned(format!("{lang}/{key}"), text.clone())
                .map_err(|e| WordsError::Bad {
                    path: format!("locales/{lang}.toml"),
                    reason: format!("{key}: {e}"),
                })?;
        }
    }
    Ok(Words {
        env,
        languages: tables.into_keys().collect(),
    })
}

/// Loads the operator's overrides (call once at start, before anything is said); without it
/// the built-in words are used.
pub fn init(prompts_dir: &Path) -> Result<(), WordsError> {
    let words = build(prompts_dir)?;
    let _ = WORDS.set(words);
    Ok(())
}

fn words() -> &'static Words {
    WORDS.get_or_init(|| build(Path::new("")).expect("the built-in words load"))
}

/// The language the bot speaks for a language tag (`de-AT` → `de`; Chinese by its script or
/// region: `zh-Hant`, `zh-TW`, `zh-HK`, `zh-MO` → `zh-Hant`, any other `zh` → `zh-Hans`);
/// English for a language it has no words in, or none.
pub fn language(tag: Option<&str>) -> &'static str {
    let Some(primary) = crate::lang::primary(tag) else {
        return "en";
    };
    let wanted = if primary == "zh" {
        crate::lang::chinese_variant(tag.unwrap_or_default(), "").to_string()
    } else {
        primary
    };
    // `words().languages` outlives every caller; return the static built-in name when there
    // is one, else the stored one.
    if let Some((l, _)) = BUILT_IN.iter().find(|(l, _)| *l == wanted) {
        return l;
    }
    words()
        .languages
        .iter()
        .find(|l| **l == wanted)
        .map_or("en", |l| l.as_str())
}

/// Every language the bot has words in (the built-in files and the operator's), in code order.
pub fn languages() -> &'static [String] {
    &words().languages
}

/// The language's name in English, for prompts ("German"); the code itself for a language an
/// operator added.
pub fn name(lang: &str) -> &str {
    match lang {
        "en" => "English",
        "de" => "German",
        "fr" => "French",
        "es" => "Spanish",
        "pt" => "Portuguese",
        "it" => "Italian",
        "nl" => "Dutch",
        "ja" => "Japanese",
        "ko" => "Korean",
        "zh-Hans" => "Simplified Chinese",
        "zh-Hant" => "Traditional Chinese",
        "ar" => "Arabic",
        "ru" => "Russian",
        "uk" => "Ukrainian",
        "pl" => "Polish",
        "tr" => "Turkish",
        "id" => "Indonesian",
        "ca" => "Catalan",
        "sv" => "Swedish",
        other => other,
    }
}

/// The bot's words for `key` in `lang` (English where the language has no such key).
pub fn say(lang: &str, key: &str, ctx: impl Serialize) -> String {
    let w = words();
    let template = w
        .env
        .get_template(&format!("{lang}/{key}"))
        .or_else(|_| w.env.get_template(&format!("en/{key}")));
    match template.and_then(|t| t.render(ctx)) {
        Ok(text) => text.trim().to_string(),
        Err(e) => {
            tracing::error!(key, lang, error = %e, "the bot's words failed to render");
            String::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_in_every_language_and_nowhere_else() {
        let english: BTreeMap<String, String> = toml::from_str(BUILT_IN[0].1).unwrap();
        for (lang, text) in BUILT_IN {
            let table: BTreeMap<String, String> = toml::from_str(text).unwrap_or_else(|e| panic!("{lang}: {e}"));
            let missing: Vec<&String> = english.keys().filter(|k| !table.contains_key(*k)).collect();
            let extra: Vec<&String> = table.keys().filter(|k| !english.contains_key(*k)).collect();
            assert!(
                missing.is_empty() && extra.is_empty(),
                "{lang}: missing {missing:?}, extra {extra:?}"
            );
            // The same values are interpolated in every language.
            for (key, en) in &english {
                let names = |t: &str| -> std::collections::BTreeSet<String> {
                    t.split("{{")
                        .skip(1)
                        .filter_map(|p| p.split("}}").next())
                        .map(|n| n.trim().to_string())
                        .collect()
                };
                assert_eq!(names(&table[key]), names(en), "{lang}/{key}");
            }
        }
    }

    #[test]
    fn words_render_in_the_language_asked_and_fall_back_to_english() {
        assert_eq!(say("de", "verdict_misleading", ()), "Dieser Beitrag ist irreführend.");
        assert!(say("ja", "notice_quota", minijinja::context! { per_hour => 5 }).contains("5件"));
        assert_eq!(say("xx", "verdict_accurate", ()), "This post is accurate.");
        assert_eq!(language(Some("de-AT")), "de");
        assert_eq!(language(Some("PT_br")), "pt");
        assert_eq!(language(Some("ko")), "ko");
        assert_eq!(language(Some("eu")), "en", "no Basque words: English");
        assert_eq!(language(Some("zh-TW")), "zh-Hant");
        assert_eq!(language(Some("zh-Hant-HK")), "zh-Hant");
        assert_eq!(language(Some("zh")), "zh-Hans");
        assert_eq!(language(Some("zh-CN")), "zh-Hans");
        assert_eq!(language(None), "en");
        let status = say(
            "fr",
            "ack_status",
            minijinja::context! { paused => false, tags => "", opted_out => 2, held => 0 },
        );
        assert!(
            status.contains("en marche") && status.contains("aucun hashtag"),
            "{status}"
        );
    }

    #[test]
    fn an_operator_file_overrides_a_key_and_a_wrong_key_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("locales")).unwrap();
        std::fs::write(
            dir.path().join("locales/de.toml"),
            "verdict_inaccurate = \"Das stimmt nicht.\"\n",
        )
        .unwrap();
        let w = build(dir.path()).unwrap();
        assert_eq!(
            w.env.get_template("de/verdict_inaccurate").unwrap().render(()).unwrap(),
            "Das stimmt nicht."
        );
        assert!(
            w.env.get_template("de/verdict_accurate").is_ok(),
            "the rest stays built in"
        );
        // A file named by a full tag speaks for its primary language.
        std::fs::write(
            dir.path().join("locales/pt-BR.toml"),
            "verdict_inaccurate = \"Isso é falso.\"\n",
        )
        .unwrap();
        let w = build(dir.path()).unwrap();
        assert_eq!(
            w.env.get_template("pt/verdict_inaccurate").unwrap().render(()).unwrap(),
            "Isso é falso."
        );
        std::fs::remove_file(dir.path().join("locales/pt-BR.toml")).unwrap();
        std::fs::write(dir.path().join("locales/de.toml"), "verdict_wrong = \"x\"\n").unwrap();
        let e = build(dir.path()).err().unwrap().to_string();
        assert!(e.contains("verdict_wrong") && e.contains("daemon.prompts_dir"), "{e}");
    }
}
