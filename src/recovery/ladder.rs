//! The subtask-level ladder, as a pure state machine: given what happened to a subtask
//! so far ([`History`]) and what just happened ([`Outcome`]), it decides the next
//! [`Step`]. No runtime, no clock, no shared services: `team/` carries the steps out
//! (sends the attempt, sleeps, asks a peer, a supervisor, a person) and feeds back what
//! came of them.
//!
//! The policy, in order:
//! - cancellation stops the subtask at once;
//! - provider trouble (a rate limit, an open breaker, a transient failure of the
//!   provider that outlived call-level retry) is *waiting*, not failing: the subtask
//!   waits for the provider, costing no attempt, no takeover and no escalation, until
//!   `recovery.providerPatienceMs` of waiting is spent; then it ends as a
//!   `provider_outage` that a retry or a re-run resumes;
//! - a refusal (a person or the editor said no) ends the subtask at once: asking again
//!   would be working around the answer;
//! - fatal failures (auth, permission, quota, invalid configuration) are never retried:
//!   they go to the top layer and the person;
//! - anything else is retried on the same agent per severity (`recovery.severity`),
//!   then handed to an idle peer once, then escalated to the supervisor once (who may
//!   replace the agent, reassign or modify the subtask), then asked of the person (at
//!   most [`MAX_PERSON_ESCALATIONS`] times), then given up.
//!
//! Every wait uses the one backoff formula, [`super::backoff::backoff_delay`].

use std::collections::BTreeMap;
use std::time::Duration;

use super::backoff::backoff_delay;
use super::{Failure, FailureKind, Scope, Severity};
use crate::config::RecoveryConfig;

/// Person-level escalations of one subtask before the team gives up on it.
pub const MAX_PERSON_ESCALATIONS: u32 = 3;

/// The ladder's numbers, from `recovery` and the task's options.
#[derive(Clone, Debug, PartialEq)]
pub struct LadderPolicy {
    /// Retries on the same agent and the base delay, per severity.
    pub severity: crate::config::SeverityLadder,
    /// A task's `options.maxRetries`: replaces every non-critical retry limit.
    pub max_retries: Option<u32>,
    /// No wait is longer than this (a longer Retry-After is honoured, capped here).
    pub max_delay: Duration,
    /// How long a subtask waits for its provider, in all, before it ends.
    pub provider_patience: Duration,
    /// The first provider wait's ceiling; it doubles per wait up to `max_delay`.
    pub provider_base_delay: Duration,
}

impl LadderPolicy {
    pub fn from_config(recovery: &RecoveryConfig, max_retries: Option<u32>) -> LadderPolicy {
        LadderPolicy {
            severity: recovery.severity.clone(),
            max_retries,
            max_delay: Duration::from_millis(recovery.max_delay_ms),
            provider_patience: Duration::from_millis(recovery.provider_patience_ms),
            provider_base_delay: Duration::from_millis(recovery.call.base_delay_ms.max(1)),
        }
    }

    /// Retries on the same agent at `severity`. Critical failures are never retried.
    pub fn limit(&self, severity: Severity) -> u32 {
        if severity == Severity::Critical {
            return 0;
        }
        self.max_retries
            .unwrap_or(self.severity.step(severity).max_retries)
    }
}

/// What came of the last attempt or step.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The attempt failed.
    Failed(Failure),
    /// No idle peer took the subtask over.
    NoPeer,
    /// Someone else now has the subtask, or it was rewritten: a peer took it over, the
    /// supervisor replaced the agent, reassigned or modified it.
    HandedOver,
    /// The supervisor proposed a pause, or its proposal could not be carried out.
    SupervisorCouldNotHelp,
    /// The person answered (or did not: `None` is a withdrawn question).
    PersonAnswered(Option<PersonAnswer>),
}

/// A person's answer to an escalation, as far as the ladder cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PersonAnswer {
    /// Retry, reassign or modify: go on with a fresh retry budget.
    GoOn,
    Abort,
}

/// What to do next.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Attempt the subtask again now (after a handover or a person's answer).
    Attempt,
    /// Attempt again on the same agent after `delay`: retry `attempt` of `max`.
    Retry {
        attempt: u32,
        max: u32,
        delay: Duration,
    },
    /// The provider is in trouble: wait `delay`, then attempt again. Costs nothing.
    WaitForProvider {
        provider: String,
        /// What the provider did, in a few words ("connection refused at URL").
        reason: String,
        delay: Duration,
        /// Waited so far in this stretch of trouble, this wait excluded.
        waited: Duration,
        patience: Duration,
    },
    /// Ask an idle peer to take the subtask over.
    AskPeer,
    /// Escalate to the supervisor (the coordinating mid agent).
    EscalateToSupervisor,
    /// A fatal failure: tell the top layer, then ask the person.
    EscalateToTop,
    /// Ask the person what to do.
    AskPerson,
    /// Nothing more to try: the subtask fails with this failure (root cause included).
    GiveUp(Failure),
    /// The task was cancelled: stop without a verdict.
    Stop,
}

