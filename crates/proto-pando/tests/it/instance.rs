//! The nine methods, the topics of a turn, discovery and shutdown.

use gantry_testkit::{Step, ToolCallSpec};
use proto_pando::{DiscoveryError, InstanceOptions, LockInfo, PandoInstance, RegistryEntry};
use serde_json::{Value, json};

use crate::common::{HANG_GUARD, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_with_a_tool_call_is_answered_and_published_in_order() {
    let steps = vec![
        Step::tool_calls(vec![
            ToolCallSpec::new("shell", json!({"command": "echo pando-out"})).with_id("call_a"),
        ])
        .with_text("Let me look."),
        Step::text("All done here.").with_chunk_size(4),
    ];
    let setup = start(steps).await;
    let mut c = setup.client().await;
    assert_eq!(c.result("session.list", Value::Null).await, json!([]));
    let ok = c
        .result(
            "message.send",
            json!({"session_id": "s-1", "content": "run it"}),
        )
        .await;
    assert_eq!(ok, json!({"ok": true}));
    let seen = c.until("llm.end").await;
    let topics: Vec<&str> = seen.iter().map(|(t, _)| t.as_str()).collect();
    let pos = |t: &str| topics.iter().position(|x| *x == t).unwrap_or(usize::MAX);
    assert!(pos("session.update") < pos("llm.start"), "{topics:?}");
    assert!(pos("llm.start") < pos("tool.start"), "{topics:?}");
    assert!(pos("tool.start") < pos("tool.end"), "{topics:?}");
    let tokens: String = seen
        .iter()
        .filter(|(t, _)| t == "llm.token")
        .map(|(_, e)| e["payload"]["token"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(tokens, "Let me look.All done here.");
    let (_, start) = &seen[pos("tool.start")];
    assert_eq!(start["sessionId"], "s-1");
    assert_eq!(start["payload"]["call_id"], "call_a");
    assert_eq!(start["payload"]["tool_name"], "shell");
    let params: Value =
        serde_json::from_str(start["payload"]["params"].as_str().expect("a string")).unwrap();
    assert_eq!(params["command"], "echo pando-out");
    let (_, end) = &seen[pos("tool.end")];
    assert_eq!(end["payload"]["call_id"], "call_a");
    assert_eq!(end["payload"]["is_error"], false);
    assert!(
        end["payload"]["result"]
            .as_str()
            .unwrap()
            .contains("pando-out")
    );
    let appends: Vec<&Value> = seen
        .iter()
        .filter(|(t, _)| t == "message.append")
        .map(|(_, e)| &e["payload"])
        .collect();
    let roles: Vec<&str> = appends
        .iter()
        .map(|a| a["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "assistant"]);
    assert_eq!(appends[2]["content"], "All done here.");
    let (_, llm_end) = seen.last().unwrap();
    assert!(llm_end["payload"]["tokens_out"].as_i64().unwrap() > 0);

    // message.list agrees with what message.append said.
    let list = c.result("message.list", json!({"session_id": "s-1"})).await;
    let listed: Vec<(&str, &str)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    let appended: Vec<(&str, &str)> = appends
        .iter()
        .map(|a| {
            (
                a["message_id"].as_str().unwrap(),
                a["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(listed, appended);
    let session = c.result("session.get", json!({"session_id": "s-1"})).await;
    assert_eq!(session["message_count"], 3);
    assert_eq!(session["title"], "run it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_say_which_method_and_what_was_wrong() {
    let setup = start(vec![]).await;
    let mut c = setup.client().await;
    let err = |reply: &Value| {
        (
            reply["error"]["code"].as_i64().unwrap(),
            reply["error"]["message"].as_str().unwrap().to_owned(),
        )
    };
    let numeric = c
        .raw(r#"{"jsonrpc":"2.0","id":1,"method":"instance.ping"}"#)
        .await;
    assert_eq!(numeric["id"], "");
    assert_eq!(err(&numeric), (-32700, "parse error".into()));
    assert!(numeric.get("result").is_none());
    let unknown = c.call("no.such", Value::Null).await;
    assert_eq!(err(&unknown), (-32601, "ipc: method not found".into()));
    let both_missing = c.call("message.send", json!({})).await;
    assert_eq!(
        err(&both_missing),
        (-32000, "message.send: session_id is required".into())
    );
    let no_content = c.call("message.send", json!({"session_id": "x"})).await;
    assert_eq!(
        err(&no_content),
        (-32000, "message.send: content is required".into())
    );
    let no_params = c.call("session.get", Value::Null).await;
    assert!(
        err(&no_params)
            .1
            .starts_with("session.get: invalid params: ")
    );
    let missing = c.call("session.get", json!({"session_id": "nope"})).await;
    assert_eq!(
        err(&missing),
        (-32000, "session.get: session not found: nope".into())
    );
    assert_eq!(
        c.result("message.list", json!({"session_id": "nope"}))
            .await,
        json!([])
    );
    // The error object is {code, message} only.
    assert_eq!(missing["error"].as_object().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_info_sync_and_activate() {
    let setup = start(vec![Step::text("hi")]).await;
    let mut c = setup.client().await;
    let ping = c.result("instance.ping", Value::Null).await;
    let entry = setup.instance.as_ref().unwrap().entry().clone();
    assert_eq!(ping["status"], "ok");
    assert_eq!(ping["instance_id"], entry.lock.instance_id.as_str());
    assert!(ping["uptime"].as_str().unwrap().ends_with('s'));
    c.result(
        "message.send",
        json!({"session_id": "a", "content": "hello"}),
    )
    .await;
    c.topic("llm.end").await;
    c.result("session.activate", json!({"session_id": "a"}))
        .await;
    let activated = c.topic("session.activated").await;
    assert_eq!(activated["id"], "a");
    let sync = c.result("state.sync", json!({})).await;
    assert_eq!(sync["active_session_id"], "a");
    assert_eq!(sync["instance_id"], entry.lock.instance_id.as_str());
    assert_eq!(sync["sessions"][0]["id"], "a");
    let info = c.result("instance.info", Value::Null).await;
    assert_eq!(info["mode"], "noninteractive");
    assert_eq!(info["is_primary"], true);
    assert_eq!(info["session_count"], 1);
    assert_eq!(info["model"], "mock/test-model");
    assert_eq!(info["path"], setup.ws.to_string_lossy().as_ref());
    let beat = c.topic("instance.heartbeat").await;
    assert_eq!(beat["active_session_id"], "a");
    assert_eq!(beat["session_count"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_files_live_as_long_as_the_instance_and_shutdown_is_published() {
    let mut setup = start(vec![]).await;
    let entry = setup.instance.as_ref().unwrap().entry().clone();
    let lock_file = setup.ws.join(".pando/ipc.lock");
    let registered = setup
        .registry
        .join(format!("{}.json", entry.lock.instance_id));
    let lock: LockInfo =
        serde_json::from_str(&std::fs::read_to_string(&lock_file).unwrap()).unwrap();
    assert_eq!(lock, entry.lock);
    let reg: RegistryEntry =
        serde_json::from_str(&std::fs::read_to_string(&registered).unwrap()).unwrap();
    assert_eq!(reg, entry);

    // A second instance on the same dir is refused, naming the first.
    let second = PandoInstance::start(
        setup.engine.clone(),
        InstanceOptions {
            registry_dir: setup.registry.clone(),
            ..InstanceOptions::new(&setup.ws)
        },
        setup.stop.child_token(),
    )
    .await;
    match second {
        Err(e @ DiscoveryError::AlreadyServed { .. }) => {
            assert!(e.to_string().contains(&entry.lock.instance_id), "{e}");
        }
        _ => panic!("a second instance took the same dir"),
    }

    let mut c = setup.client().await;
    setup.stop.cancel();
    let shutdown = tokio::time::timeout(HANG_GUARD, c.topic("instance.shutdown"))
        .await
        .expect("shutdown in time");
    assert_eq!(shutdown["instance_id"], entry.lock.instance_id.as_str());
    setup.instance.take().unwrap().stopped().await;
    assert!(!lock_file.exists() && !registered.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_port_is_said_and_replaced_and_a_dead_instances_files_are_replaced() {
    use proto_pando::discovery::{absolute, derived_ports};
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join(".pando")).unwrap();
    let registry = dir.path().join("registry");
    std::fs::create_dir(&registry).unwrap();
    // What a killed instance left behind.
    let dead = LockInfo {
        instance_id: "dead-one".into(),
        pid: i64::from(i32::MAX),
        pub_port: 1,
        rpc_port: 2,
        started_at: "2020-01-01T00:00:00Z".into(),
    };
    let path = absolute(&ws).unwrap().to_string_lossy().into_owned();
    std::fs::write(
        ws.join(".pando/ipc.lock"),
        serde_json::to_string(&dead).unwrap(),
    )
    .unwrap();
    let stale = RegistryEntry {
        lock: dead,
        path: path.clone(),
        mode: "noninteractive".into(),
        is_primary: true,
    };
    std::fs::write(
        registry.join("dead-one.json"),
        serde_json::to_string(&stale).unwrap(),
    )
    .unwrap();
    let (pub_port, _) = derived_ports(&path);
    // Held by someone else (or already taken on this machine: the same).
    let _squatter = std::net::TcpListener::bind(("127.0.0.1", pub_port));

    let (engine, _llm) = crate::common::engine(vec![]).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let instance = PandoInstance::start(
        engine,
        InstanceOptions {
            registry_dir: registry.clone(),
            ..InstanceOptions::new(&ws)
        },
        stop.clone(),
    )
    .await
    .expect("the dead instance's lock does not hold");
    let entry = instance.entry().clone();
    assert_ne!(entry.lock.pub_port, pub_port);
    assert!(
        instance
            .notes()
            .iter()
            .any(|n| n.contains(&format!("{pub_port} is taken"))),
        "{:?}",
        instance.notes()
    );
    let lock: LockInfo =
        serde_json::from_str(&std::fs::read_to_string(ws.join(".pando/ipc.lock")).unwrap())
            .unwrap();
    assert_eq!(lock, entry.lock);
    assert!(!registry.join("dead-one.json").exists());
    stop.cancel();
    tokio::time::timeout(HANG_GUARD, instance.stopped())
        .await
        .expect("stopped in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_declaring_a_terabyte_ends_its_connection_not_the_instance() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let setup = start(vec![]).await;
    let (rpc, publ) = setup.ports();
    for port in [rpc, publ] {
        let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        // A ZMTP 3.0 greeting (NULL mechanism), then a long frame's header
        // declaring 2^40 bytes: the zeromq crate would reserve them.
        let mut greeting = vec![0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3, 0];
        greeting.extend_from_slice(b"NULL");
        greeting.resize(64, 0);
        tcp.write_all(&greeting).await.expect("greeting");
        let mut header = vec![0b10];
        header.extend_from_slice(&(1u64 << 40).to_be_bytes());
        tcp.write_all(&header).await.expect("header");
        // The connection is closed on us (after the server's greeting),
        // before anything reserved the 2^40 bytes (else this test's own
        // process, the instance's, would have aborted).
        let mut rest = Vec::new();
        let _ = tokio::time::timeout(HANG_GUARD, tcp.read_to_end(&mut rest))
            .await
            .expect("the connection is closed");
    }
    // A frame cut in half (its header promises more than comes) and the
    // connection gone: the instance goes on too.
    let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", rpc))
        .await
        .expect("connect");
    let mut greeting = vec![0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3, 0];
    greeting.extend_from_slice(b"NULL");
    greeting.resize(64, 0);
    tcp.write_all(&greeting).await.expect("greeting");
    tcp.write_all(&[0, 200, b'{', b'"'])
        .await
        .expect("half a frame");
    drop(tcp);
    // The instance still answers.
    let mut c = setup.client().await;
    let ping = c.result("instance.ping", Value::Null).await;
    assert!(ping.is_object(), "{ping}");
}
