//! The retrieval pipeline's persisted step outputs ([`Retrieval`]): image descriptions,
//! queries, candidate links, kept pages, verified evidence, every dropped link with its reason,
//! and per-step traces.
//! Each step of `pipeline/muse/` reads this record and fills its own field.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::debate::Debate;
use super::usage::Usage;

/// Citation priority, highest first (Muse's three tiers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    High,
    Medium,
    Low,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::High => "high",
            Tier::Medium => "medium",
            Tier::Low => "low",
        }
    }
}

/// Why a link or page was left out. Closed: the trace prints each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    LowCredibility,
    Duplicate,
    TierFull,
    Blocked(String),
    Unreachable(String),
    TooShort,
    TooNew,
    /// The extractor failed on the page (it panicked); the page is skipped.
    Unreadable(String),
    LowRelevance,
    NoEvidence,
    NotReached,
    /// Enough relevant pages were found before this one's turn; it was not read (fetched at
    /// most, in the last wave).
    NotRead,
    /// Relevant, but more than `relevance.max_pages` pages were read and it ranked lower. The
    /// page step no longer reads past the pages it needs; kept so retrievals stored before
    /// still load.
    Surplus,
    /// Someone's post on a social network: never cited, whoever hosts it.
    SocialPost,
    /// The URL redirected to a page that fails the rules (the final URL and why).
    Redirected(String),
}

impl DropReason {
    pub fn as_str(&self) -> &'static str {
        match self {
            DropReason::LowCredibility => "low credibility",
            DropReason::Duplicate => "duplicate",
            DropReason::TierFull => "tier full",
            DropReason::Blocked(_) => "blocked",
            DropReason::Unreachable(_) => "unreachable",
            DropReason::TooShort => "too short",
            DropReason::TooNew => "too new",
            DropReason::LowRelevance => "low relevance",
            DropReason::NoEvidence => "no evidence",
            DropReason::Unreadable(_) => "unreadable",
            DropReason::NotReached => "not needed (enough refuting pages)",
            DropReason::NotRead => "not read (enough relevant pages)",
            DropReason::Surplus => "surplus (more relevant pages than needed)",
            DropReason::SocialPost => "a social post (never cited)",
            DropReason::Redirected(_) => "redirected to a page that is not cited",
        }
    }
}

/// A search result that passed the credibility filter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub url: String,
    pub title: String,
    pub domain: String,
    pub tier: Tier,
    pub query: String,
}

/// A page that passed extraction and relevance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptPage {
    pub url: String,
    pub title: Option<String>,
    pub domain: String,
    pub tier: Tier,
    pub published: Option<DateTime<Utc>>,
    pub relevance: f32,
    /// The most relevant passages, in page order: what the evidence LLM reads.
    pub passages: Vec<String>,
    pub words: usize,
    /// The page's main image is the post's picture (perceptual-hash distance, bits): the page
    /// is relevant whatever its text scores.
    #[serde(default)]
    pub image_match: Option<u32>,
    /// The image model's cosine between the page's main image and the post's picture, when a
    /// model is configured (the page is relevant at `relevance.image_threshold`).
    #[serde(default)]
    pub image_cosine: Option<f32>,
    /// The page's main image (`og:image`), when it announces one.
    #[serde(default)]
    pub main_image: Option<String>,
    /// The professional fact-checks this page is (its `ClaimReview` markup, or the Fact Check
    /// Tools API's record of it).
    #[serde(default)]
    pub claim_reviews: Vec<super::factcheck::ClaimReview>,
}

/// Verified quotes from one page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub url: String,
    pub tier: Tier,
    pub published: Option<DateTime<Utc>>,
    pub relevance: f32,
    pub refute: Vec<String>,
    pub context: Vec<String>,
    /// Quotes the LLM gave that are not verbatim in the page (dropped).
    pub unverified: usize,
}

