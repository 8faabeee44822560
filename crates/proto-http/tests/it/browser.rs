//! The dashboard in a real browser: Debian's `chromium`, headless, driven
//! over WebDriver by `chromium-driver` (both installed by `.ci/run`; the
//! driver is found as `$GANTRY_TEST_CHROMEDRIVER`, else `chromedriver` on
//! PATH). A turn started in the page streams its tokens and a command's
//! output live, an approval is answered in the page, a turn is
//! interrupted, a reload shows the same history, and the thread is
//! deleted from its page; the model's questions are answered in a form on
//! the page; a turn's checkpoint is rewound to and forked from. With
//! `GANTRY_DASHBOARD_SCREENSHOTS=DIR` the pages are saved there as PNGs
//! (how docs/ got its screenshots).

use gantry_testkit::Step;
use gantry_testkit::browser::Browser;
use serde_json::json;

use crate::common::{shell, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_streams_a_turn_answers_an_approval_and_interrupts() {
    let answer = "All done: the file is made and the shell said hello.";
    let s = start(vec![
        shell("touch made.txt && echo hello-from-shell")
            .with_text("Let me make the file.")
            .with_chunk_size(3)
            .with_delay_ms(20),
        Step::text(answer).with_chunk_size(3).with_delay_ms(20),
        shell("touch never.txt"),
    ])
    .await;
    let id = s.thread(json!({"approval": "untrusted"})).await;
    let browser = Browser::start().await;
    let page = format!("http://{}/#/t/{id}", s.addr);
    browser.goto(&page).await;
    browser.type_into("#message", "make the file").await;
    browser.click("#send").await;
    browser.wait_text("Let me make the file.").await;
    browser.find("[data-approve]").await;

    // Answered from the approvals page.
    browser
        .goto(&format!("http://{}/#/approvals", s.addr))
        .await;
    browser.wait_text("touch made.txt").await;
    browser.screenshot("dashboard-approvals.png").await;
    browser.click("[data-approve]").await;
    browser.wait_text("Nothing waits for an answer.").await;

    browser.goto(&page).await;
    browser.wait_text(answer).await;
    browser.wait_text("hello-from-shell").await;
    assert!(
        s.workspace.join("made.txt").exists(),
        "the approved command ran"
    );
    browser.screenshot("dashboard-thread.png").await;

    // A second turn waits on its approval; the page interrupts it.
    browser.type_into("#message", "now another").await;
    browser.click("#send").await;
    browser.find("[data-approve]").await;
    browser.click("#interrupt").await;
    browser.wait_text("Turn interrupted.").await;
    assert!(!s.workspace.join("never.txt").exists());

    // A reload shows the same history.
    browser
        .call(reqwest::Method::POST, "/refresh", json!({}))
        .await;
    browser.wait_text(answer).await;
    let text = browser.text().await;
    assert!(
        text.contains("hello-from-shell") && text.contains("make the file"),
        "{text}"
    );

    // Deleted from its page (after the browser's confirm): the list is empty.
    browser.click("#delete").await;
    browser.accept_alert().await;
    browser.wait_text("No threads yet.").await;
    let (status, _) = s.get(&format!("/v1/threads/{id}")).await;
    assert_eq!(status, 404);
}

/// The model's questions are a form on the thread's page: the user picks an
/// option (a radio button), ticks two (checkboxes), types beside them, and
/// sends; the model gets exactly that, and the page shows the answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_answers_the_agents_questions_in_the_page() {
    let answer = "SQLite on Linux and macOS, with WAL.";
    let s = start(vec![crate::user_input::ask(), Step::text(answer)]).await;
    let id = s.thread(json!({"approval": "on-request"})).await;
    let browser = Browser::start().await;
    browser.goto(&format!("http://{}/#/t/{id}", s.addr)).await;
    browser.type_into("#message", "set up the service").await;
    browser.click("#send").await;
    browser.wait_text("Which database should it use?").await;
    browser.click(r#"input[type=radio][value="SQLite"]"#).await;
    browser
        .click(r#"input[type=checkbox][value="Linux"]"#)
        .await;
    browser
        .click(r#"input[type=checkbox][value="macOS"]"#)
        .await;
    browser
        .type_into(r#"[data-free-text="db"]"#, "with WAL")
        .await;
    browser.screenshot("dashboard-user-input.png").await;
    browser.click("[data-answer]").await;
    browser.wait_text(answer).await;
    browser.wait_text("→ SQLite, with WAL").await;
    browser.wait_text("→ Linux, macOS").await;

    let body = &s.llm.requests()[1].body;
    let told = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rfind(|m| m["role"] == "tool"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let told: serde_json::Value = serde_json::from_str(told).expect("JSON");
    assert_eq!(told["answers"][0]["selected"], json!(["SQLite"]), "{told}");
    assert_eq!(told["answers"][0]["text"], "with WAL");
    assert_eq!(told["answers"][1]["selected"], json!(["Linux", "macOS"]));
    let (_, thread) = s.get(&format!("/v1/threads/{id}")).await;
    assert_eq!(thread["pending_user_input"], json!([]));
}

/// A turn that changed files shows its checkpoint with "Rewind to here" and
/// "Fork from here": the first puts the workspace back, the second makes a
/// new directory with the checkpoint's files; each names the thread to
/// continue in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_rewinds_to_and_forks_from_a_turns_checkpoint() {
    let s = crate::common::start_with(
        vec![
            shell("echo after > notes.txt && echo new > made.txt"),
            Step::text("Changed the notes."),
        ],
        true,
    )
    .await;
    std::fs::write(s.workspace.join("notes.txt"), "before\n").expect("file");
    let id = s.thread(json!({})).await;
    let mut events = s.events(&format!("/v1/threads/{id}/events"), None).await;
    let browser = Browser::start().await;
    browser.goto(&format!("http://{}/#/t/{id}", s.addr)).await;
    browser.type_into("#message", "change the notes").await;
    browser.click("#send").await;
    browser.wait_text("Changed the notes.").await;
    browser.wait_text("Rewind to here").await;
    // The answer shows before its turn has ended, and a rewind waits for
    // the turn's end (409 until then): click once it has.
    events.until(|e| e.event == "turn_completed").await;
    browser.screenshot("dashboard-checkpoint.png").await;

    browser.click("[data-rewind]").await;
    browser.wait_text("Rewound.").await;
    assert_eq!(
        std::fs::read_to_string(s.workspace.join("notes.txt")).expect("notes"),
        "before\n"
    );
    assert!(!s.workspace.join("made.txt").exists());

    browser.click("[data-fork]").await;
    browser.wait_text("Forked into").await;
    let (_, threads) = s.get("/v1/threads?limit=10").await;
    let fork = threads["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .find(|t| {
            t["workspace"]
                .as_str()
                .is_some_and(|w| w.contains("-fork-"))
        })
        .expect("the fork")
        .clone();
    let fork_dir = std::path::PathBuf::from(fork["workspace"].as_str().expect("workspace"));
    assert_eq!(
        std::fs::read_to_string(fork_dir.join("notes.txt")).expect("fork's notes"),
        "before\n"
    );
}
