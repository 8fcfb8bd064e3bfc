//! A text's language, as an ISO 639-1 code (the form platforms tag posts with and search
//! services take) — Chinese with its script, `zh-Hans` or `zh-Hant` ([`chinese_variant`]),
//! which [`primary`] reduces to `zh`. [`read`]: `whatlang`'s trigram detector among the
//! languages common on Mastodon and Bluesky, except that a Latin-script text it reads as
//! Spanish, Portuguese, Catalan or English, or cannot read confidently, is read by the n-gram
//! model trained on real tweets ([`ngram`]), which also knows Galician and Basque and tells
//! these close neighbours apart (measured: `cargo bench --bench language_id`); it names a mixed
//! post's second language ([`also`]). [`detect`], which fills a missing tag and names a search
//! query's language, is conservative: whatlang must be confident, the model only splits the
//! Iberian languages. A post's language is its platform tag, unless its text plainly reads
//! otherwise ([`of`]: clients tag posts with the app's language, so a Japanese post tagged `en`
//! is common).

pub mod ngram;

/// Letters a text needs before its language replaces a missing tag ([`detect`]).
const MIN_LETTERS: usize = 12;
/// The confidence (0–1) a guess needs for [`detect`].
const MIN_CONFIDENCE: f64 = 0.5;
/// whatlang's confidence in a language the n-gram model does not know (French, German…) that
/// keeps a Latin-script text from the model. Measured on TweetLID (10-fold CV): the gate costs
/// 0.021 macro F1 at 0.5 (whatlang reads 34 Basque tweets as Indonesian, others as Finnish or
/// Italian; with an earlier model, 0.011 at 0.7 and 0.008 at 0.9); kept at 0.5, because every
/// post it keeps from the model is in a language the model cannot name (French, Italian,
/// Indonesian would otherwise be read as Catalan, Spanish or Basque), and those are far more
/// common on the platforms.
const OTHER_LANGUAGE: f64 = 0.5;

/// What a text reads as.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub lang: &'static str,
    /// A second language it is partly written in (only the n-gram model names one).
    pub second: Option<&'static str>,
    /// 0–1: whatlang's confidence, or the model's posterior.
    pub confidence: f64,
}

/// The language of `text` as ISO 639-1, or `None` when it is too short, mixed or unreliable,
/// or a language without a two-letter code here: what fills a post's missing tag and names a
/// query's language, so it is conservative — whatlang's confident guess (the language family:
/// the model, always sure of itself, read "@musebot reject mastodon:tag:…" as Catalan), with a
/// guess of Spanish, Portuguese or Catalan told apart by the n-gram model, which also knows
/// Galician and Basque.
pub fn detect(text: &str) -> Option<&'static str> {
    if text.chars().filter(|c| c.is_alphabetic()).count() < MIN_LETTERS {
        return None;
    }
    let (guess, confidence) = whatlang_guess(text, false)?;
    if confidence < MIN_CONFIDENCE {
        return None;
    }
    let iberian = |l: &str| matches!(l, "es" | "pt" | "ca" | "gl" | "eu");
    if iberian(guess) {
        if let Some(g) = ngram::Model::shipped().guess(text).filter(|g| iberian(g.lang)) {
            return Some(g.lang);
        }
    }
    Some(guess)
}

/// whatlang's guess among the languages common on Mastodon and Bluesky, with its confidence:
/// on a short post a neighbour (Catalan for Spanish, Galician for Portuguese) would otherwise
/// win as often as not, and Catalan beside Spanish leaves both unsure (the n-gram model tells
/// them apart). `catalan` adds Catalan where only the family matters (a Catalan text must not
/// look French to the gate of [`read_with`]).
fn whatlang_guess(text: &str, catalan: bool) -> Option<(&'static str, f64)> {
    use whatlang::Lang::*;
    let mut common = vec![
        Eng, Deu, Fra, Spa, Por, Ita, Nld, Jpn, Cmn, Kor, Rus, Ukr, Pol, Ces, Swe, Dan, Fin, Nob, Tur, Ell, Ara, Heb,
        Ind, Vie, Tha, Hun, Ron,
    ];
    if catalan {
        common.push(Cat);
    }
    let detector = whatlang::Detector::with_allowlist(common);
    let info = detector.detect(text)?;
    Some((iso639_1(info.lang().code())?, info.confidence()))
}

