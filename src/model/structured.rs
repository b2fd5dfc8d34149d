//! Structured calls: planning, review and fix calls that want one JSON object back.
//!
//! [`ask_json`] offers no tools, appends a one-line format instruction to the system
//! prompt, and extracts the object from the answer: bare, in a ```json (or plain ```)
//! fence, or surrounded by chatter (the first balanced top-level `{...}`, string-aware).
//! An answer that does not parse, has the wrong shape or fails validation is shown back
//! to the model once with a short correction; a second failure is
//! [`ModelError::InvalidStructuredOutput`]. Unknown fields are ignored.

use std::cell::RefCell;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::{ChatMessage, ModelError, ModelProvider, ModelRequest};

tokio::task_local! {
    static REPAIRS: RefCell<Vec<&'static str>>;
}

/// Runs `future` (structured calls) and returns, beside its output, the ids of the
/// repairs made to the answers it read (`checks::REPAIRS`), so that the caller can count
/// them on the task they were made for.
pub async fn noting_repairs<F: std::future::Future>(future: F) -> (F::Output, Vec<&'static str>) {
    REPAIRS
        .scope(RefCell::new(Vec::new()), async {
            let output = future.await;
            (output, REPAIRS.with(|r| r.take()))
        })
        .await
}

/// Notes a repair for [`noting_repairs`] (outside it, the log line is all).
fn repaired(id: &'static str) {
    tracing::info!(repair = id, "repaired the model's output");
    let _ = REPAIRS.try_with(|r| r.borrow_mut().push(id));
}

/// A type a structured call can return.
pub trait StructuredOutput: DeserializeOwned {
    /// What the model is told to produce: the shape, compactly.
    const INSTRUCTIONS: &'static str;

    /// Checks beyond the shape (ranges, references); the message goes to the model.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Asks `model` for a `T`, re-asking once when the answer is unusable.
pub async fn ask_json<T: StructuredOutput>(
    model: &dyn ModelProvider,
    request: &ModelRequest,
) -> Result<T, ModelError> {
    ask_json_streaming(model, request, &mut |_: &str| {}).await
}

/// [`ask_json`], streaming the model's text to `on_delta` (both answers, if re-asked).
pub async fn ask_json_streaming<T: StructuredOutput>(
    model: &dyn ModelProvider,
    request: &ModelRequest,
    on_delta: &mut (dyn FnMut(&str) + Send),
) -> Result<T, ModelError> {
    ask_json_or(model, request, on_delta, &|_: &str| None).await
}

/// [`ask_json_streaming`], with another reading of an answer that holds no usable JSON
/// (`otherwise`), tried on each answer before it is given up on.
pub async fn ask_json_or<T: StructuredOutput>(
    model: &dyn ModelProvider,
    request: &ModelRequest,
    on_delta: &mut (dyn FnMut(&str) + Send),
    otherwise: &(dyn Fn(&str) -> Option<T> + Sync),
) -> Result<T, ModelError> {
    let mut request = request.clone();
    request.tools.clear();
    request.system = if request.system.is_empty() {
        T::INSTRUCTIONS.to_string()
    } else {
        format!("{}\n\n{}", request.system, T::INSTRUCTIONS)
    };
    let first = model.complete(&request, &mut *on_delta).await?;
    let problem = match parse_answer::<T>(&first.text) {
        Ok(value) => return Ok(value),
        Err(problem) => match otherwise(&first.text) {
            Some(value) => return Ok(value),
            None => problem,
        },
    };
    tracing::info!(provider = model.name(), %problem, "structured answer unusable; asking again");
    request.messages.push(ChatMessage::Assistant {
        content: first.text,
        tool_calls: Vec::new(),
    });
    request.messages.push(ChatMessage::user(format!(
        "That answer could not be used: {problem}. Reply again with only the JSON object. {}",
        T::INSTRUCTIONS
    )));
    let second = model.complete(&request, on_delta).await?;
    let problem = match parse_answer::<T>(&second.text) {
        Ok(value) => return Ok(value),
        Err(problem) => problem,
    };
    otherwise(&second.text).ok_or_else(|| ModelError::InvalidStructuredOutput {
        message: format!(
            "{problem} (after one correction); the answer began: \"{}\"",
            super::http::excerpt(&second.text, None)
        ),
    })
}

/// Extracts, deserialises and validates a `T` from a model's answer.
pub fn parse_answer<T: StructuredOutput>(text: &str) -> Result<T, String> {
    let value = extract_json_object(text)?;
    let parsed: T = serde_json::from_value(value).map_err(|e| format!("wrong shape: {e}"))?;
    parsed.validate().map(|()| parsed)
}

/// The JSON object in `text`: from the first ```json fence that holds one, else any
/// other fence, else the first balanced top-level `{...}` that parses.
pub fn extract_json_object(text: &str) -> Result<Value, String> {
    let fences = fenced_blocks(text);
    let labelled = fences
        .iter()
        .filter(|(info, _)| info.eq_ignore_ascii_case("json"));
    let others = fences
        .iter()
        .filter(|(info, _)| !info.eq_ignore_ascii_case("json"));
    for (_, body) in labelled.chain(others) {
        if let Ok(value) = first_object(body) {
            return Ok(value);
        }
    }
    first_object(text)
}

/// The ``` fenced blocks of `text`, as (info string, body). An unclosed last fence runs
/// to the end of the text (answers get cut off).
fn fenced_blocks(text: &str) -> Vec<(&str, &str)> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let (info, body_start) = match after.find('\n') {
            Some(eol) => (after[..eol].trim(), &after[eol + 1..]),
            None => (after.trim(), ""),
        };
        match body_start.find("```") {
            Some(close) => {
                blocks.push((info, &body_start[..close]));
                rest = &body_start[close + 3..];
            }
            None => {
                blocks.push((info, body_start));
                break;
            }
        }
    }
    blocks
}

