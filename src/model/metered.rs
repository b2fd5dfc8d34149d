//! The usage meter's decorator: [`MeteredModel`] wraps a model and reports each answered
//! call's tokens to a [`UsageSink`], which may also hold calls back before they go out
//! (a task over its budget waits for the person). The runtime's `Meter` is the sink: it
//! prices the calls and adds them up per task, subtask and agent.
//!
//! The decorator learns whom a call is for from the [`UsageScope`] the caller runs in
//! ([`scoped`]): the executor scopes its calls to the subtask, the coordinator to the
//! task and its mid agent, a top agent's review to the task it reviews. The sink fills in
//! what a scope leaves out ([`UsageSink::attribute`]).
//!
//! Providers that report no usage (some local servers) are counted by an estimate (four
//! characters a token, [`estimate_tokens`]), and the figures say how many calls were
//! estimated. The figures themselves ([`TokenUsage`]) are records: a task's checkpoint
//! keeps them.

use std::sync::Arc;

use async_trait::async_trait;

use super::{DeltaSink, ModelError, ModelProvider, ModelRequest, ModelResponse};
use crate::ids::{AgentId, SubtaskId, TaskId};
pub use crate::records::TokenUsage;

/// Whom the model calls made inside [`scoped`] are for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsageScope {
    pub task: Option<TaskId>,
    pub subtask: Option<SubtaskId>,
    pub agent: Option<AgentId>,
}

tokio::task_local! {
    static SCOPE: UsageScope;
}

/// Runs `future` with its model calls counted for `scope`.
pub async fn scoped<F: std::future::Future>(scope: UsageScope, future: F) -> F::Output {
    SCOPE.scope(scope, future).await
}

/// The scope the current task runs in, if any.
pub fn current_scope() -> Option<UsageScope> {
    SCOPE.try_with(|scope| *scope).ok()
}

/// About four characters a token: the estimate used when a provider reports nothing.
pub fn estimate_tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

/// The characters of a request as the model sees them ([`ModelRequest::chars`]).
pub fn request_chars(request: &ModelRequest) -> usize {
    request.chars()
}

/// The tokens of one answer to `request`: as the provider reported them, or estimated
/// when it reported none (then `estimated_calls` is 1). Not priced: `cost_usd` is `None`.
pub fn usage_of(request: &ModelRequest, response: &ModelResponse) -> TokenUsage {
    let reported = response.usage;
    let (input, output, estimated) = if !reported.is_reported() {
        let output_chars = response.text.len()
            + response
                .tool_calls
                .iter()
                .map(|c| c.name.len() + c.arguments.to_string().len())
                .sum::<usize>();
        (
            estimate_tokens(request_chars(request)),
            estimate_tokens(output_chars),
            1,
        )
    } else {
        (reported.input_tokens, reported.output_tokens, 0)
    };
    TokenUsage {
        input_tokens: input,
        output_tokens: output,
        calls: 1,
        estimated_calls: estimated,
        cost_usd: None,
    }
}

/// Where a [`MeteredModel`] reports its calls.
#[async_trait]
pub trait UsageSink: Send + Sync {
    /// Whom a call made in `scope` is for, with what the scope leaves out filled in.
    fn attribute(&self, scope: UsageScope) -> UsageScope {
        scope
    }

    /// Before a call for `scope` (as [`UsageSink::attribute`] made it) goes out, and
    /// when the model is asked whether it is ready: waits while the call may not go out
    /// yet; an error refuses it.
    async fn admit(&self, scope: &UsageScope) -> Result<(), ModelError>;

    /// One answered call of the model `model` for `scope`: its tokens as reported or
    /// estimated ([`usage_of`]), not yet priced.
    fn record(&self, scope: &UsageScope, model: &str, usage: TokenUsage);
}

/// A model whose calls are admitted by and reported to a [`UsageSink`], as the model
/// `model`. Wrapped outside the retries, so a call counts once when it succeeds.
pub struct MeteredModel {
    sink: Arc<dyn UsageSink>,
    inner: Arc<dyn ModelProvider>,
    model: String,
}

impl MeteredModel {
    pub fn new(sink: Arc<dyn UsageSink>, inner: Arc<dyn ModelProvider>, model: String) -> Self {
        MeteredModel { sink, inner, model }
    }
}

