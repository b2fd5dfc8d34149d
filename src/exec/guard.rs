//! What a command may not leave changed in the workspace although it can write there:
//! git's configuration and hooks, which would run code of the command's choosing the
//! next time the person uses git, outside any sandbox. Landlock grants writes by
//! directory, and a command must be able to create files anywhere in the workspace, so
//! `.git/` stays writable; these few files are read before a run and put back after it.
//! A repository the run created itself (`git init`) keeps its configuration, less any
//! setting that makes git run a program, and loses every hook but git's samples.

use std::path::{Path, PathBuf};

/// The protected files (workspace-relative) and their content before the run; `None`
/// for a file that did not exist.
#[derive(Debug, Default)]
pub struct Snapshot {
    root: PathBuf,
    /// Whether `.git` was there before the run.
    had_git: bool,
    files: Vec<(PathBuf, Option<Vec<u8>>)>,
}

/// Files under these, and these files, are protected.
const PROTECTED: &[&str] = &[".git/config", ".git/hooks"];

impl Snapshot {
    pub fn take(root: &Path) -> Snapshot {
        let mut files = Vec::new();
        for protected in PROTECTED {
            for path in files_under(&root.join(protected)) {
                let content = std::fs::read(&path).ok();
                if let Ok(relative) = path.strip_prefix(root) {
                    files.push((relative.to_path_buf(), content));
                }
            }
        }
        Snapshot {
            root: root.to_path_buf(),
            had_git: root.join(".git").exists(),
            files,
        }
    }

    /// Puts back every protected file the run changed, created or removed; returns
    /// those paths.
    pub fn restore(&self) -> Vec<PathBuf> {
        if !self.had_git {
            return self.disarm_new_repository();
        }
        let mut restored = Vec::new();
        let mut now: Vec<PathBuf> = Vec::new();
        for protected in PROTECTED {
            now.extend(files_under(&self.root.join(protected)));
        }
        for path in now {
            let Ok(relative) = path.strip_prefix(&self.root) else {
                continue;
            };
            if !self.files.iter().any(|(p, _)| p == relative) {
                if std::fs::remove_file(&path).is_ok() {
                    restored.push(relative.to_path_buf());
                }
                continue;
            }
        }
        for (relative, before) in &self.files {
            let path = self.root.join(relative);
            let current = std::fs::read(&path).ok();
            if current == *before {
                continue;
            }
            let put_back = match before {
                Some(content) => {
                    // A symlink or directory put in the file's place goes first.
                    if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
                        let _ =
                            std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
                    }
                    std::fs::write(&path, content).is_ok()
                }
                None => std::fs::remove_file(&path).is_ok(),
            };
            if put_back {
                restored.push(relative.clone());
            }
        }
        restored.sort();
        restored.dedup();
        restored
    }
}

impl Snapshot {
    /// A `.git` the run made: hooks other than git's samples removed, settings that run
    /// a program dropped from its configuration.
    fn disarm_new_repository(&self) -> Vec<PathBuf> {
        let mut changed = Vec::new();
        for hook in files_under(&self.root.join(".git/hooks")) {
            let sample = hook.extension().is_some_and(|e| e == "sample");
            if !sample && std::fs::remove_file(&hook).is_ok() {
                changed.extend(hook.strip_prefix(&self.root).ok().map(Path::to_path_buf));
            }
        }
        let config = self.root.join(".git/config");
        if let Ok(text) = std::fs::read_to_string(&config) {
            let kept = without_program_settings(&text);
            if kept != text && std::fs::write(&config, kept).is_ok() {
                changed.push(PathBuf::from(".git/config"));
            }
        }
        changed
    }
}

/// A git configuration without the settings that make git run a program (or read
/// another file that could): hooks, fsmonitor, pagers and editors, ssh and proxy
/// commands, filters, textconv, credential helpers, shell aliases, includes.
fn without_program_settings(config: &str) -> String {
    const RUNS: &[&str] = &[
        "hookspath",
        "fsmonitor",
        "sshcommand",
        "pager",
        "editor",
        "askpass",
        "gitproxy",
        "textconv",
        "helper",
        "clean",
        "smudge",
        "process",
        "path",
        "program",
        "cmd",
        "command",
    ];
    let mut section = String::new();
    let mut out = String::new();
    for line in config.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            section = trimmed.to_ascii_lowercase();
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let key = trimmed
            .split('=')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        let value = trimmed.split_once('=').map(|(_, v)| v.trim()).unwrap_or("");
        let shell_alias = section.starts_with("[alias") && value.starts_with('!');
        let include = section.starts_with("[include");
        if RUNS.contains(&key.as_str()) || shell_alias || include {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `path` itself when it is a file (or a symlink), else every file beneath it.
fn files_under(path: &Path) -> Vec<PathBuf> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Vec::new();
    };
    if !meta.is_dir() {
        return vec![path.to_path_buf()];
    }
    let mut files = Vec::new();
    let mut todo = vec![path.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => todo.push(entry.path()),
                Ok(_) => files.push(entry.path()),
                Err(_) => {}
            }
        }
    }
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_and_config_are_put_back_as_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit.sample"), "sample").unwrap();
        std::fs::write(root.join("app.py"), "x = 1\n").unwrap();
        let before = Snapshot::take(root);

        std::fs::write(root.join(".git/config"), "[core]\nhooksPath = /tmp/evil\n").unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit"), "#!/bin/sh\ncurl x\n").unwrap();
        std::fs::remove_file(root.join(".git/hooks/pre-commit.sample")).unwrap();
        std::fs::write(root.join("app.py"), "x = 2\n").unwrap();

        let restored = before.restore();
        assert_eq!(
            restored,
            [
                PathBuf::from(".git/config"),
                PathBuf::from(".git/hooks/pre-commit"),
                PathBuf::from(".git/hooks/pre-commit.sample"),
            ]
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config")).unwrap(),
            "[core]\n"
        );
        assert!(!root.join(".git/hooks/pre-commit").exists());
        assert_eq!(
            std::fs::read_to_string(root.join(".git/hooks/pre-commit.sample")).unwrap(),
            "sample"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("app.py")).unwrap(),
            "x = 2\n",
            "the project's files are the command's to change"
        );
        assert!(before.restore().is_empty(), "nothing left to put back");
    }

    #[test]
    fn a_repository_the_run_made_keeps_its_config_but_nothing_that_runs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let before = Snapshot::take(root);
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\tbare = false\n\thooksPath = /tmp/h\n[alias]\n\tst = status\n\tx = !sh -c id\n[include]\n\tpath = /tmp/c\n",
        )
        .unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
        let changed = before.restore();
        assert_eq!(
            changed,
            [
                PathBuf::from(".git/hooks/pre-commit"),
                PathBuf::from(".git/config")
            ]
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config")).unwrap(),
            "[core]\n\tbare = false\n[alias]\n\tst = status\n[include]\n"
        );
        assert!(root.join(".git/hooks/pre-commit.sample").exists());
    }
}
