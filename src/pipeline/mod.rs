//! The answer pipeline: from a resolved post to a [`Draft`]. Two modes: [`muse`], the
//! retrieval pipeline (the default), and [`baseline`], Muse's "without retrieval" reply kept
//! for comparison. Both produce the same `Draft`; Muse's carries its evidence URLs.

pub mod baseline;
pub mod debate;
pub mod muse;
pub mod parse;
pub mod verdict;
pub mod verify;

use std::sync::Arc;

use crate::config::PipelineMode;
use crate::llm::{LlmClient, LlmError};
use crate::model::{Draft, Post, Retrieval, Usage};
use crate::prompts::{PromptError, Prompts};
use crate::retry::Transient;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error("relevance: {0}")]
    Relevance(String),
    /// Every search, or every page fetch, failed for reasons outside the post (network, 5xx,
    /// 429, a bad key): not a verdict, the job is tried again later.
    #[error("outage: {0}")]
    Outage(String),
}

impl PipelineError {
    pub fn is_transient(&self) -> bool {
        match self {
            PipelineError::Llm(e) => e.is_transient(),
            PipelineError::Outage(_) => true,
            PipelineError::Prompt(_) | PipelineError::Relevance(_) => false,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            PipelineError::Llm(_) => "llm",
            PipelineError::Prompt(_) => "prompt",
            PipelineError::Relevance(_) => "relevance",
            PipelineError::Outage(_) => "outage",
        }
    }
}

#[derive(Clone)]
pub struct Pipeline {
    pub mode: PipelineMode,
    pub llm: LlmClient,
    pub prompts: Arc<Prompts>,
    /// Present when `mode` is `Muse`.
    pub muse: Option<Arc<muse::Muse>>,
    pub verify: crate::config::VerifyConfig,
}

impl Pipeline {
    /// The same pipeline (clients, models and caches shared) reading only what was published
    /// before `before` — `musebot eval` gives each post its own moment; `None` keeps the
    /// configured one.
    pub fn published_before(&self, before: Option<chrono::DateTime<chrono::Utc>>) -> Pipeline {
        let mut p = self.clone();
        if let (Some(b), Some(m)) = (before, &self.muse) {
            let mut muse = (**m).clone();
            muse.before = Some(b);
            p.muse = Some(Arc::new(muse));
        }
        p
    }

    /// The same pipeline whose claim memory reads every account's kept answers (`stores`),
    /// when it has one.
    pub fn remembering(&self, stores: Vec<crate::store::Store>) -> Pipeline {
        let mut p = self.clone();
        if let Some(m) = &self.muse {
            if m.memory.is_some() {
                let mut muse = (**m).clone();
                muse.memory = Some(muse::recall::Memory { stores });
                p.muse = Some(Arc::new(muse));
            }
        }
        p
    }

    /// Drafts a reply; `retrieval` holds (and receives) the finished steps, `checkpoint` is
    /// called after each so they survive a crash.
    pub async fn draft(
        &self,
        post: &Post,
        retrieval: &mut Retrieval,
        checkpoint: &mut (dyn FnMut(&Retrieval) + Send),
    ) -> Result<(Draft, Usage), PipelineError> {
        match (self.mode, &self.muse) {
            (PipelineMode::Baseline, _) => baseline::draft(&self.llm, &self.prompts, post).await,
            (PipelineMode::Muse, Some(m)) => m.draft(post, retrieval, checkpoint).await,
            (PipelineMode::Muse, None) => Err(PipelineError::Relevance("the muse pipeline was not set up".into())),
        }
    }

    /// A watched post's draft: the fact-check corpus's deciding reviews only (no search, no
    /// LLM call); without a corpus (the baseline), nothing found. `only`: the one review that
    /// may decide; `watched`: the review the watch decided is the post's claim.
    pub async fn draft_known(
        &self,
        post: &Post,
        retrieval: &mut Retrieval,
        only: Option<&str>,
        watched: Option<&str>,
    ) -> Result<(Draft, Usage), PipelineError> {
        match &self.muse {
            Some(m) => muse::known::draft_known(m, post, retrieval, only, watched).await,
            None => Err(PipelineError::Relevance(
                "the watch needs the muse pipeline's fact-check corpus".into(),
            )),
        }
    }
}

