//! The daily LLM budget (`[budget]`): every finished stage's tokens (and their cost at the
//! configured model's price) are added to the UTC day's spend in the store; [`Budget::state`]
//! says what may still run. Past `hashtag_share` of the budget, hashtag auto-replies stop;
//! past `recheck_share` (at most `report_share`), re-checks wait for the next day, then reports;
//! mentions and moderators' checks go on to the whole budget; then each requester gets one
//! polite "out of budget today" notice and silence after it. Commands cost nothing and always run.

use chrono::Utc;
use serde::Serialize;

use crate::config::BudgetConfig;
use crate::model::{Spend, Usage};
use crate::store::{Store, StoreError};

/// Closed: what the budget allows now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetState {
    Open,
    /// Past `hashtag_share`: hashtag auto-replies wait for the next day.
    HashtagsStopped,
    /// The day's budget is spent: nothing but commands until midnight UTC.
    Spent,
}

impl BudgetState {
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetState::Open => "open",
            BudgetState::HashtagsStopped => "hashtags_stopped",
            BudgetState::Spent => "spent",
        }
    }
}

#[derive(Clone)]
pub struct Budget {
    pub config: BudgetConfig,
    /// The main model, whose price the spend is counted at.
    pub model: String,
    pub store: Store,
}

impl Budget {
    /// The store key of today's spend (ends in the day's first hour, as pruning reads keys).
    fn key() -> String {
        format!("spend:{}00", Utc::now().format("%Y%m%d"))
    }

    /// Adds a finished stage's tokens to today's spend.
    pub fn record(&self, u: Usage) -> Result<Spend, StoreError> {
        if u.prompt_tokens == 0 && u.completion_tokens == 0 {
            return Ok(self.today());
        }
        let cost = self.cost_of(u);
        self.store
            .add_spend(&Self::key(), u.prompt_tokens, u.completion_tokens, cost)
    }

    /// What `u` costs at the main model's price.
    pub fn cost_of(&self, u: Usage) -> f64 {
        let price = self.config.prices.get(&self.model).copied().unwrap_or_default();
        (u.prompt_tokens as f64 * price.prompt + u.completion_tokens as f64 * price.completion) / 1e6
    }

    pub fn today(&self) -> Spend {
        self.store.spend(&Self::key())
    }

    /// The larger of the token and the cost fractions of the day's budget (0 without limits).
    pub fn used(&self) -> f64 {
        let s = self.today();
        let tokens = (self.config.daily_tokens > 0)
            .then(|| (s.prompt_tokens + s.completion_tokens) as f64 / self.config.daily_tokens as f64);
        let cost = (self.config.daily_cost > 0.0).then(|| s.cost / self.config.daily_cost);
        tokens.into_iter().chain(cost).fold(0.0, f64::max)
    }

    pub fn state(&self) -> BudgetState {
        let used = self.used();
        if used >= 1.0 {
            BudgetState::Spent
        } else if used >= self.config.hashtag_share {
            BudgetState::HashtagsStopped
        } else {
            BudgetState::Open
        }
    }

    /// The key of a requester's one notice today.
    pub fn notice_key(platform: &str, handle: &str) -> String {
        format!(
            "budgetnotice:{platform}:{}:{}00",
            handle.to_lowercase(),
            Utc::now().format("%Y%m%d")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashtags_stop_first_then_everything() {
        let mut config = BudgetConfig {
            daily_tokens: 100,
            ..Default::default()
        };
        config.prices.insert(
            "m".into(),
            crate::config::Price {
                prompt: 1_000_000.0,
                completion: 0.0,
            },
        );
        let b = Budget {
            config,
            model: "m".into(),
            store: Store::open_temporary().unwrap(),
        };
        assert_eq!(b.state(), BudgetState::Open);
        let u = |p, c| Usage {
            prompt_tokens: p,
            completion_tokens: c,
        };
        b.record(u(50, 30)).unwrap();
        assert_eq!(b.state(), BudgetState::HashtagsStopped);
        assert_eq!(b.today().cost, 50.0);
        b.record(u(20, 0)).unwrap();
        assert_eq!(b.state(), BudgetState::Spent);
        // A cost limit alone works too.
        let b2 = Budget {
            config: BudgetConfig {
                daily_cost: 60.0,
                ..b.config.clone()
            },
            model: "m".into(),
            store: Store::open_temporary().unwrap(),
        };
        b2.record(u(50, 0)).unwrap();
        assert_eq!(b2.state(), BudgetState::HashtagsStopped);
        b2.record(u(10, 0)).unwrap();
        assert_eq!(b2.state(), BudgetState::Spent);
    }
}
