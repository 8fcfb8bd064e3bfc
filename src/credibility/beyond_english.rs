//! The built-in publishers beyond English: for each language the bot speaks, the major public
//! broadcasters, news agencies and fact-checkers, each with the basis of its rating. The rule
//! the project applied, where it had no Media Bias/Fact Check rating of its own reading: a
//! public broadcaster under a public-service remit (EBU members, and NHK and EBC outside
//! Europe), a national news agency, or a fact-checker that is a signatory of the IFCN code of
//! principles (as the project read those lists in 2024–2025) is rated high factuality and
//! least biased — Muse's medium tier (its top tier needs "very high"). Operators who rate
//! differently load a ratings file (`[credibility] files`), which overrides a domain here.

use super::{Bias, Factuality};

use Bias::*;
use Factuality::*;

/// (domain, factuality, bias, language, basis).
pub const TABLE: &[(&str, Factuality, Bias, &str, &str)] = &[
    // German.
    (
        "tagesschau.de",
        High,
        LeastBiased,
        "de",
        "ARD news (EBU member); faktenfinder",
    ),
    (
        "zdf.de",
        High,
        LeastBiased,
        "de",
        "ZDF, public broadcaster (EBU member)",
    ),
    (
        "deutschlandfunk.de",
        High,
        LeastBiased,
        "de",
        "Deutschlandradio, public broadcaster (EBU member)",
    ),
    (
        "br.de",
        High,
        LeastBiased,
        "de",
        "Bayerischer Rundfunk, ARD (EBU member)",
    ),
    (
        "ndr.de",
        High,
        LeastBiased,
        "de",
        "Norddeutscher Rundfunk, ARD (EBU member)",
    ),
    (
        "orf.at",
        High,
        LeastBiased,
        "de",
        "ORF, Austria's public broadcaster (EBU member)",
    ),
    ("srf.ch", High, LeastBiased, "de", "SRF, SRG SSR (EBU member)"),
    (
        "dpa.com",
        High,
        LeastBiased,
        "de",
        "dpa, German national news agency; dpa-Faktencheck (IFCN signatory)",
    ),
    (
        "correctiv.org",
        High,
        LeastBiased,
        "de",
        "CORRECTIV.Faktencheck (IFCN signatory)",
    ),
    // French.
    (
        "francetvinfo.fr",
        High,
        LeastBiased,
        "fr",
        "France Télévisions news (EBU member)",
    ),
    (
        "radiofrance.fr",
        High,
        LeastBiased,
        "fr",
        "Radio France, public broadcaster (EBU member)",
    ),
    (
        "rfi.fr",
        High,
        LeastBiased,
        "fr",
        "RFI, France Médias Monde (EBU member)",
    ),
    (
        "rtbf.be",
        High,
        LeastBiased,
        "fr",
        "RTBF, Belgian public broadcaster (EBU member)",
    ),
    ("rts.ch", High, LeastBiased, "fr", "RTS, SRG SSR (EBU member)"),
    (
        "lemonde.fr",
        High,
        LeastBiased,
        "fr",
        "Le Monde; Les Décodeurs (IFCN signatory)",
    ),
    // Spanish.
    (
        "rtve.es",
        High,
        LeastBiased,
        "es",
        "RTVE, Spain's public broadcaster (EBU member); VerificaRTVE",
    ),
    (
        "efe.com",
        High,
        LeastBiased,
        "es",
        "EFE, Spanish national news agency; EFE Verifica (IFCN signatory)",
    ),
    ("maldita.es", High, LeastBiased, "es", "Maldita.es (IFCN signatory)"),
    ("newtral.es", High, LeastBiased, "es", "Newtral (IFCN signatory)"),
    (
        "chequeado.com",
        High,
        LeastBiased,
        "es",
        "Chequeado, Argentina (IFCN signatory)",
    ),
    // Portuguese.
    (
        "rtp.pt",
        High,
        LeastBiased,
        "pt",
        "RTP, Portugal's public broadcaster (EBU member)",
    ),
    (
        "lusa.pt",
        High,
        LeastBiased,
        "pt",
        "Lusa, Portuguese national news agency",
    ),
    (
        "ebc.com.br",
        High,
        LeastBiased,
        "pt",
        "EBC / Agência Brasil, Brazil's public broadcaster and agency",
    ),
    (
        "aosfatos.org",
        High,
        LeastBiased,
        "pt",
        "Aos Fatos, Brazil (IFCN signatory)",
    ),
    // Italian.
    (
        "rai.it",
        High,
        LeastBiased,
        "it",
        "RAI, Italy's public broadcaster (EBU member)",
    ),
    ("rainews.it", High, LeastBiased, "it", "RaiNews, RAI (EBU member)"),
    ("ansa.it", High, LeastBiased, "it", "ANSA, Italian national news agency"),
    (
        "pagellapolitica.it",
        High,
        LeastBiased,
        "it",
        "Pagella Politica (IFCN signatory)",
    ),
    ("facta.news", High, LeastBiased, "it", "Facta (IFCN signatory)"),
    // Dutch.
    (
        "nos.nl",
        High,
        LeastBiased,
        "nl",
        "NOS, Dutch public broadcaster, NPO (EBU member)",
    ),
    (
        "vrt.be",
        High,
        LeastBiased,
        "nl",
        "VRT, Flemish public broadcaster (EBU member)",
    ),
    ("anp.nl", High, LeastBiased, "nl", "ANP, Dutch national news agency"),
    (
        "nieuwscheckers.nl",
        High,
        LeastBiased,
        "nl",
        "Nieuwscheckers, Leiden University (IFCN signatory)",
    ),
    // Japanese.
    ("nhk.or.jp", High, LeastBiased, "ja", "NHK, Japan's public broadcaster"),
    (
        "kyodonews.net",
        High,
        LeastBiased,
        "ja",
        "Kyodo News, Japanese national news agency",
    ),
    ("jiji.com", High, LeastBiased, "ja", "Jiji Press, Japanese news agency"),
    ("infact.press", High, LeastBiased, "ja", "InFact (IFCN signatory)"),
    ("fij.info", High, LeastBiased, "ja", "FactCheck Initiative Japan"),
];
