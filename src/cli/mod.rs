//! The command line front-end: one module per subcommand.

pub mod logging;
pub mod team;
