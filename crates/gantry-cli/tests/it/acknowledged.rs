//! An acknowledgement means stored: a message sent over a protocol that
//! acknowledges it (the HTTP API's `202`, CodeWhale's `accepted`, Pando's
//! `message.send` result, Rome's first NDJSON line, `turn_start`) is in its
//! thread after the daemon is killed (-9) the instant the acknowledgement's
//! first bytes arrive.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Scratch, spawn_announcing, stderr};

/// A running `gantry serve` on the scratch data dir: its listeners.
struct Served {
    child: Child,
    http: String,
    codewhale: String,
    rome: String,
    /// Pando's ROUTER, `tcp://127.0.0.1:PORT`.
    pando: String,
}

/// `gantry serve` on the scratch data dir with the HTTP API, CodeWhale,
/// Rome and Pando (for the workspace).
fn serve(scratch: &Scratch) -> Served {
    let mut cmd = scratch.gantry();
    cmd.env("XDG_CONFIG_HOME", scratch.dir.path().join("xdg"))
        .args(["serve", "--listen-addr", "127.0.0.1:0"])
        .args(["--http-addr", "127.0.0.1:0"])
        .args(["--codewhale-addr", "127.0.0.1:0"])
        .args(["--rome-addr", "127.0.0.1:0"])
        .arg("--workspace")
        .arg(scratch.workspace())
        .arg("--pando")
        .arg(scratch.workspace());
    let (child, said) = spawn_announcing(
        cmd,
        &[
            "gantry: serving the HTTP API and dashboard on http://",
            "gantry: serving CodeWhale HTTP on ",
            "gantry: serving the Rome agent runner on ",
            "gantry: serving Pando instance ",
        ],
    );
    let pando = said[3]
        .split("(rpc ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .expect("the Pando rpc address")
        .to_owned();
    Served {
        child,
        http: said[0].trim_end_matches('/').to_owned(),
        codewhale: said[1].clone(),
        rome: said[2].clone(),
        pando,
    }
}

/// POSTs `body` and returns the whole answer.
fn post(addr: &str, path: &str, body: &Value) -> String {
    let mut tcp = send(addr, path, body);
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).expect("read");
    answer
}

/// POSTs `body`; the connection, its answer unread.
fn send(addr: &str, path: &str, body: &Value) -> TcpStream {
    let body = body.to_string();
    let mut tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(request.as_bytes()).expect("send");
    tcp
}

