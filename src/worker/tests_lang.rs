//! The stage machine speaks the right language, on the same scripted platform and LLM as
//! [`super::tests`]: a reply the post's, a notice the asker's (the asking post's tag, else its
//! text's, else the post's), English where the bot has no words.

use super::tests::{bench, mention, VERDICT};
use super::*;
use crate::model::{Post, Visibility};
use crate::test_llm::Script;

/// Notices speak the asker's language: the asking post's tag, else its text's, else the
/// post's; a language without words gets English.
#[tokio::test]
async fn a_notice_speaks_the_askers_language() {
    let b = bench(Script::reply(VERDICT)).await;
    let cases: [(Option<&str>, &str, Option<&str>, &str); 5] = [
        (Some("ja"), "@musebot ?", None, "公開投稿だけを確認しているため"),
        (
            None,
            "@musebot ist das wirklich wahr? Ich glaube das einfach nicht, ehrlich gesagt.",
            None,
            "Ich prüfe nur öffentliche Beiträge",
        ),
        (
            None,
            "@musebot ?",
            Some("fr"),
            "Je ne vérifie que les publications publiques",
        ),
        (Some("eu"), "@musebot ?", Some("fr"), "I only check public posts"),
        (Some("ko"), "@musebot ?", Some("fr"), "공개 게시물만 확인하기 때문에"),
    ];
    for (i, (tag, text, post_lang, expected)) in cases.into_iter().enumerate() {
        let pid = format!("45{i}");
        let mut post = Post::text_only(
            &pid,
            "carol",
            "Der Mond ist aus Käse.",
            chrono::Utc::now(),
            Visibility::Private,
        );
        post.language = post_lang.map(String::from);
        b.double.add_post(post);
        let mut t = mention(&format!("6{i}"));
        t.in_reply_to_id = Some(pid);
        t.language = tag.map(String::from);
        t.text = text.into();
        let job = b.run(&b.add(t)).await;
        assert_eq!(job.draft.as_ref().unwrap().outcome, Outcome::NotPublic);
        let said = job.plan.as_ref().unwrap().parts.join(" ");
        assert!(said.contains(expected), "case {i}: {said}");
    }
}

/// A post in German is answered in German: the bot's verdict sentence from its words, the
/// model asked to explain in German; a post in a language the bot has no words in, in English.
#[tokio::test]
async fn a_reply_speaks_the_posts_language() {
    let b = bench(Script::reply(VERDICT)).await;
    let id = b.ask_about(
        "1",
        "470",
        "carol",
        "Der Mond ist aus Käse, das haben Forscher jetzt bewiesen.",
        Visibility::Public,
    );
    let job = b.run(&id).await;
    assert_eq!(job.target.as_ref().unwrap().language.as_deref(), Some("de"), "detected");
    let reply = job.plan.as_ref().unwrap().parts.join(" ");
    assert!(
        reply.starts_with("@bob Dieser Beitrag ist falsch. The Moon is made of rock"),
        "{reply}"
    );
    let asked = b.llm.requests.lock().unwrap().clone();
    let system = asked.last().unwrap()["messages"][0]["content"].as_str().unwrap();
    let system = system.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(system.contains("written in German (the post's language)"), "{system}");
    let mut korean = Post::text_only(
        "471",
        "carol",
        "달은 치즈로 만들어졌다고 과학자들이 증명했습니다.",
        chrono::Utc::now(),
        Visibility::Public,
    );
    korean.language = Some("ko".into());
    b.double.add_post(korean);
    let mut t = mention("2");
    t.in_reply_to_id = Some("471".into());
    let job = b.run(&b.add(t)).await;
    let first = &job.plan.as_ref().unwrap().parts[0];
    assert!(first.starts_with("@bob 이 게시물은 사실이 아닙니다."), "{first}");
}

/// A German moderator's command is acknowledged in German and the status says so: tagged
/// `de`, not the English default (a regression guard: the acknowledgement's target once lost the language).
#[tokio::test]
async fn a_commands_acknowledgement_is_tagged_with_its_words_language() {
    let mut b = bench(Script::reply(VERDICT)).await;
    let config = crate::config::ModerationConfig {
        mastodon_moderators: vec!["mod".into()],
        ..Default::default()
    };
    b.worker.moderation = crate::moderation::Moderation::new(config, b.worker.store.clone());
    let mut t = mention("80");
    t.author.handle = "mod".into();
    t.cause = crate::model::Cause::Command {
        command: crate::model::Command::Pause,
    };
    t.text = "@musebot pause".into();
    t.language = Some("de".into());
    let job = b.run(&b.add(t)).await;
    assert_eq!(job.status, crate::model::Status::Done, "{:?}", job.last_error);
    let said = b.double.texts().join(" ");
    let langs = b.double.langs.lock().unwrap().clone();
    assert!(!langs.is_empty(), "nothing posted");
    assert!(langs.iter().all(|l| l == "de"), "{langs:?}: {said}");
    // And the words are German (the acknowledgement's own locale).
    let german = crate::moderation::ack::pause("de", true);
    assert_ne!(german, crate::moderation::ack::pause("en", true));
    assert!(said.contains(&german), "{said}");
}