/// Everything the ladder remembers of one subtask.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// Retries used per severity since the last handover.
    retries: BTreeMap<Severity, u32>,
    peer_asked: bool,
    supervisor_asked: bool,
    person_asked: u32,
    /// Waits for the provider in the current stretch of trouble, and their total.
    provider_waits: u32,
    waited: Duration,
    first: Option<Failure>,
    last: Option<Failure>,
}

impl History {
    /// The first failure the subtask met: the root cause of whatever it ends with.
    pub fn first_failure(&self) -> Option<&Failure> {
        self.first.as_ref()
    }

    pub fn person_escalations(&self) -> u32 {
        self.person_asked
    }

    /// An escalation restored from the store was already asked of the person.
    pub fn restored_person_escalation(&mut self) {
        self.person_asked += 1;
    }

    /// The failure the subtask met last.
    pub fn last_failure(&self) -> Option<&Failure> {
        self.last.as_ref()
    }

    /// Whether anything went wrong so far.
    pub fn errored(&self) -> bool {
        self.first.is_some()
    }

    /// Total waited for the provider in the current stretch of trouble.
    pub fn waited_for_provider(&self) -> Duration {
        self.waited
    }

    /// `failure`, carrying the first failure as its root cause.
    fn rooted(&self, failure: &Failure) -> Failure {
        match &self.first {
            Some(first) => failure.clone().caused_by(first),
            None => failure.clone(),
        }
    }
}

/// The provider a failure is about, when it is the provider's trouble rather than the
/// work's: a rate limit, an open breaker, an outage, or a transient failure of a
/// provider that call-level retry could not get past.
pub fn provider_trouble(failure: &Failure) -> Option<&str> {
    let provider = match &failure.scope {
        Scope::Provider { provider } => provider.as_str(),
        _ if failure.kind.is_provider_wait() => "the model provider",
        _ => return None,
    };
    (failure.kind.is_provider_wait() || (failure.transient && !failure.fatal)).then_some(provider)
}

/// Decides the next step for a subtask. `unit` is a uniform random number in `[0, 1)`
/// for the backoff's jitter (the caller's randomness, so the ladder stays pure).
pub fn decide(policy: &LadderPolicy, history: &mut History, outcome: Outcome, unit: f64) -> Step {
    match outcome {
        Outcome::Failed(failure) => on_failure(policy, history, failure, unit),
        Outcome::HandedOver => {
            history.retries.clear();
            Step::Attempt
        }
        Outcome::NoPeer => climb(history),
        Outcome::SupervisorCouldNotHelp => climb(history),
        Outcome::PersonAnswered(Some(PersonAnswer::GoOn)) => {
            history.retries.clear();
            Step::Attempt
        }
        Outcome::PersonAnswered(_) => {
            let last = history.last.clone().unwrap_or_else(|| {
                Failure::new(FailureKind::Cancelled, "the person aborted the subtask")
            });
            Step::GiveUp(history.rooted(&last))
        }
    }
}

