//! The Muse retrieval pipeline (seed 000, Methods): queries → search → credibility → fetch +
//! extract → relevance → evidence (verbatim-checked quotes) → reply. Each step's output is
//! stored in [`Retrieval`] and checkpointed, so a restart resumes after the last finished step
//! without repeating its LLM calls.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt};
use minijinja::context;
use serde::{Deserialize, Serialize};

use super::{parse, PipelineError, Usage};
use crate::credibility::{Credibility, Tier};
use crate::extract::{self, Decision};
use crate::fetch::Fetcher;
use crate::job::{Draft, Outcome, Post};
use crate::llm::{ChatMessage, LlmClient};
use crate::prompts::Prompts;
use crate::relevance::{self, Embedder, RelevanceConfig};
use crate::search::Searcher;

/// Queries for a text-only post (Muse: 3; 5 once image descriptions exist).
pub const TEXT_QUERIES: usize = 3;
/// Links kept per priority tier per query (Muse).
pub const PER_TIER_PER_QUERY: usize = 10;
/// Pages fetched at once.
pub const FETCH_PARALLEL: usize = 4;
/// Pages the evidence LLM reads in one call.
pub const EVIDENCE_PAGES: usize = 2;
/// Refuting quotes, and context quotes, kept per page (Muse).
pub const QUOTES_PER_PAGE: usize = 2;
/// Evidence extraction stops once this many pages refute the post (Muse).
pub const ENOUGH_REFUTING_PAGES: usize = 2;
/// Word budget of the reply.
pub const REPLY_WORDS: u32 = 120;

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
    /// Enough relevant pages were found before this one's turn; it was not fetched.
    NotRead,
    /// Relevant, but the last wave brought more than `relevance.max_pages` and it ranked lower.
    Surplus,
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

/// Every step's output, persisted with the job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Retrieval {
    pub steps: Vec<StepTrace>,
    pub queries: Option<Vec<String>>,
    pub candidates: Option<Vec<Candidate>>,
    pub pages: Option<Vec<KeptPage>>,
    pub evidence: Option<Vec<Evidence>>,
    pub dropped: Vec<Dropped>,
    pub unverified_quotes: usize,
}

pub struct Muse {
    pub llm: LlmClient,
    pub prompts: Arc<Prompts>,
    pub searcher: Arc<Searcher>,
    pub fetcher: Fetcher,
    pub credibility: Arc<Credibility>,
    pub embedder: Arc<Embedder>,
    pub relevance: RelevanceConfig,
    /// Only what was published before this moment counts (the paper's fair-comparison setting).
    pub before: Option<DateTime<Utc>>,
}

impl Muse {
    /// Runs the remaining steps; `checkpoint` is called after each finished one.
    pub async fn draft(
        &self,
        post: &Post,
        r: &mut Retrieval,
        checkpoint: &mut (dyn FnMut(&Retrieval) + Send),
    ) -> Result<(Draft, Usage), PipelineError> {
        let before = self.before;
        let mut t = Instant::now();
        if r.queries.is_none() {
            let (queries, usage) = self.queries(post).await?;
            r.step("queries", &mut t, usage);
            r.queries = Some(queries);
            checkpoint(r);
        }
        let queries = r.queries.clone().unwrap_or_default();
        if queries.is_empty() {
            let text = self.prompts.render("notice_nothing_to_check.j2", context! {})?;
            return Ok((
                Draft {
                    outcome: Outcome::NothingToCheck,
                    text,
                    urls: Vec::new(),
                },
                r.usage(),
            ));
        }
        if r.candidates.is_none() {
            let candidates = self.search(&queries, before, &mut r.dropped).await;
            r.step("search", &mut t, Usage::default());
            r.candidates = Some(candidates);
            checkpoint(r);
        }
        if r.pages.is_none() {
            let candidates = r.candidates.clone().unwrap_or_default();
            let pages = self.read_pages(post, candidates, before, &mut r.dropped).await?;
            r.step("pages", &mut t, Usage::default());
            r.pages = Some(pages);
            checkpoint(r);
        }
        if r.evidence.is_none() {
            let pages = r.pages.clone().unwrap_or_default();
            let (evidence, usage) = self.evidence(post, &pages, &mut r.dropped).await?;
            r.step("evidence", &mut t, usage);
            r.unverified_quotes = evidence.iter().map(|e| e.unverified).sum();
            r.evidence = Some(
                evidence
                    .into_iter()
                    .filter(|e| !e.refute.is_empty() || !e.context.is_empty())
                    .collect(),
            );
            checkpoint(r);
        }
        let evidence = r.evidence.clone().unwrap_or_default();
        let (draft, usage) = self.reply(post, &evidence).await?;
        r.step("reply", &mut t, usage);
        Ok((draft, r.usage()))
    }

