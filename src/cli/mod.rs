//! The command line front-end: one module per subcommand.

pub mod acp;
pub mod approve;
pub mod demo;
pub mod gc;
pub mod intent;
pub mod log;
pub mod logging;
pub mod progress;
pub mod run;
pub mod serve;
pub mod session;
pub mod summary;
pub mod team;
pub mod undo;

/// The store of an existing workspace, refusing (without creating anything) when there
/// is none.
pub fn existing_store(workspace: &std::path::Path) -> anyhow::Result<conclave::store::Store> {
    let path = conclave::store::Store::default_path(workspace);
    if !path.exists() {
        anyhow::bail!(
            "no Conclave store in {} (expected {})",
            workspace.display(),
            path.display()
        );
    }
    Ok(conclave::store::Store::open(&path)?)
}
