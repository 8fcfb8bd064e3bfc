//! The evidence index's words: tantivy's default tokenizer keeps a run of
//! Japanese, Chinese or Korean as one token (its letters are alphanumeric and unspaced), so
//! such an item was found only by the exact run. [`Words`] splits text as tantivy's
//! `SimpleTokenizer` does (runs of letters and digits) and then cuts every run of CJK
//! characters (Han, kana, Hangul) into overlapping bigrams — a lone character stays a
//! unigram — the scheme of Lucene's `CJKBigramFilter` and Elasticsearch's `cjk` analyzer: no
//! dictionary, every CJK language alike, a query's words meet an item's wherever two
//! characters in a row agree. Other letters keep whole words. [`analyzer`] adds tantivy's
//! long-token filter and lower-casing, as its default analyzer does.

use tantivy::tokenizer::{LowerCaser, RemoveLongFilter, TextAnalyzer, Token, TokenStream, Tokenizer};

/// The name the schema's text fields give their tokenizer.
pub const NAME: &str = "musebot_words";

/// Words longer than this (bytes) are dropped, as by tantivy's default analyzer.
const LONGEST: usize = 40;

/// The analyzer registered under [`NAME`].
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(Words)
        .filter(RemoveLongFilter::limit(LONGEST))
        .filter(LowerCaser)
        .build()
}

/// Whether `c` is written without spaces between words: CJK ideographs (with their
/// extensions and compatibility forms), hiragana, katakana (with half-width forms) and Hangul.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // hiragana, katakana
        | 0x31F0..=0x31FF    // katakana phonetic extensions
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF66..=0xFF9F    // half-width katakana
        | 0x1100..=0x11FF    // Hangul jamo
        | 0x3130..=0x318F    // Hangul compatibility jamo
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0x20000..=0x3FFFF  // CJK extensions B onwards
    )
}

/// Words of letters and digits; CJK runs as bigrams.
#[derive(Clone, Copy, Debug, Default)]
pub struct Words;

/// The tokens of one text, made at once (a text is a title, a claim or an item's body).
pub struct Stream {
    tokens: std::vec::IntoIter<Token>,
    current: Token,
}

impl Tokenizer for Words {
    type TokenStream<'a> = Stream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Stream {
        Stream {
            tokens: tokens(text).into_iter(),
            current: Token::default(),
        }
    }
}

impl TokenStream for Stream {
    fn advance(&mut self) -> bool {
        match self.tokens.next() {
            Some(t) => {
                self.current = t;
                true
            }
            None => false,
        }
    }

    fn token(&self) -> &Token {
        &self.current
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.current
    }
}

/// A run of characters of one kind: byte offsets and whether it is CJK.
struct Run {
    from: usize,
    to: usize,
    cjk: bool,
}

fn runs(text: &str) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for (at, c) in text.char_indices() {
        if !c.is_alphanumeric() {
            continue;
        }
        let cjk = is_cjk(c);
        let to = at + c.len_utf8();
        match runs.last_mut() {
            Some(r) if r.to == at && r.cjk == cjk => r.to = to,
            _ => runs.push(Run { from: at, to, cjk }),
        }
    }
    runs
}

fn tokens(text: &str) -> Vec<Token> {
    let mut out: Vec<Token> = Vec::new();
    let mut push = |from: usize, to: usize| {
        out.push(Token {
            offset_from: from,
            offset_to: to,
            position: out.len(),
            text: text[from..to].to_string(),
            position_length: 1,
        })
    };
    for run in runs(text) {
        if !run.cjk {
            push(run.from, run.to);
            continue;
        }
        let starts: Vec<usize> = text[run.from..run.to]
            .char_indices()
            .map(|(i, _)| run.from + i)
            .collect();
        if starts.len() == 1 {
            push(run.from, run.to);
            continue;
        }
        for (i, &from) in starts.iter().enumerate().take(starts.len() - 1) {
            let to = starts.get(i + 2).copied().unwrap_or(run.to);
            push(from, to);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut a = analyzer();
        let mut stream = a.token_stream(text);
        let mut out = Vec::new();
        while let Some(t) = stream.next() {
            out.push(t.text.clone());
        }
        out
    }

    #[test]
    fn cjk_runs_become_bigrams_and_other_words_stay_whole() {
        assert_eq!(words("万里の長城"), ["万里", "里の", "の長", "長城"]);
        assert_eq!(words("NASA said 月から"), ["nasa", "said", "月か", "から"]);
        assert_eq!(words("長 NASA2025年"), ["長", "nasa2025", "年"]);
        assert_eq!(words("달은 치즈로"), ["달은", "치즈", "즈로"]);
        assert_eq!(words("Der Mond ist aus Käse."), ["der", "mond", "ist", "aus", "käse"]);
        assert!(words("  ¿?  ").is_empty());
    }

    #[test]
    fn offsets_and_positions_follow_the_text() {
        let mut a = analyzer();
        let mut stream = a.token_stream("a 中国人");
        let mut seen = Vec::new();
        while let Some(t) = stream.next() {
            seen.push((t.offset_from, t.offset_to, t.position));
        }
        assert_eq!(seen, [(0, 1, 0), (2, 8, 1), (5, 11, 2)]);
    }
}