    async fn queries(&self, post: &Post) -> Result<(Vec<String>, Usage), PipelineError> {
        let system = self
            .prompts
            .render("queries.system.j2", context! { n => TEXT_QUERIES })?;
        let user = self.prompts.render("queries.user.j2", post_context(post))?;
        let schema = serde_json::json!({"type": "object", "properties": {"queries": {"type": "array", "items": {"type": "string"}, "maxItems": TEXT_QUERIES}}, "required": ["queries"]});
        let c = self
            .llm
            .chat_json(
                &[ChatMessage::system(system), ChatMessage::user(user)],
                "queries",
                &schema,
            )
            .await?;
        let queries = parse::queries(&c.text, TEXT_QUERIES);
        tracing::info!(?queries, "queries generated");
        Ok((
            queries,
            Usage {
                prompt_tokens: c.prompt_tokens,
                completion_tokens: c.completion_tokens,
            },
        ))
    }

    /// Searches every query; keeps credible, new links, at most [`PER_TIER_PER_QUERY`] per tier.
    async fn search(
        &self,
        queries: &[String],
        before: Option<DateTime<Utc>>,
        dropped: &mut Vec<Dropped>,
    ) -> Vec<Candidate> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for query in queries {
            let hits = match self.searcher.search(query, before).await {
                Ok(h) => h,
                Err(e) => {
                    tracing::warn!(query, error = %e, "search failed");
                    continue;
                }
            };
            let mut per_tier = [0usize; 3];
            for hit in hits {
                let key = hit
                    .url
                    .split('#')
                    .next()
                    .unwrap_or(&hit.url)
                    .trim_end_matches('/')
                    .to_string();
                let verdict = self.credibility.verdict(&hit.url);
                let Some(tier) = verdict.tier else {
                    dropped.push(Dropped {
                        url: hit.url,
                        reason: DropReason::LowCredibility,
                    });
                    continue;
                };
                if !seen.insert(key) {
                    continue;
                }
                let slot = &mut per_tier[tier as usize];
                if *slot >= PER_TIER_PER_QUERY {
                    dropped.push(Dropped {
                        url: hit.url,
                        reason: DropReason::TierFull,
                    });
                    continue;
                }
                *slot += 1;
                out.push(Candidate {
                    url: hit.url,
                    title: hit.title,
                    domain: verdict.domain,
                    tier,
                    query: query.clone(),
                });
            }
        }
        out
    }

    /// Reads candidates tier first (search order within a tier) in waves, until
    /// `relevance.max_pages` pages pass the relevance threshold; the rest are not fetched.
    /// Extraction and embedding run on blocking threads. Kept pages: tier, then relevance.
    async fn read_pages(
        &self,
        post: &Post,
        mut candidates: Vec<Candidate>,
        before: Option<DateTime<Utc>>,
        dropped: &mut Vec<Dropped>,
    ) -> Result<Vec<KeptPage>, PipelineError> {
        candidates.sort_by_key(|c| c.tier);
        let post_text = strip_urls(&post.text);
        let max_pages = self.relevance.max_pages.max(1);
        let mut post_vec: Option<Vec<f32>> = None;
        let mut kept = Vec::new();
        let mut rest = candidates.into_iter();
        loop {
            let wave: Vec<Candidate> = rest
                .by_ref()
                .take((max_pages.saturating_sub(kept.len())).max(FETCH_PARALLEL))
                .collect();
            if wave.is_empty() {
                break;
            }
            let readable = match &post_vec {
                Some(_) => self.fetch_wave(wave, before, dropped).await,
                None => {
                    // The post is embedded while the first wave downloads.
                    let (vector, readable) = tokio::join!(
                        self.embed(vec![post_text.clone()]),
                        self.fetch_wave(wave, before, dropped)
                    );
                    post_vec = vector?.pop();
                    readable
                }
            };
            let post_vec = post_vec
                .as_deref()
                .ok_or_else(|| PipelineError::Relevance("no embedding for the post".into()))?;
            kept.extend(self.score_wave(&post_text, post_vec, readable, dropped).await?);
            if kept.len() >= max_pages {
                dropped.extend(rest.by_ref().map(|c| Dropped {
                    url: c.url,
                    reason: DropReason::NotRead,
                }));
                break;
            }
        }
        kept.sort_by(|a, b| a.tier.cmp(&b.tier).then(b.relevance.total_cmp(&a.relevance)));
        // The last wave may bring more than needed: the evidence step reads the best max_pages.
        for extra in kept.split_off(max_pages.min(kept.len())) {
            dropped.push(Dropped {
                url: extra.url,
                reason: DropReason::Surplus,
            });
        }
        Ok(kept)
    }

    /// Fetches and extracts one wave of candidates, [`FETCH_PARALLEL`] at a time.
    async fn fetch_wave(
        &self,
        wave: Vec<Candidate>,
        before: Option<DateTime<Utc>>,
        dropped: &mut Vec<Dropped>,
    ) -> Vec<(Candidate, extract::Page)> {
        let fetched: Vec<(Candidate, Result<extract::Page, DropReason>)> = stream::iter(wave)
            .map(|c| async move {
                let page = match self.fetcher.fetch(&c.url).await {
                    Ok(f) => {
                        let url = f.url.to_string();
                        match tokio::task::spawn_blocking(move || extract::extract(&f.html, Some(&url))).await {
                            Ok(page) => match extract::decide(&page, before) {
                                Decision::Keep => Ok(page),
                                Decision::TooShort { .. } => Err(DropReason::TooShort),
                                Decision::TooNew { .. } => Err(DropReason::TooNew),
                            },
                            // A panic inside the extractor costs this page only.
                            Err(e) => {
                                tracing::warn!(url = %c.url, error = %e, "the extractor failed; page skipped");
                                Err(DropReason::Unreadable(e.to_string()))
                            }
                        }
                    }
                    Err(e) if e.reason() == "blocked" => Err(DropReason::Blocked(e.to_string())),
                    Err(e) => Err(DropReason::Unreachable(e.to_string())),
                };
                (c, page)
            })
            .buffered(FETCH_PARALLEL)
            .collect()
            .await;
        let mut readable = Vec::new();
        for (c, page) in fetched {
            match page {
                Ok(p) => readable.push((c, p)),
                Err(reason) => dropped.push(Dropped { url: c.url, reason }),
            }
        }
        readable
    }

    /// Scores pages by their best passage among those the lexical prefilter picks; keeps those
    /// at or above the threshold with their most relevant passages, in page order.
    async fn score_wave(
        &self,
        post_text: &str,
        post_vec: &[f32],
        readable: Vec<(Candidate, extract::Page)>,
        dropped: &mut Vec<Dropped>,
    ) -> Result<Vec<KeptPage>, PipelineError> {
        let cfg = &self.relevance;
        let per_page: Vec<Vec<String>> = readable
            .iter()
            .map(|(_, p)| {
                let all = relevance::passages(&p.text, cfg.passage_words);
                let top = relevance::lexical_top(post_text, &all, cfg.prefilter);
                top.into_iter().map(|i| all[i].clone()).collect()
            })
            .collect();
        let vectors = self.embed(per_page.iter().flatten().cloned().collect()).await?;
        let mut vectors = vectors.iter();
        let mut kept = Vec::new();
        for ((c, page), passages) in readable.into_iter().zip(per_page) {
            let mut scored: Vec<(usize, f32)> = (0..passages.len())
                .map(|i| {
                    (
                        i,
                        relevance::cosine(post_vec, vectors.next().expect("one vector per passage")),
                    )
                })
                .collect();
            let best = scored.iter().map(|s| s.1).fold(f32::MIN, f32::max);
            if best < cfg.threshold {
                tracing::debug!(url = %c.url, best, "low relevance");
                dropped.push(Dropped {
                    url: c.url,
                    reason: DropReason::LowRelevance,
                });
                continue;
            }
            scored.sort_by(|a, b| b.1.total_cmp(&a.1));
            let mut top: Vec<usize> = scored.iter().take(cfg.max_passages).map(|s| s.0).collect();
            top.sort_unstable();
            kept.push(KeptPage {
                url: c.url,
                title: page.title,
                domain: c.domain,
                tier: c.tier,
                published: page.date,
                relevance: best,
                passages: top.into_iter().map(|i| passages[i].clone()).collect(),
                words: page.word_count,
            });
        }
        Ok(kept)
    }

    /// Embeds on a blocking thread (the model is CPU-bound).
    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, PipelineError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let embedder = self.embedder.clone();
        tokio::task::spawn_blocking(move || embedder.embed(&texts))
            .await
            .map_err(|e| PipelineError::Relevance(e.to_string()))?
            .map_err(|e| PipelineError::Relevance(e.to_string()))
    }

    /// Quotes from pages in order, [`EVIDENCE_PAGES`] pages per LLM call, until enough refute.
    /// One call reads a wave of pages: the post and the instructions are sent once, not once per
    /// page. Each quote is credited to the page whose passages hold it verbatim; quotes found in
    /// none are dropped and counted on the wave's first page; at most two of each kind per page.
    async fn evidence(
        &self,
        post: &Post,
        pages: &[KeptPage],
        dropped: &mut Vec<Dropped>,
    ) -> Result<(Vec<Evidence>, Usage), PipelineError> {
        let mut usage = Usage::default();
        let mut out = Vec::new();
        let mut refuting = 0;
        for (wave_no, wave) in pages.chunks(EVIDENCE_PAGES).enumerate() {
            if refuting >= ENOUGH_REFUTING_PAGES {
                for p in &pages[wave_no * EVIDENCE_PAGES..] {
                    dropped.push(Dropped {
                        url: p.url.clone(),
                        reason: DropReason::NotReached,
                    });
                }
                break;
            }
            let max_each = QUOTES_PER_PAGE * wave.len();
            let system = self
                .prompts
                .render("evidence.system.j2", context! { n => wave.len() })?;
            let schema = serde_json::json!({"type": "object", "properties": {
                "refute": {"type": "array", "items": {"type": "string"}, "maxItems": max_each},
                "context": {"type": "array", "items": {"type": "string"}, "maxItems": max_each}}, "required": ["refute", "context"]});
            let mut ctx = post_context(post);
            let listed: Vec<serde_json::Value> = wave
                .iter()
                .map(|page| {
                    serde_json::json!({
                        "published": page.published.map(|d| d.to_rfc3339()).unwrap_or_else(|| "unknown".into()),
                        "passages": page.passages,
                    })
                })
                .collect();
            ctx.insert("pages".into(), serde_json::json!(listed));
            let user = self.prompts.render("evidence.user.j2", &ctx)?;
            let c = self
                .llm
                .chat_json(
                    &[ChatMessage::system(system), ChatMessage::user(user)],
                    "evidence",
                    &schema,
                )
                .await?;
            usage.prompt_tokens += c.prompt_tokens;
            usage.completion_tokens += c.completion_tokens;
            let (refute, context) = parse::evidence(&c.text, max_each);
            let sources: Vec<String> = wave.iter().map(|p| parse::normalize(&p.passages.join("\n"))).collect();
            let (found, unverified) = attribute(refute, context, &sources);
            if unverified > 0 {
                tracing::info!(url = %wave[0].url, unverified, "dropped quotes not found verbatim in the pages");
            }
            for (i, (page, (refute, context))) in wave.iter().zip(found).enumerate() {
                if refute.is_empty() && context.is_empty() {
                    dropped.push(Dropped {
                        url: page.url.clone(),
                        reason: DropReason::NoEvidence,
                    });
                }
                refuting += usize::from(!refute.is_empty());
                out.push(Evidence {
                    url: page.url.clone(),
                    tier: page.tier,
                    published: page.published,
                    relevance: page.relevance,
                    refute,
                    context,
                    unverified: if i == 0 { unverified } else { 0 },
                });
            }
        }
        Ok((out, usage))
    }

    /// The reply from the evidence; must cite at least one evidence URL (one regeneration),
    /// else the honest insufficient-evidence reply.
    async fn reply(&self, post: &Post, evidence: &[Evidence]) -> Result<(Draft, Usage), PipelineError> {
        let insufficient = || -> Result<(Draft, Usage), PipelineError> {
            let text = self.prompts.render("reply_insufficient.j2", context! {})?;
            Ok((
                Draft {
                    outcome: Outcome::Insufficient,
                    text,
                    urls: Vec::new(),
                },
                Usage::default(),
            ))
        };
        if evidence.is_empty() {
            return insufficient();
        }
        let mut facts: Vec<(&Evidence, &String)> = evidence
            .iter()
            .flat_map(|e| e.refute.iter().chain(e.context.iter()).map(move |q| (e, q)))
            .collect();
        // Tier, then relevance, then closeness to the post's date.
        let distance = |e: &Evidence| {
            e.published
                .map_or(i64::MAX, |d| (d - post.created_at).num_seconds().abs())
        };
        facts.sort_by(|(a, _), (b, _)| {
            a.tier
                .cmp(&b.tier)
                .then(b.relevance.total_cmp(&a.relevance))
                .then(distance(a).cmp(&distance(b)))
        });
        let facts_ctx: Vec<serde_json::Value> = facts
            .iter()
            .map(|(e, q)| serde_json::json!({"quote": q, "url": e.url, "published": e.published.map(|d| d.format("%Y-%m-%d").to_string()).unwrap_or_else(|| "unknown".into())}))
            .collect();
        let urls: Vec<String> = evidence.iter().map(|e| e.url.clone()).collect();
        let system = self
            .prompts
            .render("reply_muse.system.j2", context! { max_words => REPLY_WORDS })?;
        let mut usage = Usage::default();
        for retry in [false, true] {
            let mut ctx = post_context(post);
            ctx.insert("facts".into(), serde_json::json!(facts_ctx));
            ctx.insert("retry".into(), serde_json::json!(retry));
            let user = self.prompts.render("reply_muse.user.j2", &ctx)?;
            let c = self
                .llm
                .chat(&[ChatMessage::system(system.clone()), ChatMessage::user(user)])
                .await?;
            usage.prompt_tokens += c.prompt_tokens;
            usage.completion_tokens += c.completion_tokens;
            let cites = urls.iter().any(|u| c.text.contains(u.as_str()));
            if cites && parse::states_a_verdict(&c.text, &post.text) {
                return Ok((
                    Draft {
                        outcome: Outcome::Reply,
                        text: c.text,
                        urls,
                    },
                    usage,
                ));
            }
            tracing::warn!(
                retry,
                cites,
                "the reply cites no evidence URL, or takes no position on the post"
            );
        }
        let (draft, _) = insufficient()?;
        Ok((draft, usage))
    }
}

