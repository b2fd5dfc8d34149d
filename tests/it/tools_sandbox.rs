//! Every tool refuses paths that leave the workspace, and nothing outside is touched.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use conclave::model::ToolCall;
use conclave::tools::{
    CallContext, DiskWriter, EscapeReason, PathOutsideWorkspace, Sandbox, ToolError, ToolRegistry,
    ToolSettings, WorkspaceWriter,
};
use serde_json::{Value, json};

/// `<base>/ws` is the workspace; `<base>/outside` holds a file that must stay untouched.
struct Layout {
    _base: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
}

impl Layout {
    fn new() -> Layout {
        let base = tempfile::tempdir().unwrap();
        let ws = base.path().join("ws");
        let outside = base.path().join("outside");
        std::fs::create_dir(&ws).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("target.txt"), "original").unwrap();
        std::os::unix::fs::symlink(outside.join("target.txt"), ws.join("link")).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("outdir")).unwrap();
        std::fs::write(ws.join("inside.txt"), "inside").unwrap();
        Layout {
            _base: base,
            ws,
            outside,
        }
    }

    fn registry(&self) -> ToolRegistry {
        let sandbox = Sandbox::new(&self.ws).unwrap();
        let writer = Arc::new(DiskWriter::new(sandbox.clone()));
        ToolRegistry::new(sandbox, writer, ToolSettings::default(), None)
    }

    /// The outside directory still holds exactly the one untouched file.
    fn assert_outside_untouched(&self) {
        assert_eq!(
            std::fs::read_to_string(self.outside.join("target.txt")).unwrap(),
            "original"
        );
        let names: Vec<_> = std::fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec!["target.txt".to_string()]);
        let base = self.ws.parent().unwrap();
        let mut at_base: Vec<_> = std::fs::read_dir(base)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        at_base.sort();
        assert_eq!(at_base, vec!["outside".to_string(), "ws".to_string()]);
    }
}

fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: "c1".into(),
        name: name.into(),
        arguments,
    }
}

fn expect_outside(result: Result<conclave::tools::ToolOutput, ToolError>) -> PathOutsideWorkspace {
    match result {
        Err(ToolError::OutsideWorkspace(e)) => {
            assert_eq!(e.code(), 1005);
            assert_eq!(PathOutsideWorkspace::CODE, 1005);
            e
        }
        other => panic!("expected PathOutsideWorkspace, got {other:?}"),
    }
}

#[tokio::test]
async fn writes_that_escape_are_refused_and_write_nothing() {
    let layout = Layout::new();
    let registry = layout.registry();
    let ctx = CallContext::default();
    let nul = "a\0b".to_string();
    let etc = "/etc/conclave-sandbox-test".to_string();
    let cases: [(&str, EscapeReason); 6] = [
        ("../outside/new.txt", EscapeReason::ParentTraversal),
        ("../escaped.txt", EscapeReason::ParentTraversal),
        (&etc, EscapeReason::AbsoluteOutside),
        ("link", EscapeReason::SymlinkEscape),
        ("outdir/new.txt", EscapeReason::SymlinkEscape),
        (&nul, EscapeReason::NulByte),
    ];
    for (path, reason) in cases {
        let err = expect_outside(
            registry
                .dispatch(
                    &call("file_write", json!({ "path": path, "content": "pwned" })),
                    &ctx,
                )
                .await,
        );
        assert_eq!(err.reason, reason, "{path:?}");
        assert_eq!(err.path, path, "the error names the offending path");
        assert_eq!(err.data(), json!({ "path": path }));
    }
    assert!(!Path::new(&etc).exists());
    layout.assert_outside_untouched();
}

