//! The review page (`toolwright::review`, as examples/approvals serves it, here nested at
//! `/approvals` under another router), driven in a real headless Chromium through
//! chromedriver (WebDriver over plain HTTP JSON): a refund a model asked for is approved in the
//! page and the re-sent call runs once; one is denied with a reason the model is told; an edit
//! out of range is refused with the error next to the field, a valid edit is what runs; a new
//! ticket appears without anyone reloading. `UPDATE_SCREENSHOT=1` rewrites docs/approvals.png.
//!
//! Without chromedriver the test says so loudly and skips, unless
//! `TOOLWRIGHT_REQUIRE_BROWSER=1` (CI sets it, after `apt-get install -y chromium
//! chromium-driver` in .ci/run), which makes a missing driver a failure.
#![cfg(all(unix, feature = "review-page"))]

use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use toolwright::approval::Approvals;
use toolwright::conversation::{ConversationStore, MemoryConversationStore, TicketState};
use toolwright::review::Token;
use toolwright::ErrorKind;

use crate::shop;
use crate::support::review_page::serve;

/// How long any one condition may take to come true in the browser.
const WAIT: Duration = Duration::from_secs(20);
/// The key a WebDriver element reference is sent under (W3C WebDriver, "elements").
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The environment variable that turns a missing chromedriver into a failure.
const REQUIRE: &str = "TOOLWRIGHT_REQUIRE_BROWSER";

/// The chromedriver to drive, or `None` (after saying so past the harness's capture) when it
/// is not installed and [`REQUIRE`] is not `1`.
fn chromedriver() -> Option<PathBuf> {
    let found = std::env::var_os("CHROMEDRIVER")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join("chromedriver"))
                    .find(|p| p.is_file())
            })
        });
    if found.is_none() {
        let install = "install Chromium and its driver (`apt-get install -y chromium \
                       chromium-driver`), or point CHROMEDRIVER at a chromedriver binary";
        if std::env::var(REQUIRE).is_ok_and(|v| v == "1") {
            panic!("{REQUIRE}=1 but chromedriver is not installed: {install}");
        }
        let bar = "!".repeat(78);
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "\n{bar}\n!!! chromedriver is not installed: the review page's browser test is \
             SKIPPED.\n!!! To run it, {install};\n!!! {REQUIRE}=1 makes this a failure (CI sets \
             it).\n{bar}\n"
        );
    }
    found
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on loopback")
}

