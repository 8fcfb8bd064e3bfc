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
    (
        "dpa-factchecking.com",
        High,
        LeastBiased,
        "de",
        "dpa-Faktencheck, dpa's fact-check desk (IFCN signatory)",
    ),
    (
        "mimikama.org",
        High,
        LeastBiased,
        "de",
        "Mimikama, Austria (IFCN signatory)",
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
    (
        "lupa.uol.com.br",
        High,
        LeastBiased,
        "pt",
        "Agência Lupa, Brazil (IFCN signatory)",
    ),
    (
        "poligrafo.sapo.pt",
        High,
        LeastBiased,
        "pt",
        "Polígrafo, Portugal (IFCN signatory)",
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
    (
        "open.online",
        High,
        LeastBiased,
        "it",
        "Open; Open Fact-checking (IFCN signatory)",
    ),
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
    (
        "factcheckcenter.jp",
        High,
        LeastBiased,
        "ja",
        "Japan Fact-check Center (IFCN signatory)",
    ),
    ("fij.info", High, LeastBiased, "ja", "FactCheck Initiative Japan"),
    // Korean.
    (
        "kbs.co.kr",
        High,
        LeastBiased,
        "ko",
        "KBS, South Korea's public broadcaster",
    ),
    (
        "imbc.com",
        High,
        LeastBiased,
        "ko",
        "MBC, South Korean public broadcaster (Foundation for Broadcast Culture)",
    ),
    (
        "yna.co.kr",
        High,
        LeastBiased,
        "ko",
        "Yonhap, South Korea's national news agency",
    ),
    ("newstof.com", High, LeastBiased, "ko", "NewsToF (IFCN signatory)"),
    // Chinese.
    // Taiwan and Hong Kong; mainland state media are left out: no public-service remit with
    // editorial independence.
    (
        "cna.com.tw",
        High,
        LeastBiased,
        "zh",
        "Central News Agency (CNA), Taiwan's national news agency",
    ),
    (
        "pts.org.tw",
        High,
        LeastBiased,
        "zh",
        "Public Television Service (PTS), Taiwan's public broadcaster",
    ),
    (
        "rthk.hk",
        High,
        LeastBiased,
        "zh",
        "RTHK, Hong Kong's public broadcaster under its charter; editorial independence contested since 2021",
    ),
    (
        "tfc-taiwan.org.tw",
        High,
        LeastBiased,
        "zh",
        "Taiwan FactCheck Center (IFCN signatory)",
    ),
    ("mygopen.com", High, LeastBiased, "zh", "MyGoPen (IFCN signatory)"),
    // Arabic.
    ("fatabyyano.net", High, LeastBiased, "ar", "Fatabyyano (IFCN signatory)"),
    ("verify-sy.com", High, LeastBiased, "ar", "Verify-Sy (IFCN signatory)"),
    (
        "mc-doualiya.com",
        High,
        LeastBiased,
        "ar",
        "Monte Carlo Doualiya, France Médias Monde (EBU member)",
    ),
    // Russian.
    // No Russian state media (none is under a public-service remit with editorial independence):
    // IFCN signatories and EU public broadcasters' Russian-language services.
    (
        "provereno.media",
        High,
        LeastBiased,
        "ru",
        "Provereno.Media (IFCN signatory)",
    ),
    (
        "factcheck.kz",
        High,
        LeastBiased,
        "ru",
        "Factcheck.kz, in Russian and Kazakh (IFCN signatory)",
    ),
    (
        "rus.err.ee",
        High,
        LeastBiased,
        "ru",
        "ERR News in Russian, Estonia's public broadcaster (EBU member)",
    ),
    (
        "rus.lsm.lv",
        High,
        LeastBiased,
        "ru",
        "LSM in Russian, Latvia's public broadcaster (EBU member)",
    ),
    // Ukrainian.
    (
        "suspilne.media",
        High,
        LeastBiased,
        "uk",
        "Suspilne (UA:PBC), Ukraine's public broadcaster (EBU member)",
    ),
    (
        "ukrinform.ua",
        High,
        LeastBiased,
        "uk",
        "Ukrinform, Ukraine's national news agency",
    ),
    ("stopfake.org", High, LeastBiased, "uk", "StopFake (IFCN signatory)"),
    (
        "voxukraine.org",
        High,
        LeastBiased,
        "uk",
        "VoxUkraine; VoxCheck (IFCN signatory)",
    ),
    // Polish.
    (
        "polskieradio.pl",
        High,
        LeastBiased,
        "pl",
        "Polskie Radio, public broadcaster (EBU member)",
    ),
    (
        "tvp.info",
        High,
        LeastBiased,
        "pl",
        "TVP, public broadcaster (EBU member)",
    ),
    ("pap.pl", High, LeastBiased, "pl", "PAP, Polish national news agency"),
    ("demagog.org.pl", High, LeastBiased, "pl", "Demagog (IFCN signatory)"),
    ("fakenews.pl", High, LeastBiased, "pl", "FakeNews.pl (IFCN signatory)"),
    // Turkish.
    // TRT (an EBU member) and Anadolu Agency are left out: state-controlled, without editorial
    // independence.
    ("teyit.org", High, LeastBiased, "tr", "Teyit (IFCN signatory)"),
    (
        "dogrulukpayi.com",
        High,
        LeastBiased,
        "tr",
        "Doğruluk Payı (IFCN signatory)",
    ),
    // Indonesian.
    (
        "antaranews.com",
        High,
        LeastBiased,
        "id",
        "ANTARA, Indonesia's national news agency",
    ),
    (
        "rri.co.id",
        High,
        LeastBiased,
        "id",
        "RRI, Indonesia's public radio broadcaster",
    ),
    (
        "tempo.co",
        High,
        LeastBiased,
        "id",
        "Tempo; Cek Fakta Tempo (IFCN signatory)",
    ),
    (
        "turnbackhoax.id",
        High,
        LeastBiased,
        "id",
        "TurnBackHoax, Mafindo (IFCN signatory)",
    ),
    // Catalan.
    (
        "ccma.cat",
        High,
        LeastBiased,
        "ca",
        "CCMA, Catalonia's public broadcaster",
    ),
    (
        "3cat.cat",
        High,
        LeastBiased,
        "ca",
        "3Cat, CCMA's public broadcasting brand",
    ),
    ("acn.cat", High, LeastBiased, "ca", "ACN, Catalan public news agency"),
    (
        "apuntmedia.es",
        High,
        LeastBiased,
        "ca",
        "À Punt, Valencian public broadcaster",
    ),
    ("verificat.cat", High, LeastBiased, "ca", "Verificat (IFCN signatory)"),
    // Swedish.
    (
        "svt.se",
        High,
        LeastBiased,
        "sv",
        "SVT, Sveriges Television (EBU member)",
    ),
    (
        "sverigesradio.se",
        High,
        LeastBiased,
        "sv",
        "Sveriges Radio, public broadcaster (EBU member)",
    ),
    (
        "tt.se",
        High,
        LeastBiased,
        "sv",
        "TT Nyhetsbyrån, Swedish national news agency",
    ),
    (
        "svenska.yle.fi",
        High,
        LeastBiased,
        "sv",
        "Yle in Swedish, Finland's public broadcaster (EBU member)",
    ),
    (
        "kallkritikbyran.se",
        High,
        LeastBiased,
        "sv",
        "Källkritikbyrån (IFCN signatory)",
    ),
];
