//! The task checkpoint's encoding, versioned. Each row of `tasks` says which encoding its
//! `body` is in. A build reads every encoding up to its own, upgrading an older body step
//! by step, and refuses a newer one by name: read in part, a checkpoint would be written
//! back without what this build did not understand, and that would be lost.
//!
//! Changing what a checkpoint means (a field renamed, a value that now says something
//! else) is a new encoding: bump [`ENCODING`] and add the step from the one before to
//! [`UPGRADES`]. A field added with a default needs neither.

use serde_json::Value;

use crate::records::TaskRecord;

/// The encoding this build writes, and the newest it reads.
pub const ENCODING: u32 = 1;

/// `UPGRADES[n - 1]` turns a body of encoding `n` into one of encoding `n + 1`.
const UPGRADES: &[fn(Value) -> Value] = &[];

/// A checkpoint this build cannot read without losing part of it.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error(
        "task {task} was saved by a newer Conclave (checkpoint encoding {found}; this one reads up to {ENCODING}): run that Conclave on this workspace, or move .conclave/ aside to start a fresh history with this one"
    )]
    Newer { task: String, found: u32 },
    #[error("task {task} has a checkpoint that cannot be read (encoding {encoding}): {message}")]
    Unreadable {
        task: String,
        encoding: u32,
        message: String,
    },
}

/// A stored checkpoint as this build's record: upgraded when older, refused when newer.
pub fn decode(task: &str, encoding: u32, body: &str) -> Result<TaskRecord, CheckpointError> {
    let unreadable = |message: String| CheckpointError::Unreadable {
        task: task.to_string(),
        encoding,
        message,
    };
    if encoding > ENCODING {
        return Err(CheckpointError::Newer {
            task: task.to_string(),
            found: encoding,
        });
    }
    let mut value: Value = serde_json::from_str(body).map_err(|e| unreadable(e.to_string()))?;
    for upgrade in &UPGRADES[(encoding.max(1) - 1) as usize..] {
        value = upgrade(value);
    }
    serde_json::from_value(value).map_err(|e| unreadable(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_older_encoding_has_its_upgrade() {
        assert_eq!(UPGRADES.len() as u32, ENCODING - 1);
    }

    #[test]
    fn a_newer_checkpoint_is_refused_by_name_and_a_broken_one_said_so() {
        let err = decode("t1", ENCODING + 1, "{}").unwrap_err();
        assert!(
            err.to_string().contains(&format!(
                "task t1 was saved by a newer Conclave (checkpoint encoding {}",
                ENCODING + 1
            )),
            "{err}"
        );
        let err = decode("t2", ENCODING, "{not json").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("task t2 has a checkpoint that cannot be read"),
            "{err}"
        );
    }
}