/// The first balanced top-level `{...}` of `text` that is valid JSON.
fn first_object(text: &str) -> Result<Value, String> {
    let mut from = 0;
    let mut last_error = None;
    while let Some(offset) = text[from..].find('{') {
        let start = from + offset;
        let Some(end) = balanced_end(&text[start..]) else {
            // A stray `{` in prose, or an answer cut off: look further in.
            last_error.get_or_insert_with(|| {
                "the JSON object is not closed (was the answer cut off?)".to_string()
            });
            from = start + 1;
            continue;
        };
        let candidate = &text[start..start + end];
        // Small models put raw newlines in strings and leave trailing commas: repaired
        // before the answer is given up on.
        let parsed = serde_json::from_str::<Value>(candidate).or_else(|e| {
            let mended = serde_json::from_str::<Value>(&repair_json(candidate)).map_err(|_| e);
            if mended.is_ok() {
                repaired(REPAIR_JSON);
            }
            mended
        });
        match parsed {
            Ok(value @ Value::Object(_)) => return Ok(value),
            Ok(_) => {}
            Err(e) => last_error = Some(format!("invalid JSON: {e}")),
        }
        from = start + end;
    }
    Err(last_error.unwrap_or_else(|| "no JSON object found in the answer".to_string()))
}

/// The repair of a JSON answer (`checks::REPAIRS`): raw line breaks in strings, trailing
/// commas, a file given in triple quotes.
pub const REPAIR_JSON: &str = "repair.json";

