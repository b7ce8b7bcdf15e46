//! Driving the real desktop window: the app binary under Xvfb (started here when there is no
//! display) through WebDriver (`tauri-driver` + Debian's `WebKitWebDriver`). Shared by the
//! end-to-end test (`tests/e2e.rs`) and the desktop benchmark (`benches/desktop.rs`).

// Each user of this module needs a different part of it; test helpers may panic.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};

/// How long any one step may take (`KNOWHUB_E2E_WAIT_SECS`, default 60; the benchmark waits
/// longer for answers written by a local model).
pub(crate) fn wait_limit() -> Duration {
    let secs = std::env::var("KNOWHUB_E2E_WAIT_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    Duration::from_secs(secs)
}

/// A program on PATH or in ~/.cargo/bin.
pub(crate) fn tool(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(Path::new(&home).join(".cargo/bin"));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// Child processes stopped when the test ends, however it ends. `tauri-driver` gets SIGTERM
/// (a SIGKILLed driver leaves WebKitWebDriver running and the test run hangs).
pub(crate) struct Processes(pub(crate) Vec<Child>);

impl Drop for Processes {
    fn drop(&mut self) {
        for child in self.0.iter_mut().rev() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The display to use: `$DISPLAY`, or a private Xvfb.
pub(crate) fn display(procs: &mut Processes) -> Option<String> {
    if let Ok(d) = std::env::var("DISPLAY")
        && !d.is_empty()
    {
        return Some(d);
    }
    let xvfb = tool("Xvfb")?;
    let mut child = Command::new(xvfb)
        .args([
            "-displayfd",
            "1",
            "-screen",
            "0",
            "1280x860x24",
            "-nolisten",
            "tcp",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take()?)
        .read_line(&mut line)
        .ok()?;
    procs.0.push(child);
    let n = line.trim();
    (!n.is_empty()).then(|| format!(":{n}"))
}

pub(crate) fn screenshots_dir() -> PathBuf {
    let dir = std::env::var_os("KNOWHUB_E2E_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    Path::new(
                        &std::env::var("CARGO_MANIFEST_DIR")
                            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
                    )
                    .join("target")
                });
            target.join("e2e-screenshots")
        });
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub(crate) fn css(testid: &str) -> String {
    format!("[data-testid=\"{testid}\"]")
}

pub(crate) struct Ui {
    pub(crate) c: Client,
    pub(crate) shots: PathBuf,
}

impl Ui {
    pub(crate) async fn wait(&self, selector: &str) -> fantoccini::elements::Element {
        match self
            .c
            .wait()
            .at_most(wait_limit())
            .for_element(Locator::Css(selector))
            .await
        {
            Ok(el) => el,
            Err(e) => self.fail(&format!("waiting for {selector}: {e}")).await,
        }
    }

    /// Saves what the window showed (screenshot and DOM) and fails the test.
    pub(crate) async fn fail(&self, why: &str) -> ! {
        if let Ok(png) = self.c.screenshot().await {
            let _ = std::fs::write(self.shots.join("failure.png"), png);
        }
        if let Ok(html) = self.c.source().await {
            let _ = std::fs::write(self.shots.join("failure.html"), html);
        }
        panic!("{why} (see {}/failure.png)", self.shots.display());
    }

    pub(crate) async fn click(&self, selector: &str) {
        self.wait(selector).await.click().await.unwrap();
    }

    pub(crate) async fn type_into(&self, selector: &str, text: &str) {
        let el = self.wait(selector).await;
        el.clear().await.unwrap();
        el.send_keys(text).await.unwrap();
    }

    pub(crate) async fn text(&self, selector: &str) -> String {
        self.wait(selector).await.text().await.unwrap()
    }

    /// The element's rendered text once it has any: WebDriver reads an element that is still
    /// appearing (a panel sliding in) as empty.
    pub(crate) async fn shown_text(&self, selector: &str) -> String {
        let deadline = Instant::now() + wait_limit();
        loop {
            let text = self.text(selector).await;
            if !text.trim().is_empty() {
                return text;
            }
            if Instant::now() > deadline {
                self.fail(&format!("timed out waiting for text in {selector}"))
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Evaluates `script` (a function body) until it returns true.
    pub(crate) async fn until(&self, what: &str, script: &str, args: Vec<serde_json::Value>) {
        let deadline = Instant::now() + wait_limit();
        loop {
            let v = self.c.execute(script, args.clone()).await.unwrap();
            if v == serde_json::Value::Bool(true) {
                return;
            }
            if Instant::now() > deadline {
                self.fail(&format!("timed out waiting for {what}")).await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub(crate) async fn shot(&self, name: &str) {
        let png = self.c.screenshot().await.unwrap();
        std::fs::write(self.shots.join(name), png).unwrap();
    }

    pub(crate) async fn ask(&self, question: &str) -> fantoccini::elements::Element {
        let before = self
            .c
            .find_all(Locator::Css(&css("answer")))
            .await
            .unwrap()
            .len();
        self.type_into(&css("chat-input"), question).await;
        self.click(&css("chat-send")).await;
        self.until(
            "the answer",
            "const a = document.querySelectorAll('[data-testid=\"answer\"][data-stop-reason]');\
             return a.length > arguments[0] && a[a.length-1].getAttribute('data-stop-reason') !== '';",
            vec![before.into()],
        )
        .await;
        let all = self.c.find_all(Locator::Css(&css("answer"))).await.unwrap();
        all.into_iter().last().unwrap()
    }
}

/// A running `tauri-driver` (and Xvfb when there was no display).
pub(crate) struct Driver {
    pub(crate) procs: Processes,
    port: u16,
}

impl Driver {
    /// Starts the driver for an app on `data` (with `env` added); `Err` says which tool is
    /// missing.
    pub(crate) fn start(data: &Path, env: &[(&str, &str)]) -> Result<Driver, String> {
        let (Some(driver), Some(_)) = (tool("tauri-driver"), tool("WebKitWebDriver")) else {
            return Err(
                "tauri-driver (cargo install tauri-driver --locked) and WebKitWebDriver \
                        (apt install webkit2gtk-driver) are needed"
                    .into(),
            );
        };
        let mut procs = Processes(Vec::new());
        let display =
            display(&mut procs).ok_or("no DISPLAY and no Xvfb (apt install xvfb)".to_string())?;
        // Both listeners are held until both numbers are known, so the two ports differ.
        let (port, native) = {
            let a = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
            let b = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
            let port = |l: &std::net::TcpListener| l.local_addr().map(|a| a.port());
            (
                port(&a).map_err(|e| e.to_string())?,
                port(&b).map_err(|e| e.to_string())?,
            )
        };
        let mut cmd = Command::new(driver);
        cmd.args([
            "--port",
            &port.to_string(),
            "--native-port",
            &native.to_string(),
        ])
        .env("DISPLAY", &display)
        .env("KNOWHUB_DATA_DIR", data)
        .env_remove("KNOWHUB_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        procs.0.push(
            cmd.spawn()
                .map_err(|e| format!("cannot start tauri-driver: {e}"))?,
        );
        // tauri-driver listens before the WebKitWebDriver it starts does; a session asked for
        // in between is dropped unanswered, so wait for both.
        let deadline = Instant::now() + Duration::from_secs(30);
        for p in [port, native] {
            while TcpStream::connect(("127.0.0.1", p)).is_err() {
                if Instant::now() > deadline {
                    return Err("tauri-driver or WebKitWebDriver did not start".into());
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Ok(Driver { procs, port })
    }

    /// Launches the app in a new WebDriver session.
    pub(crate) async fn session(&self) -> Ui {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "tauri:options".into(),
            serde_json::json!({ "application": env!("CARGO_BIN_EXE_knowhub-desktop") }),
        );
        // A connection the drivers drop before answering (still starting up) is retried a
        // few times; a refused session (the app failed) is not.
        let mut tries = 0;
        let c = loop {
            match ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                .capabilities(caps.clone())
                .connect(&format!("http://127.0.0.1:{}", self.port))
                .await
            {
                Ok(c) => break c,
                Err(fantoccini::error::NewSessionError::FailedC(e)) if tries < 4 => {
                    tries += 1;
                    eprintln!("WebDriver not ready ({e}); trying again");
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
                Err(e) => panic!("cannot start a WebDriver session with the app: {e:?}"),
            }
        };
        Ui {
            c,
            shots: screenshots_dir(),
        }
    }
}

/// Chooses `value` in the select (or radio group) with this test id, as a user would.
pub(crate) async fn set_choice(ui: &Ui, testid: &str, value: &str) {
    ui.wait(&css(testid)).await;
    let done = ui
        .c
        .execute(
            "const el = document.querySelector(`[data-testid=\"${arguments[0]}\"]`);\
             if (el.tagName === 'SELECT') {\
               const setter = Object.getOwnPropertyDescriptor(HTMLSelectElement.prototype, 'value').set;\
               setter.call(el, arguments[1]);\
               el.dispatchEvent(new Event('change', { bubbles: true }));\
               return true;\
             }\
             const r = el.querySelector(`input[value=\"${arguments[1]}\"]`);\
             if (!r) return false;\
             r.click();\
             return true;",
            vec![testid.into(), value.into()],
        )
        .await
        .unwrap();
    assert_eq!(done, serde_json::Value::Bool(true), "{testid} = {value}");
}
