//! Tool calls written as text, the way small models on plain local servers write them.
//!
//! A server without native tool calling (or a model that ignores it) answers with the
//! call in its text instead of `tool_calls`. [`parse`] finds those calls, in order:
//! - `<tool_call>{…}</tool_call>` tags (Qwen, Hermes), the closing tag optional at the end;
//! - fenced blocks, ```` ```json ````, ```` ```tool_call ```` or bare ```` ``` ````;
//! - a bare JSON object anywhere in the text.
//!
//! A candidate is a call only when it names a known tool: `{"name", "arguments"}`, with
//! `parameters`, `args` or `input` accepted for `arguments` and `tool` or `tool_name`
//! for `name`, the OpenAI shape `{"function": {"name", "arguments"}}`, arguments given as
//! a JSON string, an array of calls, or `{"tool_calls": […]}`. So a ```` ```json ````
//! block holding a `package.json` is never taken for a call. JSON with raw newlines or
//! tabs inside strings, or trailing commas, is repaired before it is given up on.

use serde_json::{Map, Value};

use crate::model::ToolCall;
use crate::model::http::parse_tool_arguments;
use crate::model::structured::repair_json;

/// Bare-object scanning stops after this many candidate `{` positions, so a pathological
/// answer cannot make parsing quadratic in practice.
const MAX_BARE_CANDIDATES: usize = 256;

/// The tool calls written in `text`, in the order they appear. `is_tool` says whether a
/// name is a tool the model was offered. Ids are left empty for the caller to assign.
pub fn parse(text: &str, is_tool: &dyn Fn(&str) -> bool) -> Vec<ToolCall> {
    let mut found: Vec<(usize, ToolCall)> = Vec::new();
    // Byte ranges already read as a tag or a fence, so the bare scan skips them.
    let mut taken: Vec<(usize, usize)> = Vec::new();

    for (start, end, body) in tagged(text) {
        taken.push((start, end));
        for call in calls_in_json(body, is_tool) {
            found.push((start, call));
        }
    }
    for (start, end, body, is_json) in fenced(text) {
        if overlaps(&taken, start, end) {
            continue;
        }
        // Code in another language's fence is code, never a call.
        taken.push((start, end));
        if is_json {
            for call in calls_in_json(body, is_tool) {
                found.push((start, call));
            }
        }
    }
    let mut candidates = 0;
    let mut pos = 0;
    while let Some(offset) = text[pos..].find(['{', '[']) {
        let start = pos + offset;
        if let Some(&(_, end)) = taken.iter().find(|(s, e)| *s <= start && start < *e) {
            pos = end;
            continue;
        }
        candidates += 1;
        if candidates > MAX_BARE_CANDIDATES {
            break;
        }
        let Some(end) = json_end(text, start) else {
            pos = start + 1;
            continue;
        };
        let calls = calls_in_json(&text[start..end], is_tool);
        if calls.is_empty() {
            pos = start + 1;
            continue;
        }
        taken.push((start, end));
        found.extend(calls.into_iter().map(|c| (start, c)));
        pos = end;
    }
    // Stable: calls of one block keep their order.
    found.sort_by_key(|(start, _)| *start);
    found.into_iter().map(|(_, call)| call).collect()
}

fn overlaps(taken: &[(usize, usize)], start: usize, end: usize) -> bool {
    taken.iter().any(|&(s, e)| start < e && s < end)
}

/// `<tool_call>` … `</tool_call>` bodies: (start, end, body). An unclosed last tag runs
/// to the end of the text (models stop right after the call).
fn tagged(text: &str) -> Vec<(usize, usize, &str)> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(offset) = text[pos..].find(OPEN) {
        let start = pos + offset;
        let body_start = start + OPEN.len();
        let (body_end, end) = match text[body_start..].find(CLOSE) {
            Some(close) => (body_start + close, body_start + close + CLOSE.len()),
            None => (text.len(), text.len()),
        };
        out.push((start, end, &text[body_start..body_end]));
        pos = end;
    }
    out
}

/// Fenced code blocks: (start, end, body, whether the info string is empty, `json`,
/// `tool_call`, `tool_code` or similar). An unclosed last fence runs to the end of the text.
/// A fenced block of a model's answer: ```` ```info ```` … ```` ``` ````, the closing
/// fence optional at the end of the text.
pub(super) struct Fence<'a> {
    /// Byte range of the whole block, fences included.
    pub start: usize,
    pub end: usize,
    /// The info string, lower case (`json`, `python`, or empty).
    pub info: String,
    pub body: &'a str,
}

