//! Images in a user message: what the engine keeps in the log and sends to
//! models that read images.

use serde::{Deserialize, Serialize};

/// The media types every model wire Gantry speaks accepts.
pub const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The largest image, decoded (Anthropic's per-image limit, the smallest of
/// the providers').
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// The most images one message carries.
pub const MAX_IMAGES: usize = 8;

/// The largest JSON body a message with images needs: [`MAX_IMAGES`]
/// images of [`MAX_IMAGE_BYTES`] in base64 (4 characters per 3 bytes), and
/// a megabyte for the text and the JSON around them. HTTP listeners take
/// bodies up to this size, so the documented images are never refused for
/// their transport.
pub const MAX_MESSAGE_BODY: usize = MAX_IMAGES * MAX_IMAGE_BYTES.div_ceil(3) * 4 + 1024 * 1024;

/// An image of a user message: its media type and its bytes in base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImagePart {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The bytes, standard base64 (padded, no line breaks).
    pub data: String,
}

impl ImagePart {
    /// An image of `media_type` with base64 `data`.
    pub fn new(media_type: impl Into<String>, data: impl Into<String>) -> Self {
        Self {
            media_type: media_type.into(),
            data: data.into(),
        }
    }

    /// Its size once decoded.
    pub fn decoded_len(&self) -> usize {
        let padding = self.data.bytes().rev().take_while(|b| *b == b'=').count();
        (self.data.len() / 4 * 3).saturating_sub(padding)
    }

    /// The image as a `data:` URL (what OpenAI's wires take).
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data)
    }

    /// Why the image cannot be sent, if it cannot: an unknown media type,
    /// data that is not base64, or too large.
    pub fn check(&self) -> Result<(), String> {
        if !IMAGE_MEDIA_TYPES.contains(&self.media_type.as_str()) {
            return Err(format!(
                "image media type `{}` is not supported (use one of {})",
                self.media_type,
                IMAGE_MEDIA_TYPES.join(", ")
            ));
        }
        let body = self.data.trim_end_matches('=');
        let padding = self.data.len() - body.len();
        let base64 = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
        if self.data.is_empty()
            || !self.data.len().is_multiple_of(4)
            || padding > 2
            || !body.bytes().all(base64)
        {
            return Err(format!(
                "the {} image's data is not padded standard base64",
                self.media_type
            ));
        }
        let size = self.decoded_len();
        if size > MAX_IMAGE_BYTES {
            return Err(format!(
                "the {} image is {size} bytes; images may be at most {MAX_IMAGE_BYTES} bytes",
                self.media_type
            ));
        }
        Ok(())
    }

    /// Why these images cannot go in one message, if they cannot.
    pub fn check_all(images: &[ImagePart]) -> Result<(), String> {
        if images.len() > MAX_IMAGES {
            return Err(format!(
                "a message may carry at most {MAX_IMAGES} images, not {}",
                images.len()
            ));
        }
        images.iter().try_for_each(ImagePart::check)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_checked_for_type_encoding_and_size() {
        assert_eq!(ImagePart::new("image/png", "iVBORw0KGgo=").check(), Ok(()));
        assert_eq!(ImagePart::new("image/png", "aGk=").decoded_len(), 2);
        let svg = ImagePart::new("image/svg+xml", "aGk=").check().unwrap_err();
        assert!(svg.contains("not supported"), "{svg}");
        let bad = ImagePart::new("image/png", "not base64!")
            .check()
            .unwrap_err();
        assert!(bad.contains("base64"), "{bad}");
        let big = "A".repeat((MAX_IMAGE_BYTES / 3 + 1) * 4);
        let big = ImagePart::new("image/jpeg", big).check().unwrap_err();
        assert!(big.contains("at most"), "{big}");
        let many = vec![ImagePart::new("image/png", "aGk="); MAX_IMAGES + 1];
        assert!(ImagePart::check_all(&many).is_err());
    }
}
