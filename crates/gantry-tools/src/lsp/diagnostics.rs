//! The diagnostics a server has published, per file, and waiting for the
//! ones that answer a change we just sent.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use gantry_types::lsp::LspDiagnostic;
use lsp_types::{PublishDiagnosticsParams, Url};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::convert;

/// What a file's last `publishDiagnostics` said.
struct Published {
    /// The publish count when it arrived.
    seq: u64,
    /// The document version it is for, when the server says.
    version: Option<i32>,
    diagnostics: Vec<LspDiagnostic>,
}

#[derive(Default)]
struct Inner {
    by_uri: BTreeMap<Url, Published>,
    seq: u64,
}

/// Diagnostics by file. Every publish bumps a counter that waiters watch,
/// so waiting is event-driven.
pub(crate) struct DiagnosticsCache {
    inner: Mutex<Inner>,
    changed: watch::Sender<u64>,
}

/// What a wait is for: a publish for `uri` that is newer than the change
/// we sent.
pub(crate) struct Awaited<'a> {
    /// The file.
    pub uri: &'a Url,
    /// The publish count when the change was sent: only later publishes count.
    pub after_seq: u64,
    /// The version we sent; a publish that names an older one is stale.
    pub version: i32,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl DiagnosticsCache {
    pub(crate) fn new() -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            changed: watch::channel(0).0,
        }
    }

    /// Records a `textDocument/publishDiagnostics` notification.
    pub(crate) fn publish(&self, params: PublishDiagnosticsParams) {
        let seq = {
            let mut inner = lock(&self.inner);
            inner.seq += 1;
            let seq = inner.seq;
            let diagnostics = params
                .diagnostics
                .into_iter()
                .map(|d| convert::diagnostic(&params.uri, d))
                .collect();
            inner.by_uri.insert(
                params.uri,
                Published {
                    seq,
                    version: params.version,
                    diagnostics,
                },
            );
            seq
        };
        self.changed.send_replace(seq);
    }

    /// The publish count so far.
    pub(crate) fn seq(&self) -> u64 {
        lock(&self.inner).seq
    }

    /// The file's diagnostics, if the server has published any.
    pub(crate) fn get(&self, uri: &Url) -> Option<Vec<LspDiagnostic>> {
        lock(&self.inner)
            .by_uri
            .get(uri)
            .map(|p| p.diagnostics.clone())
    }

    /// Every file's diagnostics, by file.
    pub(crate) fn all(&self) -> Vec<LspDiagnostic> {
        lock(&self.inner)
            .by_uri
            .values()
            .flat_map(|p| p.diagnostics.iter().cloned())
            .collect()
    }

    /// Waits until the server publishes for `awaited`, at most `timeout`
    /// or until `gone` fires; then returns what is known for the file
    /// (possibly nothing, when the server never published for it).
    pub(crate) async fn wait(
        &self,
        awaited: Awaited<'_>,
        timeout: Duration,
        gone: &CancellationToken,
    ) -> Vec<LspDiagnostic> {
        let mut rx = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(found) = self.fresh(&awaited) {
                return found;
            }
            tokio::select! {
                changed = rx.changed() => if changed.is_err() { break },
                _ = tokio::time::sleep_until(deadline) => break,
                _ = gone.cancelled() => break,
            }
        }
        self.get(awaited.uri).unwrap_or_default()
    }

    fn fresh(&self, awaited: &Awaited<'_>) -> Option<Vec<LspDiagnostic>> {
        let inner = lock(&self.inner);
        let p = inner.by_uri.get(awaited.uri)?;
        let fresh = match p.version {
            Some(v) => v >= awaited.version,
            None => p.seq > awaited.after_seq,
        };
        fresh.then(|| p.diagnostics.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn params(uri: &str, version: Option<i32>, messages: &[&str]) -> PublishDiagnosticsParams {
        let diagnostics: Vec<_> = messages
            .iter()
            .map(|m| json!({"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "message": m}))
            .collect();
        serde_json::from_value(json!({"uri": uri, "version": version, "diagnostics": diagnostics}))
            .unwrap()
    }

    #[tokio::test]
    async fn a_waiter_gets_the_publish_for_its_version_not_a_stale_one() {
        let cache = Arc::new(DiagnosticsCache::new());
        let uri = Url::parse("file:///w/a.py").unwrap();
        cache.publish(params("file:///w/a.py", Some(1), &["old"]));
        let waiter = {
            let cache = cache.clone();
            let uri = uri.clone();
            tokio::spawn(async move {
                let awaited = Awaited {
                    uri: &uri,
                    after_seq: cache.seq(),
                    version: 2,
                };
                cache
                    .wait(awaited, Duration::from_secs(60), &CancellationToken::new())
                    .await
            })
        };
        cache.publish(params("file:///w/other.py", None, &["elsewhere"]));
        cache.publish(params("file:///w/a.py", Some(2), &["new"]));
        let got = waiter.await.unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].message, "new");
        assert_eq!(cache.all().len(), 2);
    }

    #[tokio::test]
    async fn a_server_gone_ends_the_wait_with_what_is_known() {
        let cache = DiagnosticsCache::new();
        let uri = Url::parse("file:///w/a.py").unwrap();
        let gone = CancellationToken::new();
        gone.cancel();
        let awaited = Awaited {
            uri: &uri,
            after_seq: 0,
            version: 1,
        };
        assert!(
            cache
                .wait(awaited, Duration::from_secs(60), &gone)
                .await
                .is_empty()
        );
    }
}
