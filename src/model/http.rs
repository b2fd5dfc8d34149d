//! What the HTTP providers share: API keys that never print, turning HTTP statuses,
//! error bodies and transport failures into classified [`ModelError`]s, `Retry-After`
//! parsing, and body excerpts scrubbed of anything that looks like a key.
//!
//! Classification reads types first (status, the provider's error `code`/`type`) and
//! words of the message only as a last resort, as DESIGN.md asks.

use std::fmt;
use std::time::{Duration, SystemTime};

use reqwest::header::{CONTENT_TYPE, HeaderMap, RETRY_AFTER};

use super::ModelError;

/// The longest body excerpt an error carries.
pub const EXCERPT_CHARS: usize = 300;

/// How much of an error body is read at most: enough for any JSON error object.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Connecting must not take longer than this, whatever the step timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An API key. It has no `Display`, its `Debug` prints nothing of the key, and the only
/// way to the text is [`ApiKey::expose`], used when setting the request header.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// Reads the key from the environment variable `var`; empty counts as missing.
    pub fn from_env(var: &str) -> Option<Self> {
        std::env::var(var)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .map(ApiKey)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// The HTTP client every provider uses: connect timeout, user agent, no overall timeout
/// (the step timeout lives in [`super::resilient::ResilientModel`]).
pub fn build_client() -> Result<reqwest::Client, ModelError> {
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("conclave/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ModelError::NotConfigured {
            message: format!("cannot create the HTTP client: {}", error_chain(&e)),
        })
}

/// Checks that `base_url` is an absolute http(s) URL and strips trailing slashes.
pub fn normalise_base_url(base_url: &str) -> Result<String, ModelError> {
    let trimmed = base_url.trim().trim_end_matches('/');
    match reqwest::Url::parse(trimmed) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => Ok(trimmed.to_string()),
        _ => Err(ModelError::NotConfigured {
            message: format!("llm.baseUrl `{trimmed}` is not an http(s) URL"),
        }),
    }
}

/// Whether the response is an SSE stream (servers may ignore `stream: true`).
pub fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"))
}

/// Whether a body sent without the SSE content type is an event stream all the same
/// (some local servers forget the header).
pub fn looks_like_event_stream(body: &[u8]) -> bool {
    let start = body.trim_ascii_start();
    [&b"data:"[..], b"event:", b":"]
        .iter()
        .any(|p| start.starts_with(p))
}

/// Maps a transport failure. `timeout` is the configured request timeout, if any;
/// without one, only the connect timeout can have fired.
pub fn from_reqwest(provider: &str, err: &reqwest::Error, timeout: Option<Duration>) -> ModelError {
    if err.is_timeout() {
        return ModelError::Timeout {
            provider: provider.to_string(),
            timeout: timeout.unwrap_or(CONNECT_TIMEOUT),
        };
    }
    // Connect failures, resets and bodies cut short are all "could not talk to it":
    // transient, worth another try. A refused connection says where, at once: the
    // server is not running there (the URL's origin only: no path, no query).
    let chain = error_chain(err);
    let message = match err.url().filter(|_| err.is_connect()) {
        Some(url) => {
            let origin = url.origin().ascii_serialization();
            if chain.to_ascii_lowercase().contains("refused") {
                format!("connection refused at {origin}")
            } else {
                format!("cannot connect to {origin}: {chain}")
            }
        }
        None => chain,
    };
    ModelError::Connection {
        provider: provider.to_string(),
        message,
    }
}

/// The error's message and its sources, without the URL.
fn error_chain(err: &reqwest::Error) -> String {
    let mut message = err.to_string();
    if let Some(url) = err.url() {
        message = message.replace(&format!(" ({url})"), "");
        message = message.replace(url.as_str(), "<url>");
    }
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

/// Reads a failed response's body (bounded) and classifies it.
pub async fn error_from_response(
    provider: &str,
    response: reqwest::Response,
    secret: Option<&ApiKey>,
) -> ModelError {
    let status = response.status().as_u16();
    let retry_after = parse_retry_after(response.headers(), SystemTime::now());
    let body = read_bounded(response, ERROR_BODY_LIMIT).await;
    let info = ErrorInfo::from_body(&body);
    classify(provider, status, &info, retry_after, &body, secret)
}

async fn read_bounded(mut response: reqwest::Response, limit: usize) -> String {
    let mut body = Vec::new();
    while body.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(limit);
    String::from_utf8_lossy(&body).into_owned()
}

/// The useful fields of a provider's JSON error object, whichever dialect it speaks:
/// OpenAI `{"error": {"message", "type", "code"}}`, Anthropic
/// `{"type": "error", "error": {"type", "message"}}`, Ollama `{"error": "text"}`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrorInfo {
    pub code: Option<String>,
    pub kind: Option<String>,
    pub message: Option<String>,
}

