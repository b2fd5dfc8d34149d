//! Tool arguments as the model sent them, normalised and read with clear errors.
//!
//! Small models do not always send a JSON object: some send the object encoded as a
//! JSON string (sometimes twice), some send nothing for a tool without required
//! arguments, some send numbers as strings. [`Args::from_value`] takes all of that in its
//! stride; the typed getters name the field and the expected type when something is
//! missing or wrong.

use serde_json::{Map, Value};

use super::ToolError;

/// The arguments of one tool call, as a JSON object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args {
    map: Map<String, Value>,
}

impl Args {
    /// Normalises what the model sent into an object: an object as is, a string holding
    /// JSON (at most twice encoded) parsed, `null` or an empty string as no arguments.
    pub fn from_value(value: &Value) -> Result<Args, ToolError> {
        let mut current = value.clone();
        // Two rounds: an object encoded as a string, and that string encoded again.
        for _ in 0..3 {
            match current {
                Value::Object(map) => return Ok(Args { map }),
                Value::Null => return Ok(Args::default()),
                Value::String(text) if text.trim().is_empty() => return Ok(Args::default()),
                Value::String(text) => {
                    current = serde_json::from_str(strip_fence(&text)).map_err(|e| {
                        ToolError::invalid(format!(
                            "the arguments must be a JSON object; the string sent is not valid JSON ({e})"
                        ))
                    })?;
                }
                other => {
                    return Err(ToolError::invalid(format!(
                        "the arguments must be a JSON object, not {}",
                        type_name(&other)
                    )));
                }
            }
        }
        Err(ToolError::invalid(
            "the arguments must be a JSON object, not a string",
        ))
    }

    pub fn as_map(&self) -> &Map<String, Value> {
        &self.map
    }

    pub fn into_value(self) -> Value {
        Value::Object(self.map)
    }

    /// A required string argument.
    pub fn str(&self, key: &str) -> Result<&str, ToolError> {
        match self.map.get(key) {
            Some(Value::String(s)) => Ok(s),
            None | Some(Value::Null) => Err(ToolError::invalid(format!(
                "missing required argument `{key}` (string)"
            ))),
            Some(other) => Err(ToolError::invalid(format!(
                "argument `{key}` must be a string, not {}",
                type_name(other)
            ))),
        }
    }

    /// An optional string argument; `null` counts as absent.
    pub fn opt_str(&self, key: &str) -> Result<Option<&str>, ToolError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.str(key).map(Some),
        }
    }

    /// An optional non-negative integer; a numeric string such as `"5000"` is accepted.
    pub fn opt_u64(&self, key: &str) -> Result<Option<u64>, ToolError> {
        let wrong = |other: &Value| {
            ToolError::invalid(format!(
                "argument `{key}` must be a non-negative integer, not {}",
                type_name(other)
            ))
        };
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match (n.as_u64(), n.as_f64()) {
                (Some(v), _) => Ok(Some(v)),
                // 5000.0 is fine; -1 and 2.5 are not.
                (None, Some(f)) if f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64 => {
                    Ok(Some(f as u64))
                }
                _ => Err(wrong(&Value::Number(n.clone()))),
            },
            Some(Value::String(s)) => s
                .trim()
                .parse::<u64>()
                .map(Some)
                .map_err(|_| wrong(&Value::String(s.clone()))),
            Some(other) => Err(wrong(other)),
        }
    }

    /// An optional object argument (a JSON string holding an object is accepted).
    pub fn opt_object(&self, key: &str) -> Result<Option<Map<String, Value>>, ToolError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map.clone())),
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(Value::Object(map)) => Ok(Some(map)),
                _ => Err(ToolError::invalid(format!(
                    "argument `{key}` must be an object"
                ))),
            },
            Some(other) => Err(ToolError::invalid(format!(
                "argument `{key}` must be an object, not {}",
                type_name(other)
            ))),
        }
    }
}

/// Some models wrap string-encoded arguments in a ```json fence.
fn strip_fence(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .map(str::trim)
        .unwrap_or(trimmed)
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_and_encoded_objects_are_accepted() {
        let direct = Args::from_value(&json!({ "path": "a.rs" })).unwrap();
        let encoded = Args::from_value(&json!("{\"path\": \"a.rs\"}")).unwrap();
        let twice = Args::from_value(&json!("\"{\\\"path\\\": \\\"a.rs\\\"}\"")).unwrap();
        let fenced = Args::from_value(&json!("```json\n{\"path\": \"a.rs\"}\n```")).unwrap();
        for args in [&direct, &encoded, &twice, &fenced] {
            assert_eq!(args.str("path").unwrap(), "a.rs");
        }
        assert!(Args::from_value(&Value::Null).unwrap().as_map().is_empty());
    }

    #[test]
    fn bad_arguments_name_the_problem() {
        let err = Args::from_value(&json!([1, 2])).unwrap_err();
        assert!(err.to_string().contains("an array"), "{err}");
        let err = Args::from_value(&json!("not json")).unwrap_err();
        assert!(err.to_string().contains("not valid JSON"), "{err}");
        let args = Args::from_value(&json!({ "path": 3 })).unwrap();
        let err = args.str("path").unwrap_err();
        assert!(err.to_string().contains("`path` must be a string"), "{err}");
        let err = args.str("content").unwrap_err();
        assert!(
            err.to_string()
                .contains("missing required argument `content`"),
            "{err}"
        );
    }

    #[test]
    fn numbers_may_arrive_as_strings() {
        let args =
            Args::from_value(&json!({ "a": "5000", "b": 7, "c": 2.0, "d": -1, "e": "x" })).unwrap();
        assert_eq!(args.opt_u64("a").unwrap(), Some(5000));
        assert_eq!(args.opt_u64("b").unwrap(), Some(7));
        assert_eq!(args.opt_u64("c").unwrap(), Some(2));
        assert!(args.opt_u64("d").is_err());
        assert!(args.opt_u64("e").is_err());
        assert_eq!(args.opt_u64("missing").unwrap(), None);
    }
}
