//! The dashboard in a real browser: Debian's `chromium`, headless, driven
//! over WebDriver by `chromium-driver` (both installed by `.ci/run`; the
//! driver is found as `$GANTRY_TEST_CHROMEDRIVER`, else `chromedriver` on
//! PATH). A turn started in the page streams its tokens and a command's
//! output live, an approval is answered in the page, a turn is
//! interrupted, a reload shows the same history, and the thread is
//! deleted from its page. With
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
