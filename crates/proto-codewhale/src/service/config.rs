//! `config_get|set|unset|list` on what Gantry has to configure: `model`
//! (the default model, persisted by the engine), CodeWhale's top-level
//! `provider` (read only), `api_key` and `base_url` (those of the default
//! model's provider), `approval_policy` (handed back as it was given) and
//! `sandbox_mode` (defaults of threads created over CodeWhale, kept in the
//! engine's settings), `tools.user_input_timeout_seconds` (how long the
//! agent's questions wait, for threads made from now) and
//! `providers.NAME.FIELD` (the engine's provider registry:
//! `kind`, `base_url`, `api_key`, `api_key_env`, `models`; unsetting
//! `providers.NAME` removes it). Keys come back masked: the engine never
//! hands a key out, whatever the transport. A key Gantry does not have
//! reads `null`, as the reference's unset keys do.

use std::collections::BTreeMap;

use gantry_types::{ProviderConfig, ProviderKind};

use super::policy::{parse_approval, parse_sandbox};
use super::{CodeWhale, ServiceError};

/// The provider fields a key may name.
const PROVIDER_FIELDS: [&str; 5] = ["kind", "base_url", "api_key", "api_key_env", "models"];

enum Key<'a> {
    /// `provider`, `api_key`, `base_url`: CodeWhale's top-level keys, on
    /// the provider of the default model (`provider` its name).
    Top(&'a str),
    Model,
    Approval,
    Sandbox,
    /// `tools.user_input_timeout_seconds`: how long a question of the
    /// agent's waits (0: until answered), for threads created from now.
    UserInputTimeout,
    Provider {
        name: &'a str,
        field: Option<&'a str>,
    },
}

fn key(text: &str) -> Result<Key<'_>, ServiceError> {
    match text {
        "model" => Ok(Key::Model),
        "provider" => Ok(Key::Top("name")),
        "api_key" | "base_url" => Ok(Key::Top(text)),
        "approval_policy" => Ok(Key::Approval),
        "sandbox_mode" => Ok(Key::Sandbox),
        "tools.user_input_timeout_seconds" => Ok(Key::UserInputTimeout),
        _ => {
            let rest = text
                .strip_prefix("providers.")
                .ok_or_else(|| unknown(text))?;
            let (name, field) = match rest.split_once('.') {
                Some((name, field)) if PROVIDER_FIELDS.contains(&field) => (name, Some(field)),
                Some(_) => return Err(unknown(text)),
                None => (rest, None),
            };
            if name.is_empty() {
                return Err(unknown(text));
            }
            Ok(Key::Provider { name, field })
        }
    }
}

fn unknown(key: &str) -> ServiceError {
    ServiceError::Invalid(format!(
        "unknown config key `{key}`: expected model, provider, api_key, base_url, \
         approval_policy, sandbox_mode, tools.user_input_timeout_seconds or \
         providers.NAME.{{{}}}",
        PROVIDER_FIELDS.join(",")
    ))
}

impl CodeWhale {
    /// The name of the provider of the default model.
    fn default_provider(&self) -> String {
        let model = self.engine().providers().default_model();
        super::views::model_provider(self.engine(), &model)
    }

    /// The value of `key` (`None` when unset, or a key Gantry does not
    /// have: CodeWhale answers those `null` too).
    pub(crate) fn config_get(&self, text: &str) -> Result<Option<String>, ServiceError> {
        let Ok(key) = key(text) else {
            return Ok(None);
        };
        Ok(match key {
            Key::Top("name") => Some(self.default_provider()),
            Key::Top(field) => match self.engine().providers().get(&self.default_provider()) {
                Ok(provider) => provider_field(&provider, field),
                Err(_) => None,
            },
            Key::Model => Some(self.engine().providers().default_model()),
            Key::Approval => self.defaults().approval.map(|(_, text)| text),
            Key::Sandbox => self.defaults().sandbox.map(|s| s.as_str().to_owned()),
            Key::UserInputTimeout => self.defaults().user_input_timeout.map(|s| s.to_string()),
            Key::Provider { name, field } => match self.engine().providers().get(name) {
                Ok(provider) => provider_field(&provider, field.unwrap_or("kind")),
                Err(_) => None,
            },
        })
    }

