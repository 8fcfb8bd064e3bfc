//! The Muse retrieval pipeline (seed 000, Methods), one room per step:
//! [`describe`] (informative image descriptions) → [`known`] (claim matching against the
//! fact-check corpus) → [`recall`] (claim memory: a kept answer of the same claim lends its
//! evidence) → [`queries`] → [`search_policy`] (search, credibility, tier caps) → [`pages`] (fetch →
//! extract → relevance, read in waves) → [`evidence`] (verbatim-checked quotes) → the stance
//! (what the post says about the deciding fact-checks' claim, [`known::stance`]) → [`reply`].
//! Each step reads the persisted [`Retrieval`] and fills its own field; [`Muse::draft`] is the
//! driver, which checkpoints after every finished step, so a restart resumes after the last
//! one without repeating its LLM calls.

pub mod contest;
pub mod context;
pub mod describe;
pub mod evidence;
pub mod factcheck;
pub mod known;
pub mod live;
pub mod opinion;
pub mod pages;
pub mod queries;
pub mod recall;
pub mod reply;
pub mod search_policy;
pub mod unnamed;
pub mod visual;

use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};

use super::PipelineError;
use crate::credibility::Credibility;
use crate::fetch::Fetcher;
use crate::llm::LlmClient;
use crate::model::{Draft, DropReason, Outcome, Post, Retrieval, Usage};
use crate::prompts::Prompts;
use crate::relevance::{Embedder, RelevanceConfig};
use crate::search::Searcher;

/// What the steps share: the clients and settings, never per-job state (that is the record).
#[derive(Clone)]
pub struct Muse {
    pub llm: LlmClient,
    pub prompts: Arc<Prompts>,
    pub searcher: Arc<Searcher>,
    pub fetcher: Fetcher,
    pub credibility: Arc<Credibility>,
    pub embedder: Arc<Embedder>,
    /// `relevance.multilingual_model`: scores pages for a post not in English.
    pub multilingual: Option<Arc<Embedder>>,
    pub relevance: RelevanceConfig,
    /// Only what was published before this moment counts (the paper's fair-comparison setting).
    pub before: Option<DateTime<Utc>>,
    /// Reading the post's images (`[images]`, `[vision]`); `None` when `images.enabled` is off.
    pub images: Option<Arc<describe::Images>>,
    /// Reverse image search (`search.reverse_backends`); `None`: none configured.
    pub reverse: Option<Arc<crate::search::reverse::ReverseSearcher>>,
    /// Google Fact Check Tools (`[factcheck]`); `None`: no key configured.
    pub factcheck: Option<Arc<crate::search::factcheck::FactChecker>>,
    /// Agents and rounds of the out-of-context debate ([`context`]); `None` when
    /// `verify.mode = "off"`.
    pub context_debate: Option<(usize, usize)>,
    /// `moderation.blocked_domains`: never read, never cited.
    pub blocked_domains: Vec<String>,
    /// The fact-check corpus's matcher (`[claims]`); `None`: no corpus, or matching is off.
    pub matcher: Option<Arc<crate::claims::matcher::Matcher>>,
    /// `[claims]`: the same-claim thresholds (also for reviews read from pages).
    pub claims: crate::claims::ClaimsConfig,
    /// Claim memory (`living.memory`): kept answers a post with the same claim is answered
    /// from; `None`: off.
    pub memory: Option<recall::Memory>,
    /// `verify.stance`: the LLM's reading of the post's stance as a second opinion
    /// ([`opinion`]).
    pub stance_opinion: bool,
}

impl Muse {
    /// Whether the operator blocked the URL's domain (or a domain above it).
    pub fn blocked(&self, url: &str) -> bool {
        crate::moderation::domain_blocked(&self.blocked_domains, url)
    }

    /// The one rule for what a reply may cite, applied to a search result and again to the URL
    /// its page landed on after redirects: not on a blocked domain, not someone's social post,
    /// a publisher the credibility rules admit: its domain and tier.
    pub fn citable(&self, url: &str) -> Result<(String, crate::model::Tier), DropReason> {
        if self.blocked(url) {
            return Err(DropReason::Blocked("moderation.blocked_domains".into()));
        }
        if crate::credibility::is_social_post(url) {
            return Err(DropReason::SocialPost);
        }
        let verdict = self.credibility.verdict(url);
        match verdict.tier {
            Some(tier) => Ok((verdict.domain, tier)),
            None => Err(DropReason::LowCredibility),
        }
    }
}

/// The steps that fill the record, in order. Closed: a new step is a new variant and a room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Describe,
    /// Claim matching against the fact-check corpus ([`known`]).
    Match,
    /// Claim memory: a kept answer of the same claim lends its evidence ([`recall`]).
    Recall,
    Queries,
    Search,
    Context,
    Pages,
    Evidence,
    /// The post's stance toward the deciding reviews' claim ([`known::stance`]).
    Stance,
}

