//! Turns what a server answers (lsp-types shapes) into Gantry's types.

use gantry_types::lsp::{
    LspDiagnostic, LspHover, LspLocation, LspPosition, LspRange, LspSeverity, LspSymbol,
};
use lsp_types as lsp;

pub(crate) fn position(p: lsp::Position) -> LspPosition {
    LspPosition {
        line: p.line,
        character: p.character,
    }
}

pub(crate) fn range(r: lsp::Range) -> LspRange {
    LspRange {
        start: position(r.start),
        end: position(r.end),
    }
}

pub(crate) fn location(l: lsp::Location) -> LspLocation {
    LspLocation {
        uri: l.uri.to_string(),
        range: range(l.range),
    }
}

/// Hover contents as one markdown text: code blocks for language strings,
/// parts separated by blank lines.
pub(crate) fn hover(h: Option<lsp::Hover>) -> LspHover {
    let Some(h) = h else {
        return LspHover::default();
    };
    let marked = |m: lsp::MarkedString| match m {
        lsp::MarkedString::String(s) => s,
        lsp::MarkedString::LanguageString(ls) => {
            format!("```{}\n{}\n```", ls.language, ls.value)
        }
    };
    let content = match h.contents {
        lsp::HoverContents::Scalar(m) => marked(m),
        lsp::HoverContents::Array(parts) => parts
            .into_iter()
            .map(marked)
            .filter(|s| !s.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        lsp::HoverContents::Markup(m) => m.value,
    };
    let content = content.trim().to_owned();
    LspHover {
        found: !content.is_empty(),
        content,
        range: h.range.map(range),
    }
}

/// Every target of a definition answer (`null`, one location, several, or links).
pub(crate) fn definition(d: Option<lsp::GotoDefinitionResponse>) -> Vec<LspLocation> {
    match d {
        None => Vec::new(),
        Some(lsp::GotoDefinitionResponse::Scalar(l)) => vec![location(l)],
        Some(lsp::GotoDefinitionResponse::Array(ls)) => ls.into_iter().map(location).collect(),
        Some(lsp::GotoDefinitionResponse::Link(links)) => links
            .into_iter()
            .map(|l| LspLocation {
                uri: l.target_uri.to_string(),
                range: range(l.target_selection_range),
            })
            .collect(),
    }
}

/// Symbols of a workspace symbol answer, in either of its two shapes.
pub(crate) fn symbols(s: Option<lsp::WorkspaceSymbolResponse>) -> Vec<LspSymbol> {
    match s {
        None => Vec::new(),
        Some(lsp::WorkspaceSymbolResponse::Flat(infos)) => infos
            .into_iter()
            .map(|i| LspSymbol {
                name: i.name,
                kind: symbol_kind(i.kind).to_owned(),
                location: location(i.location),
                container_name: i.container_name,
            })
            .collect(),
        Some(lsp::WorkspaceSymbolResponse::Nested(symbols)) => symbols
            .into_iter()
            .map(|s| LspSymbol {
                name: s.name,
                kind: symbol_kind(s.kind).to_owned(),
                location: match s.location {
                    lsp::OneOf::Left(l) => location(l),
                    // A location without a range: the start of the file.
                    lsp::OneOf::Right(w) => LspLocation {
                        uri: w.uri.to_string(),
                        range: LspRange::default(),
                    },
                },
                container_name: s.container_name,
            })
            .collect(),
    }
}

pub(crate) fn diagnostic(uri: &lsp::Url, d: lsp::Diagnostic) -> LspDiagnostic {
    LspDiagnostic {
        uri: uri.to_string(),
        range: range(d.range),
        severity: match d.severity {
            Some(lsp::DiagnosticSeverity::WARNING) => LspSeverity::Warning,
            Some(lsp::DiagnosticSeverity::INFORMATION) => LspSeverity::Info,
            Some(lsp::DiagnosticSeverity::HINT) => LspSeverity::Hint,
            // Error, and unspecified: most clients treat that as an error.
            _ => LspSeverity::Error,
        },
        message: d.message,
        code: d.code.map(|c| match c {
            lsp::NumberOrString::Number(n) => n.to_string(),
            lsp::NumberOrString::String(s) => s,
        }),
        source: d.source,
    }
}

/// The seed's kind names: LSP's `SymbolKind` in snake case.
pub(crate) fn symbol_kind(kind: lsp::SymbolKind) -> &'static str {
    const NAMES: [&str; 26] = [
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enum_member",
        "struct",
        "event",
        "operator",
        "type_parameter",
    ];
    // SymbolKind is an open set of integers from 1; newer kinds are "unknown".
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_u64())
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| NAMES.get(i as usize).copied())
        .unwrap_or("unknown")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hover_contents_of_every_shape_become_markdown() {
        let markup: lsp::Hover = serde_json::from_value(json!({
            "contents": {"kind": "markdown", "value": "```python\ndef f()\n```\n\nDoc."},
            "range": {"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 3}}
        }))
        .unwrap();
        let h = hover(Some(markup));
        assert!(h.found && h.content.ends_with("Doc."));
        assert_eq!(h.range.unwrap().start.character, 2);

        let array: lsp::Hover = serde_json::from_value(json!({
            "contents": [{"language": "python", "value": "def f()"}, "Doc.", ""]
        }))
        .unwrap();
        assert_eq!(
            hover(Some(array)).content,
            "```python\ndef f()\n```\n\nDoc."
        );

        let empty: lsp::Hover = serde_json::from_value(json!({"contents": ""})).unwrap();
        assert!(!hover(Some(empty)).found);
        assert!(!hover(None).found);
    }

    #[test]
    fn symbol_kinds_and_severities_use_the_seed_names() {
        assert_eq!(symbol_kind(lsp::SymbolKind::FUNCTION), "function");
        assert_eq!(
            symbol_kind(lsp::SymbolKind::TYPE_PARAMETER),
            "type_parameter"
        );
        let d: lsp::Diagnostic = serde_json::from_value(json!({
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
            "severity": 2, "code": 401, "source": "pyflakes", "message": "unused"
        }))
        .unwrap();
        let uri = lsp::Url::parse("file:///w/a.py").unwrap();
        let d = diagnostic(&uri, d);
        assert_eq!(d.severity, LspSeverity::Warning);
        assert_eq!(d.code.as_deref(), Some("401"));
        assert_eq!(d.uri, "file:///w/a.py");
    }
}
