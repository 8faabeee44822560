//! Writing a request body from JSON already serialised: the history's cached
//! fragments go into the body as they are, in exactly the bytes serialising
//! the whole body as one `Value` would give.

use std::sync::OnceLock;

use serde_json::{Map, Value};

/// The APIs whose wire JSON is cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// OpenAI Chat Completions.
    Chat,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    Anthropic,
}

/// Something's JSON per API, rendered on first use and kept.
#[derive(Debug, Clone, Default)]
pub(crate) struct WireCache([OnceLock<Box<str>>; 3]);

impl WireCache {
    /// The JSON for `wire`, rendered by `render` the first time.
    pub(crate) fn get(&self, wire: Wire, render: impl FnOnce() -> String) -> &str {
        self.0[wire as usize].get_or_init(|| render().into())
    }
}

/// A fragment: the compact JSON of `values`, comma-separated (empty for none),
/// ready to sit inside an array.
pub(crate) fn fragment(values: impl IntoIterator<Item = Value>) -> String {
    let mut out = String::new();
    for v in values {
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(&v.to_string());
    }
    out
}

/// The array of `fragments`, skipping empty ones.
pub(crate) fn array<'a>(fragments: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::from("[");
    for f in fragments.into_iter().filter(|f| !f.is_empty()) {
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(f);
    }
    out.push(']');
    out
}

/// The object of `fields` with each of `raws`' JSON text as the value of its
/// key, which `fields` must hold (its value there is ignored): keys come in
/// the map's own order, as `Value::Object(fields).to_string()` writes them.
pub(crate) fn object(fields: &Map<String, Value>, raws: &[(&str, &str)]) -> String {
    let size: usize = raws.iter().map(|(_, raw)| raw.len()).sum();
    let mut out = String::with_capacity(size + 256);
    out.push('{');
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::from(k.as_str()).to_string());
        out.push(':');
        match raws.iter().find(|(key, _)| key == k) {
            Some((_, raw)) => out.push_str(raw),
            None => out.push_str(&v.to_string()),
        }
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_object_with_a_raw_field_is_what_the_value_would_serialise_to() {
        let items = [json!({"b": "x\"y", "a": [1, null]}), json!("é\n")];
        let raw = array([fragment(items.clone()).as_str(), "", "true"]);
        let Value::Object(mut fields) = json!({"z": 1, "model": "m", "a": {"k": 0.5}}) else {
            unreachable!("an object literal")
        };
        fields.insert("input".into(), Value::Null);
        fields.insert("tools".into(), Value::Null);
        let written = object(&fields, &[("input", &raw), ("tools", "[]")]);

        fields.insert(
            "input".into(),
            json!([items[0].clone(), items[1].clone(), true]),
        );
        fields.insert("tools".into(), json!([]));
        assert_eq!(written, Value::Object(fields).to_string());
    }

    #[test]
    fn empty_fragments_make_an_empty_array() {
        assert_eq!(array([fragment([]).as_str(), ""]), "[]");
    }
}
