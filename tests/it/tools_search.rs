//! grep and glob over a real tree with a .gitignore (and no .git directory).

use std::path::Path;
use std::sync::Arc;

use conclave::model::ToolCall;
use conclave::tools::search::SearchSettings;
use conclave::tools::{
    CallContext, DiskWriter, Sandbox, ToolError, ToolOutput, ToolRegistry, ToolSettings,
};
use serde_json::{Value, json};

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (path, content) in [
        (".gitignore", "target/\n*.log\n"),
        ("src/main.rs", "fn main() {\n    needle();\n}\n"),
        ("src/lib.rs", "pub fn needle() {}\n"),
        ("src/nested/deep.rs", "// needle in deep\n"),
        ("README.md", "a needle in the readme\n"),
        ("target/debug/out.rs", "needle in build output\n"),
        ("app.log", "needle in a log\n"),
    ] {
        let full = root.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
    dir
}

fn registry(root: &Path, settings: ToolSettings) -> ToolRegistry {
    let sandbox = Sandbox::new(root).unwrap();
    let writer = Arc::new(DiskWriter::new(sandbox.clone()));
    ToolRegistry::new(sandbox, writer, settings, None)
}

async fn run(tools: &ToolRegistry, name: &str, arguments: Value) -> Result<ToolOutput, ToolError> {
    let call = ToolCall {
        id: "s".into(),
        name: name.into(),
        arguments,
    };
    tools.dispatch(&call, &CallContext::default()).await
}

#[tokio::test]
async fn grep_respects_gitignore_and_prints_path_line_text() {
    let dir = tree();
    let tools = registry(dir.path(), ToolSettings::default());
    let out = run(&tools, "grep", json!({ "pattern": "needle" }))
        .await
        .unwrap();
    let lines: Vec<&str> = out.content.lines().collect();
    assert_eq!(
        lines,
        vec![
            "README.md:1: a needle in the readme",
            "src/lib.rs:1: pub fn needle() {}",
            "src/main.rs:2:     needle();",
            "src/nested/deep.rs:1: // needle in deep",
        ]
    );
    assert!(!out.progress);
}

#[tokio::test]
async fn grep_filters_by_path_and_glob_and_caps_matches() {
    let dir = tree();
    let tools = registry(dir.path(), ToolSettings::default());
    let out = run(
        &tools,
        "grep",
        json!({ "pattern": "needle", "path": "src", "glob": "*.rs" }),
    )
    .await
    .unwrap();
    assert_eq!(out.content.lines().count(), 3, "{}", out.content);
    assert!(!out.content.contains("README"));
    let out = run(
        &tools,
        "grep",
        json!({ "pattern": "needle", "glob": "*.md" }),
    )
    .await
    .unwrap();
    assert_eq!(out.content, "README.md:1: a needle in the readme");
    let none = run(&tools, "grep", json!({ "pattern": "haystack" }))
        .await
        .unwrap();
    assert!(none.content.starts_with("no matches"), "{}", none.content);

    let capped = registry(
        dir.path(),
        ToolSettings {
            search: SearchSettings {
                max_grep_matches: 2,
                ..SearchSettings::default()
            },
            ..ToolSettings::default()
        },
    );
    let out = run(&capped, "grep", json!({ "pattern": "needle" }))
        .await
        .unwrap();
    assert_eq!(
        out.content.lines().filter(|l| l.contains(": ")).count(),
        2,
        "{}",
        out.content
    );
    assert!(
        out.content.contains("stopped at 2 matches"),
        "{}",
        out.content
    );

    let bad = run(&tools, "grep", json!({ "pattern": "(" }))
        .await
        .unwrap_err();
    assert!(matches!(bad, ToolError::InvalidArguments { .. }), "{bad:?}");
    let missing = run(&tools, "grep", json!({ "pattern": "x", "path": "nope" }))
        .await
        .unwrap_err();
    assert!(matches!(missing, ToolError::NotFound { .. }), "{missing:?}");
}

#[tokio::test]
async fn glob_respects_gitignore_sorts_and_caps() {
    let dir = tree();
    let tools = registry(dir.path(), ToolSettings::default());
    let all_rs = run(&tools, "glob", json!({ "pattern": "*.rs" }))
        .await
        .unwrap();
    assert_eq!(
        all_rs.content,
        "src/lib.rs\nsrc/main.rs\nsrc/nested/deep.rs"
    );
    let top = run(&tools, "glob", json!({ "pattern": "src/*.rs" }))
        .await
        .unwrap();
    assert_eq!(top.content, "src/lib.rs\nsrc/main.rs");
    let deep = run(&tools, "glob", json!({ "pattern": "src/**/*.rs" }))
        .await
        .unwrap();
    assert_eq!(deep.content, "src/lib.rs\nsrc/main.rs\nsrc/nested/deep.rs");
    let logs = run(&tools, "glob", json!({ "pattern": "*.log" }))
        .await
        .unwrap();
    assert!(
        logs.content.starts_with("no files match"),
        "{}",
        logs.content
    );

    let capped = registry(
        dir.path(),
        ToolSettings {
            search: SearchSettings {
                max_glob_results: 1,
                ..SearchSettings::default()
            },
            ..ToolSettings::default()
        },
    );
    let out = run(&capped, "glob", json!({ "pattern": "**/*.rs" }))
        .await
        .unwrap();
    assert_eq!(
        out.content,
        "src/lib.rs\n[2 more not shown; narrow the pattern]"
    );
}