impl Step {
    pub const ALL: [Step; 9] = [
        Step::Describe,
        Step::Match,
        Step::Recall,
        Step::Queries,
        Step::Search,
        Step::Context,
        Step::Pages,
        Step::Evidence,
        Step::Stance,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Step::Describe => "describe",
            Step::Match => "match",
            Step::Recall => "recall",
            Step::Queries => "queries",
            Step::Search => "search",
            Step::Context => "context",
            Step::Pages => "pages",
            Step::Evidence => "evidence",
            Step::Stance => "stance",
        }
    }

    /// Whether the record already holds this step's output.
    pub fn done(self, r: &Retrieval) -> bool {
        match self {
            Step::Describe => r.images.is_some(),
            Step::Match => r.matches.is_some(),
            Step::Recall => r.recalled.is_some(),
            Step::Queries => r.queries.is_some(),
            Step::Search => r.candidates.is_some(),
            // Nothing to judge (no reverse image search hits) counts as done.
            Step::Context => r.image_context.as_ref().is_none_or(|c| c.finding.is_some()),
            Step::Pages => r.pages.is_some(),
            Step::Evidence => r.evidence.is_some(),
            // Nothing to take a stance toward counts as done.
            Step::Stance => r.stance.is_some() || r.deciding_reviews().is_empty(),
        }
    }
}

impl Muse {
    /// The driver: runs the steps the record lacks, calling `checkpoint` after each finished
    /// one, then writes the reply. A post with no checkable claim (no queries) ends early.
    pub async fn draft(
        &self,
        post: &Post,
        r: &mut Retrieval,
        checkpoint: &mut (dyn FnMut(&Retrieval) + Send),
    ) -> Result<(Draft, Usage), PipelineError> {
        for step in Step::ALL {
            if r.queries.as_ref().is_some_and(Vec::is_empty) {
                let text = crate::words::say(
                    crate::words::language(post.language.as_deref()),
                    "notice_nothing_to_check",
                    (),
                );
                let draft = Draft {
                    outcome: Outcome::NothingToCheck,
                    text,
                    urls: Vec::new(),
                    verdict: None,
                    stance: None,
                };
                return Ok((draft, r.usage()));
            }
            if step.done(r) {
                continue;
            }
            let started = Instant::now();
            // Later steps read the images through their descriptions.
            let seen = describe::with_descriptions(post, r);
            let usage = match step {
                Step::Describe => describe::run(self, post, r).await?,
                Step::Match => known::run(self, &seen, r).await?,
                Step::Recall => recall::run(self, &seen, r).await?,
                Step::Queries => queries::run(self, &seen, r).await?,
                Step::Search => search_policy::run(self, &seen, r).await?,
                Step::Context => context::run(self, &seen, r, checkpoint).await?,
                Step::Pages => pages::run(self, &seen, r).await?,
                Step::Evidence => evidence::run(self, &seen, r).await?,
                // The post's own words, not the bot's descriptions of its pictures.
                Step::Stance => known::stance(self, post, r).await?,
            };
            // A text post's (empty) describe and context steps stay out of the trace.
            let idle = match step {
                Step::Describe => r.images.as_ref().is_none_or(Vec::is_empty),
                Step::Context => r.image_context.is_none(),
                Step::Match => self.matcher.is_none(),
                Step::Recall => r.recalled.as_ref().is_none_or(|x| x.from.is_none()),
                _ => false,
            };
            if !idle {
                r.record_step(step.as_str(), started.elapsed().as_millis() as u64, usage);
            }
            checkpoint(r);
        }
        let started = Instant::now();
        let evidence = r.all_evidence();
        let seen = describe::with_descriptions(post, r);
        let agents = self.context_debate.map_or(0, |(a, _)| a);
        let image_context = context::for_reply(r, agents);
        let unnamed = unnamed::Unnamed::of(r);
        let (mut draft, usage) = reply::run(self, &seen, &evidence, image_context, &unnamed).await?;
        known::answer(&mut draft, &r.deciding_reviews(), post, r.stance.as_ref());
        r.record_step("reply", started.elapsed().as_millis() as u64, usage);
        Ok((draft, r.usage()))
    }
}

/// What every prompt says about the post: author, time, text, the links' full URLs, the
/// images' alt text and the quoted post (all untrusted, rendered inside the post block).
pub(crate) fn post_context(post: &Post) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("author".into(), serde_json::json!(post.author_display_name));
    m.insert("created_at".into(), serde_json::json!(post.created_at.to_rfc3339()));
    m.insert("text".into(), serde_json::json!(post.text));
    m.extend(post_extras(post));
    m
}

/// The parts of a post beyond its text that prompts show: `links`, `images` (alt text),
/// `quote` ({author, text}).
pub(crate) fn post_extras(post: &Post) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("links".into(), serde_json::json!(post.links));
    let images: Vec<&str> = post
        .media
        .iter()
        .filter(|x| x.kind.is_picture())
        .map(|x| x.alt.as_deref().unwrap_or("(no description)"))
        .collect();
    m.insert("images".into(), serde_json::json!(images));
    if let Some(q) = &post.quote {
        let author = if q.author_display_name.is_empty() {
            &q.author
        } else {
            &q.author_display_name
        };
        m.insert("quote".into(), serde_json::json!({ "author": author, "text": q.text }));
    }
    m
}

/// Tokens of one LLM completion.
pub(crate) fn usage_of(c: &crate::llm::Completion) -> Usage {
    Usage {
        prompt_tokens: c.prompt_tokens,
        completion_tokens: c.completion_tokens,
    }
}
