//! Requests from the server to the editor, with a time limit and a clean way out.
//!
//! tower-lsp-server's `Client::send_request` hides the request id, so when the server stops
//! waiting (the time limit passed, or the question was answered elsewhere and the asking
//! task was aborted) the editor would never learn that its prompt is moot. Here the id is
//! ours: whenever the wait ends without an answer, the editor gets `$/cancelRequest` for it
//! and can take the prompt down.

use std::time::Duration;

use tower::Service;
use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::{Error, Id, Request};
use tower_lsp_server::ls_types::notification::Cancel;
use tower_lsp_server::ls_types::request::Request as LspRequest;
use tower_lsp_server::ls_types::{CancelParams, NumberOrString};

/// How a request to the editor ended.
#[derive(Debug)]
pub enum Reply<T> {
    /// The editor answered (an error answer included).
    Answered(Result<T, Error>),
    /// No answer within the time limit; the editor was sent `$/cancelRequest`.
    TimedOut,
    /// The connection is gone: no answer will come.
    Lost,
}

/// Sends `R` to the editor and waits at most `limit` for the answer. If the wait ends any
/// other way than with an answer, including this future being dropped, the editor is sent
/// `$/cancelRequest` for the request.
pub async fn request<R: LspRequest>(
    client: &Client,
    params: R::Params,
    limit: Duration,
) -> Reply<R::Result> {
    let id = client.next_request_id();
    let params = match serde_json::to_value(params) {
        Ok(params) => params,
        Err(e) => return Reply::Answered(Err(Error::invalid_params(e.to_string()))),
    };
    let request = Request::build(R::METHOD)
        .id(id.clone())
        .params(params)
        .finish();
    let mut unanswered = CancelOnDrop {
        client: client.clone(),
        id: Some(id),
    };
    let sent = client.clone().call(request);
    let Ok(sent) = tokio::time::timeout(limit, sent).await else {
        return Reply::TimedOut;
    };
    unanswered.id = None;
    let response = match sent {
        Ok(Some(response)) => response,
        // The connection is gone: nobody to cancel anything with.
        Ok(None) | Err(_) => return Reply::Lost,
    };
    let (_, result) = response.into_parts();
    Reply::Answered(result.and_then(|value| {
        serde_json::from_value(value).map_err(|e| Error::invalid_params(e.to_string()))
    }))
}

/// Sends `$/cancelRequest` for `id` when dropped, unless `id` was taken out first.
struct CancelOnDrop {
    client: Client,
    id: Option<Id>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let id = match id {
            Id::Number(n) => match i32::try_from(n) {
                Ok(n) => NumberOrString::Number(n),
                Err(_) => NumberOrString::String(n.to_string()),
            },
            Id::String(s) => NumberOrString::String(s),
            Id::Null => return,
        };
        let client = self.client.clone();
        // Drop cannot await; the runtime may already be going away, in which case there
        // is no editor left to tell.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                client
                    .send_notification::<Cancel>(CancelParams { id })
                    .await;
            });
        }
    }
}
