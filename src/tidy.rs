//! The house rules ARCHITECTURE.md states, checked against the source: every module
//! imports only modules on the floors below its own ([`FLOORS`]), except for the back
//! edges still listed in [`KNOWN_BACK_EDGES`] (each to be taken out; a listed edge that
//! is gone fails the test until it is struck from the list), the files of `team/` do not
//! import each other in a circle, and every source file opens with its `//!` doc.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules from the ground up; a module may import those below it.
/// Modules on one floor do not import each other. ARCHITECTURE.md draws the same.
const FLOORS: &[&[&str]] = &[
    &["ids", "checks"],
    &["config"],
    &["records"],
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
    &["wire"],
    &["engine"],
    &["lsp", "acp"],
    &["cli"],
];

/// Imports that go up a floor today: none (the store's records moved below it).
const KNOWN_BACK_EDGES: &[(&str, &str)] = &[];

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

/// `src/` and every source file under it.
fn sources() -> (PathBuf, Vec<PathBuf>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&root, &mut files);
    (root, files)
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
    let (root, files) = sources();
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
    let (root, files) = sources();
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

/// The sibling files of `team/` that each file there names (`super::x`, `crate::team::x`;
/// the module root, `mod.rs`, is the team's shared ground and not counted). A directory
/// of `team/` is one node: its `mod.rs` names siblings as a file does, its other files
/// by `crate::team::x` or `super::super::x`.
fn team_imports() -> BTreeMap<String, BTreeSet<String>> {
    const SIBLING: &[&str] = &["super::", "crate::team::", "super::{"];
    const FROM_INSIDE: &[&str] = &["crate::team::", "super::super::", "super::super::{"];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/team");
    let mut nodes: BTreeMap<String, Vec<(PathBuf, &[&str])>> = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("src/team is readable") {
        let path = entry.expect("a directory entry").path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut files = Vec::new();
            source_files(&path, &mut files);
            let sources = files
                .into_iter()
                .map(|file| {
                    let prefixes = if file.file_name().is_some_and(|n| n == "mod.rs") {
                        SIBLING
                    } else {
                        FROM_INSIDE
                    };
                    (file, prefixes)
                })
                .collect();
            nodes.insert(stem, sources);
        } else if path.extension().is_some_and(|e| e == "rs") && stem != "mod" {
            nodes.insert(stem, vec![(path, SIBLING)]);
        }
    }
    let names: BTreeSet<String> = nodes.keys().cloned().collect();
    let mut imports = BTreeMap::new();
    for (name, sources) in &nodes {
        let mut named = BTreeSet::new();
        for (file, prefixes) in sources {
            let text = std::fs::read_to_string(file).unwrap();
            let code = code_of(&text);
            for prefix in *prefixes {
                for (at, _) in code.match_indices(prefix) {
                    let rest = &code[at + prefix.len()..];
                    let group = if prefix.ends_with('{') {
                        rest.split('}').next().unwrap_or("")
                    } else {
                        rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                            .next()
                            .unwrap_or("")
                    };
                    for word in group.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
                        if word != name && names.contains(word) {
                            named.insert(word.to_string());
                        }
                        if !prefix.ends_with('{') {
                            break;
                        }
                    }
                }
            }
        }
        imports.insert(name.clone(), named);
    }
    imports
}

/// A circle in `imports`, if there is one: its files in order, the first again at the end.
fn circle(imports: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        at: &str,
        imports: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|p| p == at) {
            let mut found = path[start..].to_vec();
            found.push(at.to_string());
            return Some(found);
        }
        if done.contains(at) {
            return None;
        }
        path.push(at.to_string());
        for next in imports.get(at).into_iter().flatten() {
            if let Some(found) = visit(next, imports, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(at.to_string());
        None
    }
    let mut done = BTreeSet::new();
    imports
        .keys()
        .find_map(|start| visit(start, imports, &mut Vec::new(), &mut done))
}

#[test]
fn the_team_files_import_each_other_without_a_circle() {
    let imports = team_imports();
    assert!(
        imports.get("verify").is_some_and(|i| i.contains("check")),
        "the reader sees the team's imports: {imports:?}"
    );
    assert_eq!(
        circle(&imports),
        None,
        "shared helpers belong in team/files.rs or team/roles.rs"
    );
}

#[test]
fn a_circle_is_found() {
    let imports: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(circle(&imports).unwrap(), ["a", "b", "c", "a"]);
}

#[test]
fn every_source_file_opens_with_its_doc() {
    let (root, files) = sources();
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