impl ErrorInfo {
    pub fn from_body(body: &str) -> Self {
        match serde_json::from_str::<serde_json::Value>(body) {
            Ok(value) => Self::from_value(&value),
            Err(_) => ErrorInfo::default(),
        }
    }

    pub fn from_value(value: &serde_json::Value) -> Self {
        let text = |v: Option<&serde_json::Value>| match v {
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(serde_json::Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        match value.get("error") {
            Some(serde_json::Value::String(message)) => ErrorInfo {
                message: Some(message.clone()),
                ..ErrorInfo::default()
            },
            Some(error) => ErrorInfo {
                code: text(error.get("code")),
                kind: text(error.get("type")),
                message: text(error.get("message")),
            },
            None => ErrorInfo {
                code: text(value.get("code")),
                kind: None,
                message: text(value.get("message")),
            },
        }
    }

    fn has(&self, names: &[&str]) -> bool {
        [&self.code, &self.kind]
            .into_iter()
            .flatten()
            .any(|v| names.iter().any(|n| v.eq_ignore_ascii_case(n)))
    }
}

fn mentions(text: &str, phrases: &[&str]) -> bool {
    let text = text.to_ascii_lowercase();
    phrases.iter().any(|p| text.contains(p))
}

const SPEND_CODES: &[&str] = &[
    "insufficient_quota",
    "billing_error",
    "billing_hard_limit_reached",
    "billing_not_active",
];
const SPEND_PHRASES: &[&str] = &["credit balance is too low", "exceeded your current quota"];
const CONTEXT_CODES: &[&str] = &[
    "context_length_exceeded",
    "request_too_large",
    // llama.cpp's server.
    "exceed_context_size_error",
];
const CONTEXT_PHRASES: &[&str] = &[
    "prompt is too long",
    "maximum context length",
    "context length",
    "context window",
    "context size",
];

/// Classifies a failed call from its status and error body.
pub fn classify(
    provider: &str,
    status: u16,
    info: &ErrorInfo,
    retry_after: Option<Duration>,
    body: &str,
    secret: Option<&ApiKey>,
) -> ModelError {
    let provider = provider.to_string();
    // The error's message, or the whole body when it is not a JSON error object.
    let message = info.message.as_deref().unwrap_or(body);
    let detail = || excerpt(message, secret);
    if status == 401 {
        return ModelError::Unauthorized { provider };
    }
    if status == 402 || info.has(SPEND_CODES) || (status < 500 && mentions(message, SPEND_PHRASES))
    {
        return ModelError::SpendLimit {
            provider,
            message: detail(),
        };
    }
    if status == 403 {
        return ModelError::Forbidden {
            provider,
            excerpt: detail(),
        };
    }
    if status == 429 {
        return ModelError::RateLimited {
            provider,
            retry_after,
        };
    }
    if matches!(status, 400 | 413)
        && (info.has(CONTEXT_CODES) || status == 413 || mentions(message, CONTEXT_PHRASES))
    {
        return ModelError::ContextOverflow {
            provider,
            message: detail(),
        };
    }
    ModelError::Http {
        provider,
        status,
        excerpt: excerpt(body, secret),
    }
}

/// The status an error reported inside a stream stands for, by its type or code.
pub fn status_for_stream_error(info: &ErrorInfo) -> u16 {
    let names = [&info.kind, &info.code];
    let name = names.into_iter().flatten().next().map(|s| s.as_str());
    match name {
        Some("rate_limit_error" | "rate_limit_exceeded" | "requests" | "tokens") => 429,
        Some("insufficient_quota") => 429,
        Some("authentication_error" | "invalid_api_key") => 401,
        Some("permission_error") => 403,
        Some("billing_error") => 402,
        Some("invalid_request_error" | "context_length_exceeded" | "exceed_context_size_error") => {
            400
        }
        Some("request_too_large") => 413,
        Some("overloaded_error") => 529,
        // Anything else reported mid-stream is the server's trouble.
        _ => 500,
    }
}

/// `Retry-After` as seconds or an HTTP date (relative to `now`), or OpenAI's
/// `retry-after-ms`. A date in the past means "now".
pub fn parse_retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let ms = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok());
    if let Some(delay) = ms.and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok()) {
        return Some(delay);
    }
    let value = header(RETRY_AFTER.as_str())?;
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A short, single-line, key-free excerpt of `text` for error messages.
pub fn excerpt(text: &str, secret: Option<&ApiKey>) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // Redact before cutting, so that half a key cannot survive the cut.
    let clean = redact(&collapsed, secret);
    match clean.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", &clean[..cut]),
        None => clean,
    }
}

