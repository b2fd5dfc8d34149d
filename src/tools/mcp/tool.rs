//! One MCP tool as the registry sees it: its spec for the model, the approval its calls
//! need, and its result as the text the model reads.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::cut;
use super::server::{McpServer, ToolDef};
use crate::config::CommandPolicy;
use crate::model::ToolSpec;
use crate::tools::bash::{ApprovalOutcome, ToolApprovalRequest};
use crate::tools::{Args, CallContext, Tool, ToolError, ToolOutput, truncate_text};

/// A tool of a connected server.
pub struct McpTool {
    server: Arc<McpServer>,
    def: Arc<ToolDef>,
}

impl McpTool {
    pub fn new(server: Arc<McpServer>, def: Arc<ToolDef>) -> McpTool {
        McpTool { server, def }
    }

    fn request(&self, args: &Args, ctx: &CallContext) -> ToolApprovalRequest {
        ToolApprovalRequest {
            tool: self.def.name.clone(),
            provider: self.server.spec().describe(),
            description: cut(&self.def.description, 300),
            arguments: args.clone().into_value(),
            read_only_hint: self.def.read_only_hint,
            subtask_id: ctx.subtask_id.clone(),
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.def.name
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.def.name.clone(),
            description: self.def.description.clone(),
            parameters: self.def.parameters.clone(),
        }
    }

    /// Under the commands policy, as a command: the server acts on the world where
    /// Conclave cannot see. Its read-only hint asks nothing less: `ask` asks for every
    /// command too. A refusal is final for this call in this task.
    async fn authorize(&self, args: &Args, ctx: &CallContext) -> Result<(), ToolError> {
        let denied = |reason: String| ToolError::ToolDenied {
            tool: self.def.name.clone(),
            reason,
        };
        let context = self.server.context();
        match context.policy {
            CommandPolicy::Auto => Ok(()),
            CommandPolicy::Deny => Err(denied(
                "MCP tools are calls the commands policy covers, and it is \"deny\" (approvals.commands)"
                    .into(),
            )),
            CommandPolicy::Ask => {
                let Some(approver) = &context.approver else {
                    return Err(denied(
                        "MCP tool calls need approval and no approver is connected".into(),
                    ));
                };
                let request = self.request(args, ctx);
                if let Some(reason) = approver.tool_refused_before(&request) {
                    return Err(denied(format!(
                        "this exact call was refused earlier in this task ({reason}); it is not proposed again"
                    )));
                }
                match approver.approve_tool(&request).await {
                    ApprovalOutcome::Approved => Ok(()),
                    ApprovalOutcome::Denied { reason } => {
                        approver.note_tool_refusal(&request, &reason);
                        Err(denied(format!("the person declined it ({reason})")))
                    }
                }
            }
        }
    }

    /// Only a call the server says cannot change anything twice is made again after a
    /// transient failure.
    fn repeatable(&self, _args: &Args) -> bool {
        self.def.read_only_hint || self.def.idempotent_hint
    }

    async fn call(&self, args: &Args, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
        let arguments = match args.clone().into_value() {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(ToolError::invalid(format!(
                    "the arguments must be an object, not {other}"
                )));
            }
        };
        let result = self
            .server
            .call(&self.def.remote, arguments, &ctx.cancel)
            .await?;
        let text = truncate_text(&render(&result), self.server.context().max_output_bytes);
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            return Err(ToolError::McpFailed {
                tool: self.def.name.clone(),
                message: text,
            });
        }
        Ok(ToolOutput {
            summary: format!(
                "{}: {}",
                self.def.name,
                text.lines().next().unwrap_or("(no output)")
            ),
            content: text,
            // A call that may have changed something counts as work done.
            progress: !self.def.read_only_hint,
            files_written: Vec::new(),
            repairs: Vec::new(),
        })
    }
}

