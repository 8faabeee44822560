//! A prompt's content blocks as the text of a user message: text as it
//! is, a resource link as a reference the agent can open, an embedded
//! resource with its text. The engine takes text input only, so images
//! and audio (not advertised in `initialize`) are named, not sent.

use crate::rpc::RpcError;
use crate::wire::ContentBlock;

/// The user message of `blocks`.
pub(crate) fn prompt_text(blocks: &[ContentBlock]) -> Result<String, RpcError> {
    let mut parts = Vec::new();
    for block in blocks {
        parts.push(match block {
            ContentBlock::Text { text } => text.clone(),
            ContentBlock::ResourceLink { name, uri, .. } => format!("[@{name}]({uri})"),
            ContentBlock::Resource { resource } => match &resource.text {
                Some(text) => format!(
                    "<context uri=\"{}\">\n{}\n</context>",
                    resource.uri,
                    text.trim_end()
                ),
                None => format!("[binary resource {} not included]", resource.uri),
            },
            ContentBlock::Image { mime_type, uri, .. } => format!(
                "[image {} ({mime_type}) not included: this agent takes text input only]",
                uri.as_deref().unwrap_or("")
            ),
            ContentBlock::Audio { mime_type, .. } => {
                format!("[audio ({mime_type}) not included: this agent takes text input only]")
            }
        });
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() {
        return Err(RpcError::invalid_params("the prompt is empty"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::EmbeddedResource;

    #[test]
    fn links_and_embedded_resources_reach_the_model_as_text() {
        let blocks = vec![
            ContentBlock::text("fix it"),
            ContentBlock::ResourceLink {
                name: "a.rs".into(),
                uri: "file:///w/a.rs".into(),
                title: None,
                mime_type: None,
            },
            ContentBlock::Resource {
                resource: EmbeddedResource {
                    uri: "file:///w/b.rs".into(),
                    text: Some("fn b() {}\n".into()),
                    blob: None,
                    mime_type: None,
                },
            },
        ];
        let text = prompt_text(&blocks).unwrap();
        assert!(text.starts_with("fix it\n\n[@a.rs](file:///w/a.rs)"));
        assert!(text.contains("<context uri=\"file:///w/b.rs\">\nfn b() {}\n</context>"));
        assert_eq!(prompt_text(&[]).unwrap_err().code, -32602);
    }
}
