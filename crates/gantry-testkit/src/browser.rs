//! A headless chromium driven over WebDriver, for tests and benches of
//! the dashboard: Debian's `chromium` and `chromium-driver` (installed by
//! `.ci/run`), plain HTTP calls to the driver (no WebDriver crate). Dropping
//! the [`Browser`] ends the session, so chromium closes with its driver.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

/// Fails a wait that would otherwise hang.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// Where chromium is.
fn chromium() -> PathBuf {
    std::env::var_os("GANTRY_TEST_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

/// The WebDriver id of an element in answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver process and one headless session on it.
pub struct Browser {
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
    /// Whether a browser can be started: the driver and chromium exist
    /// (`$GANTRY_TEST_CHROMEDRIVER`, else `chromedriver` on PATH;
    /// `$GANTRY_TEST_CHROMIUM`, else `/usr/bin/chromium`).
    pub fn available() -> bool {
        let driver = std::env::var("GANTRY_TEST_CHROMEDRIVER")
            .ok()
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("PATH").and_then(|paths| {
                    std::env::split_paths(&paths)
                        .map(|dir| dir.join("chromedriver"))
                        .find(|p| p.is_file())
                })
            });
        driver.is_some_and(|p| p.is_file()) && chromium().is_file()
    }

    /// Starts chromedriver and a headless chromium session (1280x800);
    /// panics, saying what to install, when they are missing.
    pub async fn start() -> Self {
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
        let chromium = chromium();
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

    /// One WebDriver command of this session; its `value`.
    pub async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
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

    /// Opens `url`.
    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", json!({"url": url}))
            .await;
    }

    /// Runs `script` in the page; what it returned.
    pub async fn script(&self, script: &str) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
        .await
    }

    /// The page's visible text.
    pub async fn text(&self) -> String {
        self.script("return document.body.innerText")
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Waits until the page shows `wanted`.
    pub async fn wait_text(&self, wanted: &str) {
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
    pub async fn find(&self, css: &str) -> String {
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

    /// Clicks the element `css` matches.
    pub async fn click(&self, css: &str) {
        self.act_on(css, "click", json!({})).await;
    }

    /// Types `text` into the element `css` matches.
    pub async fn type_into(&self, css: &str, text: &str) {
        self.act_on(css, "value", json!({"text": text})).await;
    }

    /// Runs the element command `action` on the element `css` matches. A
    /// live page may replace the element between finding and acting on it
    /// (WebDriver's "stale element reference"): it is found again, rather
    /// than the action being lost without a word.
    async fn act_on(&self, css: &str, action: &str, body: Value) {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            let id = self.find(css).await;
            let answer = self
                .call(
                    reqwest::Method::POST,
                    &format!("/element/{id}/{action}"),
                    body.clone(),
                )
                .await;
            match answer.get("error").and_then(Value::as_str) {
                None => return,
                Some("stale element reference") if Instant::now() < deadline => {}
                Some(error) => panic!("{action} on {css} failed: {error}: {answer}"),
            }
        }
    }

    /// Accepts the page's `confirm` (or `alert`) dialog.
    pub async fn accept_alert(&self) {
        self.call(reqwest::Method::POST, "/alert/accept", json!({}))
            .await;
    }

    /// Saves a screenshot as `name` under `$GANTRY_DASHBOARD_SCREENSHOTS`.
    pub async fn screenshot(&self, name: &str) {
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
