//! Query strings read so that a bad one answers in the API's error shape,
//! naming the parameter.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The query string as `T`; 422 naming the parameter when it is wrong.
pub(crate) struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        let de = serde_urlencoded::Deserializer::new(form_urlencoded_parse(query));
        serde_path_to_error::deserialize(de).map(Self).map_err(|e| {
            let path = e.path().to_string();
            let message = e.inner().to_string();
            let field = if path != "." {
                Some(path)
            } else {
                ["unknown field `", "missing field `"]
                    .iter()
                    .find_map(|p| message.strip_prefix(p))
                    .and_then(|rest| rest.split('`').next())
                    .map(str::to_owned)
            };
            let shown = field
                .as_deref()
                .map_or(String::new(), |f| format!("`{f}`: "));
            ApiError::validation(
                field.as_deref(),
                format!("invalid query string: {shown}{message}"),
            )
        })
    }
}

fn form_urlencoded_parse(query: &str) -> form_urlencoded::Parse<'_> {
    form_urlencoded::parse(query.as_bytes())
}
