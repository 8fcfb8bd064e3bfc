//! The `musebot` binary: parses the command line and hands over to [`musebot::cli`].

fn main() -> std::process::ExitCode {
    musebot::cli::main()
}
