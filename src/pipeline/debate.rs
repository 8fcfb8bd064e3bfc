//! The debate engine (MAD-Sherlock, seed 004, Appendix A.3): N agents, each with its own
//! conversation. Round 0: independent opinions (concurrently). Then asynchronous rounds: each
//! agent in turn sees the others' latest answers, framed as one person's ("This is what I
//! think"), must agree or disagree with reasons and point out ambiguities, and is told not to
//! give in without a reason. It stops as soon as every agent's latest verdict is the same, or
//! after `rounds` rounds. Every turn is persisted (`checkpoint`) before the next, so a crash
//! resumes at the turn it lost; an agent's conversation is rebuilt from the stored turns.

use futures_util::future::join_all;
use serde_json::{json, Value};

use super::parse::json_in;
use super::PipelineError;
use crate::llm::{ChatMessage, LlmClient};
use crate::model::{Debate, DebateEnd, Support, Turn, Usage};
use crate::prompts::Prompts;

/// What the agents examine: the first user message of every agent (already rendered), with
/// the pictures it shows (data URLs; empty unless the debater's model has vision).
pub struct Case {
    pub opening: String,
    pub images: Vec<String>,
}

impl Case {
    fn message(&self) -> ChatMessage {
        if self.images.is_empty() {
            ChatMessage::user(self.opening.clone())
        } else {
            ChatMessage::user_with_images(self.opening.clone(), &self.images)
        }
    }
}

pub struct Debater<'a> {
    /// The agents' system prompt (`verify.system.j2` for drafts, `ooc.system.j2` for images).
    pub system: &'a str,
    pub llm: &'a LlmClient,
    pub prompts: &'a Prompts,
    pub agents: usize,
    pub rounds: usize,
}

impl Debater<'_> {
    /// Runs the debate from where `debate` stands to its end.
    pub async fn run(
        &self,
        case: &Case,
        debate: &mut Debate,
        checkpoint: &mut (dyn FnMut(&Debate) + Send),
    ) -> Result<Usage, PipelineError> {
        let n = self.agents.max(1);
        let mut usage = Usage::default();
        let system = self.prompts.render(self.system, minijinja::context! {})?;
        // Round 0: the missing independent opinions, all at once.
        let missing: Vec<usize> = (0..n)
            .filter(|a| !debate.turns.iter().any(|t| t.agent == *a && t.round == 0))
            .collect();
        if debate.end.is_none() && !missing.is_empty() {
            let calls = missing.iter().map(|&agent| {
                let messages = vec![ChatMessage::system(system.clone()), case.message()];
                async move { (agent, self.ask(&messages).await) }
            });
            for (agent, answer) in join_all(calls).await {
                let (turn, u) = answer?;
                usage.prompt_tokens += u.prompt_tokens;
                usage.completion_tokens += u.completion_tokens;
                debate.turns.push(Turn {
                    agent,
                    round: 0,
                    ..turn
                });
            }
            debate.turns.sort_by_key(|t| (t.round, t.agent));
            checkpoint(debate);
        }
        while debate.end.is_none() {
            if let Some(support) = agreed(debate, n) {
                let round = debate.turns.last().map_or(0, |t| t.round);
                debate.end = Some(DebateEnd::Agreed { support, round });
                checkpoint(debate);
                break;
            }
            let k = debate.turns.len() - n;
            let (round, agent) = (1 + k / n, k % n);
            if round > self.rounds {
                debate.end = Some(DebateEnd::Contested { rounds: self.rounds });
                checkpoint(debate);
                break;
            }
            let messages = self.conversation(&system, case, debate, agent, n)?;
            let (turn, u) = self.ask(&messages).await?;
            usage.prompt_tokens += u.prompt_tokens;
            usage.completion_tokens += u.completion_tokens;
            debate.turns.push(Turn { agent, round, ..turn });
            checkpoint(debate);
        }
        Ok(usage)
    }

    /// Agent `agent`'s conversation so far, ending with the others' latest answers.
    fn conversation(
        &self,
        system: &str,
        case: &Case,
        debate: &Debate,
        agent: usize,
        n: usize,
    ) -> Result<Vec<ChatMessage>, PipelineError> {
        let mut messages = vec![ChatMessage::system(system), case.message()];
        let mine: Vec<&Turn> = debate.turns.iter().filter(|t| t.agent == agent).collect();
        for (i, turn) in mine.iter().enumerate() {
            messages.push(ChatMessage {
                role: "assistant".into(),
                content: crate::llm::Content::Text(as_answer(turn)),
            });
            // The others' answers as they stood when the agent's next turn was asked.
            let upto = debate
                .turns
                .iter()
                .position(|t| t.agent == agent && t.round == turn.round + 1)
                .unwrap_or(debate.turns.len());
            let others = latest_of_others(&debate.turns[..upto], agent, n);
            let template = if i == 0 {
                "verify_round1.user.j2"
            } else {
                "verify_round.user.j2"
            };
            messages.push(ChatMessage::user(
                self.prompts
                    .render(template, minijinja::context! { others => others })?,
            ));
        }
        Ok(messages)
    }

    async fn ask(&self, messages: &[ChatMessage]) -> Result<(Turn, Usage), PipelineError> {
        let c = self.llm.chat_json(messages, "verification", &schema()).await?;
        let usage = Usage {
            prompt_tokens: c.prompt_tokens,
            completion_tokens: c.completion_tokens,
        };
        let (support, reasons, objections) = read(&c.text);
        Ok((
            Turn {
                agent: 0,
                round: 0,
                support,
                reasons,
                objections,
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
            },
            usage,
        ))
    }
}