/// One dropped link or page, for the trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    pub url: String,
    pub reason: DropReason,
}

/// Time and tokens of one finished step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepTrace {
    pub step: String,
    pub millis: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// Every step's output, persisted with the job. A field is `None` until its step finished.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Retrieval {
    pub steps: Vec<StepTrace>,
    /// One per image of the post (step 0, describe); `None` until that step ran.
    #[serde(default)]
    pub images: Option<Vec<ImageDescription>>,
    /// Where the post's picture appeared before and whether the post uses it in that context
    /// (MAD-Sherlock); `None` when reverse image search found nothing.
    #[serde(default)]
    pub image_context: Option<ImageContext>,
    pub queries: Option<Vec<String>>,
    pub candidates: Option<Vec<Candidate>>,
    pub pages: Option<Vec<KeptPage>>,
    pub evidence: Option<Vec<Evidence>>,
    /// What the Fact Check Tools API returned for the queries and pictures (each review's page
    /// is also a search candidate; a page without markup gets its review from here).
    #[serde(default)]
    pub fact_checks: Vec<super::factcheck::ClaimReview>,
    /// What claim matching found in the fact-check corpus (the `match` step); `None`
    /// until that step ran.
    #[serde(default)]
    pub matches: Option<Vec<super::factcheck::ClaimMatch>>,
    /// The claim matcher's vector of the post's claim (the `match` step): what a kept post is
    /// matched by (claim memory, new reviews).
    #[serde(default)]
    pub claim_vector: Option<super::living::ClaimVector>,
    /// Claim memory (the `recall` step): the kept answer whose evidence this one reuses, or
    /// none; `None` until that step ran.
    #[serde(default)]
    pub recalled: Option<super::living::Recalled>,
    /// The post's stance toward the first deciding review's claim (the `stance` step); `None`
    /// until that step ran, and when no review decides.
    #[serde(default)]
    pub stance: Option<super::stance::PostStance>,
    pub dropped: Vec<Dropped>,
    pub unverified_quotes: usize,
    /// A re-check's record: its searches ask the backends again instead of reading the search
    /// cache (it looks for what was published since the first answer).
    #[serde(default)]
    pub fresh: bool,
}

impl Retrieval {
    /// Records a finished step's time and tokens.
    pub fn record_step(&mut self, name: &str, millis: u64, u: Usage) {
        self.steps.push(StepTrace {
            step: name.into(),
            millis,
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
        });
    }

    /// The evidence the reply and its verification read: the pages' quotes, then the pages
    /// where the picture appeared when it was found used out of context.
    pub fn all_evidence(&self) -> Vec<Evidence> {
        let mut all = self.evidence.clone().unwrap_or_default();
        all.extend(self.image_context.iter().flat_map(|c| c.evidence.iter().cloned()));
        all
    }

    /// The fact-checks a reply may name: those of pages that became evidence (so they passed
    /// the citing rule where they landed), one per review URL.
    pub fn cited_reviews(&self) -> Vec<super::factcheck::ClaimReview> {
        let evidence: Vec<String> = self.all_evidence().into_iter().map(|e| e.url).collect();
        let mut out: Vec<super::factcheck::ClaimReview> = Vec::new();
        for page in self.pages.iter().flatten().filter(|p| evidence.contains(&p.url)) {
            // The page's own markup first; the API's record only for a page without one.
            let from_api = self
                .fact_checks
                .iter()
                .filter(|r| page.claim_reviews.is_empty() && r.url == page.url);
            for r in page.claim_reviews.iter().chain(from_api).filter(|r| !r.other_claim) {
                if !out.iter().any(|o| o.url == r.url && o.publisher == r.publisher) {
                    out.push(r.clone());
                }
            }
        }
        out
    }