/// Removes `secret` and anything shaped like an API key (`sk-…`, `Bearer …`) from `text`.
pub fn redact(text: &str, secret: Option<&ApiKey>) -> String {
    let mut out = match secret {
        Some(key) if !key.expose().is_empty() => text.replace(key.expose(), "[redacted]"),
        _ => text.to_string(),
    };
    for prefix in ["sk-", "Bearer "] {
        out = redact_tokens_after(&out, prefix);
    }
    out
}

/// Replaces each `prefix` followed by at least 8 key characters with `prefix[redacted]`.
fn redact_tokens_after(text: &str, prefix: &str) -> String {
    let is_key_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find(prefix) {
        let after = &rest[pos + prefix.len()..];
        let token_len = after.find(|c| !is_key_char(c)).unwrap_or(after.len());
        out.push_str(&rest[..pos + prefix.len()]);
        if token_len >= 8 {
            out.push_str("[redacted]");
        } else {
            out.push_str(&after[..token_len]);
        }
        rest = &after[token_len..];
    }
    out.push_str(rest);
    out
}

/// Tool-call arguments as the model sent them: parsed JSON when they parse (a JSON
/// string holding an object, as some models double-encode, is unwrapped), empty means
/// `{}`, and anything else is kept as a JSON string for the executor to report back.
pub fn parse_tool_arguments(raw: &str) -> serde_json::Value {
    let raw = raw.trim();
    if raw.is_empty() {
        return serde_json::Value::Object(serde_json::Map::new());
    }
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::String(inner)) => match serde_json::from_str(&inner) {
            Ok(object @ serde_json::Value::Object(_)) => object,
            _ => serde_json::Value::String(inner),
        },
        Ok(value) => value,
        Err(_) => serde_json::Value::String(raw.to_string()),
    }
}

/// How long a provider may stay silent. A slow model that is alive keeps sending bytes;
/// one that stalls stops: so a call is judged by its silences, not its length (the step
/// timeout stays as a ceiling). Before the first byte the server reads the prompt, which
/// takes longer the longer the prompt (a 3k-token prompt takes a minute on two cores),
/// so that allowance grows with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Silence {
    pub first_byte: Duration,
    pub first_byte_per_k_tokens: Duration,
    /// Between bytes, once the answer has begun.
    pub idle: Duration,
}

impl Silence {
    /// `recovery.firstByteTimeoutMs`, `firstBytePerKTokensMs` and `idleTimeoutMs`.
    pub fn from_config(recovery: &crate::config::RecoveryConfig) -> Silence {
        Silence {
            first_byte: Duration::from_millis(recovery.first_byte_timeout_ms),
            first_byte_per_k_tokens: Duration::from_millis(recovery.first_byte_per_k_tokens_ms),
            idle: Duration::from_millis(recovery.idle_timeout_ms),
        }
    }

    /// The wait allowed before the first byte of the answer to `request`.
    pub fn first_byte_for(&self, request: &super::ModelRequest) -> Duration {
        let chars = request.chars();
        // About four characters a token.
        let thousands = (chars / 4) as u32 / 1000;
        self.first_byte + self.first_byte_per_k_tokens * thousands
    }
}

/// What went wrong while bytes were awaited.
#[derive(Debug)]
pub enum StreamFault<E> {
    Transport(E),
    /// Nothing came for this long.
    Silent(Duration),
}

/// A byte stream that ends with [`StreamFault::Silent`] when it sends nothing for
/// `first` before its first chunk, or for `idle` between chunks.
pub struct Watched<S> {
    inner: S,
    idle: Duration,
    limit: Duration,
    quiet: std::pin::Pin<Box<tokio::time::Sleep>>,
    done: bool,
}

impl<S> Watched<S> {
    pub fn new(inner: S, first: Duration, idle: Duration) -> Watched<S> {
        Watched {
            inner,
            idle,
            limit: first,
            quiet: Box::pin(tokio::time::sleep(first)),
            done: false,
        }
    }
}

