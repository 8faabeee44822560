//! The PUB side's sources: every thread's feed, kept to the workspace's
//! threads and mapped to topics (`crate::topics`), and the heartbeat.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use gantry_core::{EngineError, Notification, Subscription};
use gantry_types::{EventPayload, ThreadId};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::pubsock::Publisher;
use crate::service::{Service, session_payload};
use crate::topics::{Out, TopicMapper};
use crate::wire::{HeartbeatPayload, topic};

/// Publishes the topics of the workspace's threads from `sub` (every
/// thread's notifications, picked up again after a lag) until `stop`.
pub(crate) async fn run_feed(
    service: Arc<Service>,
    mut sub: Subscription,
    publisher: Publisher,
    stop: CancellationToken,
) {
    let mut mapper = TopicMapper::default();
    // Whether each thread seen is a session of the workspace.
    let mut members: HashMap<ThreadId, bool> = HashMap::new();
    loop {
        let notification = tokio::select! {
            () = stop.cancelled() => return,
            n = sub.next() => match n {
                Some(n) => n,
                None => return,
            },
        };
        let thread = match &notification {
            Notification::Event(e) => e.thread_id.clone(),
            Notification::Delta(d) => d.thread_id.clone(),
            // Behind the bus: the store has the events missed, and the new
            // subscription starts each item in progress with its text so
            // far, of which subscribers have the tokens already sent.
            Notification::Lagged { resume_from } => {
                match service.engine().feeds().subscribe_all(*resume_from).await {
                    Ok(next) => sub = next,
                    Err(e) => {
                        tracing::warn!(error = %e, "Pando: cannot follow the engine again; topics stop");
                        return;
                    }
                }
                mapper.resync_open_items();
                continue;
            }
        };
        let was = members.get(&thread).copied();
        let now = match &notification {
            Notification::Event(e) => match &e.payload {
                EventPayload::ThreadCreated { thread } => service.owns(thread),
                EventPayload::ThreadConfigured { settings } if settings.cwd.is_some() => {
                    settings.cwd.as_deref() == Some(service.workspace())
                }
                _ => member(&service, was, &thread).await,
            },
            _ => member(&service, was, &thread).await,
        };
        members.insert(thread.clone(), now);
        let outs = if now {
            mapper.map(&notification)
        } else if was == Some(true) {
            vec![Out::Deleted(thread.0.clone())]
        } else {
            continue;
        };
        for out in outs {
            send(&service, &publisher, out).await;
        }
    }
}

/// Whether `thread` is a session, as known or as read from the engine.
async fn member(service: &Service, known: Option<bool>, thread: &ThreadId) -> bool {
    match known {
        Some(known) => known,
        None => match service.engine().threads().read(thread).await {
            Ok(view) => service.owns(&view.thread),
            Err(_) => false,
        },
    }
}

async fn send(service: &Service, publisher: &Publisher, out: Out) {
    match out {
        Out::Publish {
            topic,
            session,
            payload,
        } => publisher.publish(topic, Some(&session), payload).await,
        Out::Updated(id) => {
            if let Some(payload) = payload_of(service, &id).await {
                publisher
                    .publish(topic::SESSION_UPDATE, Some(&id), payload)
                    .await;
            }
            publish_list(service, publisher).await;
        }
        Out::Deleted(id) => {
            let payload = payload_of(service, &id).await.unwrap_or_else(
                || json!({ "id": id, "title": "", "updated_at": "", "message_count": 0 }),
            );
            publisher
                .publish(topic::SESSION_DELETED, Some(&id), payload)
                .await;
            publish_list(service, publisher).await;
        }
    }
}

async fn payload_of(service: &Service, id: &str) -> Option<Value> {
    let view = service
        .engine()
        .threads()
        .read(&ThreadId(id.to_owned()))
        .await
        .ok()?;
    serde_json::to_value(session_payload(&view)).ok()
}

async fn publish_list(service: &Service, publisher: &Publisher) {
    match service.sessions().await {
        Ok(sessions) => {
            publisher
                .publish(topic::SESSION_LIST, None, json!({ "sessions": sessions }))
                .await;
        }
        Err(e) => tracing::warn!(error = %e, "Pando: cannot list sessions for session.list"),
    }
}

/// Publishes `instance.heartbeat` every `every` until `stop`.
pub(crate) async fn run_heartbeat(
    service: Arc<Service>,
    publisher: Publisher,
    every: Duration,
    stop: CancellationToken,
) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let count = match service.threads().await {
            Ok(threads) => threads.len(),
            Err(EngineError::ShuttingDown) => return,
            Err(e) => {
                tracing::warn!(error = %e, "Pando: cannot count sessions for the heartbeat");
                continue;
            }
        };
        let payload = HeartbeatPayload {
            instance_id: service.instance_id().to_owned(),
            active_session_id: service.active(),
            session_count: i64::try_from(count).unwrap_or(i64::MAX),
            uptime: service.uptime(),
            started_at: service.started_at().to_owned(),
        };
        let payload = serde_json::to_value(payload).unwrap_or_default();
        publisher
            .publish(topic::INSTANCE_HEARTBEAT, None, payload)
            .await;
    }
}
