//! `http_request {method, url, headers?, body?}`: one HTTP exchange with a timeout and
//! a cap on how much of the response is read.
//!
//! A response with status 400 or above is reported as a [`ToolError::HttpStatus`] so the
//! loop's failure tracking sees it (and 408/429/5xx classify as transient).
//!
//! Transient failures of idempotent requests (GET, HEAD, OPTIONS, PUT, DELETE: a 5xx,
//! 408, 429 or a connection error) are retried like model calls: the request says it is
//! [`Tool::repeatable`] and dispatch applies recovery's one call-level policy
//! (`recovery.call`, full jitter). POST and PATCH are never
//! repeated behind the model's back.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::{Args, CallContext, Tool, ToolError, ToolOutput};
use crate::model::ToolSpec;

const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// Limits of `http_request`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpSettings {
    /// The whole exchange, body included (the step timeout caps it further).
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// At most this much of a response body is read; the rest is not downloaded.
    pub max_response_bytes: usize,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_response_bytes: 64 * 1024,
        }
    }
}

/// The `http_request` tool.
pub struct HttpRequest {
    /// Building a client only fails when the TLS backend cannot start; that is reported
    /// on use instead of making every registry construction fallible.
    client: Result<reqwest::Client, String>,
    settings: HttpSettings,
}

impl HttpRequest {
    pub fn new(settings: HttpSettings) -> HttpRequest {
        let client = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .user_agent(concat!("conclave/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string());
        HttpRequest { client, settings }
    }
}

fn headers_from(map: &serde_json::Map<String, Value>) -> Result<HeaderMap, ToolError> {
    let mut headers = HeaderMap::new();
    for (name, value) in map {
        let value = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => {
                return Err(ToolError::invalid(format!(
                    "header `{name}` must have a string value"
                )));
            }
        };
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ToolError::invalid(format!("`{name}` is not a valid header name")))?;
        let value = HeaderValue::from_str(&value)
            .map_err(|_| ToolError::invalid(format!("header `{name}` has an invalid value")))?;
        headers.append(name, value);
    }
    Ok(headers)
}

fn transport_error(error: reqwest::Error, timeout: Duration) -> ToolError {
    if error.is_timeout() {
        ToolError::Timeout {
            timeout,
            output: String::new(),
        }
    } else {
        // reqwest's Display hides the cause ("error sending request"); add it.
        let mut message = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        ToolError::HttpTransport {
            message,
            connect: error.is_connect(),
        }
    }
}

#[async_trait]
impl Tool for HttpRequest {
    fn name(&self) -> &str {
        "http_request"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "http_request".into(),
            description: "Make an HTTP request. Returns status and body excerpt.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "method": { "type": "string", "enum": METHODS },
                    "url": { "type": "string" },
                    "headers": { "type": "object" },
                    "body": { "type": "string" }
                },
                "required": ["method", "url"]
            }),
        }
    }

    /// Idempotent methods may be sent again after a transient failure; a POST or PATCH
    /// is never repeated behind the model's back.
    fn repeatable(&self, args: &Args) -> bool {
        args.str("method").is_ok_and(|method| {
            matches!(
                method.trim().to_ascii_uppercase().as_str(),
                "GET" | "HEAD" | "OPTIONS" | "PUT" | "DELETE"
            )
        })
    }

    async fn call(&self, args: &Args, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
            done = self.exchange(args, ctx) => done,
        }
    }
}

impl HttpRequest {
    async fn exchange(&self, args: &Args, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
        let method = args.str("method")?.trim().to_ascii_uppercase();
        if !METHODS.contains(&method.as_str()) {
            return Err(ToolError::invalid(format!(
                "`method` must be one of {}",
                METHODS.join(", ")
            )));
        }
        let url_text = args.str("url")?;
        let url = reqwest::Url::parse(url_text)
            .map_err(|e| ToolError::invalid(format!("`url` is not a valid URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolError::invalid("`url` must be http:// or https://"));
        }
        let headers = match args.opt_object("headers")? {
            Some(map) => headers_from(&map)?,
            None => HeaderMap::new(),
        };
        let body = args.opt_str("body")?.map(str::to_string);
        let client = self
            .client
            .as_ref()
            .map_err(|message| ToolError::HttpTransport {
                message: format!("the HTTP client could not be created: {message}"),
                connect: false,
            })?;
        let mut timeout = self.settings.timeout;
        if let Some(step) = ctx.step_timeout {
            timeout = timeout.min(step);
        }

        let method_value = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|_| ToolError::invalid("`method` is not a valid HTTP method"))?;
        let mut request = client
            .request(method_value, url.clone())
            .headers(headers)
            .timeout(timeout);
        if let Some(body) = body {
            request = request.body(body);
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| transport_error(e, timeout))?;
        let status = response.status();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);

        // Read no more than the cap: a huge download must not cost memory or time.
        let cap = self.settings.max_response_bytes;
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| transport_error(e, timeout))?
        {
            let room = cap - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let mut excerpt = String::from_utf8_lossy(&body).into_owned();
        if truncated {
            excerpt.push_str(&format!("\n[response truncated at {cap} bytes]"));
        }
        tracing::debug!(%method, url = %url, status = status.as_u16(), bytes = body.len(), "http request done");

        if status.as_u16() >= 400 {
            return Err(ToolError::HttpStatus {
                status: status.as_u16(),
                body: excerpt,
            });
        }
        let mut content = format!("HTTP {status}\n");
        if let Some(content_type) = content_type {
            content.push_str(&format!("content-type: {content_type}\n"));
        }
        content.push('\n');
        content.push_str(&excerpt);
        Ok(ToolOutput {
            content,
            summary: format!("{method} {url} → {}", status.as_u16()),
            // A successful request that changes something on the server is progress.
            progress: !matches!(method.as_str(), "GET" | "HEAD" | "OPTIONS"),
            files_written: Vec::new(),
            repairs: Vec::new(),
        })
    }
}