    /// Sets `key`.
    pub(crate) async fn config_set(&self, text: &str, value: &str) -> Result<(), ServiceError> {
        match key(text)? {
            Key::Top("name") => {
                return Err(ServiceError::Invalid(
                    "provider: Gantry's provider is the default model's; set model".to_owned(),
                ));
            }
            Key::Top(field) => {
                self.check_providers_open(text)?;
                let providers = self.engine().providers();
                let mut provider = providers.get(&self.default_provider())?;
                set_provider_field(&mut provider, field, Some(value))?;
                providers.update(provider).await?;
            }
            Key::Model => {
                self.engine().providers().set_default_model(value).await?;
            }
            Key::Approval => {
                let policy = parse_approval(value).map_err(ServiceError::Invalid)?;
                self.update_defaults(|d| d.approval = Some((policy, value.to_owned())))
                    .await?;
            }
            Key::Sandbox => {
                let sandbox = parse_sandbox(value).map_err(ServiceError::Invalid)?;
                self.engine().config().check_sandbox(sandbox)?;
                self.update_defaults(|d| d.sandbox = Some(sandbox)).await?;
            }
            Key::UserInputTimeout => {
                let seconds: u64 = value.trim().parse().map_err(|_| {
                    ServiceError::Invalid(format!(
                        "{text}: `{value}` is not a whole number of seconds (0: no limit)"
                    ))
                })?;
                self.update_defaults(|d| d.user_input_timeout = Some(seconds))
                    .await?;
            }
            Key::Provider { name, field } => {
                self.check_providers_open(text)?;
                let field = field.ok_or_else(|| unknown(text))?;
                let providers = self.engine().providers();
                // A masked key sent back unchanged keeps the stored key.
                match providers.get(name) {
                    Ok(mut provider) => {
                        set_provider_field(&mut provider, field, Some(value))?;
                        providers.update(provider).await?;
                    }
                    Err(_) => {
                        let mut provider = ProviderConfig::new(name, ProviderKind::OpenaiChat);
                        set_provider_field(&mut provider, field, Some(value))?;
                        providers.add(provider).await?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Removes `key`'s value.
    pub(crate) async fn config_unset(&self, text: &str) -> Result<(), ServiceError> {
        match key(text)? {
            Key::Top("name") => {
                return Err(ServiceError::Invalid(
                    "provider: Gantry's provider is the default model's; set model".to_owned(),
                ));
            }
            Key::Top(field) => {
                self.check_providers_open(text)?;
                let providers = self.engine().providers();
                let mut provider = providers.get(&self.default_provider())?;
                set_provider_field(&mut provider, field, None)?;
                providers.update(provider).await?;
            }
            Key::Model => {
                return Err(ServiceError::Invalid(
                    "model: the default model cannot be unset; set another".to_owned(),
                ));
            }
            Key::Approval => self.update_defaults(|d| d.approval = None).await?,
            Key::Sandbox => self.update_defaults(|d| d.sandbox = None).await?,
            Key::UserInputTimeout => {
                self.update_defaults(|d| d.user_input_timeout = None)
                    .await?
            }
            Key::Provider { name, field: None } => {
                self.check_providers_open(text)?;
                self.engine().providers().remove(name).await?;
            }
            Key::Provider {
                name,
                field: Some(field),
            } => {
                self.check_providers_open(text)?;
                let providers = self.engine().providers();
                let mut provider = providers.get(name)?;
                set_provider_field(&mut provider, field, None)?;
                providers.update(provider).await?;
            }
        }
        Ok(())
    }

    /// Every value set.
    pub(crate) fn config_list(&self) -> BTreeMap<String, String> {
        let mut values = BTreeMap::new();
        values.insert(
            "model".to_owned(),
            self.engine().providers().default_model(),
        );
        for key in ["provider", "api_key", "base_url"] {
            if let Ok(Some(value)) = self.config_get(key) {
                values.insert(key.to_owned(), value);
            }
        }
        let defaults = self.defaults();
        if let Some((_, text)) = defaults.approval {
            values.insert("approval_policy".to_owned(), text);
        }
        if let Some(sandbox) = defaults.sandbox {
            values.insert("sandbox_mode".to_owned(), sandbox.as_str().to_owned());
        }
        if let Some(seconds) = defaults.user_input_timeout {
            values.insert(
                "tools.user_input_timeout_seconds".to_owned(),
                seconds.to_string(),
            );
        }
        for provider in self.engine().providers().list() {
            for field in PROVIDER_FIELDS {
                if let Some(value) = provider_field(&provider, field) {
                    values.insert(format!("providers.{}.{field}", provider.name), value);
                }
            }
        }
        values
    }
}

fn provider_field(provider: &ProviderConfig, field: &str) -> Option<String> {
    match field {
        "kind" => Some(provider.kind.as_str().to_owned()),
        "base_url" => provider.base_url.clone(),
        "api_key" => provider.api_key.clone(),
        "api_key_env" => provider.api_key_env.clone(),
        "models" => (!provider.models.is_empty()).then(|| provider.models.join(",")),
        _ => None,
    }
}

fn set_provider_field(
    provider: &mut ProviderConfig,
    field: &str,
    value: Option<&str>,
) -> Result<(), ServiceError> {
    let text = value.map(str::to_owned);
    match field {
        "kind" => {
            let kind = value.ok_or_else(|| {
                ServiceError::Invalid(
                    "kind: a provider needs one; unset providers.NAME to remove it".to_owned(),
                )
            })?;
            provider.kind = kind.parse().map_err(ServiceError::Invalid)?;
        }
        "base_url" => provider.base_url = text,
        "api_key" => provider.api_key = text,
        "api_key_env" => provider.api_key_env = text,
        "models" => {
            provider.models = value
                .map(|v| {
                    v.split(',')
                        .map(str::trim)
                        .filter(|m| !m.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
        }
        _ => {
            return Err(ServiceError::Invalid(format!(
                "unknown provider field `{field}`"
            )));
        }
    }
    Ok(())
}
