//! The private pi agent directory: Conclave's model, expressed as pi configuration.
//!
//! pi reads its models from `models.json` and its behaviour from `settings.json` in its
//! agent directory (`PI_CODING_AGENT_DIR`, normally `~/.pi/agent`). Each executor gets a
//! fresh temporary directory instead, so the user's own pi setup is neither read nor
//! changed. The configured model becomes a custom provider named [`PROVIDER_ID`]; its
//! API key is never written down: `models.json` names the environment variable
//! [`API_KEY_VAR`], which only the pi child process receives.

use std::io;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::config::{CallRetryConfig, LlmConfig, LlmProvider};
use crate::model::ModelError;

/// The provider name Conclave's model has inside pi.
pub const PROVIDER_ID: &str = "conclave";

/// The environment variable of the pi process that carries the API key.
pub const API_KEY_VAR: &str = "CONCLAVE_PI_API_KEY";

/// Sent as the key to servers that need none (pi insists on having one).
const NO_KEY_PLACEHOLDER: &str = "conclave-no-key";

const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// Which wire protocol pi speaks to the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PiApi {
    /// OpenAI chat completions (also Ollama, vLLM, llama.cpp server, LM Studio).
    OpenAiCompletions,
    AnthropicMessages,
}

impl PiApi {
    fn wire_name(self) -> &'static str {
        match self {
            PiApi::OpenAiCompletions => "openai-completions",
            PiApi::AnthropicMessages => "anthropic-messages",
        }
    }
}

