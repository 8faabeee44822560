//! The dashboard in a real browser: Debian's `chromium`, headless, driven
//! over WebDriver by `chromium-driver` (both installed by `.ci/run`; the
//! driver is found as `$GANTRY_TEST_CHROMEDRIVER`, else `chromedriver` on
//! PATH). A turn started in the page streams its tokens and a command's
//! output live, an approval is answered in the page, a turn is
//! interrupted, a reload shows the same history, and the thread is
//! deleted from its page. With
//! `GANTRY_DASHBOARD_SCREENSHOTS=DIR` the pages are saved there as PNGs
//! (how docs/ got its screenshots).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use gantry_testkit::Step;
use serde_json::{Value, json};

use crate::common::{HANG_GUARD, shell, start};

/// The WebDriver id of an element in answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver process and one headless session on it.
struct Browser {
    driver: Child,
    http: reqwest::Client,
    base: String,
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ends the session first: chromedriver then closes chromium, which
        // killing the driver alone would leave running.
        if let Some(rest) = self.base.strip_prefix("http://")
            && let Some((host, path)) = rest.split_once('/')
            && let Ok(mut tcp) = std::net::TcpStream::connect(host)
        {
            use std::io::{Read, Write};
            let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
            let request = format!(
                "DELETE /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            if tcp.write_all(request.as_bytes()).is_ok() {
                let _ = tcp.read_to_end(&mut Vec::new());
            }
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Browser {
    async fn start() -> Self {
        let binary =
            std::env::var("GANTRY_TEST_CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
            probe.local_addr().expect("port").port()
        };
        let driver = Command::new(&binary)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run {binary} ({e}): install chromium and chromium-driver (.ci/run does)"
                )
            });
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client");
        let root = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            let ready = http.get(format!("{root}/status")).send().await;
            if let Ok(resp) = ready
                && let Ok(body) = resp.json::<Value>().await
                && body["value"]["ready"] == true
            {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let chromium =
            std::env::var("GANTRY_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,800"]}
        }}});
        let made: Value = http
            .post(format!("{root}/session"))
            .json(&caps)
            .send()
            .await
            .expect("new session")
            .json()
            .await
            .expect("JSON");
        let session = made["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {made}"))
            .to_owned();
        Self {
            driver,
            http,
            base: format!("{root}/session/{session}"),
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base));
        if method != reqwest::Method::GET {
            req = req.json(&body);
        }
        let answer: Value = req
            .send()
            .await
            .expect("webdriver")
            .json()
            .await
            .expect("JSON");
        answer["value"].clone()
    }

    async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", json!({"url": url}))
            .await;
    }

    async fn script(&self, script: &str) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
        .await
    }

    async fn text(&self) -> String {
        self.script("return document.body.innerText")
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Waits until the page shows `wanted`.
    async fn wait_text(&self, wanted: &str) {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            if self.text().await.contains(wanted) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the page never showed {wanted:?}: {}",
                self.text().await
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The element `css` matches, waiting until one does.
    async fn find(&self, css: &str) -> String {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            let found = self
                .call(
                    reqwest::Method::POST,
                    "/element",
                    json!({"using": "css selector", "value": css}),
                )
                .await;
            if let Some(id) = found[ELEMENT].as_str() {
                return id.to_owned();
            }
            assert!(
                Instant::now() < deadline,
                "no element {css}: {}",
                self.text().await
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn click(&self, css: &str) {
        let id = self.find(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            json!({}),
        )
        .await;
    }

    async fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/value"),
            json!({"text": text}),
        )
        .await;
    }

    /// Saves a screenshot as `name` under `$GANTRY_DASHBOARD_SCREENSHOTS`.
    async fn screenshot(&self, name: &str) {
        let Ok(dir) = std::env::var("GANTRY_DASHBOARD_SCREENSHOTS") else {
            return;
        };
        let png = self
            .call(reqwest::Method::GET, "/screenshot", json!({}))
            .await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap_or_default())
            .expect("PNG");
        std::fs::write(std::path::Path::new(&dir).join(name), bytes).expect("write screenshot");
    }
}

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
    browser
        .call(reqwest::Method::POST, "/alert/accept", json!({}))
        .await;
    browser.wait_text("No threads yet.").await;
    let (status, _) = s.get(&format!("/v1/threads/{id}")).await;
    assert_eq!(status, 404);
}