fn on_failure(policy: &LadderPolicy, history: &mut History, failure: Failure, unit: f64) -> Step {
    if failure.kind == FailureKind::Cancelled {
        return Step::Stop;
    }
    if history.first.is_none() {
        history.first = Some(failure.clone());
    }
    history.last = Some(failure.clone());

    if let Some(provider) = provider_trouble(&failure) {
        let provider = provider.to_string();
        let ceiling_delay = backoff_delay(
            policy.provider_base_delay,
            policy.max_delay,
            history.provider_waits,
            failure.retry_after,
            unit,
        );
        // Retry-After and an open breaker's remaining time are honoured even beyond
        // max_delay: calling earlier only meets another refusal.
        let delay = match failure.retry_after {
            Some(after) => ceiling_delay.max(after),
            None => ceiling_delay,
        };
        if history.waited + delay > policy.provider_patience {
            let waited = history.waited;
            let mut outage = Failure::new(
                FailureKind::ProviderOutage,
                // What was waited and why no more: the next wait would pass the
                // patience, which may end the waiting well before the patience itself.
                format!(
                    "{provider} did not recover: waited {}, and the next wait ({}) would pass the {} allowed (recovery.providerPatienceMs); last error: {}",
                    human_duration(waited),
                    human_duration(delay),
                    human_duration(policy.provider_patience),
                    failure.message
                ),
            )
            .with_scope(Scope::Provider {
                provider: provider.clone(),
            });
            outage = history.rooted(&outage);
            return Step::GiveUp(outage);
        }
        let waited = history.waited;
        history.provider_waits += 1;
        history.waited += delay;
        let reason =
            crate::records::failure::summarize(&what_it_did(&failure.message, &provider), 120);
        return Step::WaitForProvider {
            provider,
            reason,
            delay,
            waited,
            patience: policy.provider_patience,
        };
    }
    // The provider answered again (with something else): its trouble is over.
    history.provider_waits = 0;
    history.waited = Duration::ZERO;

    if failure.kind == FailureKind::Refused {
        return Step::GiveUp(history.rooted(&failure));
    }
    if failure.fatal {
        return if history.person_asked < MAX_PERSON_ESCALATIONS {
            history.person_asked += 1;
            Step::EscalateToTop
        } else {
            Step::GiveUp(history.rooted(&failure))
        };
    }
    let max = policy.limit(failure.severity);
    let used = history.retries.entry(failure.severity).or_insert(0);
    if *used < max {
        *used += 1;
        let attempt = *used;
        let base = Duration::from_millis(policy.severity.step(failure.severity).base_delay_ms);
        let delay = backoff_delay(base, policy.max_delay, attempt, failure.retry_after, unit);
        return Step::Retry {
            attempt,
            max,
            delay,
        };
    }
    climb(history)
}

/// A provider failure's message without the provider's name, which the wait names
/// already: "connection refused at URL", "answered HTTP 503: busy".
fn what_it_did(message: &str, provider: &str) -> String {
    message
        .replacen(&format!("could not reach {provider}: "), "", 1)
        .replacen(&format!("{provider} "), "", 1)
}

/// The next rung above retrying: a peer, the supervisor, the person, giving up.
fn climb(history: &mut History) -> Step {
    let critical = history
        .last
        .as_ref()
        .is_some_and(|f| f.severity == Severity::Critical);
    if !history.peer_asked && !critical {
        history.peer_asked = true;
        return Step::AskPeer;
    }
    if !history.supervisor_asked && !critical {
        history.supervisor_asked = true;
        return Step::EscalateToSupervisor;
    }
    if history.person_asked < MAX_PERSON_ESCALATIONS {
        history.person_asked += 1;
        return Step::AskPerson;
    }
    let last = history
        .last
        .clone()
        .unwrap_or_else(|| Failure::new(FailureKind::Other, "the subtask kept failing"));
    Step::GiveUp(history.rooted(&last))
}