/// The verdict all agents' latest turns share, once every agent has spoken.
fn agreed(debate: &Debate, n: usize) -> Option<Support> {
    let latest: Vec<Support> = (0..n)
        .map(|a| debate.turns.iter().rev().find(|t| t.agent == a).map(|t| t.support))
        .collect::<Option<_>>()?;
    latest.windows(2).all(|w| w[0] == w[1]).then(|| latest[0])
}

/// The other agents' latest answers, as one person's words.
fn latest_of_others(turns: &[Turn], agent: usize, n: usize) -> String {
    let answers: Vec<String> = (0..n)
        .filter(|a| *a != agent)
        .filter_map(|a| turns.iter().rev().find(|t| t.agent == a))
        .map(as_answer)
        .collect();
    answers.join("\n\nAnd also: ")
}

/// A turn as the answer text an agent gave.
fn as_answer(t: &Turn) -> String {
    json!({"verdict": t.support.as_str(), "reasons": t.reasons, "objections": t.objections}).to_string()
}

/// An agent's answer; without a clear "supported" it counts as an objection (a draft is never
/// upheld by an answer nobody can read).
pub fn read(text: &str) -> (Support, String, Vec<String>) {
    if let Some(Value::Object(o)) = json_in(text) {
        let verdict = o
            .get("verdict")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_lowercase();
        let reasons = o
            .get("reasons")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string();
        let objections: Vec<String> = o
            .get("objections")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let support = if verdict == "supported" {
            Support::Supported
        } else {
            Support::Unsupported
        };
        return (support, reasons, objections);
    }
    let lower = text.to_lowercase();
    let support = if lower.contains("supported") && !lower.contains("unsupported") && !lower.contains("not supported") {
        Support::Supported
    } else {
        Support::Unsupported
    };
    (support, text.trim().chars().take(600).collect(), Vec::new())
}

