//! The streamable HTTP transport over the reqwest client Conclave already has (0.12,
//! rustls): rmcp's own reqwest binding needs reqwest 0.13, which would bring a second
//! HTTP stack and TLS setup into the build for this one use.
//!
//! This is the client side of MCP's streamable HTTP: every message is a POST answered
//! with JSON, an SSE stream or 202; the session id travels in `Mcp-Session-Id`; a GET
//! opens the server's own stream; a DELETE ends the session.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};

const SESSION_ID: &str = "Mcp-Session-Id";
const LAST_EVENT_ID: &str = "Last-Event-ID";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";
/// The most of an error answer's body kept for the message.
const MAX_ERROR_BODY: usize = 4096;

/// A reqwest 0.12 client speaking MCP's streamable HTTP.
#[derive(Clone)]
pub struct Client(reqwest::Client);

/// The transport to `url`, sending `headers` (already expanded) with every request.
pub fn transport(
    url: &str,
    headers: &[(String, String)],
) -> Result<StreamableHttpClientTransport<Client>, String> {
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let name = HeaderName::try_from(name.as_str())
            .map_err(|e| format!("the header name {name:?} is not valid: {e}"))?;
        let mut value = HeaderValue::try_from(value.as_str())
            // The value is never shown: it may be a token.
            .map_err(|_| format!("the value of the header {name} is not a valid header value"))?;
        value.set_sensitive(true);
        custom.insert(name, value);
    }
    let client = reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| format!("no HTTP client: {e}"))?;
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    Ok(StreamableHttpClientTransport::with_client(
        Client(client),
        config,
    ))
}

type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

fn media_type(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
}

fn with_headers(
    mut request: reqwest::RequestBuilder,
    session_id: Option<&str>,
    auth_header: Option<String>,
    custom_headers: HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    if let Some(session) = session_id {
        request = request.header(SESSION_ID, session);
    }
    if let Some(token) = auth_header {
        request = request.bearer_auth(token);
    }
    for (name, value) in custom_headers {
        request = request.header(name, value);
    }
    request
}

fn events(response: reqwest::Response) -> BoxStream<'static, Result<Sse, SseError>> {
    SseStream::from_bytes_stream(response.bytes_stream()).boxed()
}

async fn error_body(response: reqwest::Response) -> String {
    let mut body = response.text().await.unwrap_or_default();
    if body.len() > MAX_ERROR_BODY {
        let mut end = MAX_ERROR_BODY;
        while !body.is_char_boundary(end) {
            end -= 1;
        }
        body.truncate(end);
    }
    body
}

impl StreamableHttpClient for Client {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let request = with_headers(
            self.0
                .post(uri.as_ref())
                .header(ACCEPT, format!("{EVENT_STREAM}, {JSON}")),
            session_id.as_deref(),
            auth_header,
            custom_headers,
        );
        let response = request
            .json(&message)
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let session = response
            .headers()
            .get(SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        let kind = media_type(&response);
        let awaits_nothing = matches!(
            message,
            ClientJsonRpcMessage::Notification(_)
                | ClientJsonRpcMessage::Response(_)
                | ClientJsonRpcMessage::Error(_)
        );
        if !status.is_success() {
            let body = error_body(response).await;
            // A JSON-RPC error in an error answer is the server's word on the request.
            if let Ok(message @ ServerJsonRpcMessage::Error(_)) =
                serde_json::from_str::<ServerJsonRpcMessage>(&body)
            {
                return Ok(StreamableHttpPostResponse::Json(message, session));
            }
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status}: {}", crate::redact::text(body.trim())),
            )));
        }
        match kind.as_deref() {
            Some(EVENT_STREAM) => Ok(StreamableHttpPostResponse::Sse(events(response), session)),
            Some(JSON) => {
                let body = response
                    .bytes()
                    .await
                    .map_err(StreamableHttpError::Client)?;
                match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                    Ok(message) => Ok(StreamableHttpPostResponse::Json(message, session)),
                    Err(_) if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
                    Err(e) => Err(StreamableHttpError::Deserialize(e)),
                }
            }
            // Some servers answer a notification with an empty 200.
            _ if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
            _ => Err(StreamableHttpError::UnexpectedContentType(kind)),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        let request = with_headers(
            self.0.delete(uri.as_ref()),
            Some(&session_id),
            auth_header,
            custom_headers,
        );
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            // A server that keeps sessions until they time out.
            return Ok(());
        }
        response
            .error_for_status()
            .map(|_| ())
            .map_err(StreamableHttpError::Client)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let mut request = with_headers(
            self.0
                .get(uri.as_ref())
                .header(ACCEPT, format!("{EVENT_STREAM}, {JSON}")),
            session_id.as_deref(),
            auth_header,
            custom_headers,
        );
        if let Some(last) = last_event_id {
            request = request.header(LAST_EVENT_ID, last);
        }
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let response = response
            .error_for_status()
            .map_err(StreamableHttpError::Client)?;
        match media_type(&response).as_deref() {
            Some(EVENT_STREAM) => Ok(events(response)),
            other => Err(StreamableHttpError::UnexpectedContentType(
                other.map(String::from),
            )),
        }
    }
}