impl Retrieval {
    /// Records a finished step's time (since `t`, which is reset) and tokens.
    fn step(&mut self, name: &str, t: &mut Instant, u: Usage) {
        self.steps.push(StepTrace {
            step: name.into(),
            millis: t.elapsed().as_millis() as u64,
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
        });
        *t = Instant::now();
    }

    /// Tokens of every finished step (derived from the step traces).
    fn usage(&self) -> Usage {
        self.steps.iter().fold(Usage::default(), |u, s| Usage {
            prompt_tokens: u.prompt_tokens + s.prompt_tokens,
            completion_tokens: u.completion_tokens + s.completion_tokens,
        })
    }
}

fn post_context(post: &Post) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("author".into(), serde_json::json!(post.author_display_name));
    m.insert("created_at".into(), serde_json::json!(post.created_at.to_rfc3339()));
    m.insert("text".into(), serde_json::json!(post.text));
    m
}

/// The post without URLs (Muse removes URLs and emojis before embedding).
/// Refuting and context quotes credited to one page.
type PageQuotes = (Vec<String>, Vec<String>);

/// Credits each quote to the first page whose (normalised) text holds it verbatim and still has
/// room ([`QUOTES_PER_PAGE`] of each kind per page); returns per page (refute, context) and how
/// many quotes no page holds.
fn attribute(refute: Vec<String>, context: Vec<String>, sources: &[String]) -> (Vec<PageQuotes>, usize) {
    let mut found: Vec<PageQuotes> = vec![(Vec::new(), Vec::new()); sources.len()];
    let mut unverified = 0;
    let quotes = refute
        .into_iter()
        .map(|q| (q, true))
        .chain(context.into_iter().map(|q| (q, false)));
    for (quote, is_refute) in quotes {
        let holders: Vec<usize> = (0..sources.len())
            .filter(|&i| parse::is_verbatim(&quote, &sources[i]))
            .collect();
        if holders.is_empty() {
            unverified += 1;
            continue;
        }
        let room = |i: &usize| {
            let (refute, context) = &found[*i];
            (if is_refute { refute } else { context }).len() < QUOTES_PER_PAGE
        };
        if let Some(i) = holders.into_iter().find(room) {
            let list = if is_refute { &mut found[i].0 } else { &mut found[i].1 };
            list.push(quote.trim().to_string());
        }
    }
    (found, unverified)
}

