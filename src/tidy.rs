//! The house rules ARCHITECTURE.md states, checked against the source: every module
//! imports only modules on the floors below its own ([`FLOORS`]), except for the back
//! edges still listed in [`KNOWN_BACK_EDGES`] (each to be taken out; a listed edge that
//! is gone fails the test until it is struck from the list), and every source file
//! opens with its `//!` doc.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules from the ground up; a module may import those below it.
/// Modules on one floor do not import each other. ARCHITECTURE.md draws the same.
const FLOORS: &[&[&str]] = &[
    &["ids", "checks"],
    &["config"],
    &["exec"],
    &["redact"],
    &["jsonrpc", "store"],
    &["recovery"],
    &["model"],
    &["runtime"],
    &["tools"],
    &["undo"],
    &["executor"],
    &["team"],
    &["engine"],
    &["lsp", "acp"],
    &["cli"],
];

/// Imports that go up a floor today: the store keeps runtime and recovery types in its
/// records.
const KNOWN_BACK_EDGES: &[(&str, &str)] = &[("store", "runtime"), ("store", "recovery")];

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`None` for the crate roots).
fn module_of(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    match first {
        "lib.rs" | "main.rs" => None,
        file => Some(file.trim_end_matches(".rs").to_string()),
    }
}

/// The code of a file without its comments and its unit tests (a test may reach any
/// floor to set up what it checks).
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| match line.trim_start() {
            l if l.starts_with("//") => "",
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules a file's code names: `crate::x` in the library, `conclave::x`
/// in the binary's modules.
fn modules_named(code: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for prefix in ["crate::", "conclave::"] {
        for (at, _) in code.match_indices(prefix) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let name: String = code[at + prefix.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                named.insert(name);
            }
        }
    }
    named
}

fn floor_of(module: &str) -> Option<usize> {
    FLOORS.iter().position(|floor| floor.contains(&module))
}

/// Every import between top-level modules: (from, to) with the files that make it.
fn imports() -> BTreeMap<(String, String), BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&root, &mut files);
    let mut edges: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for path in files {
        let relative = path.strip_prefix(&root).expect("under src");
        let Some(from) = module_of(relative) else {
            continue;
        };
        let text = std::fs::read_to_string(&path).expect("a source file is readable");
        for to in modules_named(&code_of(&text)) {
            if to != from && floor_of(&to).is_some() {
                edges
                    .entry((from.clone(), to))
                    .or_default()
                    .insert(relative.display().to_string());
            }
        }
    }
    edges
}

#[test]
fn every_module_has_a_floor() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&root, &mut files);
    let unplaced: BTreeSet<String> = files
        .iter()
        .filter_map(|p| module_of(p.strip_prefix(&root).unwrap()))
        .filter(|m| m != "tidy" && floor_of(m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules with no floor in tidy.rs's FLOORS (and ARCHITECTURE.md): {unplaced:?}"
    );
}

#[test]
fn modules_import_only_from_the_floors_below() {
    let edges = imports();
    let mut wrong = Vec::new();
    for ((from, to), files) in &edges {
        let (Some(a), Some(b)) = (floor_of(from), floor_of(to)) else {
            continue;
        };
        if a <= b && !KNOWN_BACK_EDGES.contains(&(from.as_str(), to.as_str())) {
            wrong.push(format!("{from} -> {to} ({})", join(files)));
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the floors of ARCHITECTURE.md:\n{}",
        wrong.join("\n")
    );
    let gone: Vec<_> = KNOWN_BACK_EDGES
        .iter()
        .filter(|(from, to)| !edges.contains_key(&(from.to_string(), to.to_string())))
        .collect();
    assert!(
        gone.is_empty(),
        "back edges no longer in the code: strike them from KNOWN_BACK_EDGES: {gone:?}"
    );
}

#[test]
fn every_source_file_opens_with_its_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&root, &mut files);
    let undocumented: Vec<String> = files
        .iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            !text.trim_start().starts_with("//!")
        })
        .map(|path| path.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    assert!(
        undocumented.is_empty(),
        "source files without a `//!` doc saying what they are for: {undocumented:?}"
    );
}

#[test]
fn the_import_reader_sees_through_comments_and_unit_tests() {
    let code = code_of(
        "use crate::config::Config;\n// crate::team is only mentioned\nfn f() { conclave::store::x(); }\n#[cfg(test)]\nmod tests {\n    use crate::engine::Engine;\n}\n",
    );
    let named = modules_named(&code);
    assert_eq!(
        named.into_iter().collect::<Vec<_>>(),
        ["config", "store"],
        "{code}"
    );
}

fn join(files: &BTreeSet<String>) -> String {
    files.iter().cloned().collect::<Vec<_>>().join(", ")
}
