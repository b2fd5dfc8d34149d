//! The environment a command or check sees: the server's, minus every credential.
//!
//! A name is a credential when it looks like one (`*_API_KEY`, `*_TOKEN`, `*SECRET*`,
//! `*_PASSWORD`, …) or is one of the variables the configuration names for a key
//! (`llm.apiKeyEnv` and the providers' defaults). Settings that keep tools from waiting
//! for a terminal that is not there are added, and the temp directory is the run's own.

use std::ffi::OsString;
use std::path::Path;

/// Whether an environment variable name looks like it holds a credential.
pub fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    const SUFFIXES: [&str; 9] = [
        "_API_KEY",
        "APIKEY",
        "_TOKEN",
        "_PASSWORD",
        "_PASSWD",
        "_CREDENTIALS",
        "PRIVATE_KEY",
        "_ACCESS_KEY",
        "_AUTH",
    ];
    const NAMES: [&str; 6] = [
        "API_KEY",
        "TOKEN",
        "PASSWORD",
        "AWS_ACCESS_KEY_ID",
        "AWS_SESSION_TOKEN",
        "SSH_AUTH_SOCK",
    ];
    NAMES.contains(&upper.as_str())
        || upper.contains("SECRET")
        || SUFFIXES.iter().any(|suffix| upper.ends_with(suffix))
}

/// Variables that send a build's output out of the workspace, where a confined run
/// cannot write: without them the build writes inside the project, as it does by default.
const OUTPUT_ELSEWHERE: &[&str] = &["CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR"];

/// The environment for one run: `inherited` (normally the server's), minus credentials,
/// the names in `scrub` and [`OUTPUT_ELSEWHERE`], plus `extra`, plus the run's temp directory and settings
/// for running without a terminal.
pub fn scrubbed(
    inherited: impl IntoIterator<Item = (OsString, OsString)>,
    scrub: &[String],
    extra: &[(String, String)],
    temp_dir: Option<&Path>,
) -> Vec<(OsString, OsString)> {
    let keep = |name: &OsString| {
        let name = name.to_string_lossy();
        !is_secret_env_name(&name)
            && !scrub.iter().any(|s| *s == name)
            && !OUTPUT_ELSEWHERE.contains(&name.as_ref())
    };
    let mut env: Vec<(OsString, OsString)> = inherited
        .into_iter()
        .filter(|(name, _)| keep(name))
        .collect();
    let mut set = |name: &str, value: OsString| {
        env.retain(|(n, _)| n != name);
        env.push((name.into(), value));
    };
    for (name, value) in extra {
        // An extra variable is the caller's own choice, never a way around the scrub.
        if !is_secret_env_name(name) && !scrub.iter().any(|s| s == name) {
            set(name, value.into());
        }
    }
    for (name, value) in [
        ("PAGER", "cat"),
        ("GIT_PAGER", "cat"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("PYTHONDONTWRITEBYTECODE", "1"),
        // Printed lines reach the merged output in order, and survive a run stopped at
        // its time limit.
        ("PYTHONUNBUFFERED", "1"),
    ] {
        set(name, value.into());
    }
    if let Some(temp) = temp_dir {
        for name in ["TMPDIR", "TMP", "TEMP"] {
            set(name, temp.as_os_str().to_owned());
        }
        // Caches that would otherwise be written under the home folder.
        set("XDG_CACHE_HOME", temp.join("cache").into_os_string());
        set("npm_config_cache", temp.join("npm-cache").into_os_string());
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_names_are_recognised() {
        for name in [
            "OPENAI_API_KEY",
            "anthropic_api_key",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "CLIENT_SECRET",
            "DB_PASSWORD",
            "API_KEY",
            "MYSERVICEAPIKEY",
            "NPM_AUTH",
            "SSH_AUTH_SOCK",
        ] {
            assert!(is_secret_env_name(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "TOKENIZERS_PARALLELISM",
            "CARGO_HOME",
            "KEYMAP",
            "LANG",
        ] {
            assert!(!is_secret_env_name(name), "{name}");
        }
    }

    #[test]
    fn the_scrubbed_environment_keeps_the_rest_and_sets_the_temp_dir() {
        let inherited = [
            ("PATH", "/usr/bin"),
            ("OPENAI_API_KEY", "sk-1"),
            ("MY_KEY_VAR", "v"),
            ("HOME", "/home/a"),
            ("CARGO_TARGET_DIR", "/elsewhere/target"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = scrubbed(
            inherited,
            &["MY_KEY_VAR".to_string()],
            &[
                ("EXTRA".to_string(), "1".to_string()),
                ("GITHUB_TOKEN".to_string(), "x".to_string()),
            ],
            Some(Path::new("/tmp/run")),
        );
        let get = |name: &str| {
            env.iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(get("PATH").as_deref(), Some("/usr/bin"));
        assert_eq!(get("HOME").as_deref(), Some("/home/a"));
        assert_eq!(get("OPENAI_API_KEY"), None);
        assert_eq!(get("MY_KEY_VAR"), None, "the configured key variable goes");
        assert_eq!(
            get("GITHUB_TOKEN"),
            None,
            "an extra cannot bring a secret back"
        );
        assert_eq!(get("EXTRA").as_deref(), Some("1"));
        assert_eq!(
            get("CARGO_TARGET_DIR"),
            None,
            "a build writes in the workspace, where the sandbox lets it"
        );
        assert_eq!(get("TMPDIR").as_deref(), Some("/tmp/run"));
        assert_eq!(get("GIT_TERMINAL_PROMPT").as_deref(), Some("0"));
    }
}
