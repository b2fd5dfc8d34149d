//! A small MCP server made with the official Rust SDK (`rmcp`), for Conclave's tests of
//! MCP tools. `mcp_echo` serves MCP on stdin/stdout; `mcp_echo --http` serves streamable
//! HTTP on 127.0.0.1 (a free port, printed as `listening on http://ADDR/mcp`).
//!
//! Its tools:
//! - `lookup {key}` (read-only): `key = value` from the `MCP_ECHO_VALUES` variable
//!   (`a=1,b=2`);
//! - `env {name}`: the value of one of its environment variables, or `(unset)`;
//! - `record {note}`: appends the note to `mcp-echo.log` in its folder (the workspace)
//!   and says so;
//! - `hang`: never answers;
//! - `crash`: exits with code 3 at once, saying so on stderr.
//!
//! Every call is logged to `mcp-echo-calls.log` in its folder first, so tests can count
//! the calls a server received; a stdio server writes its pid to `mcp-echo.pid` there,
//! so tests can see it stopped. With `MCP_ECHO_FAIL_START=1` it exits before speaking
//! MCP, as a server missing its configuration would.

use std::io::Write;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Clone)]
struct Echo;

fn schema(properties: Value, required: &[&str]) -> Arc<serde_json::Map<String, Value>> {
    let schema = json!({ "type": "object", "properties": properties, "required": required });
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

fn log_call(name: &str, arguments: &Value) {
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open("mcp-echo-calls.log")
    {
        let _ = writeln!(file, "{name} {arguments}");
    }
}

fn text(value: impl Into<String>) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(value)]))
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let key = json!({ "key": { "type": "string", "description": "The key to look up" } });
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new(
                "lookup",
                "Looks a key up in the echo table.",
                schema(key, &["key"]),
            )
            .annotate(ToolAnnotations::new().read_only(true)),
            Tool::new(
                "env",
                "Says the value of one of the server's environment variables.",
                schema(json!({ "name": { "type": "string" } }), &["name"]),
            ),
            Tool::new(
                "record",
                "Records a note in mcp-echo.log.",
                schema(json!({ "note": { "type": "string" } }), &["note"]),
            ),
            Tool::new("hang", "Never answers.", schema(json!({}), &[])),
            Tool::new("crash", "Makes the server exit.", schema(json!({}), &[])),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        log_call(&request.name, &arguments);
        let arg = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        match request.name.as_ref() {
            "lookup" => {
                let key = arg("key");
                let table = std::env::var("MCP_ECHO_VALUES").unwrap_or_default();
                let value = table.split(',').find_map(|pair| {
                    let (k, v) = pair.split_once('=')?;
                    (k.trim() == key).then(|| v.trim().to_string())
                });
                Ok(match value {
                    Some(value) => text(format!("{key} = {value}")),
                    None => {
                        CallToolResponse::Complete(CallToolResult::error(vec![ContentBlock::text(
                            format!("no key {key:?} in the echo table"),
                        )]))
                    }
                })
            }
            "env" => Ok(text(
                std::env::var(arg("name")).unwrap_or_else(|_| "(unset)".into()),
            )),
            "record" => {
                let note = arg("note");
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open("mcp-echo.log")
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                writeln!(file, "{note}")
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                Ok(text(format!("recorded: {note}")))
            }
            "hang" => {
                std::future::pending::<()>().await;
                unreachable!("pending never ends")
            }
            "crash" => {
                eprintln!("mcp_echo: crashing on purpose");
                std::process::exit(3);
            }
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var("MCP_ECHO_FAIL_START").as_deref() == Ok("1") {
        eprintln!("mcp_echo: MCP_ECHO_FAIL_START is set, so it will not start");
        std::process::exit(2);
    }
    if std::env::args().any(|a| a == "--http") {
        return serve_http().await;
    }
    let _ = std::fs::write("mcp-echo.pid", std::process::id().to_string());
    let running = Echo.serve(rmcp::transport::io::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

async fn serve_http() -> Result<(), Box<dyn std::error::Error>> {
    use hyper_util::rt::TokioIo;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let service = StreamableHttpService::new(
        || Ok(Echo),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        let service = service.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request| {
                let service = service.clone();
                async move { Ok::<_, std::convert::Infallible>(service.handle(request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), handler)
                .await;
        });
    }
}
