//! Building the configured provider from `llm` settings.
//!
//! Hosted APIs need a key from the environment variable named by `llm.apiKeyEnv`
//! (default `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`); an OpenAI-compatible server at
//! another `llm.baseUrl` (Ollama, vLLM, llama.cpp, LM Studio) works without one. A
//! `baseUrl` without a `provider` means OpenAI-compatible. Anything missing is a
//! [`ModelError::NotConfigured`] saying how to fix it (docs/protocol.md code 1004).

use std::path::Path;
use std::sync::Arc;

use super::anthropic::{AnthropicConfig, AnthropicProvider, DEFAULT_ANTHROPIC_BASE_URL};
use super::http::{self, ApiKey};
use super::openai::{DEFAULT_MAX_TOKENS, DEFAULT_OPENAI_BASE_URL, OpenAiConfig, OpenAiProvider};
use super::scripted::ScriptedProvider;
use super::{ModelError, ModelProvider};
use crate::config::{Config, LlmConfig, LlmProvider};

pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
pub const OPENAI_KEY_ENV: &str = "OPENAI_API_KEY";
pub const ANTHROPIC_KEY_ENV: &str = "ANTHROPIC_API_KEY";

/// How to configure a model, for every NotConfigured message.
pub const HOW_TO_CONFIGURE: &str = "set llm.provider to \"anthropic\" (with ANTHROPIC_API_KEY in \
    the environment) or \"openai\" (with OPENAI_API_KEY), or point llm.baseUrl at a local \
    OpenAI-compatible server such as Ollama (http://127.0.0.1:11434/v1) and set llm.model";

fn not_configured(message: impl Into<String>) -> ModelError {
    ModelError::NotConfigured {
        message: message.into(),
    }
}

/// The provider `config.llm` describes, judging silences by `config.recovery`, without
/// retries (wrap it in [`super::resilient::ResilientModel`]). `workspace_root` resolves
/// a relative script path.
pub fn from_config(
    config: &Config,
    workspace_root: &Path,
) -> Result<Arc<dyn ModelProvider>, ModelError> {
    let llm = &config.llm;
    let silence = Some(http::Silence::from_config(&config.recovery));
    let provider = match (llm.provider, &llm.base_url) {
        (Some(provider), _) => provider,
        (None, Some(_)) => LlmProvider::Openai,
        (None, None) => return Err(not_configured(HOW_TO_CONFIGURE)),
    };
    match provider {
        LlmProvider::Openai => openai(llm, silence).map(|p| Arc::new(p) as Arc<dyn ModelProvider>),
        LlmProvider::Anthropic => {
            anthropic(llm, silence).map(|p| Arc::new(p) as Arc<dyn ModelProvider>)
        }
        LlmProvider::Scripted => scripted(llm, workspace_root),
    }
}

fn is_default(base_url: &str, default: &str) -> bool {
    base_url.trim().trim_end_matches('/') == default
}

/// Reads the key; `required` makes a missing key an error naming the variable.
fn api_key(
    llm: &LlmConfig,
    default_env: &str,
    required: bool,
) -> Result<Option<ApiKey>, ModelError> {
    let var = llm.api_key_env.as_deref().unwrap_or(default_env);
    match ApiKey::from_env(var) {
        Some(key) => Ok(Some(key)),
        None if required => Err(not_configured(format!(
            "the API key environment variable {var} is not set; export it, or {HOW_TO_CONFIGURE}"
        ))),
        None => Ok(None),
    }
}

fn openai(llm: &LlmConfig, silence: Option<http::Silence>) -> Result<OpenAiProvider, ModelError> {
    let base_url = llm.base_url.as_deref().unwrap_or(DEFAULT_OPENAI_BASE_URL);
    let hosted = is_default(base_url, DEFAULT_OPENAI_BASE_URL);
    let base_url = http::normalise_base_url(base_url)?;
    let model = match (&llm.model, hosted) {
        (Some(model), _) => model.clone(),
        (None, true) => DEFAULT_OPENAI_MODEL.to_string(),
        (None, false) => {
            return Err(not_configured(format!(
                "llm.model is not set; name a model that the server at {base_url} serves \
                 (for Ollama, one listed by `ollama list`)"
            )));
        }
    };
    let mut config = OpenAiConfig::new(base_url.clone(), model);
    config.api_key = api_key(llm, OPENAI_KEY_ENV, hosted)?;
    if !hosted {
        let host = reqwest::Url::parse(&base_url)
            .ok()
            .and_then(|u| {
                u.host_str()
                    .map(|h| format!("{h}:{}", u.port_or_known_default().unwrap_or(0)))
            })
            .unwrap_or_default();
        config.name = format!("openai-compatible@{host}");
    }
    config.max_tokens = llm.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    config.temperature = llm.temperature;
    config.silence = silence;
    OpenAiProvider::new(config)
}

