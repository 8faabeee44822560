//! An acknowledgement means stored: a message sent over a protocol that
//! acknowledges it (the HTTP API's `202`, CodeWhale's `accepted`) is in
//! its thread after the daemon is killed (-9) the instant the
//! acknowledgement's first bytes arrive.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Scratch, spawn_announcing, stderr};

/// `gantry serve` on the scratch data dir with the HTTP API and CodeWhale;
/// their addresses.
fn serve(scratch: &Scratch) -> (Child, String, String) {
    let mut cmd = scratch.gantry();
    cmd.env("XDG_CONFIG_HOME", scratch.dir.path().join("xdg"))
        .args(["serve", "--listen-addr", "127.0.0.1:0"])
        .args(["--http-addr", "127.0.0.1:0"])
        .args(["--codewhale-addr", "127.0.0.1:0"]);
    let (child, said) = spawn_announcing(
        cmd,
        &[
            "gantry: serving the HTTP API and dashboard on http://",
            "gantry: serving CodeWhale HTTP on ",
        ],
    );
    let http = said[0].trim_end_matches('/').to_owned();
    (child, http, said[1].clone())
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
         base_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"NO_KEY\"\n",
    )
    .expect("config");
    for round in 0..3 {
        let (mut child, http, _) = serve(&s);
        let made = body(&post(&http, "/v1/threads", &json!({})));
        let thread = made["id"].as_str().expect("thread id").to_owned();
        let text = format!("over the HTTP API, round {round}");
        let ack = send_then_kill(
            &mut child,
            &http,
            &format!("/v1/threads/{thread}/messages"),
            &json!({"text": text}),
        );
        assert!(ack.starts_with("HTTP/1.1 202"), "{ack}");
        assert_stored(&s, &thread, &text);

        let (mut child, _, codewhale_addr) = serve(&s);
        let made = body(&post(
            &codewhale_addr,
            "/thread",
            &json!({"kind": "create"}),
        ));
        let thread = made["thread_id"].as_str().expect("thread id").to_owned();
        let text = format!("over CodeWhale, round {round}");
        let ack = send_then_kill(
            &mut child,
            &codewhale_addr,
            "/thread",
            &json!({"kind": "message", "thread_id": thread, "input": text}),
        );
        assert!(ack.starts_with("HTTP/1.1 200"), "{ack}");
        assert_stored(&s, &thread, &text);
    }
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