    /// The professional fact-checks of the post's own claim that the reply rests on: the
    /// corpus's deciding matches (as their live pages' markup gives them), then the evidence
    /// pages' reviews that are the same claim and a fact-checker's (`cited_reviews`), one per
    /// review URL.
    pub fn deciding_reviews(&self) -> Vec<super::factcheck::ClaimReview> {
        let mut out: Vec<super::factcheck::ClaimReview> = Vec::new();
        // A match's live page's review, never the corpus's record of it.
        let matched = self
            .matches
            .iter()
            .flatten()
            .filter_map(super::factcheck::ClaimMatch::deciding)
            .cloned();
        let cited = self
            .cited_reviews()
            .into_iter()
            .filter(|r| r.same_claim && r.fact_checker.is_some());
        for r in matched.chain(cited) {
            if !out.iter().any(|o| o.url == r.url) {
                out.push(r);
            }
        }
        out
    }

    /// Tokens of every finished step (derived from the step traces).
    pub fn usage(&self) -> Usage {
        self.steps.iter().fold(Usage::default(), |u, s| Usage {
            prompt_tokens: u.prompt_tokens + s.prompt_tokens,
            completion_tokens: u.completion_tokens + s.completion_tokens,
        })
    }
}

/// What the bot read of one image of the post: its caption, the people a vision model named,
/// its text (OCR), the author's alt text, and the merged description the prompts see — or why
/// it was not read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImageDescription {
    pub url: String,
    /// SHA-256 of the bytes (what the cache keys by).
    #[serde(default)]
    pub sha256: Option<String>,
    /// Perceptual hash (base64), for near-duplicates.
    #[serde(default)]
    pub phash: Option<String>,
    /// The image-embedding model's vector (`relevance.image_model`), when one is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Vec<f32>>,
    #[serde(default)]
    pub alt: Option<String>,
    #[serde(default)]
    pub caption: Option<String>,
    #[serde(default)]
    pub people: Vec<String>,
    #[serde(default)]
    pub ocr: Option<String>,
    /// The informative description ("A screenshot of …", "A photo of …").
    #[serde(default)]
    pub description: Option<String>,
    /// How the description was made: "vision", "ocr and alt text" (no vision model, or it
    /// failed: `vision_error` says why), "alt text only", or "not read" (`refused` says why).
    #[serde(default)]
    pub made_from: String,
    #[serde(default)]
    pub vision_error: Option<String>,
    #[serde(default)]
    pub refused: Option<String>,
}

/// The out-of-context check of the post's picture: the pages reverse image search found, the
/// agents' debate over them, and its finding.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImageContext {
    /// "title — url" of each page where the picture appeared.
    pub sources: Vec<String>,
    /// Those pages' URLs, in the search's order (the first few are read).
    #[serde(default)]
    pub urls: Vec<String>,
    /// The pages read for the summary, each read or skipped with a reason; `None` until read.
    #[serde(default)]
    pub read: Option<Vec<ContextPage>>,
    /// One summary of what the read pages say the picture shows (where, when, who), in English.
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub debate: Debate,
    /// `None` until the debate ended (or was skipped).
    #[serde(default)]
    pub finding: Option<ContextFinding>,
    /// When the finding is out of context: the read pages as evidence the reply and its
    /// verification may cite (see [`Retrieval::all_evidence`]).
    #[serde(default)]
    pub evidence: Vec<Evidence>,
}

/// One page where the picture appeared, as the context step read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextPage {
    pub url: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub language: Option<String>,
    #[serde(default)]
    pub published: Option<DateTime<Utc>>,
    /// Why it was not read (unreachable, blocked, unreadable, too short); `None`: read.
    #[serde(default)]
    pub skipped: Option<String>,
}

/// What the agents found. Closed: the reply reads each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextFinding {
    /// The post uses the picture as its sources do.
    InContext,
    /// Another event, place, time or person than the sources show.
    OutOfContext,
    /// The agents did not agree.
    Contested,
    /// No debate was run (`verify.mode = "off"`).
    NotChecked,
}