impl<S, E> futures_util::Stream for Watched<S>
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Unpin,
{
    type Item = Result<bytes::Bytes, StreamFault<E>>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::future::Future;
        use std::task::Poll;
        if self.done {
            return Poll::Ready(None);
        }
        match std::pin::Pin::new(&mut self.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                let idle = self.idle;
                self.limit = idle;
                self.quiet
                    .as_mut()
                    .reset(tokio::time::Instant::now() + idle);
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(StreamFault::Transport(e)))),
            Poll::Ready(None) => {
                self.done = true;
                Poll::Ready(None)
            }
            Poll::Pending => match self.quiet.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    self.done = true;
                    let limit = self.limit;
                    Poll::Ready(Some(Err(StreamFault::Silent(limit))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

/// How a provider reads an answer, streamed (SSE) or whole: what
/// [`send_and_read`] needs from it.
pub trait AnswerReader {
    /// Whether the request asked for a stream (servers that ignore it send JSON).
    fn stream_requested(&self) -> bool;

    /// Reads a streamed answer, forwarding text deltas.
    fn read_stream<S, E>(
        &self,
        bytes: S,
        on_delta: super::DeltaSink<'_>,
        map_err: impl Fn(E) -> ModelError,
    ) -> impl std::future::Future<Output = Result<super::ModelResponse, ModelError>>
    where
        S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Unpin;

    /// Reads a whole JSON answer.
    fn parse_body(&self, body: &[u8]) -> Result<super::ModelResponse, ModelError>;
}

/// Sends one request and reads its answer the way the server chose to give it: an error
/// status becomes a typed error (with the key redacted), an event stream is read as it
/// arrives, and a whole body is parsed — even an SSE body a server sent without the
/// event-stream content type.
pub async fn send_and_read<R: AnswerReader>(
    reader: &R,
    provider: &str,
    request: reqwest::RequestBuilder,
    timeout: Option<Duration>,
    secret: Option<&ApiKey>,
    silence: Option<(Duration, Duration)>,
    on_delta: super::DeltaSink<'_>,
) -> Result<super::ModelResponse, ModelError> {
    let request = match timeout {
        Some(timeout) => request.timeout(timeout),
        None => request,
    };
    let stalled = |silent: Duration, waiting: &'static str| ModelError::Stalled {
        provider: provider.to_string(),
        silent,
        waiting,
    };
    let started = tokio::time::Instant::now();
    let sent = request.send();
    let response = match silence {
        Some((first, _)) => tokio::time::timeout(first, sent)
            .await
            .map_err(|_| stalled(first, "before its answer began"))?,
        None => sent.await,
    }
    .map_err(|e| from_reqwest(provider, &e, timeout))?;
    if !response.status().is_success() {
        return Err(error_from_response(provider, response, secret).await);
    }
    if is_event_stream(response.headers()) {
        let Some((first, idle)) = silence else {
            return reader
                .read_stream(Box::pin(response.bytes_stream()), on_delta, |e| {
                    from_reqwest(provider, &e, timeout)
                })
                .await;
        };
        // Headers may come before the prompt is read: what is left of the first-byte
        // allowance covers the first chunk.
        let first = first.saturating_sub(started.elapsed()).max(idle);
        let watched = Watched::new(Box::pin(response.bytes_stream()), first, idle);
        return reader
            .read_stream(Box::pin(watched), on_delta, |fault| match fault {
                StreamFault::Transport(e) => from_reqwest(provider, &e, timeout),
                StreamFault::Silent(silent) => stalled(silent, "in the middle of its answer"),
            })
            .await;
    }
    let body = response
        .bytes()
        .await
        .map_err(|e| from_reqwest(provider, &e, timeout))?;
    if reader.stream_requested() && looks_like_event_stream(&body) {
        let chunk = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(body)]);
        return reader
            .read_stream(chunk, on_delta, |never| match never {})
            .await;
    }
    let answer = reader.parse_body(&body)?;
    if !answer.text.is_empty() {
        on_delta(&answer.text);
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn the_first_byte_allowance_grows_with_the_prompt() {
        let silence = Silence {
            first_byte: Duration::from_secs(60),
            first_byte_per_k_tokens: Duration::from_secs(30),
            idle: Duration::from_secs(60),
        };
        let short = crate::model::ModelRequest {
            messages: vec![crate::model::ChatMessage::user("Say hi")],
            ..Default::default()
        };
        assert_eq!(silence.first_byte_for(&short), Duration::from_secs(60));
        let long = crate::model::ModelRequest {
            messages: vec![crate::model::ChatMessage::user("x".repeat(12_000 * 4))],
            ..Default::default()
        };
        assert_eq!(
            silence.first_byte_for(&long),
            Duration::from_secs(60 + 12 * 30)
        );
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_as_seconds_date_or_ms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after", "7")]), now),
            Some(Duration::from_secs(7))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after", &later)]), now),
            Some(Duration::from_secs(30))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after", &earlier)]), now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse_retry_after(
                &headers(&[("retry-after-ms", "1500"), ("retry-after", "9")]),
                now
            ),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after", "soon")]), now),
            None
        );
        assert_eq!(parse_retry_after(&HeaderMap::new(), now), None);
    }

    fn classify_body(status: u16, body: &str) -> ModelError {
        classify("p", status, &ErrorInfo::from_body(body), None, body, None)
    }

    #[test]
    fn statuses_and_codes_map_to_variants() {
        assert!(matches!(
            classify_body(401, "{}"),
            ModelError::Unauthorized { .. }
        ));
        assert!(matches!(
            classify_body(403, "no"),
            ModelError::Forbidden { .. }
        ));
        assert!(matches!(
            classify_body(402, "{}"),
            ModelError::SpendLimit { .. }
        ));
        assert!(matches!(
            classify_body(429, "{}"),
            ModelError::RateLimited { .. }
        ));
        let quota = r#"{"error":{"message":"You exceeded","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        assert!(matches!(
            classify_body(429, quota),
            ModelError::SpendLimit { .. }
        ));
        let billing = r#"{"type":"error","error":{"type":"billing_error","message":"pay"}}"#;
        assert!(matches!(
            classify_body(400, billing),
            ModelError::SpendLimit { .. }
        ));
        let context = r#"{"error":{"message":"too long","code":"context_length_exceeded"}}"#;
        assert!(matches!(
            classify_body(400, context),
            ModelError::ContextOverflow { .. }
        ));
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert!(matches!(
            classify_body(400, anthropic),
            ModelError::ContextOverflow { .. }
        ));
        assert!(matches!(
            classify_body(400, "the request exceeds the available context size"),
            ModelError::ContextOverflow { .. }
        ));
        // llama.cpp's server, as measured (a 9,030-token prompt against an 8,192 window).
        let llama = r#"{"error":{"code":400,"message":"request (9030 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9030,"n_ctx":8192}}"#;
        let info = ErrorInfo::from_body(llama);
        assert!(info.has(CONTEXT_CODES));
        assert!(matches!(
            classify_body(400, llama),
            ModelError::ContextOverflow { .. }
        ));
        assert!(matches!(
            classify_body(400, r#"{"error":"bad field"}"#),
            ModelError::Http { status: 400, .. }
        ));
        assert!(matches!(
            classify_body(503, "down"),
            ModelError::Http { status: 503, .. }
        ));
    }

    #[test]
    fn excerpts_are_short_single_line_and_key_free() {
        let key = ApiKey::new("sk-proj-SECRETSECRETSECRET");
        let body = format!("bad key {}\n\n{}", key.expose(), "x".repeat(1000));
        let text = excerpt(&body, Some(&key));
        assert!(!text.contains("SECRET"));
        assert!(!text.contains('\n'));
        assert!(text.chars().count() <= EXCERPT_CHARS + 1);
        // Key-shaped values are removed even when they are not our key.
        assert_eq!(
            redact(
                "a sk-ant-abcdefghijk b Bearer 0123456789abcdef c sk-no",
                None
            ),
            "a sk-[redacted] b Bearer [redacted] c sk-no"
        );
        assert_eq!(format!("{key:?}"), "ApiKey([redacted])");
    }

    #[test]
    fn tool_arguments_are_parsed_or_kept_as_text() {
        use serde_json::json;
        assert_eq!(
            parse_tool_arguments(r#"{"path":"a"}"#),
            json!({"path": "a"})
        );
        assert_eq!(parse_tool_arguments("  "), json!({}));
        assert_eq!(
            parse_tool_arguments(r#""{\"path\":\"a\"}""#),
            json!({"path": "a"})
        );
        assert_eq!(parse_tool_arguments("{path: a"), json!("{path: a"));
    }

    #[test]
    fn stream_errors_get_the_status_of_their_type() {
        let info = ErrorInfo::from_body(r#"{"type":"error","error":{"type":"overloaded_error"}}"#);
        assert_eq!(status_for_stream_error(&info), 529);
        let info = ErrorInfo::from_body(r#"{"error":{"type":"rate_limit_exceeded"}}"#);
        assert_eq!(status_for_stream_error(&info), 429);
        assert_eq!(status_for_stream_error(&ErrorInfo::default()), 500);
    }
}
