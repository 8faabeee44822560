//! Remembered "approve for this session" answers.

use std::collections::HashSet;

use serde_json::Value;

use crate::request::ToolRequest;

/// Remembered "approve for this session" answers: identical requests are
/// allowed without asking again.
#[derive(Debug, Clone, Default)]
pub struct SessionGrants {
    granted: HashSet<(String, String)>,
}

impl SessionGrants {
    /// Remembers that requests identical to `req` are approved.
    pub fn insert(&mut self, req: &ToolRequest<'_>) {
        self.granted.insert(grant_key(req));
    }

    /// Whether a request identical to `req` was approved for the session.
    pub fn contains(&self, req: &ToolRequest<'_>) -> bool {
        self.granted.contains(&grant_key(req))
    }

    /// How many grants are remembered.
    pub fn len(&self) -> usize {
        self.granted.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.granted.is_empty()
    }
}

/// What identical means: same tool and same arguments; for `shell`, the
/// same command line in the same directory (a different time limit is the
/// same command).
fn grant_key(req: &ToolRequest<'_>) -> (String, String) {
    let key = if req.tool == "shell" {
        let command = req.arg("command").unwrap_or("");
        let workdir = req.arg("workdir").unwrap_or("");
        format!("{workdir}\0{command}")
    } else {
        canonical_json(req.args)
    };
    (req.tool.to_owned(), key)
}

/// JSON with object keys sorted, so that key order does not make two
/// requests different (whatever map order serde_json was built with).
fn canonical_json(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let body: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), canonical_json(v)))
                .collect();
            format!("{{{}}}", body.join(","))
        }
        Value::Array(items) => {
            let body: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", body.join(","))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_nested_keys() {
        assert_eq!(
            canonical_json(&json!({"b": [{"d": 1, "c": 2}], "a": "x"})),
            r#"{"a":"x","b":[{"c":2,"d":1}]}"#
        );
    }
}
