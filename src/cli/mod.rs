//! The command line front-end: one module per subcommand.

pub mod gc;
pub mod log;
pub mod logging;
pub mod team;
