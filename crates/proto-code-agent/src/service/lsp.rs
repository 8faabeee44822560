//! Language servers: started per language for a workspace root, stopped,
//! listed, and asked about files (hover, definition, references, workspace
//! symbols, diagnostics).
//!
//! Positions are 0-indexed (line, UTF-16 character) in the proto and in the
//! engine alike, so they pass through unchanged. Files are named by a path
//! or a `file://` URI; a relative path is the server workspace's file when
//! it exists there, else it is looked up under every running server's root.

use std::path::PathBuf;

use gantry_grpc::clip;
use gantry_types::lsp::{LspLocation, LspRange, LspServerInfo};
use tonic::Status;

use super::Ctx;
use crate::pb;
use crate::status::{required, status};

/// `StartLspServer`: starts the `language` server (a name or alias:
/// `python`, `py`, `rust`, ...) for `root_uri` (a `file://` URI or a path,
/// relative to the server workspace; empty: the server workspace) and waits
/// until it is initialized. One already running there is returned as is.
pub(crate) async fn start_lsp_server(
    ctx: &Ctx,
    req: pb::StartLspServerRequest,
) -> Result<pb::StartLspServerResponse, Status> {
    let language = required("language", &req.language)?;
    let root = match req.root_uri.trim() {
        "" => ctx.workspace(),
        uri => ctx.workspace().join(path_of("root_uri", uri)?),
    };
    let info = ctx
        .engine
        .lsp()
        .start_server(language, &root)
        .await
        .map_err(status)?;
    Ok(pb::StartLspServerResponse {
        success: true,
        message: format!(
            "the {} language server {} runs for {}",
            info.language, info.name, info.root
        ),
        server_info: Some(server_info(info)),
    })
}

/// `StopLspServer`: stops the `language` server of every root (the request
/// names no root); `NOT_FOUND` when none was started.
pub(crate) async fn stop_lsp_server(
    ctx: &Ctx,
    req: pb::StopLspServerRequest,
) -> Result<pb::StopLspServerResponse, Status> {
    let language = required("language", &req.language)?;
    let stopped = ctx
        .engine
        .lsp()
        .stop_server(language, None)
        .await
        .map_err(status)?;
    if !stopped {
        return Err(Status::not_found(format!(
            "no {language} language server is running",
            language = clip(language)
        )));
    }
    Ok(pb::StopLspServerResponse { success: true })
}

/// `ListLspServers`: every server started and not stopped; one that
/// crashed is listed as not running.
pub(crate) async fn list_lsp_servers(
    ctx: &Ctx,
    _req: pb::ListLspServersRequest,
) -> Result<pb::ListLspServersResponse, Status> {
    let servers = ctx
        .engine
        .lsp()
        .servers()
        .into_iter()
        .map(server_info)
        .collect();
    Ok(pb::ListLspServersResponse { servers })
}

/// `LspHover`: what the server shows at the position (`found: false` with
/// no content when nothing).
pub(crate) async fn lsp_hover(
    ctx: &Ctx,
    req: pb::LspHoverRequest,
) -> Result<pb::LspHoverResponse, Status> {
    let file = file_of(ctx, &req.file_path)?;
    let hover = ctx
        .engine
        .lsp()
        .hover(&file, req.line, req.column)
        .await
        .map_err(status)?;
    Ok(pb::LspHoverResponse {
        found: hover.found,
        content: hover.content,
        range: hover.range.map(range),
    })
}

/// `LspDefinition`: where the symbol at the position is defined.
pub(crate) async fn lsp_definition(
    ctx: &Ctx,
    req: pb::LspDefinitionRequest,
) -> Result<pb::LspDefinitionResponse, Status> {
    let file = file_of(ctx, &req.file_path)?;
    let found = ctx
        .engine
        .lsp()
        .definition(&file, req.line, req.column)
        .await
        .map_err(status)?;
    Ok(pb::LspDefinitionResponse {
        locations: found.into_iter().map(location).collect(),
    })
}

/// `LspReferences`: references to the symbol at the position, with its
/// declaration when `include_declaration`.
pub(crate) async fn lsp_references(
    ctx: &Ctx,
    req: pb::LspReferencesRequest,
) -> Result<pb::LspReferencesResponse, Status> {
    let file = file_of(ctx, &req.file_path)?;
    let found = ctx
        .engine
        .lsp()
        .references(&file, req.line, req.column, req.include_declaration)
        .await
        .map_err(status)?;
    Ok(pb::LspReferencesResponse {
        locations: found.into_iter().map(location).collect(),
    })
}