#[tokio::test]
async fn reads_edits_and_searches_that_escape_are_refused() {
    let layout = Layout::new();
    let registry = layout.registry();
    let ctx = CallContext::default();
    for path in [
        "/etc/passwd",
        "../outside/target.txt",
        "link",
        "outdir/target.txt",
    ] {
        expect_outside(
            registry
                .dispatch(&call("file_read", json!({ "path": path })), &ctx)
                .await,
        );
        expect_outside(
            registry
                .dispatch(
                    &call(
                        "file_edit",
                        json!({ "path": path, "old_text": "original", "new_text": "pwned" }),
                    ),
                    &ctx,
                )
                .await,
        );
        expect_outside(
            registry
                .dispatch(
                    &call("grep", json!({ "pattern": "original", "path": path })),
                    &ctx,
                )
                .await,
        );
    }
    for pattern in ["../**", "/etc/*", "src/../../x"] {
        expect_outside(
            registry
                .dispatch(&call("glob", json!({ "pattern": pattern })), &ctx)
                .await,
        );
    }
    layout.assert_outside_untouched();
}

#[tokio::test]
async fn absolute_paths_inside_the_root_are_fine() {
    let layout = Layout::new();
    let registry = layout.registry();
    let ctx = CallContext::default();
    let inside = layout.ws.join("inside.txt");
    let read = registry
        .dispatch(
            &call("file_read", json!({ "path": inside.to_str().unwrap() })),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(read.content, "inside");
    let written = registry
        .dispatch(
            &call(
                "file_write",
                json!({ "path": layout.ws.join("sub/new.txt").to_str().unwrap(), "content": "n" }),
            ),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(written.files_written, vec![PathBuf::from("sub/new.txt")]);
    assert_eq!(
        std::fs::read_to_string(layout.ws.join("sub/new.txt")).unwrap(),
        "n"
    );
}

#[tokio::test]
async fn the_disk_writer_refuses_escapes_when_called_directly() {
    let layout = Layout::new();
    let writer = DiskWriter::new(Sandbox::new(&layout.ws).unwrap());
    for path in ["link", "outdir/x.txt", "../outside/target.txt"] {
        let err = writer
            .write_file(Path::new(path), "pwned")
            .await
            .unwrap_err();
        assert!(
            matches!(err, conclave::tools::WriteError::OutsideWorkspace(_)),
            "{path}: {err}"
        );
    }
    layout.assert_outside_untouched();
}

mod properties {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    /// Whatever mix of names, `.`, `..` and symlinks (inside, outside, dangling) a path is
    /// made of, resolving it either fails or yields a path inside the root, and if that
    /// path exists, the OS agrees it is inside.
    #[test]
    fn resolved_paths_never_leave_the_root() {
        let layout = Layout::new();
        std::fs::create_dir_all(layout.ws.join("a/b")).unwrap();
        std::os::unix::fs::symlink(layout.ws.join("a"), layout.ws.join("inlink")).unwrap();
        std::os::unix::fs::symlink(layout.outside.join("gone"), layout.ws.join("a/dangling"))
            .unwrap();
        let sandbox = Sandbox::new(&layout.ws).unwrap();
        let parts = prop::collection::vec(
            prop::sample::select(vec![
                "a",
                "b",
                "..",
                ".",
                "link",
                "outdir",
                "inlink",
                "dangling",
                "new",
                "inside.txt",
            ]),
            0..7,
        );
        // Naming the source file makes the runner replay the recorded failures
        // (tests/proptest-regressions/tools_sandbox.txt) first; `proptest!` does it itself.
        let mut runner = TestRunner::new(Config {
            source_file: Some(file!()),
            ..Config::with_cases(2_000)
        });
        runner
            .run(&(parts, any::<bool>()), |(parts, absolute)| {
                let relative: PathBuf = parts.iter().collect();
                let given = if absolute {
                    sandbox.root().join(&relative)
                } else {
                    relative
                };
                if let Ok(resolved) = sandbox.resolve(&given) {
                    prop_assert!(
                        resolved.starts_with(sandbox.root()),
                        "{given:?} -> {resolved:?}"
                    );
                    if let Ok(real) = std::fs::canonicalize(&resolved) {
                        prop_assert!(real.starts_with(sandbox.root()), "{given:?} -> {real:?}");
                    }
                }
                Ok(())
            })
            .unwrap();
        layout.assert_outside_untouched();
    }
}
