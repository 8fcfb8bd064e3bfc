//! The composer's rules and splitting: links, mentions, lengths, parts, scripts.

use super::*;

const MASTO: TextLimits = TextLimits {
    max_chars: 500,
    chars_per_url: 23,
};

#[test]
fn length_rules() {
    let cases: &[(&str, usize)] = &[
        ("hello", 5),
        ("héllo 👍🏽", 7),
        ("see https://example.com/a/very/long/path/that/is/long", 4 + 23),
        ("(https://example.com/x).", 1 + 23 + 2),
        ("@alice@mastodon.social hi", 6 + 3),
    ];
    for (text, want) in cases {
        assert_eq!(weighted_len(text, MASTO), *want, "{text}");
    }
}

#[test]
fn rules_remove_foreign_urls_and_every_mention() {
    let allowed: HashSet<String> = ["https://good.example/a".to_string()].into();
    let out = enforce_rules(
        "This post is false. See https://good.example/a, not https://evil.example/x. cc @eve @alice@ex.social mail a@b.c",
        &allowed,
    );
    assert_eq!(
        out,
        "This post is false. See https://good.example/a, not . cc eve aliceex.social mail ab.c"
    );
}

/// Fixtures from Mastodon's `Account::MENTION_RE`
/// (`(?<![=/[:word:]])@((USERNAME_RE)(?:@[[:word:].-]+[[:word:]]+)?)`, app/models/account.rb):
/// Ruby's `[[:word:]]` is letters, marks, decimal digits and connectors, so a superscript
/// two (No), a circled digit (No) or a circled letter (So) before the `@` leaves the
/// look-behind open and the name is a mention there; so does the start, a space, a quote, a
/// bracket. Whatever precedes, nothing of the name may stay a mention.
#[test]
fn no_mention_survives_whatever_precedes_the_at_sign() {
    let none = HashSet::new();
    for before in [
        "", " ", "x²", "①", "Ⓐ", "(", "\"", "«", "・", "‿", "_", "x", "9", "é", ".", "-", ":", "\u{200B}", "\u{2028}",
    ] {
        for at in ["@", "＠", "﹫"] {
            for name in ["victim@host.example", "victim", "Victim_2@sub.host.example"] {
                let text = format!("see {before}{at}{name} now");
                let out = enforce_rules(&text, &none);
                assert!(!has_mention(&out), "{text:?} -> {out:?}");
            }
        }
    }
    // Text that no linkifier reads as a mention is left alone.
    assert_eq!(enforce_rules("meet @ 5pm, 3 @ $2", &none), "meet @ 5pm, 3 @ $2");
}

/// Any at-sign followed by a name character: wider than every platform's mention pattern.
fn has_mention(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    chars
        .windows(2)
        .any(|w| matches!(w[0], '@' | '＠' | '﹫') && (w[1].is_alphanumeric() || w[1] == '_'))
}

#[test]
fn evidence_urls_keep_their_at_signs_and_nothing_else_links() {
    let allowed: HashSet<String> = ["https://news.example/@desk/2026/a".to_string()].into();
    let out = enforce_rules("Read https://news.example/@desk/2026/a.", &allowed);
    assert_eq!(out, "Read https://news.example/@desk/2026/a.");
    for hostile in [
        "gemini://evil.example/x",
        "ipfs://bafy/x",
        "ipfs:bafybeigdyrzt",
        "ipns://evil.example",
        "dat://abc",
        "dweb:/ipfs/abc",
        "ssb:feed/ed25519/x",
        "gopher://evil.example",
        "xmpp:eve@evil.example",
        "magnet:?xt=urn:btih:abc",
        "mailto:eve@evil.example",
        "HTTPS://EVIL.EXAMPLE/x",
        "ftp://evil.example/f",
        "web+ap://evil.example/@eve",
        "www.evil.example",
        "(www.evil.example/path),",
        "see:https://evil.example",
        "https://news.example/@desk/2026/a?u=https://evil.example",
    ] {
        let out = enforce_rules(&format!("Look {hostile} now"), &allowed);
        assert!(
            !out.to_lowercase().contains("evil")
                && !out.contains("bafy")
                && !out.contains("btih")
                && !out.contains("abc"),
            "{hostile:?} -> {out:?}"
        );
        assert!(out.starts_with("Look") && out.ends_with("now"), "{out:?}");
    }
    // Words that only look like a scheme stay.
    let words = "Update: the data: 3 of 4. Notes: www is short for World Wide Web.";
    assert_eq!(enforce_rules(words, &allowed), words);
}