/// "23 s", "4 min", "1 h 5 min": durations as people say them.
pub fn human_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 1.0 {
        format!("{} ms", d.as_millis())
    } else if secs < 90.0 {
        format!("{} s", secs.round() as u64)
    } else if secs < 5400.0 {
        format!("{} min", (secs / 60.0).round() as u64)
    } else {
        let minutes = (secs / 60.0).round() as u64;
        format!("{} h {} min", minutes / 60, minutes % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> LadderPolicy {
        LadderPolicy::from_config(&RecoveryConfig::default(), None)
    }

    fn work(kind: FailureKind, severity: Severity) -> Failure {
        Failure::new(kind, format!("{kind} failure")).with_severity(severity)
    }

    fn provider(kind: FailureKind) -> Failure {
        Failure::new(kind, "provider trouble").with_scope(Scope::Provider {
            provider: "openai".into(),
        })
    }

    /// Feeds `outcomes` in order and names the steps.
    fn run(policy: &LadderPolicy, outcomes: Vec<Outcome>) -> Vec<&'static str> {
        let mut history = History::default();
        outcomes
            .into_iter()
            .map(|o| name(&decide(policy, &mut history, o, 0.5)))
            .collect()
    }

    fn name(step: &Step) -> &'static str {
        match step {
            Step::Attempt => "attempt",
            Step::Retry { .. } => "retry",
            Step::WaitForProvider { .. } => "wait",
            Step::AskPeer => "peer",
            Step::EscalateToSupervisor => "supervisor",
            Step::EscalateToTop => "top",
            Step::AskPerson => "person",
            Step::GiveUp(_) => "give_up",
            Step::Stop => "stop",
        }
    }

    #[test]
    fn a_failing_subtask_climbs_retry_peer_supervisor_person_give_up() {
        let f = || Outcome::Failed(work(FailureKind::Tool, Severity::Medium));
        let go_on = || Outcome::PersonAnswered(Some(PersonAnswer::GoOn));
        let steps = run(
            &policy(),
            vec![
                f(),
                f(),
                f(),
                Outcome::NoPeer,
                Outcome::SupervisorCouldNotHelp,
                go_on(),
                f(),
                f(),
                f(),
                go_on(),
                f(),
                f(),
                f(),
                go_on(),
                f(),
                f(),
                f(),
            ],
        );
        // Two medium retries, a peer, the supervisor, then the person; after every
        // "go on" a fresh retry budget; after the third person escalation, give up.
        assert_eq!(
            steps,
            [
                "retry",
                "retry",
                "peer",
                "supervisor",
                "person",
                "attempt",
                "retry",
                "retry",
                "person",
                "attempt",
                "retry",
                "retry",
                "person",
                "attempt",
                "retry",
                "retry",
                "give_up",
            ]
        );
    }

    #[test]
    fn a_handover_gives_a_fresh_retry_budget_but_no_second_peer() {
        let f = || Outcome::Failed(work(FailureKind::Timeout, Severity::High));
        let steps = run(
            &policy(),
            vec![
                f(),
                f(),
                Outcome::HandedOver,
                f(),
                f(),
                Outcome::HandedOver,
                f(),
                f(),
            ],
        );
        assert_eq!(
            steps,
            [
                "retry",
                "peer",
                "attempt",
                "retry",
                "supervisor",
                "attempt",
                "retry",
                "person"
            ]
        );
    }

    #[test]
    fn provider_trouble_waits_without_spending_anything() {
        let mut history = History::default();
        let p = policy();
        for kind in [
            FailureKind::RateLimited,
            FailureKind::CircuitOpen,
            FailureKind::Server,
            FailureKind::Connection,
            FailureKind::Timeout,
        ] {
            let step = decide(&p, &mut history, Outcome::Failed(provider(kind)), 0.5);
            assert!(
                matches!(step, Step::WaitForProvider { ref provider, .. } if provider == "openai"),
                "{kind}: {step:?}"
            );
        }
        // No retry, takeover or escalation was used: the next work failure starts at retry 1.
        let step = decide(
            &p,
            &mut history,
            Outcome::Failed(work(FailureKind::Tool, Severity::Medium)),
            0.5,
        );
        assert!(matches!(step, Step::Retry { attempt: 1, .. }), "{step:?}");
    }

    #[test]
    fn retry_after_and_an_open_breaker_set_the_wait() {
        let mut history = History::default();
        let limited =
            provider(FailureKind::RateLimited).with_retry_after(Some(Duration::from_secs(23)));
        let step = decide(&policy(), &mut history, Outcome::Failed(limited), 0.0);
        assert!(
            matches!(step, Step::WaitForProvider { delay, .. } if delay == Duration::from_secs(23))
        );
        // Longer than maxDelayMs (60 s): still honoured, calling earlier is refused anyway.
        let open =
            provider(FailureKind::CircuitOpen).with_retry_after(Some(Duration::from_secs(90)));
        let step = decide(&policy(), &mut history, Outcome::Failed(open), 0.0);
        assert!(
            matches!(step, Step::WaitForProvider { delay, waited, .. } if delay == Duration::from_secs(90) && waited == Duration::from_secs(23))
        );
    }

    #[test]
    fn waiting_ends_after_the_patience_as_a_provider_outage_naming_the_provider() {
        let mut p = policy();
        p.provider_patience = Duration::from_secs(60);
        let mut history = History::default();
        let first = provider(FailureKind::Server);
        let mut steps = Vec::new();
        for _ in 0..20 {
            let open =
                provider(FailureKind::CircuitOpen).with_retry_after(Some(Duration::from_secs(25)));
            let failure = if steps.is_empty() {
                first.clone()
            } else {
                open
            };
            let step = decide(&p, &mut history, Outcome::Failed(failure), 0.5);
            let done = matches!(step, Step::GiveUp(_));
            steps.push(step);
            if done {
                break;
            }
        }
        let Some(Step::GiveUp(outage)) = steps.last() else {
            panic!("{steps:?}");
        };
        assert_eq!(outage.kind, FailureKind::ProviderOutage);
        assert!(
            outage.message.contains("openai did not recover: waited "),
            "{}",
            outage.message
        );
        assert!(
            outage
                .message
                .contains("the 60 s allowed (recovery.providerPatienceMs)"),
            "{}",
            outage.message
        );
        let waited = human_duration(history.waited_for_provider());
        assert!(
            outage.message.contains(&format!("waited {waited},")),
            "says what it waited, not the patience: {}",
            outage.message
        );
        assert_eq!(
            outage.scope,
            Scope::Provider {
                provider: "openai".into()
            }
        );
        assert_eq!(outage.root(), (FailureKind::Server, "provider trouble"));
        assert!(history.waited_for_provider() <= Duration::from_secs(60));
    }

    #[test]
    fn a_wait_says_what_the_provider_did_without_naming_it_twice() {
        assert_eq!(
            what_it_did(
                "could not reach local@h:1: connection refused at http://h:1",
                "local@h:1"
            ),
            "connection refused at http://h:1"
        );
        assert_eq!(
            what_it_did("local@h:1 answered HTTP 503: busy", "local@h:1"),
            "answered HTTP 503: busy"
        );
    }

    #[test]
    fn a_refusal_ends_the_subtask_without_asking_anyone_again() {
        let mut history = History::default();
        let refused = Failure::new(FailureKind::Refused, "the user declined the change");
        match decide(&policy(), &mut history, Outcome::Failed(refused), 0.5) {
            Step::GiveUp(failure) => assert_eq!(failure.kind, FailureKind::Refused),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fatal_failures_are_never_retried_and_go_to_the_top_and_the_person() {
        for kind in [
            FailureKind::Auth,
            FailureKind::Permission,
            FailureKind::InvalidConfig,
            FailureKind::QuotaExceeded,
        ] {
            let f = || Outcome::Failed(Failure::new(kind, "no"));
            let steps = run(
                &policy(),
                vec![
                    f(),
                    Outcome::PersonAnswered(Some(PersonAnswer::GoOn)),
                    f(),
                    Outcome::PersonAnswered(None),
                ],
            );
            assert_eq!(steps, ["top", "attempt", "top", "give_up"], "{kind}");
        }
        // An auth failure of the provider is not provider trouble to wait out.
        let auth = provider(FailureKind::Auth);
        assert_eq!(provider_trouble(&auth), None);
    }

    #[test]
    fn cancellation_stops_without_a_verdict() {
        assert_eq!(
            run(
                &policy(),
                vec![Outcome::Failed(Failure::new(FailureKind::Cancelled, "x"))]
            ),
            ["stop"]
        );
    }

    #[test]
    fn giving_up_reports_the_first_error_as_the_root_cause() {
        let mut p = policy();
        p.max_retries = Some(0);
        let mut history = History::default();
        let first = work(FailureKind::Tool, Severity::Medium);
        let later = work(FailureKind::Incomplete, Severity::Medium);
        decide(&p, &mut history, Outcome::Failed(first), 0.5);
        decide(&p, &mut history, Outcome::NoPeer, 0.5);
        decide(&p, &mut history, Outcome::SupervisorCouldNotHelp, 0.5);
        let step = decide(&p, &mut history, Outcome::PersonAnswered(None), 0.5);
        let Step::GiveUp(failure) = step else {
            panic!()
        };
        assert_eq!(failure.message, "tool failure");
        let _ = later;
        assert_eq!(failure.root(), (FailureKind::Tool, "tool failure"));
    }

    #[test]
    fn a_tasks_max_retries_replaces_the_limits_except_critical() {
        let p = LadderPolicy::from_config(&RecoveryConfig::default(), Some(5));
        assert_eq!(p.limit(Severity::High), 5);
        assert_eq!(p.limit(Severity::Critical), 0);
        let steps = run(
            &p,
            (0..6)
                .map(|_| Outcome::Failed(work(FailureKind::Tool, Severity::Low)))
                .collect(),
        );
        assert_eq!(steps, ["retry", "retry", "retry", "retry", "retry", "peer"]);
    }

    #[test]
    fn retry_delays_follow_the_one_backoff_formula() {
        let p = policy();
        let mut history = History::default();
        let step = decide(
            &p,
            &mut history,
            Outcome::Failed(work(FailureKind::Tool, Severity::Medium)),
            0.999,
        );
        let Step::Retry { delay, .. } = step else {
            panic!()
        };
        let base = Duration::from_millis(p.severity.medium.base_delay_ms);
        assert_eq!(delay, backoff_delay(base, p.max_delay, 1, None, 0.999));
        assert!(delay <= base * 2);
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human_duration(Duration::from_millis(23_400)), "23 s");
        assert_eq!(human_duration(Duration::from_secs(600)), "10 min");
        assert_eq!(human_duration(Duration::from_millis(250)), "250 ms");
    }
}
