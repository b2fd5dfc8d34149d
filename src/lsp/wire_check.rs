//! The wire contract kept in four places, checked against each other: the Rust types the
//! server serializes, `docs/protocol.md`, the VS Code extension's `lsp_ext.ts` and the
//! Neovim plugin's handlers. Each is written by hand; this fails when one of them names a
//! method the others do not, or when a TypeScript interface and the Rust struct of the
//! same shape disagree on a field.
//!
//! The Rust side is read from the source (structs with their serde attributes), as
//! rust-analyzer's tidy test reads its own: no build of the editors is needed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn rust_sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("source");
            out.push((path.display().to_string(), text));
        }
    }
}

/// A struct's JSON fields as serde writes them: `Some` names, and the types it flattens.
#[derive(Debug, Default)]
struct RustShape {
    fields: BTreeSet<String>,
    flattened: Vec<String>,
    file: String,
}

fn camel(name: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Every `pub struct` with named fields in `src/`, by name.
fn rust_shapes() -> BTreeMap<String, Vec<RustShape>> {
    let mut sources = Vec::new();
    rust_sources(&repo().join("src"), &mut sources);
    let item = Regex::new(r"(?ms)((?:^[ \t]*(?:#\[[^\n]*\]|///[^\n]*)\n)*)^pub struct (\w+)(?:<[^>\n]*>)? \{\n(.*?)\n\}").unwrap();
    let field = Regex::new(r"^    pub (\w+):").unwrap();
    let rename = Regex::new(r#"rename = "([^"]+)""#).unwrap();
    let skip = Regex::new(r"\bskip\b[^_]|\bskip\)|\bskip,").unwrap();
    let flattened_type = Regex::new(r"^    pub \w+:\s*([\w:]+)").unwrap();
    let mut shapes: BTreeMap<String, Vec<RustShape>> = BTreeMap::new();
    for (file, text) in &sources {
        for item in item.captures_iter(text) {
            let camel_case = item[1].contains(r#"rename_all = "camelCase""#);
            let mut shape = RustShape {
                file: file.clone(),
                ..RustShape::default()
            };
            let mut attributes = String::new();
            for line in item[3].lines() {
                let trimmed = line.trim();
                if trimmed.starts_with("#[")
                    || (!attributes.is_empty()
                        && !trimmed.starts_with("pub ")
                        && !trimmed.starts_with("//"))
                {
                    attributes.push_str(trimmed);
                    continue;
                }
                let Some(name) = field.captures(line) else {
                    continue;
                };
                let attrs = std::mem::take(&mut attributes);
                if attrs.contains("serde(") && skip.is_match(&attrs) {
                    continue;
                }
                if attrs.contains("flatten") {
                    let ty = &flattened_type.captures(line).expect("a type")[1];
                    shape
                        .flattened
                        .push(ty.rsplit("::").next().unwrap_or(ty).to_string());
                    continue;
                }
                let json = match rename.captures(&attrs) {
                    Some(renamed) => renamed[1].to_string(),
                    None if camel_case => camel(&name[1]),
                    None => name[1].to_string(),
                };
                shape.fields.insert(json);
            }
            shapes.entry(item[2].to_string()).or_default().push(shape);
        }
    }
    shapes
}

/// The fields of `name` with what it flattens; `None` when it flattens something that is
/// not a plain struct (a tagged enum), whose fields are not all known here.
fn rust_fields(shapes: &BTreeMap<String, Vec<RustShape>>, name: &str) -> (BTreeSet<String>, bool) {
    let shape = &shapes[name][0];
    let mut fields = shape.fields.clone();
    let mut complete = true;
    for inner in &shape.flattened {
        if shapes.contains_key(inner) {
            let (more, whole) = rust_fields(shapes, inner);
            fields.extend(more);
            complete &= whole;
        } else {
            complete = false;
        }
    }
    (fields, complete)
}

/// `export interface`s of `lsp_ext.ts`: name → (what it extends, its fields).
fn ts_interfaces(text: &str) -> BTreeMap<String, (Vec<String>, BTreeSet<String>)> {
    let interface =
        Regex::new(r"(?ms)^export interface (\w+)(?: extends ([\w, ]+))? \{\n(.*?)\n\}").unwrap();
    let field = Regex::new(r"(?m)^  (\w+)\??:").unwrap();
    interface
        .captures_iter(text)
        .map(|c| {
            let extends = c
                .get(2)
                .map(|e| {
                    e.as_str()
                        .split(',')
                        .map(|s| s.trim().to_string())
                        .collect()
                })
                .unwrap_or_default();
            let fields = field
                .captures_iter(&c[3])
                .map(|f| f[1].to_string())
                .collect();
            (c[1].to_string(), (extends, fields))
        })
        .collect()
}

fn ts_fields(
    interfaces: &BTreeMap<String, (Vec<String>, BTreeSet<String>)>,
    name: &str,
) -> BTreeSet<String> {
    let (extends, fields) = &interfaces[name];
    let mut all = fields.clone();
    for parent in extends {
        all.extend(ts_fields(interfaces, parent));
    }
    all
}

fn methods(text: &str, pattern: &str) -> BTreeSet<String> {
    Regex::new(pattern)
        .unwrap()
        .captures_iter(text)
        .map(|c| c[1].to_string())
        .collect()
}

#[test]
fn every_method_is_in_the_server_the_docs_and_both_editors() {
    let server = [read("src/lsp/mod.rs"), read("src/lsp/protocol.rs")].concat();
    let server = methods(&server, r#""(conclave/\w+)""#);
    let docs = methods(&read("docs/protocol.md"), r"`(conclave/\w+)`");
    let vscode = methods(&read("editors/vscode/src/lsp_ext.ts"), r"'(conclave/\w+)'");
    let nvim = methods(
        &read("editors/nvim/lua/conclave/handlers.lua"),
        r"'(conclave/\w+)'",
    );
    assert!(
        server.len() >= 20,
        "the server's methods were not found: {server:?}"
    );
    let missing = |from: &BTreeSet<String>| server.difference(from).cloned().collect::<Vec<_>>();
    assert_eq!(
        missing(&docs),
        Vec::<String>::new(),
        "methods docs/protocol.md does not document"
    );
    assert_eq!(
        missing(&vscode),
        Vec::<String>::new(),
        "methods lsp_ext.ts does not declare"
    );
    let unknown: Vec<_> = vscode.difference(&server).collect();
    assert!(
        unknown.is_empty(),
        "lsp_ext.ts declares methods the server does not have: {unknown:?}"
    );
    // What the server sends on its own, every client must handle.
    let notifications = [
        "conclave/taskUpdated",
        "conclave/agentStatus",
        "conclave/whiteboardChanged",
        "conclave/approvalResolved",
        "conclave/recoveryStatus",
        "conclave/requestApproval",
    ];
    for method in notifications {
        assert!(
            server.contains(method),
            "{method} is no longer the server's"
        );
        assert!(
            nvim.contains(method),
            "the Neovim plugin does not handle {method}"
        );
    }
}

#[test]
fn the_typescript_shapes_have_the_fields_the_server_sends() {
    let shapes = rust_shapes();
    let interfaces = ts_interfaces(&read("editors/vscode/src/lsp_ext.ts"));
    // The same shape under another name on one side.
    let renamed = BTreeMap::from([
        ("ApprovalDiff", "FileDiff"),
        ("WhiteboardIdParams", "WhiteboardParams"),
    ]);
    let mut compared = Vec::new();
    let mut problems = Vec::new();
    for name in interfaces.keys() {
        let rust = renamed.get(name.as_str()).copied().unwrap_or(name);
        let Some(candidates) = shapes.get(rust) else {
            continue;
        };
        assert_eq!(
            candidates.len(),
            1,
            "{rust} is defined more than once: {:?}",
            candidates.iter().map(|c| &c.file).collect::<Vec<_>>()
        );
        let (rust_fields, complete) = rust_fields(&shapes, rust);
        let ts = ts_fields(&interfaces, name);
        let only_rust: Vec<_> = rust_fields.difference(&ts).collect();
        let only_ts: Vec<_> = ts.difference(&rust_fields).collect();
        if !only_rust.is_empty() || (complete && !only_ts.is_empty()) {
            problems.push(format!(
                "{name} (lsp_ext.ts) against {rust} ({}): only in Rust {only_rust:?}, only in TypeScript {only_ts:?}",
                candidates[0].file
            ));
        }
        compared.push(name.clone());
    }
    assert!(
        compared.len() >= 15,
        "too few shapes matched to mean anything: {compared:?}"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_reader_of_rust_shapes_knows_serde_names() {
    let shapes = rust_shapes();
    // Renamed, skipped and flattened fields, as serde writes them.
    let (detail, complete) = rust_fields(&shapes, "TaskDetail");
    assert!(complete);
    assert!(
        detail.contains("taskId") && detail.contains("filesWritten"),
        "{detail:?}"
    );
    assert!(
        !detail.contains("summary"),
        "a flattened field is its fields"
    );
    let (error, complete) = rust_fields(&shapes, "TaskError");
    assert!(
        !complete,
        "a flattened tagged enum is not known field by field"
    );
    assert!(error.contains("retryAfterMs"), "{error:?}");
}
