//! The watch's bounds on what it takes up, below Bluesky's labeler limits (5 labels a second,
//! 5,000 an hour, 50,000 a day) and per author: a flood of matching posts costs a cursor move
//! each past a cap, never a job. The hour and day are fixed UTC windows counted in the store
//! (a restart does not reset them); the second is paced in memory; an author's bound is a
//! sliding day keyed by the author's stable id (DID, account id).

use std::num::NonZeroU32;
use std::sync::Arc;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

use crate::config::WatchConfig;
use crate::store::{Store, StoreError};

/// Why a match was not taken up. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capped {
    Hour,
    Day,
    Author,
}

impl Capped {
    pub fn as_str(self) -> &'static str {
        match self {
            Capped::Hour => "the hour's labels",
            Capped::Day => "the day's labels",
            Capped::Author => "the author's matches today",
        }
    }
}

pub struct Caps {
    store: Store,
    hour: u64,
    day: u64,
    per_author: u32,
    pace: Arc<DefaultDirectRateLimiter>,
}

impl Caps {
    pub fn new(store: Store, config: &WatchConfig) -> Caps {
        let per_second = NonZeroU32::new(config.labels_per_second.max(1)).expect("at least 1");
        Caps {
            store,
            hour: u64::from(config.labels_per_hour),
            day: u64::from(config.labels_per_day),
            per_author: config.per_author_per_day,
            pace: Arc::new(RateLimiter::direct(Quota::per_second(per_second))),
        }
    }

    /// Charges job `job_id` (a match by `author` on `platform`) to the author's day, then to
    /// the hour's and the day's labels; the cap that refused it, if any. The author is charged
    /// first: a full hour does not spend nothing, but a spent author spends no label slot.
    pub fn admit(
        &self,
        platform: &str,
        author: &str,
        job_id: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<Capped>, StoreError> {
        let key = format!("rate:watch:author:{platform}:{author}");
        if !self
            .store
            .charge_window(&key, job_id, self.per_author, chrono::Duration::days(1), now)?
        {
            return Ok(Some(Capped::Author));
        }
        let hour = format!("watchhour:{platform}:{}", now.format("%Y%m%d%H"));
        if !self.store.count_up(&hour, self.hour)? {
            return Ok(Some(Capped::Hour));
        }
        let day = format!("watchday:{platform}:{}00", now.format("%Y%m%d"));
        if !self.store.count_up(&day, self.day)? {
            return Ok(Some(Capped::Day));
        }
        Ok(None)
    }

    /// Waits for the next second's slot (labels go out at most `labels_per_second`).
    pub async fn pace(&self) {
        self.pace.until_ready().await;
    }
}
