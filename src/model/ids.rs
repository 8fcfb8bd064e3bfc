//! Ordering of platform ids (cursor positions): Mastodon ids are decimal strings of any
//! length, so they compare numerically; other ids compare as text.

/// Orders ids numerically when both are decimal, else lexically.
pub fn id_less(a: &str, b: &str) -> bool {
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    if numeric(a) && numeric(b) {
        let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
        (a.len(), a) < (b.len(), b)
    } else {
        a < b
    }
}

#[cfg(test)]
mod tests {
    use super::id_less;

    #[test]
    fn ids_compare_numerically() {
        assert!(id_less("9", "10"));
        assert!(!id_less("10", "9"));
        assert!(id_less("109999999999999999", "110000000000000000"));
    }
}
