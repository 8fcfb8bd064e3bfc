//! The persisted records: the ground floor of the crate. Everything stored in sled — the job,
//! the post, what triggered the job, each pipeline step's output, token usage, visibility —
//! is defined here, and this module imports nothing from the rest of the crate (checked by
//! `tests/tidy.rs`). The pipeline, the platforms, intake and the store import it; nothing here
//! imports upward, so a new capability adds a field or a room, never an import circle.

mod command;
mod debate;
mod draft;
mod factcheck;
mod ids;
mod job;
mod label;
mod legacy;
mod living;
mod moderation;
mod post;
pub mod rating;
mod report;
mod retrieval;
mod review;
mod seen;
mod stance;
mod trigger;
mod usage;
mod verdict;
mod verification;

pub use command::{attempted as attempted_command, tag as normalise_tag, Command};
pub use debate::{Debate, DebateEnd, Support, Turn};
pub use draft::{Draft, Outcome};
pub use factcheck::{ClaimMatch, ClaimReview, ReviewSource};
pub use ids::id_less;
pub use job::{Job, Plan, ReplyRecord, SkipReason, Stage, StageRecord, Status, SCHEMA};
pub use label::{Channel, JobLabel, LabelValue};
pub use legacy::{decode_job, DecodeError};
pub use living::{ClaimVector, Kept, Recalled, UpdateRecord};
pub use moderation::{OptOut, Spend, TagPolicy, TagWatch};
pub use post::{account_key, Media, MediaKind, PlatformKind, Post, Visibility};
pub use rating::RatingHint;
pub use report::{judgeable, short_reason, Note, NoteItem};
pub use retrieval::{
    Candidate, ContextFinding, ContextPage, DropReason, Dropped, Evidence, ImageContext, ImageDescription, KeptPage,
    Retrieval, StepTrace, Tier,
};
pub use review::{Review, ReviewDecision};
pub use seen::Seen;
pub use stance::{PostStance, Stance, StanceBy};
pub use trigger::{is_watch_job_id, report_job_id, watch_job_id, Account, Cause, RecheckWhy, Trigger};
pub use usage::Usage;
pub use verdict::Verdict;
pub use verification::{Verification, Verified};
