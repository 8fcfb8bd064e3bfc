//! Staged embedding for the page step ([`Embedder::embed_staged`]): groups of texts (a page's
//! passages) embedded in two stages — the first texts of every group, then a group's others
//! only when a decision on its first vectors asks for them — on the embedder's sessions, which
//! take texts from one shared list, so no session waits for the others between the stages.

use std::sync::Mutex;

use super::{Embedder, RelevanceError};

/// A group of texts embedded in two stages ([`Embedder::embed_staged`]): `first`, then `rest`
/// only when the decision on the first ones' vectors asks for it.
pub struct Staged {
    pub first: Vec<String>,
    pub rest: Vec<String>,
}

impl Staged {
    /// `texts` in order, the first `first` of them embedded first (0: all of them).
    pub fn split(mut texts: Vec<String>, first: usize) -> Staged {
        let at = if first == 0 {
            texts.len()
        } else {
            first.min(texts.len())
        };
        let rest = texts.split_off(at);
        Staged { first: texts, rest }
    }
}

/// The shared work list of [`Embedder::embed_staged`].
struct Work {
    /// (group, text index within the group: first ones, then the rest).
    queue: std::collections::VecDeque<(usize, usize)>,
    vectors: Vec<Vec<Option<Vec<f32>>>>,
    in_flight: usize,
    failed: Option<RelevanceError>,
}

impl Embedder {
    /// Embeds groups of texts on the sessions with no barrier between stages: each session
    /// takes the next text from one shared list, and when a group's `first` texts are all
    /// embedded, `needs_rest(group, vectors)` decides whether its `rest` join the list. The
    /// vectors of each group, first then rest (when embedded). CPU-bound: call from a blocking
    /// thread.
    pub fn embed_staged<F>(&self, groups: &[Staged], needs_rest: F) -> Result<Vec<Vec<Vec<f32>>>, RelevanceError>
    where
        F: Fn(usize, &[Vec<f32>]) -> bool + Sync,
    {
        let mut work = Work {
            queue: Default::default(),
            vectors: groups.iter().map(|_| Vec::new()).collect(),
            in_flight: 0,
            failed: None,
        };
        // A group's rest joins the list once its first texts are decided on (at once when it
        // has none).
        let rest_of = |g: usize| {
            let at = groups[g].first.len();
            (at..at + groups[g].rest.len()).map(move |j| (g, j))
        };
        for (g, group) in groups.iter().enumerate() {
            work.vectors[g] = vec![None; group.first.len() + group.rest.len()];
            work.queue.extend((0..group.first.len()).map(|i| (g, i)));
            if group.first.is_empty() && !group.rest.is_empty() && needs_rest(g, &[]) {
                work.queue.extend(rest_of(g));
            }
        }
        // As many sessions as texts there could be (a group's rest may join later).
        let texts: usize = groups.iter().map(|g| g.first.len() + g.rest.len()).sum();
        let k = self.sessions.len().min(texts).max(1);
        let state = (Mutex::new(work), std::sync::Condvar::new());
        let worker = |share: usize| {
            let mut session = self.sessions[share]
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let (lock, changed) = &state;
            let mut work = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            loop {
                let Some((g, i)) = work.queue.pop_front() else {
                    if work.in_flight == 0 || work.failed.is_some() {
                        changed.notify_all();
                        return;
                    }
                    work = changed.wait(work).unwrap_or_else(std::sync::PoisonError::into_inner);
                    continue;
                };
                work.in_flight += 1;
                drop(work);
                let group = &groups[g];
                let text = group.first.get(i).unwrap_or_else(|| &group.rest[i - group.first.len()]);
                // A panic is this text's error, never a session waiting for it forever.
                let vector = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let encoding = self
                        .tokenizer
                        .encode(text.as_str(), true)
                        .map_err(|e| RelevanceError::Run(e.to_string()))?;
                    self.run(&mut session, &encoding)
                }))
                .unwrap_or_else(|_| Err(RelevanceError::Run("embedding panicked".into())));
                work = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                work.in_flight -= 1;
                match vector {
                    Ok(v) => {
                        work.vectors[g][i] = Some(v);
                        let first = &work.vectors[g][..group.first.len()];
                        if i < group.first.len() && !group.rest.is_empty() && first.iter().all(Option::is_some) {
                            let first: Vec<Vec<f32>> = first.iter().flatten().cloned().collect();
                            let decide = std::panic::AssertUnwindSafe(|| needs_rest(g, &first));
                            if std::panic::catch_unwind(decide).unwrap_or(true) {
                                work.queue.extend(rest_of(g));
                            }
                        }
                    }
                    Err(e) => {
                        work.queue.clear();
                        work.failed.get_or_insert(e);
                    }
                }
                changed.notify_all();
            }
        };
        if k == 1 {
            worker(0);
        } else {
            std::thread::scope(|scope| {
                let worker = &worker;
                let handles: Vec<_> = (0..k).map(|share| scope.spawn(move || worker(share))).collect();
                for h in handles {
                    if h.join().is_err() {
                        let mut work = state.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        work.failed
                            .get_or_insert(RelevanceError::Run("embedding thread panicked".into()));
                    }
                }
            });
        }
        let work = state.0.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(e) = work.failed {
            return Err(e);
        }
        Ok(work
            .vectors
            .into_iter()
            .zip(groups)
            .map(|(vectors, group)| {
                let first = group.first.len();
                let embedded_rest = vectors[first..].iter().all(Option::is_some);
                vectors
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| *i < first || embedded_rest)
                    .map(|(_, v)| v.unwrap_or_default())
                    .collect()
            })
            .collect())
    }
}
