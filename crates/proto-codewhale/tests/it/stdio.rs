//! `serve_stdio`'s framing: a line that is not UTF-8 is a parse error
//! answered with `id: null`, and the session goes on.

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::common::{HANG_GUARD, start};

#[tokio::test]
async fn a_line_that_is_not_utf8_is_answered_and_the_session_goes_on() {
    let s = start(vec![]).await;
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (server_in, server_out) = tokio::io::split(theirs);
    tokio::spawn(proto_codewhale::serve_stdio(
        s.cw.clone(),
        proto_codewhale::Version::V0_8,
        server_in,
        server_out,
    ));
    let (read, mut write) = tokio::io::split(ours);
    let mut lines = BufReader::new(read).lines();
    write
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}\n")
        .await
        .unwrap();
    write
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"healthz\"}\n")
        .await
        .unwrap();
    let mut answers = Vec::new();
    for _ in 0..2 {
        let line = tokio::time::timeout(HANG_GUARD, lines.next_line())
            .await
            .expect("an answer")
            .unwrap()
            .expect("the server goes on");
        answers.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    assert_eq!(answers[0]["error"]["code"], -32700, "{answers:?}");
    assert_eq!(answers[0]["id"], Value::Null, "{answers:?}");
    assert_eq!(answers[1]["id"], 2, "{answers:?}");
    assert!(answers[1].get("result").is_some(), "{answers:?}");
}