/// A `tools/call` result as text: text blocks as they are, a text resource with its
/// address, anything binary (images, audio, blobs) as one line saying what it was, and
/// the structured result when there is no content.
pub fn render(result: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let field = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
        let size = |key: &str| field(key).len() * 3 / 4;
        match field("type") {
            "text" => parts.push(field("text").to_string()),
            "image" => parts.push(format!(
                "[an image ({}, about {} bytes), not shown]",
                field("mimeType"),
                size("data")
            )),
            "audio" => parts.push(format!(
                "[audio ({}, about {} bytes), not shown]",
                field("mimeType"),
                size("data")
            )),
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or_default();
                let get = |key: &str| resource.get(key).and_then(Value::as_str);
                let uri = get("uri").unwrap_or("?");
                match (get("text"), get("blob")) {
                    (Some(text), _) => parts.push(format!("[resource {uri}]\n{text}")),
                    (None, Some(blob)) => parts.push(format!(
                        "[resource {uri} ({}, about {} bytes of binary), not shown]",
                        get("mimeType").unwrap_or("binary"),
                        blob.len() * 3 / 4
                    )),
                    (None, None) => parts.push(format!("[resource {uri}]")),
                }
            }
            "resource_link" => {
                let name = field("name");
                parts.push(if name.is_empty() {
                    format!("[resource link {}]", field("uri"))
                } else {
                    format!("[resource link {} {name}]", field("uri"))
                });
            }
            other => parts.push(format!("[{other} content, not shown]")),
        }
    }
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent")
        && !structured.is_null()
    {
        return serde_json::to_string_pretty(structured).unwrap_or_default();
    }
    if parts.is_empty() {
        return "(no output)".into();
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::mcp::server::MAX_DESCRIPTION;
    use serde_json::json;

    #[test]
    fn results_become_text_with_binary_content_summarised() {
        let result = json!({
            "content": [
                { "type": "text", "text": "rows: 3" },
                { "type": "image", "mimeType": "image/png", "data": "AAAABBBB" },
                { "type": "resource", "resource": { "uri": "file:///a.txt", "text": "alpha" } },
                { "type": "resource", "resource": { "uri": "db://blob", "mimeType": "application/zip", "blob": "AAAA" } },
                { "type": "resource_link", "uri": "db://t/1", "name": "row 1" },
            ]
        });
        assert_eq!(
            render(&result),
            "rows: 3\n[an image (image/png, about 6 bytes), not shown]\n[resource file:///a.txt]\nalpha\n[resource db://blob (application/zip, about 3 bytes of binary), not shown]\n[resource link db://t/1 row 1]"
        );
        assert_eq!(
            render(&json!({ "content": [], "structuredContent": { "n": 1 } })),
            "{\n  \"n\": 1\n}"
        );
        assert_eq!(render(&json!({ "content": [] })), "(no output)");
    }

    #[test]
    fn a_listing_becomes_a_spec_the_providers_take() {
        let def = ToolDef::from_listing(
            "db",
            &json!({ "name": "run query", "description": "Runs SQL.", "inputSchema": {}, "annotations": { "readOnlyHint": true } }),
            &[],
        )
        .unwrap();
        assert_eq!(def.name, "mcp__db__run_query");
        assert_eq!(def.remote, "run query");
        assert_eq!(def.description, "Runs SQL. (a tool of the MCP server `db`)");
        assert_eq!(
            def.parameters,
            json!({ "type": "object", "properties": {} })
        );
        assert!(def.read_only_hint && !def.idempotent_hint);
        let taken = [Arc::new(def)];
        let twin = ToolDef::from_listing("db", &json!({ "name": "run/query" }), &taken).unwrap();
        assert_ne!(twin.name, taken[0].name);
        let long = "x".repeat(5000);
        let def =
            ToolDef::from_listing("db", &json!({ "name": "t", "description": long }), &[]).unwrap();
        assert!(def.description.len() < MAX_DESCRIPTION + 100);
        assert!(ToolDef::from_listing("db", &json!({ "description": "nameless" }), &[]).is_none());
    }
}
