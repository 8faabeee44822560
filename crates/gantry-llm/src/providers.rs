//! The client factory: one [`ModelClient`] per [`ProviderKind`].

use std::sync::Arc;

use gantry_types::ProviderKind;

use crate::anthropic::AnthropicClient;
use crate::openai_chat::OpenAiChatClient;
use crate::openai_responses::OpenAiResponsesClient;
use crate::{ClientConfig, ModelClient, ModelError};

/// Builds the client for a provider of `kind`; fails with
/// [`ModelError::Config`] on a bad URL or header.
pub fn client_for(
    kind: ProviderKind,
    config: ClientConfig,
) -> Result<Arc<dyn ModelClient>, ModelError> {
    Ok(match kind {
        ProviderKind::OpenaiChat => Arc::new(OpenAiChatClient::new(config)?),
        ProviderKind::OpenaiResponses => Arc::new(OpenAiResponsesClient::new(config)?),
        ProviderKind::Anthropic => Arc::new(AnthropicClient::new(config)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_builds_and_bad_urls_are_config_errors() {
        for kind in ProviderKind::ALL {
            assert!(client_for(kind, ClientConfig::new("http://127.0.0.1:1")).is_ok());
        }
        let err = client_for(ProviderKind::OpenaiChat, ClientConfig::new("not a url"));
        assert!(matches!(err, Err(ModelError::Config(_))));
    }
}
