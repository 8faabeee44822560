//! Pando (`proto-pando`) in the binary: `gantry serve --pando DIR`, one
//! instance per directory beside the other listeners, on the same engine.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use gantry_core::Engine;
use proto_pando::{InstanceOptions, PandoInstance};
use tokio_util::sync::CancellationToken;

/// The Pando instances of `gantry serve`, started.
pub(crate) struct PandoInstances {
    instances: Vec<PandoInstance>,
}

impl PandoInstances {
    /// Starts one instance per dir, serving until `stop`. If one cannot
    /// start (another instance serves its dir, say), those already started
    /// are stopped and their files removed before the error is returned.
    pub(crate) async fn start(
        engine: &Engine,
        dirs: &[PathBuf],
        heartbeat: Duration,
        stop: CancellationToken,
    ) -> Result<Self> {
        let mine = stop.child_token();
        let mut instances = Vec::new();
        for dir in dirs {
            let options = InstanceOptions {
                heartbeat,
                ..InstanceOptions::new(dir.clone())
            };
            match PandoInstance::start(engine.clone(), options, mine.clone()).await {
                Ok(instance) => instances.push(instance),
                Err(e) => {
                    mine.cancel();
                    for instance in instances {
                        instance.stopped().await;
                    }
                    return Err(e).with_context(|| format!("--pando {}", dir.display()));
                }
            }
        }
        Ok(Self { instances })
    }

    /// The lines scripts wait for: one per instance, with its ports.
    pub(crate) fn announce(&self) {
        for instance in &self.instances {
            for note in instance.notes() {
                eprintln!("gantry: warning: Pando {}: {note}", instance.entry().path);
            }
            let e = instance.entry();
            eprintln!(
                "gantry: serving Pando instance {} for {} (rpc tcp://127.0.0.1:{}, pub tcp://127.0.0.1:{})",
                e.lock.instance_id, e.path, e.lock.rpc_port, e.lock.pub_port
            );
        }
    }

    /// Waits until every instance said `instance.shutdown`, closed its
    /// sockets and removed its files.
    pub(crate) async fn stopped(self) {
        for instance in self.instances {
            instance.stopped().await;
        }
    }
}
