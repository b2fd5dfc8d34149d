//! What a failure means: the defaults each [`FailureKind`] decides (severity, whether
//! trying again may help, whether it must stop the task, whether it is the provider's
//! trouble), and a [`Failure`] made with them or from a classified error. The types are
//! records (`records::failure`); deciding what they mean is recovery's.

use std::fmt;

use super::{Classify, Failure, FailureKind, Scope, Severity};

impl FailureKind {
    /// How bad a failure of this kind is, unless its source knows better.
    pub fn severity(self) -> Severity {
        match self {
            FailureKind::Auth
            | FailureKind::Permission
            | FailureKind::QuotaExceeded
            | FailureKind::InvalidConfig => Severity::Critical,
            FailureKind::Timeout
            | FailureKind::ContextOverflow
            | FailureKind::NoProgress
            | FailureKind::Refused
            | FailureKind::PlanVetoed
            | FailureKind::DecisionExpired
            | FailureKind::ProviderOutage
            | FailureKind::AgentUnavailable
            | FailureKind::BadRequest
            | FailureKind::ExecutorCrashed
            | FailureKind::DiskUnavailable
            | FailureKind::Internal => Severity::High,
            FailureKind::RateLimited
            | FailureKind::Server
            | FailureKind::Connection
            | FailureKind::InvalidResponse
            | FailureKind::CircuitOpen
            | FailureKind::CheckFailed
            | FailureKind::Tool
            | FailureKind::Incomplete
            | FailureKind::Other => Severity::Medium,
            FailureKind::Cancelled | FailureKind::Skipped => Severity::Low,
        }
    }

    /// Whether the same thing, tried again later, may succeed.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            FailureKind::RateLimited
                | FailureKind::Server
                | FailureKind::Timeout
                | FailureKind::Connection
                | FailureKind::InvalidResponse
                | FailureKind::ProviderOutage
                | FailureKind::CircuitOpen
                | FailureKind::AgentUnavailable
                | FailureKind::ExecutorCrashed
                | FailureKind::DiskUnavailable
        )
    }

    /// Fatal failures stop the task: no recovery path can fix them without a person
    /// (credentials, permissions, configuration) or the user asked for the stop.
    pub fn is_fatal(self) -> bool {
        matches!(
            self,
            FailureKind::Auth
                | FailureKind::Permission
                | FailureKind::Refused
                | FailureKind::QuotaExceeded
                | FailureKind::InvalidConfig
                | FailureKind::Cancelled
        )
    }

    /// Trouble of the provider rather than of the work: the subtask waits for it and
    /// does not spend an attempt.
    pub fn is_provider_wait(self) -> bool {
        matches!(
            self,
            FailureKind::RateLimited | FailureKind::CircuitOpen | FailureKind::ProviderOutage
        )
    }
}

impl Failure {
    /// A failure of `kind` with the kind's defaults.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            code: String::new(),
            severity: kind.severity(),
            transient: kind.is_transient(),
            fatal: kind.is_fatal(),
            retry_after: None,
            message: message.into(),
            root_cause: None,
            scope: Scope::Unattributed,
        }
    }

    /// A typed error, classified by its type.
    pub fn of<E: Classify + fmt::Display + ?Sized>(error: &E) -> Failure {
        let kind = error.failure_kind();
        Failure {
            kind,
            code: error.kind().to_string(),
            severity: error.severity(),
            transient: error.is_transient(),
            fatal: kind.is_fatal(),
            retry_after: error.retry_after(),
            message: error.to_string(),
            root_cause: None,
            scope: match error.provider() {
                Some(provider) => Scope::Provider {
                    provider: provider.to_string(),
                },
                None => Scope::Unattributed,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_decide_fatal_transient_and_severity() {
        for kind in [
            FailureKind::Auth,
            FailureKind::Permission,
            FailureKind::InvalidConfig,
            FailureKind::Cancelled,
        ] {
            assert!(kind.is_fatal(), "{kind}");
            assert!(!kind.is_transient(), "{kind}");
        }
        for kind in [
            FailureKind::RateLimited,
            FailureKind::Server,
            FailureKind::Timeout,
            FailureKind::Connection,
            FailureKind::InvalidResponse,
        ] {
            assert!(kind.is_transient() && !kind.is_fatal(), "{kind}");
        }
        assert!(!FailureKind::NoProgress.is_fatal());
        assert!(!FailureKind::CheckFailed.is_fatal());
        assert_eq!(FailureKind::Auth.severity(), Severity::Critical);
        assert!(FailureKind::CircuitOpen.is_provider_wait());
        assert!(!FailureKind::Server.is_provider_wait());
    }
}