/// What `text` reads as, by the shipped n-gram model and whatlang ([`read_with`]).
pub fn read(text: &str) -> Option<Reading> {
    read_with(ngram::Model::shipped(), text)
}

/// What `text` reads as: whatlang among the languages common on the platforms; a Latin-script
/// text it reads as one of the model's languages (or reads with less than [`OTHER_LANGUAGE`]
/// confidence) by `model`.
pub fn read_with(model: &ngram::Model, text: &str) -> Option<Reading> {
    let found = whatlang_guess(text, true);
    let (guess, confidence) = (found.map(|f| f.0), found.map_or(0.0, |f| f.1));
    let elsewhere = guess.is_some_and(|g| !ngram::LANGS.contains(&g)) && confidence >= OTHER_LANGUAGE;
    if share_in_script(text, false) >= 0.5 && !elsewhere {
        if let Some(g) = model.guess(text) {
            if g.lang == "und" {
                // Names, laughter, emoji: no language to read.
                return None;
            }
            return Some(Reading {
                lang: g.lang,
                second: g.second,
                confidence: g.probability,
            });
        }
    }
    Some(Reading {
        lang: guess?,
        second: None,
        confidence,
    })
}

/// A post's language from its platform tag and its text: the tag, unless the text as a whole
/// plainly reads as another language — confidently guessed, and either written in another
/// script than the tag's for [`WHOLE`] of its letters or more (a Japanese text tagged `en`; not
/// a Japanese post quoting one English sentence) or, in the same script, near certain
/// (confidence 0.9 or more); the guess when there is no tag.
pub fn of(tag: Option<&str>, text: &str) -> Option<String> {
    let written = tag;
    let found = of_primary(tag, text)?;
    // Chinese keeps its script: the bot answers a traditional-script post in traditional.
    Some(if found == "zh" {
        chinese_variant(
            written
                .filter(|t| primary(Some(t)).as_deref() == Some("zh"))
                .unwrap_or("zh"),
            text,
        )
        .to_string()
    } else {
        found
    })
}

/// Which written Chinese a tag or a text is: `zh-Hant` for a tag naming the traditional
/// script (`Hant`) or a region that writes it (TW, HK, MO), `zh-Hans` for one naming the
/// simplified script or another region; for a bare `zh`, the text decides — more characters
/// only traditional writing uses ([`TRADITIONAL`]) than ones only simplified writing uses
/// ([`SIMPLIFIED`]) make it `zh-Hant` — and `zh-Hans` when it does not.
pub fn chinese_variant(tag: &str, text: &str) -> &'static str {
    let subtags: Vec<String> = tag.split(['-', '_']).skip(1).map(str::to_ascii_lowercase).collect();
    if subtags
        .iter()
        .any(|s| matches!(s.as_str(), "hant" | "tw" | "hk" | "mo"))
    {
        return "zh-Hant";
    }
    if !subtags.is_empty() {
        return "zh-Hans";
    }
    let count = |set: &str| text.chars().filter(|c| set.contains(*c)).count();
    if count(TRADITIONAL) > count(SIMPLIFIED) {
        "zh-Hant"
    } else {
        "zh-Hans"
    }
}

/// Common characters written differently in the two scripts, pair by pair: simplified…
const SIMPLIFIED: &str = "这们个说国会来时对为学发经过还后问间长开关见东车电话语书门马风万与从认让现实点无机进动种样么边头难爱亲体军华历总传报场务区医卫药应该谁请谢读写买卖钱银网络视频";
/// …and traditional.
const TRADITIONAL: &str = "這們個說國會來時對為學發經過還後問間長開關見東車電話語書門馬風萬與從認讓現實點無機進動種樣麼邊頭難愛親體軍華歷總傳報場務區醫衛藥應該誰請謝讀寫買賣錢銀網絡視頻";