#[async_trait]
impl ModelProvider for MeteredModel {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn ready(&self) -> Result<(), ModelError> {
        let scope = self.sink.attribute(current_scope().unwrap_or_default());
        self.sink.admit(&scope).await
    }

    async fn complete(
        &self,
        request: &ModelRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        let scope = self.sink.attribute(current_scope().unwrap_or_default());
        self.sink.admit(&scope).await?;
        let response = self.inner.complete(request, on_delta).await?;
        self.sink
            .record(&scope, &self.model, usage_of(request, &response));
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_scope_is_seen_inside_and_not_outside() {
        let task = TaskId::new();
        assert_eq!(current_scope(), None);
        let seen = scoped(
            UsageScope {
                task: Some(task),
                ..UsageScope::default()
            },
            async { current_scope() },
        )
        .await;
        assert_eq!(seen.and_then(|s| s.task), Some(task));
    }

    /// Answers every call with `text`, reporting `usage`.
    struct Fixed {
        text: &'static str,
        usage: super::super::Usage,
    }

    #[async_trait]
    impl ModelProvider for Fixed {
        fn name(&self) -> &str {
            "fixed"
        }

        async fn complete(
            &self,
            _request: &ModelRequest,
            _on_delta: DeltaSink<'_>,
        ) -> Result<ModelResponse, ModelError> {
            Ok(ModelResponse {
                text: self.text.to_string(),
                tool_calls: Vec::new(),
                usage: self.usage,
                stop_reason: super::super::StopReason::EndTurn,
            })
        }
    }

    /// Fills in the agent, refuses calls while `closed`, and keeps what is recorded.
    #[derive(Default)]
    struct Kept {
        agent: AgentId,
        closed: std::sync::atomic::AtomicBool,
        calls: std::sync::Mutex<Vec<(UsageScope, String, TokenUsage)>>,
    }

    #[async_trait]
    impl UsageSink for Kept {
        fn attribute(&self, scope: UsageScope) -> UsageScope {
            UsageScope {
                agent: Some(self.agent),
                ..scope
            }
        }

        async fn admit(&self, _scope: &UsageScope) -> Result<(), ModelError> {
            match self.closed.load(std::sync::atomic::Ordering::SeqCst) {
                true => Err(ModelError::Cancelled),
                false => Ok(()),
            }
        }

        fn record(&self, scope: &UsageScope, model: &str, usage: TokenUsage) {
            let mut calls = self.calls.lock().unwrap();
            calls.push((*scope, model.to_string(), usage));
        }
    }

    #[tokio::test]
    async fn each_answered_call_is_reported_to_the_sink_estimated_when_unreported() {
        let sink = Arc::new(Kept::default());
        let model = |usage| {
            MeteredModel::new(
                sink.clone(),
                Arc::new(Fixed {
                    text: "12345678",
                    usage,
                }),
                "m".to_string(),
            )
        };
        let request = ModelRequest {
            system: "s".repeat(40),
            ..ModelRequest::default()
        };
        let task = TaskId::new();
        let scope = UsageScope {
            task: Some(task),
            ..UsageScope::default()
        };
        let unreported = model(Default::default());
        scoped(scope, unreported.complete(&request, &mut |_| {}))
            .await
            .unwrap();
        let reported = model(super::super::Usage {
            input_tokens: 100,
            output_tokens: 7,
        });
        reported.complete(&request, &mut |_| {}).await.unwrap();
        sink.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(matches!(
            reported.complete(&request, &mut |_| {}).await,
            Err(ModelError::Cancelled)
        ));
        assert!(reported.ready().await.is_err());

        let calls = sink.calls.lock().unwrap();
        assert_eq!(calls.len(), 2, "a refused call is not reported");
        let (scope, name, usage) = &calls[0];
        assert_eq!((scope.task, scope.agent), (Some(task), Some(sink.agent)));
        assert_eq!(name, "m");
        assert_eq!(
            *usage,
            TokenUsage {
                input_tokens: 10,
                output_tokens: 2,
                calls: 1,
                estimated_calls: 1,
                cost_usd: None,
            }
        );
        let (scope, _, usage) = &calls[1];
        assert_eq!(scope.task, None);
        assert_eq!(
            (
                usage.input_tokens,
                usage.output_tokens,
                usage.estimated_calls
            ),
            (100, 7, 0)
        );
    }
}
