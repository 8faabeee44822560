//! Placeholder: being written.

use crate::{ClientConfig, ModelClient, ModelError, ModelRequest, ModelStream};

/// A [`ModelClient`] (being written).
#[derive(Debug, Clone)]
pub struct OpenAiResponsesClient;

impl OpenAiResponsesClient {
    /// Builds a client.
    pub fn new(_config: ClientConfig) -> Result<Self, ModelError> {
        Ok(Self)
    }
}

impl ModelClient for OpenAiResponsesClient {
    fn stream(&self, _request: ModelRequest) -> ModelStream {
        Box::pin(futures_util::stream::once(async {
            Err(ModelError::Config("not implemented yet".into()))
        }))
    }
}
