//! The part of ACP v1's schema that Conclave speaks, as serde types: the requests the
//! agent side answers, the `session/update` kinds it sends, and the requests it makes of
//! the client. Field names follow the official schema (`schema/v1/schema.json` of
//! `@agentclientprotocol/sdk`, whose client validates everything it receives in the
//! node tests). Unknown fields are ignored, so newer clients are understood.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The stable protocol version.
pub const PROTOCOL_VERSION: u16 = 1;

// ---- from the client ---------------------------------------------------------------

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequest {
    #[serde(default)]
    pub protocol_version: Option<Value>,
    #[serde(default)]
    pub client_capabilities: ClientCapabilities,
    /// Who the client is (`{ name, title?, version? }`), when it says.
    #[serde(default)]
    pub client_info: Option<ClientInfo>,
    #[serde(default, rename = "_meta")]
    pub meta: Option<Value>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    #[serde(default)]
    pub fs: FileSystemCapabilities,
    #[serde(default)]
    pub session: Option<ClientSessionCapabilities>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSystemCapabilities {
    #[serde(default)]
    pub read_text_file: bool,
    #[serde(default)]
    pub write_text_file: bool,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientSessionCapabilities {
    /// Present (an object) when the client shows `notice` updates.
    #[serde(default)]
    pub notices: Option<Value>,
}

/// An MCP server a client offers in `session/new` or `session/load`: stdio
/// (`{name, command, args, env: [{name, value}]}`, with no `type` or `"stdio"`) or
/// streamable HTTP (`{type: "http", name, url, headers: [{name, value}]}`). SSE is
/// declined (`mcpCapabilities.sse` is false). The error says why one is not used.
pub fn mcp_server(offer: &Value) -> Result<crate::tools::mcp::McpServerSpec, String> {
    use crate::tools::mcp::{McpServerSpec, McpTransport};
    let text = |key: &str| offer.get(key).and_then(Value::as_str).map(str::to_string);
    let name = text("name")
        .filter(|n| !n.trim().is_empty())
        .ok_or("an MCP server without a name")?;
    let pairs = |key: &str| -> Result<Vec<(String, String)>, String> {
        let Some(list) = offer.get(key) else {
            return Ok(Vec::new());
        };
        let list = list
            .as_array()
            .ok_or(format!("`{key}` of the MCP server {name:?} is not a list"))?;
        list.iter()
            .map(|pair| {
                let name = pair.get("name").and_then(Value::as_str);
                let value = pair.get("value").and_then(Value::as_str);
                match (name, value) {
                    (Some(name), Some(value)) => Ok((name.to_string(), value.to_string())),
                    _ => Err(format!("`{key}` entries are {{ name, value }}")),
                }
            })
            .collect()
    };
    let transport = match offer.get("type").and_then(Value::as_str) {
        None | Some("stdio") => McpTransport::Stdio {
            command: text("command")
                .filter(|c| !c.trim().is_empty())
                .ok_or(format!("the stdio MCP server {name:?} has no command"))?,
            args: offer
                .get("args")
                .and_then(Value::as_array)
                .map(|args| {
                    args.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default(),
            env: pairs("env")?,
        },
        Some("http") => McpTransport::Http {
            url: text("url")
                .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
                .ok_or(format!("the HTTP MCP server {name:?} has no http(s) url"))?,
            headers: pairs("headers")?,
        },
        Some("sse") => {
            return Err(format!(
                "the MCP server {name:?} speaks SSE, which Conclave does not (mcpCapabilities.sse is false)"
            ));
        }
        Some(other) => {
            return Err(format!(
                "the MCP server {name:?} has an unknown type {other:?}"
            ));
        }
    };
    Ok(McpServerSpec {
        name,
        transport,
        timeout: std::time::Duration::from_millis(crate::config::DEFAULT_MCP_TIMEOUT_MS),
        network: false,
        origin: "the ACP client".into(),
    })
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionRequest {
    pub cwd: String,
    #[serde(default)]
    pub mcp_servers: Option<Vec<Value>>,
    #[serde(default, rename = "_meta")]
    pub meta: Option<Value>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadSessionRequest {
    pub session_id: String,
    pub cwd: String,
    #[serde(default)]
    pub mcp_servers: Option<Vec<Value>>,
    #[serde(default, rename = "_meta")]
    pub meta: Option<Value>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSessionsRequest {
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionIdParams {
    pub session_id: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptRequest {
    pub session_id: String,
    pub prompt: Vec<ContentBlock>,
}

/// A piece of a prompt or a message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    ResourceLink {
        uri: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    Resource {
        resource: EmbeddedResource,
    },
    Image {
        #[serde(default, rename = "mimeType")]
        mime_type: Option<String>,
    },
    Audio {
        #[serde(default, rename = "mimeType")]
        mime_type: Option<String>,
    },
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> ContentBlock {
        ContentBlock::Text { text: text.into() }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    pub uri: String,
    /// Absent for binary (`blob`) resources, which Conclave does not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

// ---- to the client -----------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification {
    pub session_id: String,
    pub update: SessionUpdate,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum SessionUpdate {
    UserMessageChunk {
        content: ContentBlock,
    },
    AgentMessageChunk {
        content: ContentBlock,
    },
    ToolCall(ToolCall),
    ToolCallUpdate(ToolCallUpdate),
    Plan {
        entries: Vec<PlanEntry>,
    },
    UsageUpdate(UsageUpdate),
    Notice {
        severity: NoticeSeverity,
        title: String,
    },
    /// The commands the session takes (`/undo`).
    AvailableCommandsUpdate {
        #[serde(rename = "availableCommands")]
        available_commands: Vec<AvailableCommand>,
    },
}

/// A command a session takes, typed as `/<name> <input>` at the start of a prompt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AvailableCommand {
    pub name: String,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<AvailableCommandInput>,
}

/// The text typed after a command's name.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AvailableCommandInput {
    pub hint: String,
}

impl SessionUpdate {
    pub fn agent_text(text: impl Into<String>) -> SessionUpdate {
        SessionUpdate::AgentMessageChunk {
            content: ContentBlock::text(text),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Edit,
    Execute,
    Think,
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolCallContent {
    Content {
        content: ContentBlock,
    },
    Diff {
        path: String,
        #[serde(rename = "oldText")]
        old_text: Option<String>,
        #[serde(rename = "newText")]
        new_text: String,
    },
}

impl ToolCallContent {
    pub fn text(text: impl Into<String>) -> ToolCallContent {
        ToolCallContent::Content {
            content: ContentBlock::text(text),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolCallLocation {
    pub path: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub tool_call_id: String,
    pub title: String,
    pub kind: ToolKind,
    pub status: ToolCallStatus,
    pub content: Vec<ToolCallContent>,
    pub locations: Vec<ToolCallLocation>,
}

/// Only the fields that changed are sent; `content` and `locations` replace the
/// previous lists whole.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    pub tool_call_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolCallStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolCallContent>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<ToolCallLocation>>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanEntry {
    pub content: String,
    pub priority: PlanEntryPriority,
    pub status: PlanEntryStatus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanEntryPriority {
    Medium,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanEntryStatus {
    Pending,
    InProgress,
    Completed,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UsageUpdate {
    /// Tokens in context.
    pub used: u64,
    /// The context window.
    pub size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cost {
    pub amount: f64,
    pub currency: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeSeverity {
    Info,
    Warning,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    pub option_id: String,
    pub name: String,
    pub kind: PermissionOptionKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionOptionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionRequest {
    pub session_id: String,
    pub tool_call: ToolCallUpdate,
    pub options: Vec<PermissionOption>,
}

/// `{"outcome": {"outcome": "selected", "optionId": …}}` or `{"outcome": "cancelled"}`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct RequestPermissionResponse {
    pub outcome: PermissionOutcome,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PermissionOutcome {
    Cancelled,
    Selected {
        #[serde(rename = "optionId")]
        option_id: String,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteTextFileRequest {
    pub session_id: String,
    pub path: String,
    pub content: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadTextFileRequest {
    pub session_id: String,
    pub path: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub session_id: String,
    pub cwd: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn updates_carry_the_discriminators_of_the_schema() {
        let update = SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            tool_call_id: "s1".into(),
            status: Some(ToolCallStatus::InProgress),
            content: Some(vec![ToolCallContent::text("retry 2/3 in 4 s")]),
            ..ToolCallUpdate::default()
        });
        assert_eq!(
            serde_json::to_value(update).unwrap(),
            json!({ "sessionUpdate": "tool_call_update", "toolCallId": "s1", "status": "in_progress",
                    "content": [ { "type": "content", "content": { "type": "text", "text": "retry 2/3 in 4 s" } } ] })
        );
        let diff = ToolCallContent::Diff {
            path: "/w/a.txt".into(),
            old_text: None,
            new_text: "a\n".into(),
        };
        assert_eq!(
            serde_json::to_value(diff).unwrap(),
            json!({ "type": "diff", "path": "/w/a.txt", "oldText": null, "newText": "a\n" })
        );
    }

    #[test]
    fn prompts_and_permission_answers_are_read_as_the_schema_writes_them() {
        let prompt: PromptRequest = serde_json::from_value(json!({
            "sessionId": "s", "prompt": [
                { "type": "text", "text": "Fix it" },
                { "type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs" },
                { "type": "resource", "resource": { "uri": "file:///w/b.rs", "text": "fn b() {}" } },
            ]
        }))
        .unwrap();
        assert_eq!(prompt.prompt.len(), 3);
        let selected: RequestPermissionResponse = serde_json::from_value(
            json!({ "outcome": { "outcome": "selected", "optionId": "approve" } }),
        )
        .unwrap();
        assert_eq!(
            selected.outcome,
            PermissionOutcome::Selected {
                option_id: "approve".into()
            }
        );
        let cancelled: RequestPermissionResponse =
            serde_json::from_value(json!({ "outcome": { "outcome": "cancelled" } })).unwrap();
        assert_eq!(cancelled.outcome, PermissionOutcome::Cancelled);
    }
}
