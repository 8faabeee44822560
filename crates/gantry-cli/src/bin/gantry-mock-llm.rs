//! `gantry-mock-llm --script FILE`: the scripted mock LLM server as a
//! process, for test suites in other languages. Prints its base URL
//! (`http://127.0.0.1:PORT/v1`) as the first line on stdout, then serves
//! until stdin closes or the process is killed. `GET /_mock/requests` lists
//! what it received.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use gantry_scripted_model::{MockLlm, Script};

const USAGE: &str = "usage: gantry-mock-llm --script FILE

Serves the steps of FILE (JSON: {\"steps\": [{\"reply\": {\"text\": \"hi\"}}, ...]})
on 127.0.0.1 at a free port, one step per model request, speaking OpenAI Chat
Completions, OpenAI Responses and Anthropic Messages. Prints its base URL first,
then serves until stdin closes.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let script = match args.as_slice() {
        [flag, path] if flag == "--script" => match Script::from_file(path) {
            Ok(script) => script,
            Err(e) => {
                eprintln!("gantry-mock-llm: {e}");
                return ExitCode::from(2);
            }
        },
        [flag] if flag == "--help" || flag == "-h" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("gantry-mock-llm: cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let llm = match runtime.block_on(async { MockLlm::start(script) }) {
        Ok(llm) => llm,
        Err(e) => {
            eprintln!("gantry-mock-llm: cannot listen: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", llm.base_url());
    let _ = std::io::stdout().flush();
    // The server runs on the runtime while a blocking task waits for stdin
    // to close (the parent's way of stopping it).
    runtime.block_on(async {
        let _ = tokio::task::spawn_blocking(|| {
            for line in std::io::stdin().lock().lines() {
                if line.is_err() {
                    break;
                }
            }
        })
        .await;
    });
    drop(llm);
    ExitCode::SUCCESS
}
