//! `config_get|set|unset|list` on what Gantry has to configure: `model`
//! (the default model, persisted by the engine), `approval_policy` and
//! `sandbox_mode` (defaults of threads created over CodeWhale, kept in the
//! engine's settings) and `providers.NAME.FIELD` (the engine's provider registry:
//! `kind`, `base_url`, `api_key`, `api_key_env`, `models`; unsetting
//! `providers.NAME` removes it). Keys come back masked: the engine never
//! hands a key out, whatever the transport.

use std::collections::BTreeMap;

use gantry_types::{ProviderConfig, ProviderKind};

use super::policy::{approval_name, parse_approval, parse_sandbox};
use super::{CodeWhale, ServiceError};

/// The provider fields a key may name.
const PROVIDER_FIELDS: [&str; 5] = ["kind", "base_url", "api_key", "api_key_env", "models"];

enum Key<'a> {
    Model,
    Approval,
    Sandbox,
    Provider {
        name: &'a str,
        field: Option<&'a str>,
    },
}

fn key(text: &str) -> Result<Key<'_>, ServiceError> {
    match text {
        "model" => Ok(Key::Model),
        "approval_policy" => Ok(Key::Approval),
        "sandbox_mode" => Ok(Key::Sandbox),
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
        "unknown config key `{key}`: expected model, approval_policy, sandbox_mode or \
         providers.NAME.{{{}}}",
        PROVIDER_FIELDS.join(",")
    ))
}

impl CodeWhale {
    /// The value of `key` (`None` when unset).
    pub(crate) fn config_get(&self, text: &str) -> Result<Option<String>, ServiceError> {
        Ok(match key(text)? {
            Key::Model => Some(self.engine().providers().default_model()),
            Key::Approval => self.defaults().approval.map(approval_name),
            Key::Sandbox => self.defaults().sandbox.map(|s| s.as_str().to_owned()),
            Key::Provider { name, field } => match self.engine().providers().get(name) {
                Ok(provider) => provider_field(&provider, field.unwrap_or("kind")),
                Err(_) => None,
            },
        })
    }

    /// Sets `key`; returns the value as it now reads (a key masked).
    pub(crate) async fn config_set(&self, text: &str, value: &str) -> Result<String, ServiceError> {
        match key(text)? {
            Key::Model => {
                self.engine().providers().set_default_model(value).await?;
            }
            Key::Approval => {
                let policy = parse_approval(value).map_err(ServiceError::Invalid)?;
                self.update_defaults(|d| d.approval = Some(policy)).await?;
            }
            Key::Sandbox => {
                let sandbox = parse_sandbox(value).map_err(ServiceError::Invalid)?;
                self.engine().config().check_sandbox(sandbox)?;
                self.update_defaults(|d| d.sandbox = Some(sandbox)).await?;
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
        Ok(self.config_get(text)?.unwrap_or_default())
    }

    /// Removes `key`'s value.
    pub(crate) async fn config_unset(&self, text: &str) -> Result<(), ServiceError> {
        match key(text)? {
            Key::Model => {
                return Err(ServiceError::Invalid(
                    "model: the default model cannot be unset; set another".to_owned(),
                ));
            }
            Key::Approval => self.update_defaults(|d| d.approval = None).await?,
            Key::Sandbox => self.update_defaults(|d| d.sandbox = None).await?,
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
        let defaults = self.defaults();
        if let Some(policy) = defaults.approval {
            values.insert("approval_policy".to_owned(), approval_name(policy));
        }
        if let Some(sandbox) = defaults.sandbox {
            values.insert("sandbox_mode".to_owned(), sandbox.as_str().to_owned());
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