/// [`of`] as a primary subtag.
fn of_primary(tag: Option<&str>, text: &str) -> Option<String> {
    let tag = primary(tag);
    let Some(guess) = detect(text) else { return tag };
    match &tag {
        None => Some(guess.to_string()),
        Some(t) if t == guess => tag,
        Some(t) => {
            // Near certain about this very language (an unrestricted guess of Catalan at 0.95
            // says nothing for Spanish).
            let sure = whatlang::detect(text)
                .is_some_and(|i| i.confidence() >= 0.9 && iso639_1(i.lang().code()) == Some(guess));
            let other_script = non_latin(t) != non_latin(guess);
            if other_script {
                // Measured on the letters: the guess's script must hold the text, not a quote.
                (share_in_script(text, non_latin(guess)) >= WHOLE)
                    .then(|| guess.to_string())
                    .or(tag)
            } else if sure {
                Some(guess.to_string())
            } else {
                tag
            }
        }
    }
}

/// A share of a post's letters another language needs before its queries are asked in it.
const PART: f64 = 0.2;

/// A second language a post is written in beside `main` (its tag, or what it reads as), for
/// its queries: the language of its letters in the other script (Latin or
/// not) when they are [`PART`] of its letters and [`MIN_LETTERS`] or more — a Japanese post
/// quoting an English sentence, an English one quoting Japanese — else a second language the
/// n-gram model reads in it (Spanish with Catalan). `None` when it reads as `main` alone.
pub fn also(text: &str, main: Option<&str>) -> Option<&'static str> {
    let main = primary(main);
    let differs = |l: &str| main.as_deref() != Some(l);
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    for non_latin_part in [true, false] {
        let part: String = text
            .chars()
            .map(|c| {
                if !c.is_alphabetic() || is_latin(c) != non_latin_part {
                    c
                } else {
                    ' '
                }
            })
            .collect();
        let own = part.chars().filter(|c| c.is_alphabetic()).count();
        if own >= MIN_LETTERS && own as f64 >= PART * letters as f64 && (own as f64) < letters as f64 {
            if let Some(l) = detect(&part).filter(|l| differs(l)) {
                return Some(l);
            }
        }
    }
    let whole = read(text)?;
    whole
        .second
        .filter(|l| differs(l))
        .or_else(|| Some(whole.lang).filter(|l| differs(l) && whole.confidence >= MIN_CONFIDENCE && main.is_some()))
        .filter(|_| letters >= MIN_LETTERS)
}

/// Whether a letter is in the Latin script (Basic Latin, Latin-1, Extended-A/B, Additional).
fn is_latin(c: char) -> bool {
    c.is_ascii_alphabetic() || ('\u{00C0}'..='\u{024F}').contains(&c) || ('\u{1E00}'..='\u{1EFF}').contains(&c)
}

/// The share of a text's letters a script must hold for the text to read, as a whole, as a
/// language written in it.
pub const WHOLE: f64 = 0.8;

/// The share of `text`'s letters that are not Latin (`non_latin`) or that are Latin.
fn share_in_script(text: &str, non_latin: bool) -> f64 {
    let (mut all, mut inside) = (0usize, 0usize);
    for c in text.chars().filter(|c| c.is_alphabetic()) {
        all += 1;
        if is_latin(c) != non_latin {
            inside += 1;
        }
    }
    if all == 0 {
        0.0
    } else {
        inside as f64 / all as f64
    }
}

/// Languages not written in the Latin script (among those guessed).
fn non_latin(code: &str) -> bool {
    matches!(code, "ja" | "zh" | "ko" | "ru" | "uk" | "el" | "ar" | "he" | "th")
}

/// The primary subtag of a language tag (`pt-BR` → `pt`) when it is a plain ISO 639 code
/// (two or three ASCII letters); `None` for anything else a client may have written.
pub fn primary(tag: Option<&str>) -> Option<String> {
    let first = tag?.trim().split(['-', '_']).next()?.to_ascii_lowercase();
    ((2..=3).contains(&first.len()) && first.chars().all(|c| c.is_ascii_lowercase())).then_some(first)
}

