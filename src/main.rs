//! The `conclave` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

/// The team, the store and the connections allocate and free many small values across
/// threads; under load glibc's allocator took about a fifth of the server's time (and
/// the busy team about 25% more CPU a notification, `cargo bench --bench lsp`). Built
/// with `no_thp`: with transparent huge pages mimalloc's arenas doubled the idle
/// server's resident memory.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "conclave",
    version,
    about = "A team of AI coding agents that does not fall over"
)]
struct Args {
    /// Also write logs to this file (logs always go to stderr; level from RUST_LOG).
    #[arg(long, global = true, value_name = "FILE")]
    log_file: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the configured team on a workspace, let it run a few heartbeats, and print
    /// the team, its health and what the store recorded.
    Team(cli::team::TeamArgs),
    /// Print a task's history (transitions, messages, decisions, recovery steps, files
    /// written) from the workspace's audit log.
    Log(cli::log::LogArgs),
    /// Compact the audit log: fold the events of old finished tasks into summaries.
    Gc(cli::gc::GcArgs),
    /// Take a finished task back: every file it changed put back as it was before it,
    /// after showing the diff and asking. Files changed since the task are not
    /// overwritten without --force.
    Undo(cli::undo::UndoArgs),
    /// Run one task with the team, without an editor: progress on stderr, the result on
    /// stdout, ERROR_REPORT.md when anything failed. Exit code 0 only when every subtask
    /// completed; 1 when any failed; 2 when the task could not run (no model configured).
    Run(cli::run::RunArgs),
    /// The language server an editor starts (`conclave serve --stdio`): LSP plus the
    /// `conclave/*` methods of docs/protocol.md over stdin/stdout.
    Serve(cli::serve::ServeArgs),
    /// Watch the whole team work a built-in scenario on a scripted model (no API key):
    /// a plan signed by the top layer, files written, and failures recovered by a retry,
    /// a peer takeover and an escalation.
    Demo(cli::demo::DemoArgs),
    /// The Agent Client Protocol agent an editor starts (`conclave acp`): Zed, JetBrains,
    /// CodeCompanion.nvim, agent-shell. Newline-delimited JSON-RPC over stdin/stdout.
    Acp(cli::acp::AcpArgs),
    /// Print how the checks read a task (its files, names, flags, renames, what kind of
    /// change it asks for), as JSON: the one reading every check works from.
    Intent(cli::intent::IntentArgs),
}

fn main() -> ExitCode {
    // Before anything reads the API key: the commands Conclave starts cannot read it
    // back out of this process.
    conclave::exec::confine::protect_own_process();
    // Every credential-looking value in the environment is redacted from logs, the
    // store, reports, prompts and editors from the first line on.
    conclave::redact::register_environment(&[]);
    let args = Args::parse();
    // Commands that draw progress on stderr keep the log to warnings unless RUST_LOG says.
    let level = match args.command {
        Command::Run(_) | Command::Demo(_) => "warn",
        Command::Team(_)
        | Command::Log(_)
        | Command::Gc(_)
        | Command::Undo(_)
        | Command::Serve(_)
        | Command::Acp(_) => "info",
        Command::Intent(_) => "warn",
    };
    let (client_logs, lines) = match args.command {
        Command::Serve(_) => {
            let (layer, lines) = conclave::lsp::client_log_layer();
            (Some(layer), Some(lines))
        }
        _ => (None, None),
    };
    if let Err(e) = cli::logging::init(args.log_file.as_deref(), level, client_logs) {
        eprintln!("conclave: {e}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("conclave: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let serving = matches!(args.command, Command::Serve(_) | Command::Acp(_));
    let result = runtime.block_on(async {
        match args.command {
            Command::Serve(serve) => cli::serve::run(serve, lines).await,
            Command::Team(team) => cli::team::run(team).await,
            Command::Log(log) => cli::log::run(log).await,
            Command::Gc(gc) => cli::gc::run(gc).await,
            Command::Undo(undo) => cli::undo::run(undo).await,
            Command::Run(run) => cli::run::run(run).await,
            Command::Demo(demo) => cli::demo::run(demo).await,
            Command::Acp(acp) => cli::acp::run(acp).await,
            Command::Intent(intent) => cli::intent::run(intent).await,
        }
    });
    if serving {
        // A read of stdin may still be blocked in a runtime thread (the editor keeps the
        // pipe open after `exit`); do not wait for it.
        runtime.shutdown_background();
    }
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("conclave: {e:#}");
            ExitCode::FAILURE
        }
    }
}