/// `text` with raw newlines, tabs and other control characters inside JSON strings
/// escaped, Python's triple-quoted strings (`"content": """…"""`, a small model's way
/// to give a whole file) made JSON strings, and commas right before a closing bracket
/// dropped. Valid JSON comes back as it was (apart from such commas, which valid JSON
/// has none of).
pub fn repair_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    let chars: Vec<char> = text.chars().collect();
    let mut skip_to = 0;
    for (i, &c) in chars.iter().enumerate() {
        if i < skip_to {
            continue;
        }
        if !in_string && chars[i..].starts_with(&['"', '"', '"']) {
            let body = i + 3;
            if let Some(len) = (body..chars.len().saturating_sub(2))
                .find(|&j| chars[j..].starts_with(&['"', '"', '"']))
                .map(|end| end - body)
            {
                let content: String = chars[body..body + len].iter().collect();
                out.push_str(&serde_json::to_string(&dedent_block(&content)).unwrap_or_default());
                skip_to = body + len + 3;
                continue;
            }
        }
        if in_string {
            // `"""` cannot be inside a JSON string: a docstring copied into one.
            if !escaped && chars[i..].starts_with(&['"', '"', '"']) {
                out.push_str("\\\"\\\"\\\"");
                skip_to = i + 3;
                continue;
            }
            match (escaped, c) {
                (true, _) => {
                    escaped = false;
                    out.push(c);
                }
                (false, '\\') => {
                    escaped = true;
                    out.push(c);
                }
                (false, '"') => {
                    in_string = false;
                    out.push(c);
                }
                (false, '\n') => out.push_str("\\n"),
                (false, '\r') => out.push_str("\\r"),
                (false, '\t') => out.push_str("\\t"),
                (false, c) if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                (false, c) => out.push(c),
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            ',' => {
                // A comma followed only by whitespace and a closing bracket is dropped.
                let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
                if !matches!(next, Some('}' | ']')) {
                    out.push(c);
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// A triple-quoted block as the model meant it: a block that opens on a line of its own
/// and is indented as a whole (`"""\n      def f():\n          …\n      """`) loses
/// its first line break and the indentation all its lines share, as Python's
/// `textwrap.dedent` would. A block starting on the quotes' line is kept as is.
fn dedent_block(content: &str) -> String {
    let Some(rest) = content
        .strip_prefix('\n')
        .or_else(|| content.strip_prefix("\r\n"))
    else {
        return content.to_string();
    };
    let shared = rest
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .min()
        .unwrap_or(0);
    let mut out: Vec<&str> = rest
        .split('\n')
        .map(|l| {
            if l.trim().is_empty() {
                ""
            } else {
                &l[shared..]
            }
        })
        .collect();
    // The closing quotes' own indentation is not a line of the file.
    if out.len() > 1 && out.last() == Some(&"") {
        out.pop();
        return format!("{}\n", out.join("\n"));
    }
    out.join("\n")
}

/// The length of the balanced `{...}` at the start of `text`, skipping braces in strings.
fn balanced_end(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, byte) in text.bytes().enumerate() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
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

/// `null` counts as an empty list.
fn null_as_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// A mid agent's split of a task.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub subtasks: Vec<PlannedSubtask>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedSubtask {
    pub description: String,
    #[serde(default)]
    pub assignee: Option<String>,
    /// Indexes (0-based) of subtasks that must finish first.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub depends_on: Vec<usize>,
}

impl StructuredOutput for Plan {
    const INSTRUCTIONS: &'static str = "Answer with one JSON object and nothing else: \
        {\"subtasks\": [{\"description\": \"...\", \"assignee\": \"optional\", \"dependsOn\": [0]}]} \
        where dependsOn lists the 0-based indexes of subtasks that must finish first.";

    fn validate(&self) -> Result<(), String> {
        if self.subtasks.is_empty() {
            return Err("the plan has no subtasks".to_string());
        }
        let count = self.subtasks.len();
        // Empty subtasks among real ones are dropped by the planner (`team/plan.rs`).
        if self
            .subtasks
            .iter()
            .all(|s| s.description.trim().is_empty())
        {
            return Err("every subtask has an empty description".to_string());
        }
        for (i, subtask) in self.subtasks.iter().enumerate() {
            for &dep in &subtask.depends_on {
                if dep >= count {
                    return Err(format!(
                        "subtask {i} depends on {dep}, but there are only {count} subtasks (indexes 0 to {})",
                        count - 1
                    ));
                }
                if dep == i {
                    return Err(format!("subtask {i} depends on itself"));
                }
            }
        }
        match find_cycle(&self.subtasks) {
            Some(i) => Err(format!("subtask {i} is part of a dependency cycle")),
            None => Ok(()),
        }
    }
}

/// A subtask on a dependency cycle, if any (indexes already checked to be in range).
fn find_cycle(subtasks: &[PlannedSubtask]) -> Option<usize> {
    // Kahn's algorithm: whatever cannot be scheduled is on or behind a cycle.
    let mut pending: Vec<usize> = subtasks.iter().map(|s| s.depends_on.len()).collect();
    let mut ready: Vec<usize> = (0..subtasks.len()).filter(|&i| pending[i] == 0).collect();
    let mut done = vec![false; subtasks.len()];
    while let Some(i) = ready.pop() {
        done[i] = true;
        for (j, s) in subtasks.iter().enumerate() {
            for _ in s.depends_on.iter().filter(|&&d| d == i) {
                pending[j] -= 1;
                if pending[j] == 0 {
                    ready.push(j);
                }
            }
        }
    }
    done.iter().position(|d| !d)
}

/// A top agent's verdict on a decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    #[serde(deserialize_with = "lenient_bool")]
    pub approve: bool,
    pub reason: String,
}

impl StructuredOutput for Review {
    const INSTRUCTIONS: &'static str = "Answer with one JSON object and nothing else: \
        {\"approve\": true or false, \"reason\": \"one or two sentences\"}";
}

/// `true`/`false`, or the strings small models sometimes write instead.
fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match Value::deserialize(d)? {
        Value::Bool(b) => Ok(b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" => Ok(true),
            "false" | "no" => Ok(false),
            _ => Err(serde::de::Error::custom(format!(
                "expected true or false, got \"{s}\""
            ))),
        },
        other => Err(serde::de::Error::custom(format!(
            "expected true or false, got {other}"
        ))),
    }
}

/// A fix after failing tests: whole new file contents, and how sure the model is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fix {
    #[serde(default, deserialize_with = "null_as_empty")]
    pub files: Vec<FileContent>,
    /// 0 to 100.
    #[serde(deserialize_with = "percentage")]
    pub confidence: u8,
    pub explanation: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileContent {
    pub path: String,
    pub content: String,
}

impl StructuredOutput for Fix {
    const INSTRUCTIONS: &'static str = "Answer with one JSON object and nothing else: \
        {\"files\": [{\"path\": \"a path as shown above\", \"content\": \"the whole new file\"}], \
        \"confidence\": 0-100, \"explanation\": \"...\"}";

    fn validate(&self) -> Result<(), String> {
        match self.files.iter().position(|f| f.path.trim().is_empty()) {
            Some(i) => Err(format!("file {i} has an empty path")),
            None => Ok(()),
        }
    }
}

/// A number from 0 to 100; fractions are rounded (models write 85.5).
fn percentage<'de, D: Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    let value = f64::deserialize(d)?;
    if (0.0..=100.0).contains(&value) {
        Ok(value.round() as u8)
    } else {
        Err(serde::de::Error::custom(format!(
            "confidence must be between 0 and 100, got {value}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_triple_quoted_file_becomes_a_json_string() {
        let answer = "```json\n{\"files\": [{\"path\": \"a.py\", \"content\": \"\"\"def f():\n    return \"x\"\n\"\"\"}], \"confidence\": 80, \"explanation\": \"x\"}\n```";
        let value = extract_json_object(answer).unwrap();
        assert_eq!(value["files"][0]["content"], "def f():\n    return \"x\"\n");
        // A docstring's quotes inside a JSON string: read as quotes.
        let docstring = "{\"files\": [{\"path\": \"a.py\", \"content\": \"def f():\\n    \"\"\"Doc.\"\"\"\\n    return 1\\n\"}]}";
        let value = extract_json_object(docstring).unwrap();
        assert_eq!(
            value["files"][0]["content"],
            "def f():\n    \"\"\"Doc.\"\"\"\n    return 1\n"
        );
        // Opened on a line of its own and indented as a whole: dedented.
        let indented = "{\"files\": [{\"path\": \"a.py\", \"content\": \"\"\"\n      def f():\n          return 1\n\n      x = f()\n      \"\"\"}]}";
        let value = extract_json_object(indented).unwrap();
        assert_eq!(
            value["files"][0]["content"],
            "def f():\n    return 1\n\nx = f()\n"
        );
        // Without its closing quotes it is left as it was (and stays invalid).
        assert_eq!(repair_json("{\"a\": \"\"\"x}"), "{\"a\": \"\"\"x}");
    }

    #[test]
    fn raw_newlines_and_trailing_commas_are_repaired() {
        let answer = "```json\n{\"files\": [{\"path\": \"a.py\", \"content\": \"def f():\n\treturn 1\n\"},], \"confidence\": 80, \"explanation\": \"x\",}\n```";
        let value = extract_json_object(answer).unwrap();
        assert_eq!(value["files"][0]["content"], "def f():\n\treturn 1\n");
        assert_eq!(value["confidence"], 80);
        assert_eq!(repair_json("{\"a\": [1, 2,]}"), "{\"a\": [1, 2]}");
        assert_eq!(repair_json("{\"a\": \"x,]\"}"), "{\"a\": \"x,]\"}");
    }

    #[test]
    fn extracts_bare_fenced_and_surrounded_objects() {
        assert_eq!(extract_json_object(r#"{"a": 1}"#), Ok(json!({"a": 1})));
        let fenced = "Here you go:\n```json\n{\"a\": \"}\"}\n```\nHope that helps!";
        assert_eq!(extract_json_object(fenced), Ok(json!({"a": "}"})));
        let plain = "```\n{\"a\": 2}\n```";
        assert_eq!(extract_json_object(plain), Ok(json!({"a": 2})));
        let chatter = "Sure! The {best} plan is {\"a\": {\"b\": \"x\\\"}\"}} and that's it.";
        assert_eq!(
            extract_json_object(chatter),
            Ok(json!({"a": {"b": "x\"}"}}))
        );
        let stray = "Use { with care: {\"a\": 4}";
        assert_eq!(extract_json_object(stray), Ok(json!({"a": 4})));
        let json_fence_wins = "```rust\nfn main() {}\n```\n```json\n{\"a\": 3}\n```";
        assert_eq!(extract_json_object(json_fence_wins), Ok(json!({"a": 3})));
    }

    #[test]
    fn reports_what_is_wrong() {
        assert!(
            extract_json_object("no json here")
                .unwrap_err()
                .contains("no JSON")
        );
        assert!(
            extract_json_object("{\"a\": [1, 2")
                .unwrap_err()
                .contains("not closed")
        );
        assert!(
            extract_json_object("{a: 1}")
                .unwrap_err()
                .contains("invalid JSON")
        );
    }

    #[test]
    fn plans_are_validated() {
        let ok = r#"{"subtasks": [{"description": "a"}, {"description": "b", "dependsOn": [0], "extra": 1}]}"#;
        let plan: Plan = parse_answer(ok).unwrap();
        assert_eq!(plan.subtasks[1].depends_on, vec![0]);
        let nulls = r#"{"subtasks": [{"description": "a", "assignee": null, "dependsOn": null}]}"#;
        assert!(parse_answer::<Plan>(nulls).is_ok());
        for (bad, expected) in [
            (r#"{"subtasks": []}"#, "no subtasks"),
            (
                r#"{"subtasks": [{"description": "a", "dependsOn": [1]}]}"#,
                "only 1",
            ),
            (
                r#"{"subtasks": [{"description": "a", "dependsOn": [0]}]}"#,
                "itself",
            ),
            (
                r#"{"subtasks": [{"description": "a", "dependsOn": [1]}, {"description": "b", "dependsOn": [0]}]}"#,
                "cycle",
            ),
            (r#"{"tasks": []}"#, "missing field `subtasks`"),
        ] {
            let err = parse_answer::<Plan>(bad).unwrap_err();
            assert!(err.contains(expected), "{bad}: {err}");
        }
    }

    #[test]
    fn reviews_and_fixes_are_lenient_where_models_are_sloppy() {
        let review: Review = parse_answer(r#"{"approve": "yes", "reason": "fine"}"#).unwrap();
        assert!(review.approve);
        assert!(parse_answer::<Review>(r#"{"approve": "maybe", "reason": "?"}"#).is_err());
        let fix: Fix =
            parse_answer(r#"{"files": [{"path": "a.rs", "content": ""}], "confidence": 85.6, "explanation": "x"}"#)
                .unwrap();
        assert_eq!(fix.confidence, 86);
        let err = parse_answer::<Fix>(r#"{"files": [], "confidence": 120, "explanation": "x"}"#)
            .unwrap_err();
        assert!(err.contains("between 0 and 100"), "{err}");
    }

    #[test]
    fn instructions_stay_compact() {
        for text in [Plan::INSTRUCTIONS, Review::INSTRUCTIONS, Fix::INSTRUCTIONS] {
            // About 4 characters a token: each stays well under 100 tokens.
            assert!(text.len() < 400, "{text}");
        }
    }
}
