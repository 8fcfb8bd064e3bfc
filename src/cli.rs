//! The command line (clap): `run`, `check`, `config check`. Exit codes: 0 ok, 1 runtime
//! failure, 2 configuration error.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ConfigError};

pub const DEFAULT_CONFIG: &str = "/etc/musebot/bot-config.toml";

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
    /// Configuration tools.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
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
            Ok(_) => {
                println!("{}: ok", path.display());
                ExitCode::SUCCESS
            }
            Err(e) => config_failure(&e),
        },
        Command::Run { config } => {
            let config = match Config::load(&config) {
                Ok(c) => c,
                Err(e) => return config_failure(&e),
            };
            crate::telemetry::init(&config.log);
            runtime(async move {
                let shutdown = CancellationToken::new();
                tokio::spawn(signals(shutdown.clone()));
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
                println!("{out}");
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
    }
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

/// Cancels `token` on SIGTERM or SIGINT.
async fn signals(token: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => tracing::info!("SIGTERM: stopping"),
                    _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: stopping"),
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    token.cancel();
}
