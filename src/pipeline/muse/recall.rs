//! Claim memory, the `recall` step (after `match`, before queries): a post whose
//! claim is a kept answer's — the same claim by the claim matcher's own decision (the cosine
//! of their vectors at `claims.same_claim`, in the same model's space), answered with a verdict
//! within `living.keep_days` — is answered from that answer's evidence. The kept job's
//! queries, candidates, pages and evidence are copied into this post's record, so the driver
//! skips those steps (no search, no page read, no evidence call): only the reply is written,
//! and the verify stage checks it against the evidence like any draft. A viral claim asked
//! about a hundred times costs one search.
//!
//! The evidence is the kept answer's as it was judged then (citable where it landed, quotes
//! verbatim in its pages); the reply cites only it, through the same composer rules.

use super::Muse;
use crate::model::{Post, Recalled, Retrieval, Usage};
use crate::pipeline::PipelineError;

/// Claim memory's handle on the store (`living.memory`, `living.keep_days`): every account's
/// kept answers, so a claim one account answered is answered from memory by the others.
#[derive(Clone)]
pub struct Memory {
    pub stores: Vec<crate::store::Store>,
}

impl Memory {
    /// The nearest kept claim at or above `threshold` across every account's store: the store
    /// that holds it, its job id and the cosine.
    fn nearest(
        &self,
        v: &crate::model::ClaimVector,
        threshold: f32,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<(crate::store::Store, String, f32)>, crate::store::StoreError> {
        let mut best: Option<(crate::store::Store, String, f32)> = None;
        for store in &self.stores {
            if let Some((id, cosine)) = store.nearest_claim(v, threshold, now, &[])? {
                if best.as_ref().is_none_or(|(_, _, c)| cosine > *c) {
                    best = Some((store.clone(), id, cosine));
                }
            }
        }
        Ok(best)
    }
}

/// The recall step: fills `Retrieval::recalled`, and, when a kept answer is the same claim,
/// the steps that answer already ran.
pub async fn run(m: &Muse, post: &Post, r: &mut Retrieval) -> Result<Usage, PipelineError> {
    r.recalled = Some(Recalled {
        from: None,
        cosine: 0.0,
    });
    let (Some(memory), Some(v)) = (&m.memory, r.claim_vector.clone()) else {
        return Ok(Usage::default());
    };
    if r.queries.is_some() {
        // A record from before this step (resumed mid-way): its own steps stand.
        return Ok(Usage::default());
    }
    let threshold = if v.space == "multilingual" {
        m.claims.same_claim_multilingual
    } else {
        m.claims.same_claim
    };
    let now = chrono::Utc::now();
    let (store, job_id, cosine) = match memory.nearest(&v, threshold, now) {
        Ok(Some(x)) => x,
        Ok(None) => return Ok(Usage::default()),
        Err(e) => {
            tracing::warn!(error = %e, "claim memory could not be read; the post is checked afresh");
            return Ok(Usage::default());
        }
    };
    // The job whose answer the thread states now: the last update's, else the first answer.
    let source = match store.kept(&job_id) {
        Ok(Some(k)) if k.gone.is_none() => k.updates.last().map_or(k.job_id.clone(), |u| u.job_id.clone()),
        _ => return Ok(Usage::default()),
    };
    let kept = match store.job(&source) {
        Ok(Some(job)) => job,
        _ => return Ok(Usage::default()),
    };
    // Not the same post (a second ask about it is "already answered", not a memory).
    if kept.target.as_ref().is_some_and(|t| t.id == post.id) {
        return Ok(Usage::default());
    }
    let Some(src) = kept.retrieval else {
        return Ok(Usage::default());
    };
    if src.evidence.as_ref().is_none_or(Vec::is_empty) {
        return Ok(Usage::default());
    }
    tracing::info!(from = %source, kept = %job_id, cosine, "the same claim was answered within the kept days; answering from its evidence");
    r.queries = src.queries;
    r.candidates = src.candidates;
    r.pages = src.pages;
    r.evidence = src.evidence;
    r.fact_checks = src.fact_checks;
    r.dropped.extend(src.dropped);
    r.recalled = Some(Recalled {
        from: Some(source),
        cosine,
    });
    Ok(Usage::default())
}

#[cfg(test)]
mod tests {
    use super::Memory;
    use crate::model::ClaimVector;
    use crate::store::Store;

    /// A claim one account answered is found from every account, in the store that keeps it,
    /// and the nearest across accounts wins.
    #[test]
    fn memory_reads_every_accounts_kept_claims() {
        let root = Store::open_temporary().unwrap();
        let es = root.account("es", "es.example", "").unwrap();
        let until = chrono::Utc::now() + chrono::Duration::days(1);
        let v = |x: Vec<i8>| ClaimVector {
            space: "english".into(),
            v: x,
        };
        es.save_vector("mastodon:es-1", &v(vec![100, 100, 100, 100]), until)
            .unwrap();
        root.save_vector("mastodon:en-1", &v(vec![100, 100, 100, 60]), until)
            .unwrap();
        let memory = Memory {
            stores: vec![root.clone(), es.clone()],
        };
        let now = chrono::Utc::now();
        let (store, id, cosine) = memory.nearest(&v(vec![100, 100, 100, 100]), 0.9, now).unwrap().unwrap();
        assert_eq!(id, "mastodon:es-1");
        assert!(cosine > 0.99);
        assert!(store.nearest_claim(&v(vec![100; 4]), 0.99, now, &[]).unwrap().is_some());
        let alone = Memory { stores: vec![root] };
        let (_, id, _) = alone.nearest(&v(vec![100, 100, 100, 100]), 0.9, now).unwrap().unwrap();
        assert_eq!(id, "mastodon:en-1");
    }
}