/// The JSON body of an HTTP answer.
fn body(answer: &str) -> Value {
    let (_, body) = answer.split_once("\r\n\r\n").expect("a body");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

/// Sends the message, kills the daemon as the acknowledgement's first
/// bytes arrive, and returns them.
fn send_then_kill(child: &mut Child, addr: &str, path: &str, message: &Value) -> String {
    let mut tcp = send(addr, path, message);
    let mut first = [0u8; 12];
    tcp.read_exact(&mut first).expect("an answer");
    child.kill().expect("kill -9");
    child.wait().expect("reap");
    String::from_utf8_lossy(&first).into_owned()
}

#[test]
fn every_acknowledged_message_survives_a_kill_at_the_acknowledgement() {
    let s = Scratch::new();
    // A model server nobody listens on: the message is stored before the
    // model is asked, whatever it answers.
    let config = s.dir.path().join("xdg/gantry");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(
        config.join("config.toml"),
        "default_model = \"none/m\"\n[providers.none]\nkind = \"openai-chat\"\n\
         base_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"NO_KEY\"\n\
         [agents.main]\ninstructions = \"Rome's agent.\"\n",
    )
    .expect("config");
    for round in 0..3 {
        let mut served = serve(&s);
        let made = body(&post(&served.http, "/v1/threads", &json!({})));
        let thread = made["id"].as_str().expect("thread id").to_owned();
        let text = format!("over the HTTP API, round {round}");
        let ack = send_then_kill(
            &mut served.child,
            &served.http,
            &format!("/v1/threads/{thread}/messages"),
            &json!({"text": text}),
        );
        assert!(ack.starts_with("HTTP/1.1 202"), "{ack}");
        assert_stored(&s, &thread, &text);

        let mut served = serve(&s);
        let made = body(&post(
            &served.codewhale,
            "/thread",
            &json!({"kind": "create"}),
        ));
        let thread = made["thread_id"].as_str().expect("thread id").to_owned();
        let text = format!("over CodeWhale, round {round}");
        let ack = send_then_kill(
            &mut served.child,
            &served.codewhale,
            "/thread",
            &json!({"kind": "message", "thread_id": thread, "input": text}),
        );
        assert!(ack.starts_with("HTTP/1.1 200"), "{ack}");
        assert_stored(&s, &thread, &text);

        let mut served = serve(&s);
        let thread = format!("pando-{round}");
        let text = format!("over Pando, round {round}");
        let ack = pando_send_then_kill(&mut served, &thread, &text);
        assert_eq!(ack["result"]["ok"], true, "{ack}");
        assert_stored(&s, &thread, &text);

        let mut served = serve(&s);
        let text = format!("over Rome, round {round}");
        let first = rome_run_then_kill(&mut served, &text);
        let thread = first["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("Rome's first line names its session: {first}"))
            .to_owned();
        assert_stored(&s, &thread, &text);
    }
}

/// Sends `text` to session `thread` over Pando (a DEALER, as Pando's
/// clients are) and kills the daemon as the reply arrives; the reply.
fn pando_send_then_kill(served: &mut Served, thread: &str, text: &str) -> Value {
    use zeromq::{Socket, SocketRecv, SocketSend};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let reply = runtime.block_on(async {
        let mut dealer = zeromq::DealerSocket::new();
        dealer.connect(&served.pando).await.expect("Pando connects");
        let call = json!({"jsonrpc": "2.0", "id": "1", "method": "message.send",
            "params": {"session_id": thread, "content": text}});
        let msg = zeromq::ZmqMessage::try_from(vec![
            bytes::Bytes::new(),
            bytes::Bytes::from(call.to_string()),
        ])
        .expect("frames");
        dealer.send(msg).await.expect("send");
        tokio::time::timeout(Duration::from_secs(60), dealer.recv())
            .await
            .expect("Pando answers in time")
            .expect("a reply")
    });
    served.child.kill().expect("kill -9");
    served.child.wait().expect("reap");
    let frames = reply.into_vec();
    serde_json::from_slice(frames.last().expect("a frame")).expect("JSON")
}

/// Runs a Rome turn of `text` and kills the daemon as the stream's first
/// NDJSON line arrives; that line.
fn rome_run_then_kill(served: &mut Served, text: &str) -> Value {
    let mut tcp = send(
        &served.rome,
        "/v1/rome/run",
        &json!({"agentName": "main", "prompt": text}),
    );
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    // Headers, then a chunk: its size line, then the JSON line.
    let line = loop {
        if tcp.read_exact(&mut byte).is_err() {
            panic!("Rome's answer ended: {}", String::from_utf8_lossy(&got));
        }
        got.push(byte[0]);
        let text = String::from_utf8_lossy(&got);
        if let Some((head, rest)) = text.split_once("\r\n\r\n")
            && let Some(open) = rest.find('{')
            && let Some(end) = rest[open..].find('\n')
        {
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            break rest[open..open + end].to_owned();
        }
    };
    served.child.kill().expect("kill -9");
    served.child.wait().expect("reap");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// `thread`, read from the data dir, holds a user message `text`.
fn assert_stored(s: &Scratch, thread: &str, text: &str) {
    let show = s.run(&["threads", "show", thread, "--json"]);
    assert!(show.status.success(), "{}", stderr(&show));
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(
        shown.contains(text),
        "the acknowledged message {text:?} is not in {thread}: {shown}"
    );
}