/// Builds the configured pipeline (loads ratings files and the embedding model for `muse`).
/// `before` overrides `search.before`.
/// The evidence index for searching, when `[index]` follows feeds and one was made (by the
/// daemon's refresher or `musebot index refresh`); one that cannot be read is left out with
/// a warning (the daemon's refresher has already refused to start on it).
fn evidence_index(config: &crate::config::Config) -> Option<Arc<crate::index::EvidenceIndex>> {
    if !config.index.enabled() {
        return None;
    }
    let dir = config.index.dir(&config.daemon.state_dir);
    match crate::index::EvidenceIndex::open_existing(&dir) {
        Ok(Some(index)) => Some(Arc::new(index)),
        Ok(None) => {
            tracing::info!(dir = %dir.display(), "no evidence index yet (`musebot index refresh` makes one)");
            None
        }
        Err(e) => {
            tracing::warn!(error = %e, "evidence index left out");
            None
        }
    }
}

/// The fact-check corpus's matcher (`[claims]`), when matching is on (the corpus is made empty
/// when there is none); a corpus that cannot be opened is logged and left out (the post is
/// checked without it).
fn matcher(
    config: &crate::config::Config,
    embedder: &Arc<crate::relevance::Embedder>,
    multilingual: &Option<Arc<crate::relevance::Embedder>>,
    models: &crate::claims::Models,
) -> Option<Arc<crate::claims::matcher::Matcher>> {
    if !config.claims.enabled {
        return None;
    }
    let dir = config.claims.dir(&config.daemon.state_dir);
    // Made when absent: the feeds' reviews and imports fill it while the daemon runs.
    match crate::claims::matcher::Matcher::open_or_create(
        &dir,
        Some(embedder.clone()),
        multilingual.clone(),
        models,
        &config.claims,
    ) {
        Ok(m) => {
            match m.warm() {
                Ok(n) => {
                    tracing::info!(dir = %dir.display(), reviews = m.corpus().len(), vectors = n, "fact-check corpus open")
                }
                Err(e) => tracing::warn!(error = %e, "fact-check corpus: vectors not loaded yet"),
            }
            Some(Arc::new(m))
        }
        Err(e) => {
            tracing::warn!(error = %e, "fact-check corpus left out");
            None
        }
    }
}

pub fn build(
    config: &crate::config::Config,
    store: Option<crate::store::Store>,
    metrics: Option<crate::metrics::SharedMetrics>,
    before: Option<chrono::DateTime<chrono::Utc>>,
) -> anyhow::Result<Pipeline> {
    let llm_key = crate::secret::resolve("llm.api_key", &config.llm.api_key_env, &config.llm.api_key_file, false)?;
    let llm = LlmClient::new(&config.llm, llm_key)?;
    let prompts = Arc::new(Prompts::load(&config.daemon.prompts_dir)?);
    crate::words::init(&config.daemon.prompts_dir)?;
    let muse = match config.daemon.pipeline {
        PipelineMode::Baseline => None,
        PipelineMode::Muse => {
            let before = match before {
                Some(b) => Some(b),
                None if config.search.before.is_empty() => None,
                None => Some(chrono::DateTime::parse_from_rfc3339(&config.search.before)?.with_timezone(&chrono::Utc)),
            };
            let (embedder, multilingual, models) =
                crate::claims::load_models(&config.relevance).map_err(anyhow::Error::from)?;
            Some(Arc::new(muse::Muse {
                llm: llm.clone(),
                prompts: prompts.clone(),
                searcher: Arc::new(
                    crate::search::Searcher::new(&config.search, store.clone())?
                        .with_metrics(metrics)
                        .with_index(evidence_index(config)),
                ),
                fetcher: crate::fetch::Fetcher::new(&config.fetch)
                    .map_err(anyhow::Error::msg)?
                    .with_blocked_domains(&config.moderation.blocked_domains),
                credibility: Arc::new(crate::credibility::load::build(&config.credibility)?),
                embedder: embedder.clone(),
                multilingual: multilingual.clone(),
                relevance: config.relevance.clone(),
                before,
                images: images(config, &llm, store.clone())?,
                reverse: {
                    let r = crate::search::reverse::ReverseSearcher::new(&config.search, store.clone())?;
                    (!r.is_empty()).then(|| Arc::new(r))
                },
                factcheck: crate::search::factcheck::FactChecker::new(&config.factcheck, &config.search)?.map(Arc::new),
                context_debate: (config.verify.mode != crate::config::VerifyMode::Off)
                    .then_some((config.verify.agents, config.verify.rounds)),
                blocked_domains: config.moderation.blocked_domains.clone(),
                matcher: matcher(config, &embedder, &multilingual, &models),
                claims: config.claims.clone(),
                memory: (config.living.enabled && config.living.memory)
                    .then(|| store.clone().map(|store| muse::recall::Memory { stores: vec![store] }))
                    .flatten(),
                stance_opinion: config.verify.stance,
            }))
        }
    };
    Ok(Pipeline {
        mode: config.daemon.pipeline,
        llm,
        prompts,
        muse,
        verify: config.verify.clone(),
    })
}

