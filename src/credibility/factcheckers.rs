//! Who is a fact-checker: a review is named as a fact-checker's rating only
//! when the page it was read from is one — the IFCN signatories and the fact-checkers of the
//! built-in tables, per language, and the operator's `[credibility] fact_checkers` — and it is
//! named by the name here, never by its markup's `author` (any page can set that). A newsroom
//! whose fact-check desk lives under one path of its site (Reuters, USA Today, Le Monde's Les
//! Décodeurs, the Washington Post's Fact Checker) is a fact-checker under that path only.
//! Judged on the URL the page landed on, by the one host comparison (`normalize_host`).

use serde::{Deserialize, Serialize};

use super::normalize_host;

/// (host — it and its subdomains —, path prefix ("" = the whole site), name, language).
pub const TABLE: &[(&str, &str, &str, &str)] = &[
    // English.
    ("snopes.com", "", "Snopes", "en"),
    ("politifact.com", "", "PolitiFact", "en"),
    ("factcheck.org", "", "FactCheck.org", "en"),
    ("fullfact.org", "", "Full Fact", "en"),
    ("leadstories.com", "", "Lead Stories", "en"),
    ("science.feedback.org", "", "Science Feedback", "en"),
    ("healthfeedback.org", "", "Health Feedback", "en"),
    ("climatefeedback.org", "", "Climate Feedback", "en"),
    ("factcheck.afp.com", "", "AFP Fact Check", "en"),
    ("checkyourfact.com", "", "Check Your Fact", "en"),
    ("truthorfiction.com", "", "TruthOrFiction", "en"),
    ("reuters.com", "/fact-check/", "Reuters Fact Check", "en"),
    ("apnews.com", "/article/fact-check", "AP Fact Check", "en"),
    ("apnews.com", "/fact-check/", "AP Fact Check", "en"),
    ("usatoday.com", "/story/news/factcheck/", "USA Today Fact Check", "en"),
    (
        "washingtonpost.com",
        "/politics/fact-checker/",
        "The Washington Post Fact Checker",
        "en",
    ),
    ("aap.com.au", "/factcheck/", "AAP FactCheck", "en"),
    // German.
    ("correctiv.org", "/faktencheck/", "CORRECTIV.Faktencheck", "de"),
    ("dpa-factchecking.com", "", "dpa-Faktencheck", "de"),
    ("mimikama.org", "", "Mimikama", "de"),
    // French.
    ("lemonde.fr", "/les-decodeurs/", "Les Décodeurs (Le Monde)", "fr"),
    ("factuel.afp.com", "", "AFP Factuel", "fr"),
    // Spanish.
    ("maldita.es", "", "Maldita.es", "es"),
    ("newtral.es", "", "Newtral", "es"),
    ("chequeado.com", "", "Chequeado", "es"),
    ("verifica.efe.com", "", "EFE Verifica", "es"),
    ("factual.afp.com", "", "AFP Factual", "es"),
    // Portuguese.
    ("aosfatos.org", "", "Aos Fatos", "pt"),
    ("lupa.uol.com.br", "", "Agência Lupa", "pt"),
    ("poligrafo.sapo.pt", "", "Polígrafo", "pt"),
    ("checamos.afp.com", "", "AFP Checamos", "pt"),
    // Italian.
    ("pagellapolitica.it", "", "Pagella Politica", "it"),
    ("facta.news", "", "Facta", "it"),
    ("open.online", "/c/fact-checking/", "Open Fact-checking", "it"),
    // Dutch.
    ("nieuwscheckers.nl", "", "Nieuwscheckers", "nl"),
    // Japanese.
    ("infact.press", "", "InFact", "ja"),
    ("factcheckcenter.jp", "", "Japan Fact-check Center", "ja"),
    // Korean.
    ("newstof.com", "", "NewsToF", "ko"),
    // Chinese.
    ("tfc-taiwan.org.tw", "", "Taiwan FactCheck Center", "zh"),
    ("mygopen.com", "", "MyGoPen", "zh"),
    // Arabic.
    ("fatabyyano.net", "", "Fatabyyano", "ar"),
    ("verify-sy.com", "", "Verify-Sy", "ar"),
    // Russian.
    ("provereno.media", "", "Provereno.Media", "ru"),
    ("factcheck.kz", "", "Factcheck.kz", "ru"),
    // Ukrainian.
    ("stopfake.org", "", "StopFake", "uk"),
    ("voxukraine.org", "", "VoxCheck (VoxUkraine)", "uk"),
    // Polish.
    ("demagog.org.pl", "", "Demagog", "pl"),
    ("fakenews.pl", "", "FakeNews.pl", "pl"),
    ("sprawdzam.afp.com", "", "AFP Sprawdzam", "pl"),
    // Turkish.
    ("teyit.org", "", "Teyit", "tr"),
    ("dogrulukpayi.com", "", "Doğruluk Payı", "tr"),
    // Indonesian.
    ("turnbackhoax.id", "", "TurnBackHoax (Mafindo)", "id"),
    ("cekfakta.tempo.co", "", "Cek Fakta Tempo", "id"),
    ("periksafakta.afp.com", "", "AFP Periksa Fakta", "id"),
    // Catalan.
    ("verificat.cat", "", "Verificat", "ca"),
    // Swedish.
    ("kallkritikbyran.se", "", "Källkritikbyrån", "sv"),
];

