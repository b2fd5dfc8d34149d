//! The command line front-end: one module per subcommand.

pub mod approve;
pub mod demo;
pub mod logging;
pub mod progress;
pub mod run;
pub mod session;
pub mod summary;
pub mod team;