/// Polls `check` until it answers `Some`, failing with `what` after [`WAIT`].
async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {WAIT:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A chromedriver on a free loopback port, killed on drop, and one browser session in it.
struct Browser {
    driver: Child,
    http: reqwest::Client,
    session: String,
    base: String,
}

impl Drop for Browser {
    /// Chromium outlives a killed chromedriver: chromedriver leads a process group of its
    /// own, and the whole group (the browser included) is terminated, on a panic too.
    fn drop(&mut self) {
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Browser {
    async fn start(binary: PathBuf) -> Browser {
        let port = free_port();
        let driver = Command::new(&binary)
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let mut browser = Browser {
            driver,
            http,
            session: String::new(),
            base,
        };
        let status = format!("{}/status", browser.base);
        wait_for("chromedriver to be ready", || {
            let request = browser.http.get(&status).send();
            async move {
                let body: Value = request.await.ok()?.json().await.ok()?;
                body["value"]["ready"].as_bool().filter(|ready| *ready)
            }
        })
        .await;
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1100,1500"]}
        }}});
        let created = browser.send("POST", "/session", capabilities).await;
        browser.session = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id in {created}"))
            .to_owned();
        browser
    }

    /// One WebDriver command; its `value`, or a panic with the driver's error.
    async fn send(&self, method: &str, path: &str, body: Value) -> Value {
        let url = if path == "/session" {
            format!("{}{path}", self.base)
        } else {
            format!("{}/session/{}{path}", self.base, self.session)
        };
        let request = match method {
            "GET" => self.http.get(&url),
            "DELETE" => self.http.delete(&url),
            _ => self.http.post(&url).json(&body),
        };
        let response = request.send().await.expect("chromedriver answers");
        let status = response.status();
        let mut answer: Value = response.json().await.expect("chromedriver answers JSON");
        assert!(status.is_success(), "{method} {path}: {status} {answer}");
        answer["value"].take()
    }

    async fn goto(&self, url: &str) {
        self.send("POST", "/url", json!({ "url": url })).await;
    }

    /// The elements matching a CSS selector, now.
    async fn all(&self, css: &str) -> Vec<String> {
        let found = self
            .send(
                "POST",
                "/elements",
                json!({"using": "css selector", "value": css}),
            )
            .await;
        found
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|e| e[ELEMENT].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The first element matching `css`, waiting for it to appear.
    async fn find(&self, css: &str) -> String {
        wait_for(&format!("`{css}` on the page"), || async {
            self.all(css).await.into_iter().next()
        })
        .await
    }

    /// One WebDriver command; its `value`, or `None` when the driver refused it (an element
    /// that went stale because the page reloaded, say).
    async fn try_send(&self, method: &str, path: &str) -> Option<Value> {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let request = match method {
            "GET" => self.http.get(&url),
            _ => self.http.post(&url).json(&json!({})),
        };
        let response = request.send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let mut answer: Value = response.json().await.ok()?;
        Some(answer["value"].take())
    }

    /// The text of the first element matching `css`. The page reloads itself when tickets
    /// change, so an element found may go stale before it is read: it is looked up again.
    async fn text(&self, css: &str) -> String {
        wait_for(&format!("the text of `{css}`"), || async {
            let element = self.all(css).await.into_iter().next()?;
            let text = self
                .try_send("GET", &format!("/element/{element}/text"))
                .await?;
            Some(text.as_str().unwrap_or_default().to_owned())
        })
        .await
    }

    /// Clicks a form's button and waits for the page the form answers with: the clicked
    /// element goes stale when the new page replaces the old, so nothing is read from the page
    /// the click left.
    async fn click(&self, css: &str) {
        let element = wait_for(&format!("a click on `{css}`"), || async {
            let element = self.all(css).await.into_iter().next()?;
            self.try_send("POST", &format!("/element/{element}/click"))
                .await?;
            Some(element)
        })
        .await;
        wait_for(&format!("the page after clicking `{css}`"), || async {
            let gone = self
                .try_send("GET", &format!("/element/{element}/name"))
                .await
                .is_none();
            gone.then_some(())
        })
        .await;
    }

    async fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css).await;
        self.send("POST", &format!("/element/{element}/clear"), json!({}))
            .await;
        self.send(
            "POST",
            &format!("/element/{element}/value"),
            json!({ "text": text }),
        )
        .await;
    }

    async fn screenshot(&self) -> Vec<u8> {
        let png = self.send("GET", "/screenshot", Value::Null).await;
        base64::engine::general_purpose::STANDARD
            .decode(png.as_str().expect("a base64 screenshot"))
            .expect("the screenshot is base64")
    }
}

fn ticket_css(ticket: &str, inner: &str) -> String {
    format!("section[data-ticket=\"{ticket}\"] {inner}")
}