/// `LspSymbols`: workspace symbols matching `query` from every running
/// server, at most `limit` (0: 20). `FAILED_PRECONDITION` when the running
/// servers cannot search symbols (pylsp cannot).
pub(crate) async fn lsp_symbols(
    ctx: &Ctx,
    req: pb::LspSymbolsRequest,
) -> Result<pb::LspSymbolsResponse, Status> {
    let found = ctx
        .engine
        .lsp()
        .symbols(req.query.trim(), req.limit)
        .await
        .map_err(status)?;
    let symbols = found
        .into_iter()
        .map(|s| pb::LspSymbol {
            name: s.name,
            kind: s.kind,
            location: Some(location(s.location)),
            container_name: s.container_name,
        })
        .collect();
    Ok(pb::LspSymbolsResponse { symbols })
}

/// `LspDiagnostics`: the diagnostics of `file_path` as it is on disk now
/// (the server's answer awaited), or without one everything the running
/// servers have published.
pub(crate) async fn lsp_diagnostics(
    ctx: &Ctx,
    req: pb::LspDiagnosticsRequest,
) -> Result<pb::LspDiagnosticsResponse, Status> {
    let file = match req.file_path.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(path) => Some(file_of(ctx, path)?),
    };
    let found = ctx
        .engine
        .lsp()
        .diagnostics(file.as_deref())
        .await
        .map_err(status)?;
    let diagnostics = found
        .into_iter()
        .map(|d| pb::LspDiagnostic {
            uri: d.uri,
            range: Some(range(d.range)),
            severity: d.severity.as_str().to_owned(),
            message: d.message,
            code: d.code,
            source: d.source,
        })
        .collect();
    Ok(pb::LspDiagnosticsResponse { diagnostics })
}

/// The file a query names: an absolute path or `file://` URI as is; a
/// relative path in the server workspace when it is there, else as given,
/// for the engine to look up under each running server's root.
fn file_of(ctx: &Ctx, file_path: &str) -> Result<PathBuf, Status> {
    let path = path_of("file_path", required("file_path", file_path)?)?;
    if path.is_absolute() {
        return Ok(path);
    }
    let in_workspace = ctx.workspace().join(&path);
    Ok(if in_workspace.is_file() {
        in_workspace
    } else {
        path
    })
}

/// The path `value` (of `field`) names: a local `file://` URI
/// (percent-decoded) or a plain path. Other URIs are refused.
fn path_of(field: &str, value: &str) -> Result<PathBuf, Status> {
    let scheme = value.get(..7);
    if scheme.is_some_and(|s| s.eq_ignore_ascii_case("file://")) {
        let rest = &value[7..];
        // `file:///path`, or the same with the host spelled `localhost`.
        let path = rest.strip_prefix("localhost").unwrap_or(rest);
        if !path.starts_with('/') {
            return Err(Status::invalid_argument(format!(
                "{field}: `{value}` names another host; only local file:// URIs are served",
                value = clip(value)
            )));
        }
        return percent_decode(path).map(PathBuf::from).ok_or_else(|| {
            Status::invalid_argument(format!(
                "{field}: `{value}` is not a valid file URI (bad percent-encoding)",
                value = clip(value)
            ))
        });
    }
    if value.contains("://") {
        return Err(Status::invalid_argument(format!(
            "{field}: `{value}` is neither a path nor a file:// URI",
            value = clip(value)
        )));
    }
    Ok(PathBuf::from(value))
}

/// `s` with its `%XX` escapes decoded; `None` when one is malformed or the
/// result is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A server as the proto shows it.
fn server_info(info: LspServerInfo) -> pb::LspServerInfo {
    pb::LspServerInfo {
        language: info.language,
        name: info.name,
        version: info.version,
        running: info.running,
    }
}

/// A range as the proto shows it.
fn range(r: LspRange) -> pb::LspRange {
    let position = |p: gantry_types::lsp::LspPosition| pb::LspPosition {
        line: p.line,
        character: p.character,
    };
    pb::LspRange {
        start: Some(position(r.start)),
        end: Some(position(r.end)),
    }
}

/// A location as the proto shows it.
fn location(l: LspLocation) -> pb::LspLocation {
    pb::LspLocation {
        uri: l.uri,
        range: Some(range(l.range)),
    }
}