/// An operator's fact-checker (`[[credibility.fact_checkers]]`): the site (its host and
/// subdomains), an optional path its checks live under, and the name replies give it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactChecker {
    pub domain: String,
    #[serde(default)]
    pub path: String,
    pub name: String,
}

/// The fact-checkers a reply may name: the table, then the operator's (which win for the same
/// site).
#[derive(Debug, Clone, Default)]
pub struct FactCheckers {
    entries: Vec<FactChecker>,
}

impl FactCheckers {
    pub fn builtin() -> FactCheckers {
        let mut f = FactCheckers::default();
        for (domain, path, name, _) in TABLE {
            f.add(FactChecker {
                domain: domain.to_string(),
                path: path.to_string(),
                name: name.to_string(),
            });
        }
        f
    }

    /// Adds one; a later entry for the same site and path replaces the earlier one.
    pub fn add(&mut self, mut entry: FactChecker) {
        entry.domain = normalize_host(&entry.domain);
        self.entries
            .retain(|e| !(e.domain == entry.domain && e.path == entry.path));
        self.entries.push(entry);
    }

    /// The fact-checker whose page `url` is (its name), if any: the host is the entry's or
    /// below it, and the path starts with the entry's. The longest matching entry wins.
    pub fn of(&self, url: &str) -> Option<&str> {
        let u = url::Url::parse(url.trim()).ok()?;
        if !matches!(u.scheme(), "http" | "https") {
            return None;
        }
        let host = normalize_host(u.host_str()?);
        let path = u.path().to_ascii_lowercase();
        self.entries
            .iter()
            .filter(|e| host == e.domain || host.ends_with(&format!(".{}", e.domain)))
            .filter(|e| path.starts_with(&e.path.to_ascii_lowercase()))
            .max_by_key(|e| (e.domain.len(), e.path.len()))
            .map(|e| e.name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fact_checker_by_host_and_desk_path_named_by_the_table() {
        let mut f = FactCheckers::builtin();
        assert_eq!(f.of("https://www.snopes.com/fact-check/x/"), Some("Snopes"));
        assert_eq!(
            f.of("https://WWW.PolitiFact.com./factchecks/2024/a"),
            Some("PolitiFact")
        );
        assert_eq!(
            f.of("https://www.reuters.com/fact-check/abc"),
            Some("Reuters Fact Check")
        );
        assert_eq!(
            f.of("https://www.reuters.com/world/abc"),
            None,
            "Reuters news is not its fact-check desk"
        );
        assert_eq!(
            f.of("https://www.lemonde.fr/les-decodeurs/article/x"),
            Some("Les Décodeurs (Le Monde)")
        );
        assert_eq!(f.of("https://www.lemonde.fr/politique/x"), None);
        assert_eq!(f.of("https://snopes.com.evil.example/x"), None);
        assert_eq!(f.of("https://notsnopes.com/x"), None);
        assert_eq!(f.of("https://www.bbc.com/news/x"), None);
        assert_eq!(f.of("ftp://snopes.com/x"), None);
        f.add(FactChecker {
            domain: "factcheck.sandbox.example".into(),
            path: String::new(),
            name: "Sandbox Fact Check".into(),
        });
        assert_eq!(
            f.of("http://factcheck.sandbox.example/checks/a.html"),
            Some("Sandbox Fact Check")
        );
    }
}
