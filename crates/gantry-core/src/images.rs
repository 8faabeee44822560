//! Images in user messages, and models that read none.
//!
//! A message with images for a model the catalog says reads no images is
//! refused when it is sent (`EngineError::InvalidInput`, naming the
//! model), so the user learns at once. A model the catalog does not know
//! (a local server, a thread's own endpoint) gets them: its server says
//! if it cannot. Images already in a thread's history when it switches to
//! a model without image input are left out of its requests, each
//! replaced by a note, so the model knows something was there.

use gantry_llm::Message;
use gantry_types::{ImagePart, ModelInfo};

/// Whether a model with this catalog entry (if any) reads images.
pub(crate) fn takes_images(info: Option<&ModelInfo>) -> bool {
    info.is_none_or(|i| i.modalities.input.iter().any(|m| m == "image"))
}

/// Why images cannot go to `model`.
pub(crate) fn refused(model: &str) -> String {
    format!(
        "model {model} takes no image input (its catalog entry lists none); \
         send text only or switch the thread to a model that reads images"
    )
}

/// `messages` with every image replaced by a note in its message's text.
pub(crate) fn left_out(messages: Vec<Message>, model: &str) -> Vec<Message> {
    messages
        .into_iter()
        .map(|m| match m {
            Message::User { text, images } if !images.is_empty() => Message::User {
                text: with_notes(text, &images, model),
                images: Vec::new(),
            },
            other => other,
        })
        .collect()
}

fn with_notes(text: String, images: &[ImagePart], model: &str) -> String {
    let notes: Vec<String> = images
        .iter()
        .map(|i| {
            format!(
                "[an image ({}) was left out: {model} reads no images]",
                i.media_type
            )
        })
        .collect();
    if text.is_empty() {
        notes.join("\n")
    } else {
        format!("{}\n\n{text}", notes.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_without_image_input_get_notes_instead() {
        let text_only = ModelInfo {
            modalities: gantry_types::Modalities {
                input: vec!["text".into()],
                output: vec!["text".into()],
            },
            ..ModelInfo::default()
        };
        assert!(!takes_images(Some(&text_only)));
        assert!(takes_images(None));
        let messages = vec![Message::User {
            text: "what is it?".into(),
            images: vec![ImagePart::new("image/png", "aGk=")],
        }];
        assert_eq!(
            left_out(messages, "m"),
            vec![Message::user(
                "[an image (image/png) was left out: m reads no images]\n\nwhat is it?"
            )]
        );
    }
}