fn schema() -> Value {
    json!({"type": "object", "properties": {
        "verdict": {"type": "string", "enum": ["supported", "unsupported"]},
        "reasons": {"type": "string"},
        "objections": {"type": "array", "items": {"type": "string"}}},
        "required": ["verdict", "reasons", "objections"]})
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::test_llm::{Script, ScriptedLlm};

    const YES: &str = r#"{"verdict": "supported", "reasons": "It is in the evidence.", "objections": []}"#;
    const NO: &str =
        r#"{"verdict": "unsupported", "reasons": "Not in the evidence.", "objections": ["The Moon is 3 km wide."]}"#;

    /// Agents whose round-0 opinions alternate (yes, no, …) and who, from round `switch` on,
    /// answer "supported" (`usize::MAX`: never switch, each keeps its first opinion).
    fn agents(switch: usize) -> Script {
        let first = Arc::new(AtomicUsize::new(0));
        Script::routed(move |body: &serde_json::Value| {
            let messages = body["messages"].as_array().unwrap();
            if messages.len() == 2 {
                let i = first.fetch_add(1, Ordering::SeqCst);
                return (if i % 2 == 0 { YES } else { NO }).to_string();
            }
            let round = (messages.len() - 2) / 2;
            let own = messages[2]["content"].as_str().unwrap();
            if round >= switch || own.contains("\"supported\"") {
                YES
            } else {
                NO
            }
            .to_string()
        })
    }

    async fn debate(script: Script, rounds: usize, start: Debate) -> (Debate, usize, ScriptedLlm) {
        let server = ScriptedLlm::start(script).await;
        let config = crate::config::LlmConfig {
            base_url: server.base_url.clone(),
            max_retries: 0,
            ..Default::default()
        };
        let client = LlmClient::new(&config, None).unwrap();
        let prompts = Prompts::load(std::path::Path::new("")).unwrap();
        let d = Debater {
            system: "verify.system.j2",
            llm: &client,
            prompts: &prompts,
            agents: 2,
            rounds,
        };
        let case = Case {
            opening: "<draft>The Moon is 3 km wide.</draft>".into(),
            images: Vec::new(),
        };
        let mut debate = start;
        let mut saved = 0;
        d.run(&case, &mut debate, &mut |_| saved += 1).await.unwrap();
        (debate, saved, server)
    }

    #[tokio::test]
    async fn agreement_in_round_0_needs_no_debate() {
        let (d, _, server) = debate(Script::reply(YES), 3, Debate::default()).await;
        assert_eq!(d.turns.len(), 2);
        assert_eq!(
            d.end,
            Some(DebateEnd::Agreed {
                support: Support::Supported,
                round: 0
            })
        );
        assert_eq!(server.calls.load(Ordering::SeqCst), 2);
        assert!(d.upheld());
    }

    #[tokio::test]
    async fn agreement_in_round_2_stops_there() {
        let (d, _, _) = debate(agents(2), 3, Debate::default()).await;
        assert_eq!(
            d.end,
            Some(DebateEnd::Agreed {
                support: Support::Supported,
                round: 2
            })
        );
        assert!(d.turns.iter().all(|t| t.round <= 2), "{:?}", d.turns);
        assert!(d.turns.iter().any(|t| t.round == 2));
    }

    #[tokio::test]
    async fn permanent_disagreement_stops_after_the_last_round() {
        let (d, saved, server) = debate(agents(usize::MAX), 3, Debate::default()).await;
        assert_eq!(d.end, Some(DebateEnd::Contested { rounds: 3 }));
        assert_eq!(d.turns.len(), 2 + 3 * 2);
        assert_eq!(server.calls.load(Ordering::SeqCst), 8);
        assert_eq!(saved, 1 + 6 + 1, "round 0, every debate turn, the end");
        assert_eq!(d.objections(2), vec!["The Moon is 3 km wide.".to_string()]);
        // Each agent answers the other's latest words as a person's, told not to give in.
        let requests = server.requests.lock().unwrap().clone();
        let last = requests.last().unwrap()["messages"].as_array().unwrap().clone();
        let prompt = last.last().unwrap()["content"].as_str().unwrap();
        assert!(
            prompt.starts_with("I see what you mean and this is what I think:"),
            "{prompt}"
        );
        assert!(prompt.contains("DO NOT simply agree"), "{prompt}");
        assert_eq!(
            last.len(),
            2 + 2 * 3,
            "the agent's own conversation: every turn it took"
        );
    }

    /// A crash in the middle of a debate: the stored turns are kept, the next run asks only
    /// for the turns still missing.
    #[tokio::test]
    async fn a_debate_resumes_at_the_turn_it_lost() {
        let (full, _, _) = debate(agents(usize::MAX), 3, Debate::default()).await;
        let mut cut = full.clone();
        cut.turns.truncate(5);
        cut.end = None;
        let (resumed, _, server) = debate(agents(usize::MAX), 3, cut).await;
        assert_eq!(server.calls.load(Ordering::SeqCst), 3, "only the 3 missing turns");
        assert_eq!(resumed.turns.len(), full.turns.len());
        assert_eq!(resumed.end, full.end);
    }

    #[test]
    fn answers_without_a_clear_yes_are_objections() {
        assert_eq!(read(YES).0, Support::Supported);
        assert_eq!(read(NO).0, Support::Unsupported);
        assert_eq!(read("I am not sure.").0, Support::Unsupported);
        assert_eq!(read("The draft is supported by the evidence.").0, Support::Supported);
        assert_eq!(read("This is not supported.").0, Support::Unsupported);
    }
}
