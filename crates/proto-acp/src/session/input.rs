//! A prompt's content blocks as a user message: text as it is, a resource
//! link as a reference the agent can open, an embedded resource with its
//! text, images as the message's images (the engine checks them and
//! refuses them for a model that reads none). Audio (not advertised in
//! `initialize`) is named, not sent.

use gantry_core::UserInput;
use gantry_types::ImagePart;

use crate::rpc::RpcError;
use crate::wire::ContentBlock;

/// The user message of `blocks`.
pub(crate) fn prompt_input(blocks: &[ContentBlock]) -> Result<UserInput, RpcError> {
    let mut parts = Vec::new();
    let mut images = Vec::new();
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
            ContentBlock::Image {
                mime_type, data, ..
            } => {
                images.push(ImagePart::new(mime_type.clone(), data.clone()));
                continue;
            }
            ContentBlock::Audio { mime_type, .. } => {
                format!("[audio ({mime_type}) not included: this agent takes no audio input]")
            }
        });
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() && images.is_empty() {
        return Err(RpcError::invalid_params("the prompt is empty"));
    }
    Ok(UserInput {
        text,
        images,
        ..UserInput::default()
    })
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
        let text = prompt_input(&blocks).unwrap().text;
        assert!(text.starts_with("fix it\n\n[@a.rs](file:///w/a.rs)"));
        assert!(text.contains("<context uri=\"file:///w/b.rs\">\nfn b() {}\n</context>"));
        assert_eq!(prompt_input(&[]).unwrap_err().code, -32602);
    }

    #[test]
    fn images_become_the_messages_images() {
        let image = ContentBlock::Image {
            data: "aGk=".into(),
            mime_type: "image/png".into(),
            uri: None,
        };
        let input = prompt_input(&[ContentBlock::text("what is it?"), image.clone()]).unwrap();
        assert_eq!(input.text, "what is it?");
        assert_eq!(input.images, vec![ImagePart::new("image/png", "aGk=")]);
        // An image alone is a prompt.
        assert_eq!(prompt_input(&[image]).unwrap().images.len(), 1);
    }
}