/// The fenced blocks of `text`, in order.
pub(super) fn fences(text: &str) -> Vec<Fence<'_>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(offset) = text[pos..].find("```") {
        let start = pos + offset;
        let info_start = start + 3;
        let line_end = text[info_start..]
            .find('\n')
            .map_or(text.len(), |n| info_start + n);
        let info = text[info_start..line_end].trim().to_ascii_lowercase();
        let body_start = (line_end + 1).min(text.len());
        let (body_end, end) = match text[body_start..].find("```") {
            Some(close) => (body_start + close, body_start + close + 3),
            None => (text.len(), text.len()),
        };
        out.push(Fence {
            start,
            end,
            info,
            body: &text[body_start..body_end],
        });
        pos = end.max(start + 3);
    }
    out
}

/// Fenced blocks that may hold a call: untagged, `json`, `tool…` or `function`.
fn fenced(text: &str) -> Vec<(usize, usize, &str, bool)> {
    fences(text)
        .into_iter()
        .map(|f| {
            let wanted = f.info.is_empty()
                || f.info.starts_with("json")
                || f.info.starts_with("tool")
                || f.info == "function";
            (f.start, f.end, f.body, wanted)
        })
        .collect()
}

/// Where the JSON object or array starting at `start` ends (exclusive), by brackets
/// outside strings; `None` when it never closes.
fn json_end(text: &str, start: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The calls in one JSON text (a tag's or fence's body, or a bare object).
fn calls_in_json(body: &str, is_tool: &dyn Fn(&str) -> bool) -> Vec<ToolCall> {
    let body = body.trim();
    let Some(first) = body.find(['{', '[']) else {
        return Vec::new();
    };
    let candidate = match json_end(body, first) {
        Some(end) => &body[first..end],
        None => &body[first..],
    };
    let Some(value) = parse_lenient(candidate) else {
        return Vec::new();
    };
    let mut calls = Vec::new();
    collect_calls(&value, is_tool, &mut calls, 0);
    calls
}

/// Parses JSON, or failing that the same text with raw control characters inside strings
/// escaped and trailing commas removed (what small models get wrong most).
fn parse_lenient(text: &str) -> Option<Value> {
    serde_json::from_str(text)
        .ok()
        .or_else(|| serde_json::from_str(&repair_json(text)).ok())
}

fn collect_calls(
    value: &Value,
    is_tool: &dyn Fn(&str) -> bool,
    calls: &mut Vec<ToolCall>,
    depth: usize,
) {
    if depth > 4 {
        return;
    }
    match value {
        Value::Array(items) => {
            for item in items {
                collect_calls(item, is_tool, calls, depth + 1);
            }
        }
        Value::Object(map) => {
            if let Some(call) = call_of(map, is_tool) {
                calls.push(call);
            } else if let Some(list) = map.get("tool_calls").or_else(|| map.get("calls")) {
                collect_calls(list, is_tool, calls, depth + 1);
            }
        }
        _ => {}
    }
}

/// One call object in any of the accepted shapes, when it names a known tool.
fn call_of(map: &Map<String, Value>, is_tool: &dyn Fn(&str) -> bool) -> Option<ToolCall> {
    // OpenAI's shape: {"type": "function", "function": {"name", "arguments"}}.
    if let Some(Value::Object(function)) = map.get("function") {
        return call_of(function, is_tool);
    }
    let name = ["name", "tool", "tool_name", "function"]
        .iter()
        .find_map(|key| map.get(*key).and_then(Value::as_str))?
        .trim();
    if !is_tool(name) {
        return None;
    }
    let raw = ["arguments", "parameters", "args", "input"]
        .iter()
        .find_map(|key| map.get(*key));
    let arguments = match raw {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(text)) => match parse_tool_arguments(text) {
            // A string that is not JSON: try the lenient parse before keeping it as text.
            Value::String(kept) => parse_lenient(&kept)
                .filter(Value::is_object)
                .unwrap_or(Value::String(kept)),
            parsed => parsed,
        },
        Some(other) => other.clone(),
    };
    Some(ToolCall {
        id: String::new(),
        name: name.to_string(),
        arguments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const TOOLS: &[&str] = &["file_read", "file_write", "file_edit", "bash", "glob"];

    fn known(name: &str) -> bool {
        TOOLS.contains(&name)
    }

    fn calls(text: &str) -> Vec<(String, Value)> {
        parse(text, &known)
            .into_iter()
            .map(|c| (c.name, c.arguments))
            .collect()
    }

    #[test]
    fn a_json_fence_with_name_and_arguments() {
        let text = "I will create the file.\n```json\n{\"name\": \"file_write\", \"arguments\": {\"path\": \"hello.py\", \"content\": \"print('hello world')\\n\"}}\n```\nDone.";
        assert_eq!(
            calls(text),
            vec![(
                "file_write".into(),
                json!({"path": "hello.py", "content": "print('hello world')\n"})
            )]
        );
    }

    #[test]
    fn tool_call_tags_closed_or_cut_off() {
        let text = "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*.py\"}}";
        assert_eq!(
            calls(text),
            vec![
                ("bash".into(), json!({"command": "ls"})),
                ("glob".into(), json!({"pattern": "*.py"})),
            ]
        );
    }

    #[test]
    fn a_bare_object_naming_a_known_tool() {
        let text = "Sure! {\"name\": \"file_read\", \"arguments\": {\"path\": \"a.py\"}} and then I'll see.";
        assert_eq!(
            calls(text),
            vec![("file_read".into(), json!({"path": "a.py"}))]
        );
    }

    #[test]
    fn parameters_for_arguments_and_string_arguments() {
        let text = r#"```json
{"name": "bash", "parameters": {"command": "python3 hello.py"}}
```
```json
{"name": "file_read", "arguments": "{\"path\": \"x.txt\"}"}
```"#;
        assert_eq!(
            calls(text),
            vec![
                ("bash".into(), json!({"command": "python3 hello.py"})),
                ("file_read".into(), json!({"path": "x.txt"})),
            ]
        );
    }

    #[test]
    fn several_calls_as_an_array_or_tool_calls_list_in_order() {
        let text = r#"First: ```json
[{"name": "file_write", "arguments": {"path": "a", "content": "1"}},
 {"name": "bash", "arguments": {"command": "cat a"}}]
```
then {"tool_calls": [{"type": "function", "function": {"name": "glob", "arguments": "{\"pattern\": \"*\"}"}}]}"#;
        assert_eq!(
            calls(text),
            vec![
                ("file_write".into(), json!({"path": "a", "content": "1"})),
                ("bash".into(), json!({"command": "cat a"})),
                ("glob".into(), json!({"pattern": "*"})),
            ]
        );
    }

    #[test]
    fn raw_newlines_in_strings_and_trailing_commas_are_repaired() {
        let text = "```json\n{\"name\": \"file_write\", \"arguments\": {\"path\": \"s.py\", \"content\": \"def f():\n\treturn 1\n\",},}\n```";
        assert_eq!(
            calls(text),
            vec![(
                "file_write".into(),
                json!({"path": "s.py", "content": "def f():\n\treturn 1\n"})
            )]
        );
    }

    #[test]
    fn json_that_is_not_a_call_is_left_alone() {
        let text = "Here is package.json:\n```json\n{\"name\": \"my-app\", \"version\": \"1.0.0\"}\n```\nand {\"a\": 1}, [1, 2], {\"name\": \"rm_rf\", \"arguments\": {}}.";
        assert!(calls(text).is_empty());
        assert!(calls("no calls at all").is_empty());
        assert!(calls("").is_empty());
    }

    #[test]
    fn a_fence_in_a_tag_is_read_once() {
        let text = "<tool_call>\n```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```\n</tool_call>";
        assert_eq!(calls(text), vec![("bash".into(), json!({"command": "ls"}))]);
    }

    #[test]
    fn other_spellings_of_the_shape() {
        let text = r#"{"tool": "glob", "args": {"pattern": "*.rs"}} {"tool_name": "bash", "input": {"command": "ls"}} {"function": "file_read", "arguments": {"path": "a"}} {"name": "bash"}"#;
        assert_eq!(
            calls(text),
            vec![
                ("glob".into(), json!({"pattern": "*.rs"})),
                ("bash".into(), json!({"command": "ls"})),
                ("file_read".into(), json!({"path": "a"})),
                ("bash".into(), json!({})),
            ]
        );
    }

    #[test]
    fn code_in_another_language_is_not_a_call() {
        let text =
            "```python\nprint({\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}})\n```";
        assert!(calls(text).is_empty());
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_text(text in "\\PC*") {
            let _ = parse(&text, &known);
        }

        #[test]
        fn never_panics_on_json_ish_text(text in "[{}\\[\\]\"\\\\,:` a-z<>/\n\t]{0,200}") {
            let _ = parse(&text, &known);
        }

        #[test]
        fn finds_a_call_whatever_surrounds_it(
            before in "[^{}\\[\\]`<\"]{0,40}",
            after in "[^{}\\[\\]`<\"]{0,40}",
            command in "[a-z ]{1,20}",
        ) {
            let call = json!({"name": "bash", "arguments": {"command": command}});
            let text = format!("{before}{call}{after}");
            let found = calls(&text);
            prop_assert_eq!(found, vec![("bash".to_string(), json!({"command": command}))]);
        }
    }
}