/// What the describe step needs (`None` when `images.enabled` is off): the fetcher, the caps,
/// tesseract, and the vision model — `[vision]`, each empty key taken from `[llm]`.
fn images(
    config: &crate::config::Config,
    llm: &LlmClient,
    store: Option<crate::store::Store>,
) -> anyhow::Result<Option<Arc<muse::describe::Images>>> {
    let i = &config.images;
    if !i.enabled {
        return Ok(None);
    }
    let v = &config.vision;
    let vision = if !v.enabled {
        None
    } else if v.base_url.is_empty() && v.model.is_empty() && v.api_key_env.is_empty() && v.api_key_file.is_empty() {
        Some(llm.clone())
    } else {
        let mut c = config.llm.clone();
        if !v.base_url.is_empty() {
            c.base_url = v.base_url.clone();
        }
        if !v.model.is_empty() {
            c.model = v.model.clone();
        }
        let (env, file) = if v.api_key_env.is_empty() && v.api_key_file.is_empty() {
            (&config.llm.api_key_env, &config.llm.api_key_file)
        } else {
            (&v.api_key_env, &v.api_key_file)
        };
        let key = crate::secret::resolve("vision.api_key", env, file, false)?;
        Some(LlmClient::new(&c, key)?)
    };
    let ocr = (!i.ocr.is_empty()).then(|| crate::image::ocr::Ocr {
        binary: i.ocr.clone(),
        timeout: std::time::Duration::from_secs(i.ocr_timeout_secs),
        languages: i.ocr_languages.clone(),
    });
    let fetch = crate::fetch::FetchConfig {
        max_body_bytes: i.max_bytes,
        ..config.fetch.clone()
    };
    Ok(Some(Arc::new(muse::describe::Images {
        fetcher: crate::fetch::Fetcher::new(&fetch)
            .map_err(anyhow::Error::msg)?
            .with_blocked_domains(&config.moderation.blocked_domains),
        limits: crate::image::ImageLimits {
            max_bytes: i.max_bytes,
            max_pixels: i.max_pixels,
        },
        max_images: i.max_images,
        ocr,
        vision,
        store,
        local_files: i.local_files,
        embedder: if config.relevance.image_model.is_empty() {
            None
        } else {
            Some(Arc::new(
                crate::image::embed::ImageEmbedder::load(
                    std::path::Path::new(&config.relevance.onnxruntime),
                    std::path::Path::new(&config.relevance.image_model),
                    config.relevance.image_size,
                )
                .map_err(anyhow::Error::msg)?,
            ))
        },
        image_threshold: config.relevance.image_threshold,
    })))
}