/// Edits a ticket's arguments in the page; the error shown next to the field.
async fn edit_refused(browser: &Browser, ticket: &str, arguments: &str) -> String {
    browser
        .type_into(&ticket_css(ticket, "textarea.arguments"), arguments)
        .await;
    browser.click(&ticket_css(ticket, "button.edit")).await;
    browser
        .text(&ticket_css(ticket, ".error[data-field=arguments]"))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_approves_denies_and_edits_in_a_real_browser() {
    let ledger = shop::Ledger::default();
    let registry = shop::registry(&ledger);
    let store: Arc<dyn ConversationStore> = Arc::new(MemoryConversationStore::new());
    let approvals = Approvals::new(Arc::clone(&store));
    let asked = shop::seed(&registry, &store)
        .await
        .expect("the seed calls wait");
    let [ann, bob, cat] = <[shop::Asked; 3]>::try_from(asked)
        .ok()
        .expect("three tickets");

    let token = Token::random().expect("a token");
    let address = serve(&registry, &store, &token, "/approvals").await;
    let home = format!("http://{address}/approvals");
    let token = token.as_str();

    // Without the token the page refuses; the token once sets the cookie and leaves the URL.
    let plain = reqwest::get(&home).await.expect("the page answers");
    assert_eq!(plain.status(), reqwest::StatusCode::UNAUTHORIZED);
    let wrong = reqwest::get(format!("{home}?token=not-{token}"))
        .await
        .unwrap();
    assert_eq!(wrong.status(), reqwest::StatusCode::UNAUTHORIZED);

    // Nor does it decide anything for someone without the token.
    let forged = reqwest::Client::new()
        .post(format!("{home}/tickets/{}/approve", ann.ticket))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), reqwest::StatusCode::UNAUTHORIZED);
    assert_eq!(
        approvals.ticket(&ann.ticket).await.unwrap().unwrap().state,
        TicketState::Waiting
    );

    // Everything above runs without a browser; what follows needs one.
    let Some(driver) = chromedriver() else {
        return;
    };
    let browser = Browser::start(driver).await;
    browser.goto(&format!("{home}?token={token}")).await;
    let url = browser.send("GET", "/url", Value::Null).await;
    assert_eq!(
        url.as_str(),
        Some(home.as_str()),
        "the token leaves the address bar"
    );

    // Every waiting call is listed with its tool, principal, age and redacted arguments,
    // and what a customer typed is shown as text, not markup.
    let shown = browser
        .text(&ticket_css(&bob.ticket, "pre.arguments"))
        .await;
    assert!(shown.contains("\"order_id\": \"O-bob\""), "{shown}");
    assert!(
        shown.contains("[redacted]") && !shown.contains("4242"),
        "{shown}"
    );
    assert!(
        shown.contains("<b>twice</b> &"),
        "escaped, shown as typed: {shown}"
    );
    assert!(
        browser.all("b").await.is_empty(),
        "no markup from arguments"
    );
    assert!(shown.contains("<script>alert(1)</script>"), "{shown}");
    assert_eq!(
        browser.all("script").await.len(),
        1,
        "the page's own script only"
    );
    assert_eq!(
        browser.text(&ticket_css(&ann.ticket, ".tool")).await,
        "refund_order"
    );
    assert_eq!(
        browser.text(&ticket_css(&ann.ticket, ".principal")).await,
        "ann"
    );
    assert!(browser
        .text(&ticket_css(&ann.ticket, ".age"))
        .await
        .ends_with(" s ago"));

    // Approve: the re-sent call runs, once.
    browser
        .click(&ticket_css(&ann.ticket, "button.approve"))
        .await;
    let notice = browser.text(".notice").await;
    assert!(
        notice.contains(&ann.ticket) && notice.contains("approved"),
        "{notice}"
    );
    assert!(browser.all(&ticket_css(&ann.ticket, "")).await.is_empty());
    assert_eq!(
        ledger.ran("O-ann"),
        0,
        "nothing runs before the call is sent again"
    );
    for _ in 0..2 {
        let ran = registry.call_in(&ann.session, ann.call.clone()).await;
        assert!(ran.is_ok(), "{}", ran.to_model_string());
    }
    assert_eq!(
        ledger.ran("O-ann"),
        1,
        "the approved refund ran exactly once"
    );

    // A ticket filed while the page is open appears without anyone reloading it.
    let dan = shop::ask(&registry, &store, "dan", 15.0, "late")
        .await
        .expect("dan waits");
    browser
        .find(&ticket_css(&dan.ticket, "button.approve"))
        .await;

    // Deny with no reason: the error stands next to the field; with one, the model is told it.
    browser.click(&ticket_css(&bob.ticket, "button.deny")).await;
    let error = browser
        .text(&ticket_css(&bob.ticket, ".error[data-field=reason]"))
        .await;
    assert!(error.contains("Say why"), "{error}");
    browser
        .type_into(
            &ticket_css(&bob.ticket, "input.reason"),
            "over the 400 dollar limit",
        )
        .await;
    browser.click(&ticket_css(&bob.ticket, "button.deny")).await;
    browser.find(".notice").await;
    let denied = registry.call_in(&bob.session, bob.call.clone()).await;
    assert_eq!(
        denied.error_kind(),
        Some(ErrorKind::ApprovalDenied),
        "{}",
        denied.to_model_string()
    );
    assert!(
        denied
            .message()
            .unwrap_or("")
            .contains("over the 400 dollar limit"),
        "{}",
        denied.to_model_string()
    );
    assert_eq!(ledger.ran("O-bob"), 0);

    // Edit out of range: refused next to the field, nothing decided.
    let error = edit_refused(
        &browser,
        &cat.ticket,
        r#"{"order_id":"O-cat","amount":900,"reason":"wrong colour","card_last4":"4242"}"#,
    )
    .await;
    assert!(
        error.contains("/amount"),
        "the error names the field: {error}"
    );
    assert!(error.contains("500"), "and what it expects: {error}");
    assert_eq!(
        approvals.ticket(&cat.ticket).await.unwrap().unwrap().state,
        TicketState::Waiting
    );
    // The README's picture is rewritten only when asked (`UPDATE_SCREENSHOT=1`), so a test run
    // leaves the checkout as it found it; otherwise the screenshot goes to the temp dir.
    let png = browser.screenshot().await;
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    let path = if std::env::var_os("UPDATE_SCREENSHOT").is_some() {
        std::fs::create_dir_all("docs").expect("docs/");
        std::path::PathBuf::from("docs/approvals.png")
    } else {
        std::env::temp_dir().join("toolwright-approvals.png")
    };
    std::fs::write(&path, png).expect("write the screenshot");

    // An order the customer's conversation never saw is refused with the reason.
    let error = edit_refused(
        &browser,
        &cat.ticket,
        r#"{"order_id":"O-zed","amount":20,"reason":"wrong colour","card_last4":"4242"}"#,
    )
    .await;
    assert!(error.contains("O-zed"), "{error}");

    // A value still reading [redacted] is refused too: it would run in place of the secret.
    let error = edit_refused(
        &browser,
        &cat.ticket,
        r#"{"order_id":"O-cat","amount":20,"reason":"wrong colour","card_last4":"[redacted]"}"#,
    )
    .await;
    assert!(error.contains("/card_last4"), "{error}");

    // A valid edit is approved, and the edited call is what runs.
    browser
        .type_into(
            &ticket_css(&cat.ticket, "textarea.arguments"),
            r#"{"order_id":"O-cat","amount":20,"reason":"wrong colour","card_last4":"4242"}"#,
        )
        .await;
    browser.click(&ticket_css(&cat.ticket, "button.edit")).await;
    browser.find(".notice").await;
    let ran = registry.call_in(&cat.session, cat.call.clone()).await;
    assert!(ran.is_ok(), "{}", ran.to_model_string());
    assert!(
        ran.data().unwrap().get().contains("refunded 20 on O-cat"),
        "{:?}",
        ran.data()
    );
    assert_eq!(ledger.ran("O-cat"), 1);

    // Closing the session quits the browser; the drop ends what is left.
    browser.send("DELETE", "", Value::Null).await;

    // Dan's call was never decided: it still waits.
    assert_eq!(
        approvals.ticket(&dan.ticket).await.unwrap().unwrap().state,
        TicketState::Waiting
    );
}
