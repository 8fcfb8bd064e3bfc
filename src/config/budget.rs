//! `[budget]`: the daily LLM budget in tokens and in money (prices per model), and the share
//! of it after which hashtag auto-replies stop so that mentions can go on, re-checks wait (before
//! reports do), and reported posts wait.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetConfig {
    /// LLM tokens (prompt + completion, every model) a UTC day; 0 = no limit.
    pub daily_tokens: u64,
    /// Cost a UTC day, in the prices' currency; 0 = no limit.
    pub daily_cost: f64,
    /// Share of the day's budget after which hashtag auto-replies stop; mentions go on to
    /// the whole budget, then each requester gets one "out of budget today" notice.
    pub hashtag_share: f64,
    /// Share of the day's budget after which reported posts wait for the next day (their
    /// findings go to moderators; mentions go on to the whole budget).
    pub report_share: f64,
    /// Share of the day's budget after which re-checks of kept answers wait for the next day;
    /// at most `report_share`, so re-checks (edits, follower rounds) never spend what reported
    /// posts need.
    pub recheck_share: f64,
    /// Price per million tokens, by model name. Every token (the vision model's too) is
    /// counted at `[llm] model`'s price.
    pub prices: BTreeMap<String, Price>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Price {
    /// Per million prompt tokens.
    pub prompt: f64,
    /// Per million completion tokens.
    pub completion: f64,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig {
            daily_tokens: 0,
            daily_cost: 0.0,
            hashtag_share: 0.8,
            report_share: 0.8,
            recheck_share: 0.6,
            prices: BTreeMap::new(),
        }
    }
}