#[test]
fn long_text_splits_in_order_within_limit() {
    let limits = TextLimits {
        max_chars: 100,
        chars_per_url: 23,
    };
    let words: Vec<String> = (0..120).map(|i| format!("w{i}")).collect();
    let body = words.join(" ");
    let parts = split_thread("@bob ", &body, limits, true, 20);
    assert!(parts.len() > 3);
    for (i, p) in parts.iter().enumerate() {
        assert!(weighted_len(p, limits) <= 100, "part {i} too long: {p}");
        assert!(p.ends_with(&format!("({}/{})", i + 1, parts.len())), "{p}");
    }
    assert!(parts[0].starts_with("@bob w0 "));
    let rejoined: Vec<&str> = parts
        .iter()
        .flat_map(|p| p.rsplit_once(" (").unwrap().0.split_whitespace())
        .filter(|w| *w != "@bob")
        .collect();
    assert_eq!(rejoined, words.iter().map(String::as_str).collect::<Vec<_>>());
}

#[test]
fn max_parts_cuts_with_ellipsis() {
    let limits = TextLimits {
        max_chars: 50,
        chars_per_url: 23,
    };
    let body = "word ".repeat(200);
    let parts = split_thread("", &body, limits, true, 3);
    assert_eq!(parts.len(), 3);
    assert!(parts[2].ends_with("… (3/3)"), "{}", parts[2]);
    assert!(parts.iter().all(|p| weighted_len(p, limits) <= 50));
}

#[test]
fn the_rest_of_a_thread_is_split_again_without_numbers() {
    let limits = TextLimits {
        max_chars: 40,
        chars_per_url: AS_WRITTEN,
    };
    let rest = vec![
        "see https://news.example/a-long-path-here and more (2/3)".to_string(),
        "words at the end (3/3)".to_string(),
    ];
    let parts = resplit_rest(&rest, limits, 5);
    assert!(parts.len() >= 2, "{parts:?}");
    for p in &parts {
        assert!(p.chars().count() <= 40 || p.contains("https://"), "{p}");
        assert!(!p.contains("(2/3)") && !p.contains("(3/3)"), "{p}");
    }
    assert_eq!(
        parts.join(" "),
        "see https://news.example/a-long-path-here and more words at the end"
    );
    assert_eq!(resplit_rest(&rest, limits, 1).len(), 1, "the cap holds");
    assert_eq!(strip_numbering("a (1/2)"), "a");
    assert_eq!(strip_numbering("a (see b)"), "a (see b)");
    assert_eq!(strip_numbering("(1/2)"), "(1/2)");
}

#[test]
fn as_written_counts_mentions_whole() {
    let limits = TextLimits {
        max_chars: 500,
        chars_per_url: 23,
    };
    assert_eq!(weighted_len("@bob@example.social", limits), 4);
    assert_eq!(weighted_len("@bob@example.social", limits.as_written()), 19);
}

#[test]
fn text_as_written_splits_where_23_would_not() {
    let url = format!("https://news.example/{}", "a".repeat(60));
    let body = format!("{} {url} {}", "word ".repeat(5).trim(), "end ".repeat(5).trim());
    let limits = TextLimits {
        max_chars: 100,
        chars_per_url: 23,
    };
    assert_eq!(split_thread("", &body, limits, true, 5).len(), 1);
    let literal = split_thread("", &body, limits.as_written(), true, 5);
    assert!(literal.len() > 1, "{literal:?}");
    for p in &literal {
        assert!(p.chars().count() <= 100, "{} chars: {p}", p.chars().count());
    }
    assert!(
        literal.iter().any(|p| p.contains(&url)),
        "URLs are never cut: {literal:?}"
    );
}

#[test]
fn urls_count_23_so_long_urls_fit() {
    let limits = TextLimits {
        max_chars: 60,
        chars_per_url: 23,
    };
    let url = format!("https://example.com/{}", "x".repeat(200));
    let parts = split_thread("@a ", &format!("Read {url} now"), limits, true, 4);
    assert_eq!(parts, vec![format!("@a Read {url} now")]);
}

#[test]
fn giant_word_is_cut() {
    let limits = TextLimits {
        max_chars: 40,
        chars_per_url: 23,
    };
    let parts = split_thread("", &"z".repeat(100), limits, true, 10);
    assert!(parts.len() >= 3);
    assert!(parts.iter().all(|p| weighted_len(p, limits) <= 40), "{parts:?}");
}

#[test]
fn japanese_is_split_at_clause_marks_and_never_inside_a_grapheme() {
    let limits = TextLimits {
        max_chars: 60,
        chars_per_url: 23,
    };
    let sentence =
        "この投稿は誤りです。気象庁の発表によると、観測された地震はマグニチュード五・二で、津波の心配はありません。";
    let body = sentence.repeat(4);
    let parts = split_thread("@alice ", &body, limits, true, 10);
    assert!(parts.len() > 1, "{parts:?}");
    for p in &parts {
        assert!(p.graphemes(true).count() <= 60, "{p}");
    }
    // Every part but the last ends at a clause or sentence mark (its numbering aside).
    for p in &parts[..parts.len() - 1] {
        let text = p.rsplit_once(" (").map_or(p.as_str(), |(t, _)| t);
        assert!(text.ends_with(['。', '、']), "{p}");
    }
    // Nothing lost, nothing doubled; the katakana word マグニチュード is never cut.
    let joined: String = parts
        .iter()
        .map(|p| p.rsplit_once(" (").map_or(p.as_str(), |(t, _)| t))
        .collect::<String>();
    assert_eq!(joined.replace("@alice ", ""), body);
    assert!(parts.iter().all(|p| !p.ends_with("マグ")));
    // Emoji with modifiers and flags stay whole.
    let emoji = "👩🏽‍💻🇯🇵".repeat(40);
    for p in split_thread("", &emoji, limits, false, 10) {
        assert!(p.graphemes(true).all(|g| g == "👩🏽‍💻" || g == "🇯🇵"), "{p}");
    }
}