/// An API key. Its `Debug` output never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(value: impl Into<String>) -> Self {
        ApiKey(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// The model pi is to use.
#[derive(Clone, Debug, PartialEq)]
pub struct PiModel {
    /// The provider as Conclave names it (`openai`, `anthropic`), used in errors.
    pub provider: String,
    pub api: PiApi,
    pub base_url: String,
    /// Sent to the server as the model id.
    pub model_id: String,
    /// `None` for servers that need no key (a local model behind `baseUrl`).
    pub api_key: Option<ApiKey>,
    pub max_tokens: Option<u32>,
}

impl PiModel {
    /// The model of `llm`, its key read from the environment variable it names.
    pub fn from_llm_config(llm: &LlmConfig) -> Result<PiModel, ModelError> {
        let provider = llm.provider.ok_or_else(|| ModelError::NotConfigured {
            message: "set llm.provider (\"openai\" or \"anthropic\") and llm.model to use the pi executor"
                .to_string(),
        })?;
        let (name, api, default_base_url, default_key_env) = match provider {
            LlmProvider::Openai => (
                "openai",
                PiApi::OpenAiCompletions,
                OPENAI_DEFAULT_BASE_URL,
                "OPENAI_API_KEY",
            ),
            LlmProvider::Anthropic => (
                "anthropic",
                PiApi::AnthropicMessages,
                ANTHROPIC_DEFAULT_BASE_URL,
                "ANTHROPIC_API_KEY",
            ),
            LlmProvider::Scripted => {
                return Err(ModelError::NotConfigured {
                    message: "the scripted provider replays a recorded conversation inside Conclave and cannot drive pi; use executor.kind = \"builtin\" with it, or an openai or anthropic model with pi"
                        .to_string(),
                });
            }
        };
        let model_id = llm
            .model
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .ok_or_else(|| ModelError::NotConfigured {
                message: "set llm.model to the model id pi should use".to_string(),
            })?;
        let key_env = llm.api_key_env.as_deref().unwrap_or(default_key_env);
        let api_key = std::env::var(key_env)
            .ok()
            .filter(|k| !k.is_empty())
            .map(ApiKey::new);
        if api_key.is_none() && llm.base_url.is_none() {
            // The public endpoints always need a key; a custom baseUrl may not.
            return Err(ModelError::NotConfigured {
                message: format!(
                    "the environment variable {key_env} holding the {name} API key is not set"
                ),
            });
        }
        let base_url = llm
            .base_url
            .as_deref()
            .map_or(default_base_url.to_string(), |url| {
                normalize_base_url(api, url)
            });
        Ok(PiModel {
            provider: name.to_string(),
            api,
            base_url,
            model_id: model_id.to_string(),
            api_key,
            max_tokens: llm.max_tokens,
        })
    }

    /// The value of [`API_KEY_VAR`] for the pi process.
    pub fn api_key_for_child(&self) -> &str {
        self.api_key
            .as_ref()
            .map_or(NO_KEY_PLACEHOLDER, ApiKey::expose)
    }
}

/// Trims trailing slashes; for Anthropic also a trailing `/v1`, which its SDK adds.
fn normalize_base_url(api: PiApi, url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    match api {
        PiApi::AnthropicMessages => url.strip_suffix("/v1").unwrap_or(url).to_string(),
        PiApi::OpenAiCompletions => url.to_string(),
    }
}

/// pi's `models.json` for `model`.
pub fn models_json(model: &PiModel) -> Value {
    let mut entry = json!({
        "id": model.model_id,
        "name": model.model_id,
        "reasoning": false,
        "input": ["text"],
    });
    if let Some(max_tokens) = model.max_tokens {
        entry["maxTokens"] = json!(max_tokens);
    }
    let mut provider = json!({
        "baseUrl": model.base_url,
        "api": model.api.wire_name(),
        "apiKey": API_KEY_VAR,
        "models": [entry],
    });
    if model.api == PiApi::OpenAiCompletions && !model.base_url.contains("api.openai.com") {
        // Local and third-party OpenAI-compatible servers know the classic request
        // fields; OpenAI's newer ones (`store`, `max_completion_tokens`, the developer
        // role) are not universally accepted.
        provider["compat"] = json!({
            "supportsStore": false,
            "supportsDeveloperRole": false,
            "supportsReasoningEffort": false,
            "maxTokensField": "max_tokens",
        });
    }
    json!({ "providers": { PROVIDER_ID: provider } })
}

/// pi's `settings.json`: Conclave's call-level retry policy and step timeout.
///
/// pi retries a failed transient model call itself (`retry`, `maxAttempts - 1` times);
/// the provider SDK's own retries are switched off so that only one layer retries and
/// the product of retries stays bounded. Retries stay enabled even at zero so that pi
/// announces the final failure with `auto_retry_end` instead of leaving it to the grace
/// period.
pub fn settings_json(call: &CallRetryConfig, step_timeout: Duration) -> Value {
    json!({
        "retry": {
            "enabled": true,
            "maxRetries": call.max_attempts.saturating_sub(1),
            "baseDelayMs": call.base_delay_ms,
            "provider": {
                "maxRetries": 0,
                "timeoutMs": u64::try_from(step_timeout.as_millis()).unwrap_or(u64::MAX),
                "maxRetryDelayMs": call.max_delay_ms,
            },
        },
        "quietStartup": true,
        "enableInstallTelemetry": false,
    })
}

/// Writes `models.json` and `settings.json` into `dir`.
pub fn write_agent_dir(
    dir: &Path,
    model: &PiModel,
    call: &CallRetryConfig,
    step_timeout: Duration,
) -> io::Result<()> {
    write_json(&dir.join("models.json"), &models_json(model))?;
    write_json(
        &dir.join("settings.json"),
        &settings_json(call, step_timeout),
    )
}

fn write_json(path: &Path, value: &Value) -> io::Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
    std::fs::write(path, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llm(provider: LlmProvider, base_url: Option<&str>) -> LlmConfig {
        LlmConfig {
            provider: Some(provider),
            model: Some("qwen2.5-coder:7b".into()),
            base_url: base_url.map(str::to_string),
            // A variable no test environment sets.
            api_key_env: Some("CONCLAVE_PI_TEST_UNSET_KEY_VAR".into()),
            max_tokens: Some(2048),
            ..LlmConfig::default()
        }
    }

    #[test]
    fn a_local_openai_compatible_server_becomes_a_custom_provider() {
        let model = PiModel::from_llm_config(&llm(
            LlmProvider::Openai,
            Some("http://127.0.0.1:11434/v1/"),
        ))
        .unwrap();
        assert_eq!(model.api_key, None);
        assert_eq!(model.api_key_for_child(), NO_KEY_PLACEHOLDER);
        let json = models_json(&model);
        let provider = &json["providers"][PROVIDER_ID];
        assert_eq!(provider["baseUrl"], "http://127.0.0.1:11434/v1");
        assert_eq!(provider["api"], "openai-completions");
        assert_eq!(provider["apiKey"], API_KEY_VAR);
        assert_eq!(provider["compat"]["maxTokensField"], "max_tokens");
        assert_eq!(provider["models"][0]["id"], "qwen2.5-coder:7b");
        assert_eq!(provider["models"][0]["maxTokens"], 2048);
    }

    #[test]
    fn the_public_endpoints_need_a_key() {
        let err = PiModel::from_llm_config(&llm(LlmProvider::Openai, None)).unwrap_err();
        assert!(
            err.to_string().contains("CONCLAVE_PI_TEST_UNSET_KEY_VAR"),
            "{err}"
        );
    }

    #[test]
    fn anthropic_base_urls_lose_their_v1() {
        let model = PiModel::from_llm_config(&llm(
            LlmProvider::Anthropic,
            Some("https://proxy.example/v1"),
        ))
        .unwrap();
        assert_eq!(model.base_url, "https://proxy.example");
        assert_eq!(
            models_json(&model)["providers"][PROVIDER_ID]["api"],
            "anthropic-messages"
        );
    }

    #[test]
    fn scripted_and_missing_providers_are_not_configured() {
        for config in [llm(LlmProvider::Scripted, None), LlmConfig::default()] {
            let err = PiModel::from_llm_config(&config).unwrap_err();
            assert!(matches!(err, ModelError::NotConfigured { .. }), "{err:?}");
        }
    }

    #[test]
    fn retry_settings_follow_the_call_policy() {
        let call = CallRetryConfig {
            max_attempts: 3,
            base_delay_ms: 250,
            max_delay_ms: 8000,
        };
        let settings = settings_json(&call, Duration::from_secs(30));
        assert_eq!(settings["retry"]["maxRetries"], 2);
        assert_eq!(settings["retry"]["baseDelayMs"], 250);
        assert_eq!(settings["retry"]["provider"]["maxRetries"], 0);
        assert_eq!(settings["retry"]["provider"]["timeoutMs"], 30_000);
    }

    #[test]
    fn keys_do_not_debug_print() {
        let key = ApiKey::new("sk-very-secret");
        assert!(!format!("{key:?}").contains("sk-very-secret"));
    }
}