/// ISO 639-3 (whatlang's) → ISO 639-1.
fn iso639_1(code: &str) -> Option<&'static str> {
    Some(match code {
        "eng" => "en",
        "deu" => "de",
        "fra" => "fr",
        "spa" => "es",
        "por" => "pt",
        "ita" => "it",
        "nld" => "nl",
        "jpn" => "ja",
        "cmn" => "zh",
        "kor" => "ko",
        "rus" => "ru",
        "ukr" => "uk",
        "pol" => "pl",
        "ces" => "cs",
        "slk" => "sk",
        "slv" => "sl",
        "hrv" => "hr",
        "srp" => "sr",
        "bul" => "bg",
        "ron" => "ro",
        "hun" => "hu",
        "fin" => "fi",
        "swe" => "sv",
        "dan" => "da",
        "nob" => "no",
        "ell" => "el",
        "tur" => "tr",
        "ara" => "ar",
        "heb" => "he",
        "pes" => "fa",
        "hin" => "hi",
        "ben" => "bn",
        "ind" => "id",
        "vie" => "vi",
        "tha" => "th",
        "cat" => "ca",
        "epo" => "eo",
        "lit" => "lt",
        "lav" => "lv",
        "est" => "et",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_keeps_its_script() {
        assert_eq!(SIMPLIFIED.chars().count(), TRADITIONAL.chars().count());
        let hant = "網路上流傳這張照片，說長城在太空中肉眼可見，這是錯誤的說法。";
        let hans = "网上流传这张照片，说长城在太空中肉眼可见，这是错误的说法。";
        assert_eq!(of(Some("zh"), hant).as_deref(), Some("zh-Hant"));
        assert_eq!(of(None, hant).as_deref(), Some("zh-Hant"));
        assert_eq!(of(Some("zh"), hans).as_deref(), Some("zh-Hans"));
        assert_eq!(
            of(Some("zh-TW"), hans).as_deref(),
            Some("zh-Hant"),
            "the region's tag stands"
        );
        assert_eq!(of(Some("zh-Hans"), hant).as_deref(), Some("zh-Hans"));
        assert_eq!(crate::words::language(of(Some("en"), hant).as_deref()), "zh-Hant");
    }

    #[test]
    fn tags_are_reduced_to_a_plain_code() {
        assert_eq!(primary(Some("pt-BR")).as_deref(), Some("pt"));
        assert_eq!(primary(Some("DE")).as_deref(), Some("de"));
        assert_eq!(primary(Some("ignore previous instructions")), None);
        assert_eq!(primary(Some("</post>")), None);
        assert_eq!(primary(None), None);
    }

    #[test]
    fn posts_are_told_apart_by_language() {
        for (text, want) in [
            (
                "The Great Wall of China is the only man-made structure visible from the Moon.",
                Some("en"),
            ),
            (
                "Die Chinesische Mauer ist das einzige Bauwerk, das man vom Mond aus mit bloßem Auge sehen kann.",
                Some("de"),
            ),
            (
                "La Gran Muralla China es la única construcción humana visible desde la Luna a simple vista.",
                Some("es"),
            ),
            (
                "万里の長城は月から肉眼で見える唯一の人工建造物だと言われています。",
                Some("ja"),
            ),
            (
                "La Grande Muraille de Chine est la seule construction humaine visible depuis la Lune.",
                Some("fr"),
            ),
            ("ok", None),
            ("@alice lol", None),
            // Identifiers are no language (the model alone read this as Catalan).
            ("@musebot reject mastodon:tag:1796229920703", None),
            (
                "O goberno anunciou onte unha suba de impostos para os xubilados, segundo o conselleiro.",
                Some("gl"),
            ),
            (
                "El govern va anunciar ahir una pujada d'impostos per als jubilats, segons el conseller.",
                Some("ca"),
            ),
        ] {
            let info = whatlang::detect(text);
            assert_eq!(detect(text), want, "{text}: {info:?}");
        }
    }

    /// The n-gram model knows only es, pt, ca, gl, eu and en: posts in the other Latin-script
    /// languages the bot speaks must still read as themselves (whatlang's gate).
    #[test]
    fn the_iberian_model_leaves_other_languages_alone() {
        let mut wrong = Vec::new();
        for (text, want) in [
            (
                "Le gouvernement a annoncé hier une hausse des impôts pour les retraités, selon le ministre.",
                "fr",
            ),
            (
                "Non è vero che il vaccino contiene un microchip, lo hanno confermato i medici dell'ospedale.",
                "it",
            ),
            (
                "Pemerintah mengumumkan kenaikan harga bahan bakar minyak mulai minggu depan di seluruh Indonesia.",
                "id",
            ),
            (
                "Die Regierung hat gestern angekündigt, dass die Steuern für Rentner im nächsten Jahr steigen.",
                "de",
            ),
            (
                "De regering heeft gisteren aangekondigd dat de belastingen voor gepensioneerden omhoog gaan.",
                "nl",
            ),
            (
                "Regeringen meddelade i går att skatten för pensionärer ska höjas från och med nästa år.",
                "sv",
            ),
            (
                "Rząd ogłosił wczoraj, że podatki dla emerytów wzrosną od przyszłego roku w całym kraju.",
                "pl",
            ),
            (
                "Hükümet dün emekliler için vergilerin gelecek yıldan itibaren artacağını açıkladı.",
                "tr",
            ),
        ] {
            let got = read(text).map(|r| r.lang);
            if got != Some(want) {
                wrong.push(format!("{want} read as {got:?}: {text}"));
            }
        }
        for (text, want) in [
            (
                "El gobierno anunció ayer una subida de impuestos para los jubilados, según el ministro.",
                "es",
            ),
            (
                "El govern va anunciar ahir una pujada d'impostos per als jubilats, segons el conseller.",
                "ca",
            ),
            (
                "O governo anunciou ontem um aumento de impostos para os aposentados, segundo o ministro.",
                "pt",
            ),
            (
                "O goberno anunciou onte unha suba de impostos para os xubilados, segundo o conselleiro.",
                "gl",
            ),
            (
                "Egun on guztioi, gaur hotz handia egiten du Bilbon eta elurra dator",
                "eu",
            ),
            ("Vaccines contain microchips.", "en"),
            ("The Moon is made of cheese.", "en"),
            ("Drinking coffee stunts children's growth, doctors say", "en"),
        ] {
            let got = read(text).map(|r| r.lang);
            if got != Some(want) {
                wrong.push(format!("{want} read as {got:?}: {text}"));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    #[test]
    fn a_tag_stands_unless_the_text_plainly_reads_otherwise() {
        let ja = "万里の長城は月から肉眼で見える唯一の人工建造物だと宇宙飛行士が確認した。";
        assert_eq!(of(Some("en"), ja).as_deref(), Some("ja"), "another script");
        assert_eq!(of(None, ja).as_deref(), Some("ja"));
        assert_eq!(
            of(Some("en"), "ok").as_deref(),
            Some("en"),
            "too short to doubt the tag"
        );
        assert_eq!(of(Some("pt-BR"), "ok").as_deref(), Some("pt"));
        // A Japanese post quoting an English sentence stays Japanese; the same words
        // in English alone, tagged ja, read as English.
        let mixed =
            "万里の長城について、NASA said the Great Wall is visible from the Moon と宇宙飛行士が確認したそうです。";
        assert_eq!(detect(mixed), Some("en"), "the quote alone would win");
        assert_eq!(of(Some("ja"), mixed).as_deref(), Some("ja"), "the tag stands");
        assert_eq!(
            of(
                Some("ja"),
                "NASA said the Great Wall is visible from the Moon, astronauts confirmed."
            )
            .as_deref(),
            Some("en")
        );
        // A Russian post quoting an English phrase, tagged ru.
        let ru = "Говорят, что Великая Китайская стена видна с Луны — \"visible from the Moon\", но это миф.";
        assert_eq!(of(Some("ru"), ru).as_deref(), Some("ru"));
        let de = "Die Chinesische Mauer ist das einzige Bauwerk, das man vom Mond aus mit bloßem Auge sehen kann.";
        assert_eq!(of(Some("de"), de).as_deref(), Some("de"));
        assert_eq!(of(None, "").as_deref(), None);
        // A mixed post's queries cover its second language.
        assert_eq!(also(mixed, Some("ja")), Some("en"));
        assert_eq!(
            also(
                "Astronauts never said this: 万里の長城は月から肉眼で見える唯一の人工建造物だ",
                Some("en")
            ),
            Some("ja")
        );
        assert_eq!(also(ja, Some("ja")), None);
        assert_eq!(also(de, Some("de")), None);
        // A Catalan post tagged `ca` stays Catalan (the restricted guess is Spanish).
        let ca = "La Gran Muralla de la Xina és l'única construcció humana que es pot veure a ull nu des de la Lluna, segons els astronautes.";
        assert_eq!(of(Some("ca"), ca).as_deref(), Some("ca"));
    }
}