/// The post's text without links (`scheme://…`, `www.…`, bare `host.tld/path`), which would
/// only add noise to the embedding and the BM25 query. `scripts/calibrate_relevance.py`
/// (`clean`) removes the same.
fn strip_urls(text: &str) -> String {
    let is_link = |w: &str| {
        let lower = w.to_lowercase();
        let bare_host_path = w.split_once('/').is_some_and(|(host, _)| {
            let host = host.trim_start_matches(|c: char| !c.is_alphanumeric());
            host.contains('.')
                && !host.starts_with('.')
                && !host.ends_with('.')
                && host
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_'))
        });
        lower.contains("://") || lower.starts_with("www.") || bare_host_path
    };
    text.split_whitespace()
        .filter(|w| !is_link(w))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_stripped_from_the_post() {
        assert_eq!(
            strip_urls("Look https://t.co/x and www.site.com or twitter.com/elonjet/1 (see news.example/a) 3.5/10 ok"),
            "Look and or (see ok" // as calibrate_relevance.py's clean() gives
        );
    }

    #[test]
    fn quotes_are_credited_to_the_page_that_holds_them() {
        let sources: Vec<String> = [
            "The Apollo samples show the Moon is made of rock. Officials said so in 1970.",
            "A second article: the lunar crust is anorthosite, not cheese, geologists say.",
        ]
        .map(parse::normalize)
        .to_vec();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let (found, unverified) = attribute(
            s(&[
                "the lunar crust is anorthosite, not cheese",
                "The Apollo samples show the Moon is made of rock.",
                "The Moon is made entirely of green cheese, NASA said",
                "Officials said so in 1970.",
                "The Apollo samples show the Moon",
            ]),
            s(&[
                "  geologists say.  ",
                "lunar crust is anorthosite, not cheese, geologists say.",
            ]),
            &sources,
        );
        assert_eq!(unverified, 2, "the fabricated quote and the too-short one: {found:?}");
        // Page 1: two refuting quotes at most (the third is over the cap); page 2: its own.
        assert_eq!(
            found[0].0,
            s(&[
                "The Apollo samples show the Moon is made of rock.",
                "Officials said so in 1970."
            ])
        );
        assert_eq!(found[1].0, s(&["the lunar crust is anorthosite, not cheese"]));
        assert_eq!(
            found[1].1,
            s(&["lunar crust is anorthosite, not cheese, geologists say."])
        );
        assert!(found[0].1.is_empty());
    }
}