fn anthropic(
    llm: &LlmConfig,
    silence: Option<http::Silence>,
) -> Result<AnthropicProvider, ModelError> {
    let base_url = llm
        .base_url
        .as_deref()
        .unwrap_or(DEFAULT_ANTHROPIC_BASE_URL);
    let hosted = is_default(base_url, DEFAULT_ANTHROPIC_BASE_URL);
    let model = llm.model.as_deref().unwrap_or(DEFAULT_ANTHROPIC_MODEL);
    let mut config = AnthropicConfig::new(base_url, model);
    config.api_key = api_key(llm, ANTHROPIC_KEY_ENV, hosted)?;
    config.max_tokens = llm.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    config.temperature = llm.temperature;
    config.silence = silence;
    AnthropicProvider::new(config)
}

fn scripted(llm: &LlmConfig, workspace_root: &Path) -> Result<Arc<dyn ModelProvider>, ModelError> {
    let Some(script) = llm.script.as_deref() else {
        return Err(not_configured(
            "llm.provider is \"scripted\" but llm.script names no script file",
        ));
    };
    let path = workspace_root.join(script);
    let provider = ScriptedProvider::from_file(&path)
        .map_err(|e| not_configured(format!("the scripted model's script is unusable: {e}")))?;
    Ok(Arc::new(provider))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llm(provider: Option<LlmProvider>) -> LlmConfig {
        LlmConfig {
            provider,
            ..LlmConfig::default()
        }
    }

    fn whole(llm: LlmConfig) -> Config {
        Config {
            llm,
            ..Config::default()
        }
    }

    fn err_text(result: Result<Arc<dyn ModelProvider>, ModelError>) -> String {
        match result {
            Ok(p) => panic!("expected an error, got provider {}", p.name()),
            Err(e) => {
                assert!(matches!(e, ModelError::NotConfigured { .. }), "{e}");
                e.to_string()
            }
        }
    }

    #[test]
    fn nothing_configured_says_how_to_configure() {
        let text = err_text(from_config(&whole(llm(None)), Path::new(".")));
        assert!(
            text.contains("ANTHROPIC_API_KEY") && text.contains("11434"),
            "{text}"
        );
    }

    #[test]
    fn a_hosted_provider_needs_its_key_variable() {
        let mut config = llm(Some(LlmProvider::Anthropic));
        config.api_key_env = Some("CONCLAVE_TEST_FACTORY_MISSING_KEY_1".into());
        let text = err_text(from_config(&whole(config.clone()), Path::new(".")));
        assert!(
            text.contains("CONCLAVE_TEST_FACTORY_MISSING_KEY_1"),
            "{text}"
        );
        let mut config = llm(Some(LlmProvider::Openai));
        config.api_key_env = Some("CONCLAVE_TEST_FACTORY_MISSING_KEY_2".into());
        err_text(from_config(&whole(config.clone()), Path::new(".")));
    }

    #[test]
    fn a_local_server_needs_no_key_but_a_model() {
        let mut config = llm(None);
        config.base_url = Some("http://127.0.0.1:11434/v1".into());
        config.api_key_env = Some("CONCLAVE_TEST_FACTORY_MISSING_KEY_3".into());
        let text = err_text(from_config(&whole(config.clone()), Path::new(".")));
        assert!(text.contains("llm.model"), "{text}");
        config.model = Some("qwen2.5-coder".into());
        let provider = from_config(&whole(config.clone()), Path::new(".")).unwrap();
        assert_eq!(provider.name(), "openai-compatible@127.0.0.1:11434");
    }

    #[test]
    fn scripted_reads_its_script_relative_to_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.json"), r#"[{"text": "hi"}]"#).unwrap();
        let mut config = llm(Some(LlmProvider::Scripted));
        err_text(from_config(&whole(config.clone()), dir.path()));
        config.script = Some("missing.json".into());
        let text = err_text(from_config(&whole(config.clone()), dir.path()));
        assert!(text.contains("missing.json"), "{text}");
        config.script = Some("s.json".into());
        assert_eq!(
            from_config(&whole(config.clone()), dir.path())
                .unwrap()
                .name(),
            "scripted"
        );
    }
}