/// Japanese writes no space around a URL: the evidence URL is kept, the words glued to
/// it too (set apart by a space), and full-width punctuation ends it.
#[test]
fn a_url_glued_to_japanese_text_keeps_both() {
    let allowed: HashSet<String> = ["https://www.nhk.or.jp/a".to_string()].into();
    let out = enforce_rules("詳しくはこちら：https://www.nhk.or.jp/a。", &allowed);
    assert_eq!(out, "詳しくはこちら： https://www.nhk.or.jp/a。");
    let out = enforce_rules("報道（https://www.nhk.or.jp/a）によると誤りです。", &allowed);
    assert_eq!(out, "報道（ https://www.nhk.or.jp/a）によると誤りです。");
    let out = enforce_rules("記事https://www.nhk.or.jp/aによると", &allowed);
    assert_eq!(out, "記事 https://www.nhk.or.jp/a によると");
    // Latin text glued before it could make a host or a handle: it is dropped, as before.
    let out = enforce_rules("evil.example/https://www.nhk.or.jp/a", &allowed);
    assert_eq!(out, "https://www.nhk.or.jp/a");
    // A URL that is not evidence goes, with what is glued after it (removal errs wide).
    assert_eq!(enforce_rules("記事https://evil.example/xによると", &allowed), "記事");
}

/// After a cut at a clause mark, what followed it and a long word never overflow a part.
#[test]
fn a_long_word_after_a_clause_mark_starts_its_own_piece() {
    let limits = TextLimits {
        max_chars: 30,
        chars_per_url: 23,
    };
    // 14 kana, a mark, 12 kana, then a 20-letter katakana word (one UAX #29 word): the 12
    // and the word together are 32, over the part.
    let body = format!(
        "{}、{}{}",
        "あ".repeat(14),
        "い".repeat(12),
        "アイウエオカキクケコサシスセソタチツテト"
    );
    for p in split_thread("", &body, limits, false, 10) {
        assert!(p.graphemes(true).count() <= 30, "{p}");
    }
    let joined: String = split_thread("", &body, limits, false, 10).concat();
    assert_eq!(joined, body);
}

/// A mention inside a cited URL: Mastodon's `MENTION_RE` finds `@name` after any
/// character but `=`, `/` and word characters, URLs included, so each of these evidence URLs
/// would ping `victim` — and, in a direct reply, add them as a recipient. Every such `@` is
/// posted percent-encoded; the model may write the URL either way; `/@user` paths stay.
#[test]
fn an_at_sign_in_a_cited_url_can_ping_nobody() {
    for glue in ["-", ".", ",", "(", "+", "~", "&", "!", "*", "'", ";", ":"] {
        let url = format!("https://www.reuters.com/world/a{glue}@victim@evil.example/x?q=1{glue}@victim");
        let allowed: HashSet<String> = [url.clone()].into();
        for written in [url.clone(), at_safe(&url)] {
            let out = enforce_rules(&format!("This post is false, see {written} for details."), &allowed);
            assert!(!out.contains('@'), "{glue}: {out}");
            assert!(
                out.contains(&format!("a{glue}%40victim%40evil.example/x?q=1{glue}%40victim")),
                "{glue}: the evidence URL is kept, encoded: {out}"
            );
        }
    }
    let profile = "https://mastodon.social/@reuters/113";
    let allowed: HashSet<String> = [profile.to_string()].into();
    assert_eq!(
        enforce_rules(&format!("See {profile}"), &allowed),
        format!("See {profile}")
    );
    assert_eq!(at_safe("https://x.example/a＠b"), "https://x.example/a%EF%BC%A0b");
}

/// Control and format characters from outside text never reach a posted reply:
/// a rating or title carrying a right-to-left override, isolates, a BEL or an ANSI escape
/// comes out as its visible letters; the joiners that spelling and emoji need stay.
#[test]
fn hidden_characters_never_reach_a_reply() {
    let allowed = HashSet::new();
    let text = "Rated \u{202E}eslaF\u{202C} by \u{2066}Checker\u{2069}\u{7}\u{1b}[31m red\u{FEFF}\u{00AD} \u{0085}done";
    let out = enforce_rules(text, &allowed);
    assert_eq!(out, "Rated eslaF by Checker[31m red done");
    assert!(out.chars().all(|c| !c.is_control()), "{out:?}");
    let keep = "می\u{200C}خواهم 👩\u{200D}💻";
    assert_eq!(enforce_rules(keep, &allowed), keep);
}
