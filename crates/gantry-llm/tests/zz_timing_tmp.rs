use gantry_llm::openai_chat::{OpenAiChatClient, OpenAiChatConfig};
use std::time::Instant;
#[test]
fn timing() {
    for url in [
        "http://127.0.0.1:1/v1",
        "http://127.0.0.1:1/v1",
        "https://api.openai.com/v1",
        "https://api.openai.com/v1",
    ] {
        let t = Instant::now();
        let c = OpenAiChatClient::new(OpenAiChatConfig::new(url)).unwrap();
        eprintln!("{url}: {:?}", t.elapsed());
        drop(c);
    }
}
