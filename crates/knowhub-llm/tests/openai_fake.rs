//! `OpenAiCompatible` against a fake server: a `TcpListener` on 127.0.0.1 that answers one
//! request with a canned response and hands back what it received.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use knowhub_llm::{ChatRequest, Finish, Llm, LlmError, Message, OpenAiCompatible};
use serde_json::{Value, json};

/// What the fake server received.
#[derive(Debug)]
struct Received {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn read_request(stream: &mut TcpStream) -> Received {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':').unwrap();
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.parse().unwrap())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).unwrap();
    Received {
        request_line: request_line.trim_end().to_owned(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    }
}

/// Serves one request on a fresh port; `respond` writes the raw HTTP response.
fn serve_once(
    respond: impl FnOnce(&mut TcpStream) + Send + 'static,
) -> (String, JoinHandle<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let received = read_request(&mut stream);
        respond(&mut stream);
        let _ = stream.flush();
        received
    });
    (base, handle)
}

type Responder = Box<dyn FnOnce(&mut TcpStream) + Send>;

/// Serves one request per responder, on successive connections.
fn serve_seq(responders: Vec<Responder>) -> (String, JoinHandle<Vec<Received>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut all = Vec::new();
        for respond in responders {
            let (mut stream, _) = listener.accept().unwrap();
            all.push(read_request(&mut stream));
            respond(&mut stream);
            let _ = stream.flush();
        }
        all
    });
    (base, handle)
}

/// A chunked `text/event-stream` response with these `data:` payloads. Write errors are
/// ignored: a client that cancels closes the connection early.
fn sse(events: Vec<String>) -> impl FnOnce(&mut TcpStream) + Send + 'static {
    move |s: &mut TcpStream| {
        let _ = s.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
              Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        );
        for e in events {
            let chunk = format!("data: {e}\n\n");
            let _ = write!(s, "{:x}\r\n{chunk}\r\n", chunk.len());
            let _ = s.flush();
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = s.write_all(b"0\r\n\r\n");
    }
}

fn plain(
    status: &str,
    content_type: &str,
    body: &str,
) -> impl FnOnce(&mut TcpStream) + Send + 'static {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    move |s: &mut TcpStream| {
        let _ = s.write_all(response.as_bytes());
    }
}

fn delta(text: &str) -> String {
    json!({"id": "x", "object": "chat.completion.chunk",
           "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
    .to_string()
}

fn finish(reason: &str) -> String {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}).to_string()
}

fn request() -> ChatRequest {
    ChatRequest {
        max_tokens: 64,
        ..ChatRequest::new(vec![Message::system("Be brief."), Message::user("你好?")])
    }
}

fn collect(
    llm: &OpenAiCompatible,
    req: &ChatRequest,
) -> (Result<knowhub_llm::ChatResponse, LlmError>, Vec<String>) {
    let mut pieces = Vec::new();
    let r = llm.chat(req, &mut |p| {
        pieces.push(p.to_owned());
        true
    });
    (r, pieces)
}

#[test]
fn streams_pieces_and_sends_a_proper_request() {
    let (base, server) = serve_once(sse(vec![
        json!({"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": null}]})
            .to_string(),
        delta("Hel"),
        delta("lo"),
        delta(", 世界"),
        finish("stop"),
        json!({"choices": [], "usage": {"prompt_tokens": 17, "completion_tokens": 4, "total_tokens": 21}})
            .to_string(),
        "[DONE]".to_owned(),
    ]));
    let llm = OpenAiCompatible::new(format!("{base}/"), "qwen2.5:7b", Some("sk-test".into()));
    let (r, pieces) = collect(&llm, &request());
    let r = r.unwrap();
    assert_eq!(pieces, ["Hel", "lo", ", 世界"]);
    assert_eq!(r.text, "Hello, 世界");
    assert_eq!(r.finish, Finish::Eos);
    assert_eq!((r.prompt_tokens, r.completion_tokens), (17, 4));
    assert!(r.time_to_first_token <= r.elapsed);

    let got = server.join().unwrap();
    assert_eq!(got.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(got.header("authorization"), Some("Bearer sk-test"));
    assert!(
        got.header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(got.body["model"], "qwen2.5:7b");
    assert_eq!(got.body["stream"], true);
    assert_eq!(got.body["max_tokens"], 64);
    assert_eq!(got.body["temperature"], 0.0);
    assert_eq!(
        got.body["messages"],
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "你好?"}])
    );
}

#[test]
fn no_key_no_authorization_header_and_estimated_usage() {
    let (base, server) = serve_once(sse(vec![
        delta("one"),
        delta(" two"),
        finish("length"),
        "[DONE]".to_owned(),
    ]));
    let llm = OpenAiCompatible::new(base, "m", None);
    let (r, _) = collect(&llm, &request());
    let r = r.unwrap();
    assert_eq!(r.text, "one two");
    assert_eq!(r.finish, Finish::MaxTokens);
    assert_eq!(
        r.completion_tokens, 2,
        "one per content event without usage"
    );
    assert!(r.prompt_tokens > 0);
    let got = server.join().unwrap();
    assert_eq!(got.header("authorization"), None);
}

#[test]
fn refused_connection_names_the_url() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let llm = OpenAiCompatible::new(format!("http://127.0.0.1:{port}/v1"), "m", None);
    let err = llm.complete(&request()).unwrap_err();
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    assert!(
        matches!(&err, LlmError::Unreachable { url: u, .. } if *u == url),
        "{err:?}"
    );
    assert!(err.to_string().contains(&url), "{err}");
}

#[test]
fn unauthorized_is_an_auth_error_with_the_servers_message() {
    let (base, _server) = serve_once(plain(
        "401 Unauthorized",
        "application/json",
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#,
    ));
    let llm = OpenAiCompatible::new(base, "gpt-4o-mini", Some("bad".into()));
    let err = llm.complete(&request()).unwrap_err();
    assert!(
        matches!(&err, LlmError::Auth { status: 401, message, .. } if message == "Incorrect API key provided"),
        "{err:?}"
    );
    assert!(err.to_string().contains("API key"), "{err}");
}

#[test]
fn other_statuses_carry_the_servers_message() {
    let (base, _server) = serve_once(plain(
        "500 Internal Server Error",
        "application/json",
        r#"{"error":"model requires more system memory (8 GiB) than is available"}"#,
    ));
    let llm = OpenAiCompatible::new(base, "m", None);
    let err = llm.complete(&request()).unwrap_err();
    assert!(
        matches!(&err, LlmError::Server { status: Some(500), message, .. } if message.contains("more system memory")),
        "{err:?}"
    );

    let (base, _server) = serve_once(plain("404 Not Found", "text/plain", "404 page not found"));
    let err = OpenAiCompatible::new(base, "m", None)
        .complete(&request())
        .unwrap_err();
    assert!(err.to_string().contains("/v1"), "{err}");
}

#[test]
fn malformed_event_is_a_protocol_error() {
    let (base, _server) = serve_once(sse(vec![delta("ok"), "{not json".to_owned()]));
    let llm = OpenAiCompatible::new(base, "m", None);
    let (r, pieces) = collect(&llm, &request());
    let err = r.unwrap_err();
    assert!(
        matches!(&err, LlmError::Protocol { reason, .. } if reason.contains("malformed event")),
        "{err:?}"
    );
    assert_eq!(pieces, ["ok"]);
}

#[test]
fn error_event_inside_the_stream() {
    let (base, _server) = serve_once(sse(vec![
        delta("par"),
        json!({"error": {"message": "context length exceeded"}}).to_string(),
    ]));
    let err = OpenAiCompatible::new(base, "m", None)
        .complete(&request())
        .unwrap_err();
    assert!(
        matches!(&err, LlmError::Server { status: None, message, .. } if message == "context length exceeded"),
        "{err:?}"
    );
}

#[test]
fn stream_cut_short_is_reported() {
    let (base, _server) = serve_once(sse(vec![delta("half an ans")]));
    let err = OpenAiCompatible::new(base, "m", None)
        .complete(&request())
        .unwrap_err();
    assert!(
        matches!(&err, LlmError::Protocol { reason, .. } if reason.contains("[DONE]")),
        "{err:?}"
    );
}

#[test]
fn non_streaming_answer_is_accepted() {
    let body = json!({
        "id": "c", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "报销单在月底前提交。"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}
    })
    .to_string();
    let (base, _server) = serve_once(plain("200 OK", "application/json", &body));
    let llm = OpenAiCompatible::new(base, "m", None);
    let (r, pieces) = collect(&llm, &request());
    let r = r.unwrap();
    assert_eq!(r.text, "报销单在月底前提交。");
    assert_eq!(pieces, ["报销单在月底前提交。"]);
    assert_eq!(
        (r.prompt_tokens, r.completion_tokens, r.finish),
        (20, 9, Finish::Eos)
    );
}

#[test]
fn cancel_stops_reading() {
    let (base, _server) = serve_once(sse(vec![
        delta("first"),
        delta(" second"),
        delta(" third"),
        finish("stop"),
        "[DONE]".to_owned(),
    ]));
    let llm = OpenAiCompatible::new(base, "m", None);
    let mut calls = 0;
    let r = llm
        .chat(&request(), &mut |_| {
            calls += 1;
            false
        })
        .unwrap();
    assert_eq!(calls, 1);
    assert_eq!(r.text, "first");
    assert_eq!(r.finish, Finish::Cancelled);
}

#[test]
fn stop_strings_apply_even_if_the_server_ignores_them() {
    let (base, server) = serve_once(sse(vec![
        delta("Answer: 42"),
        delta("\nQue"),
        delta("stion: next"),
        finish("stop"),
        "[DONE]".to_owned(),
    ]));
    let llm = OpenAiCompatible::new(base, "m", None);
    let req = ChatRequest {
        stop: vec!["\nQuestion:".into()],
        ..request()
    };
    let (r, pieces) = collect(&llm, &req);
    let r = r.unwrap();
    assert_eq!(r.text, "Answer: 42");
    assert_eq!(pieces.concat(), r.text);
    assert_eq!(r.finish, Finish::Stop);
    assert_eq!(server.join().unwrap().body["stop"], json!(["\nQuestion:"]));
}

#[test]
fn unknown_host_and_bad_url() {
    let llm = OpenAiCompatible::new("http://knowhub-no-such-host.invalid/v1", "m", None)
        .with_timeouts(Duration::from_secs(2), Duration::from_secs(2));
    let err = llm.complete(&request()).unwrap_err();
    assert!(matches!(err, LlmError::Unreachable { .. }), "{err:?}");

    let err = OpenAiCompatible::new("not a url", "m", None)
        .complete(&request())
        .unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::InvalidRequest(_) | LlmError::Unreachable { .. }
        ),
        "{err:?}"
    );
}

#[test]
fn rejected_stream_options_are_dropped_and_retried() {
    let (base, server) = serve_seq(vec![
        Box::new(plain(
            "400 Bad Request",
            "application/json",
            r#"{"error":{"message":"Unrecognized request argument supplied: stream_options"}}"#,
        )),
        Box::new(sse(vec![
            delta("fine"),
            finish("stop"),
            "[DONE]".to_owned(),
        ])),
    ]);
    let r = OpenAiCompatible::new(base, "m", None)
        .complete(&request())
        .unwrap();
    assert_eq!(r.text, "fine");
    let got = server.join().unwrap();
    assert_eq!(got.len(), 2);
    assert!(got[0].body.get("stream_options").is_some());
    assert!(got[1].body.get("stream_options").is_none());

    // Any other 400 is reported as it is.
    let (base, _server) = serve_once(plain(
        "400 Bad Request",
        "application/json",
        r#"{"error":{"message":"max_tokens is too large"}}"#,
    ));
    let err = OpenAiCompatible::new(base, "m", None)
        .complete(&request())
        .unwrap_err();
    assert!(
        matches!(&err, LlmError::Server { status: Some(400), message, .. } if message == "max_tokens is too large"),
        "{err:?}"
    );
}

fn yes_no() -> ChatRequest {
    ChatRequest {
        max_tokens: 3,
        ..ChatRequest::new(vec![Message::user("Is the sky blue? Answer yes or no.")])
    }
}

#[test]
fn token_probabilities_come_from_top_logprobs() {
    let body = json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Yes"},
                     "logprobs": {"content": [{"token": "Yes", "logprob": (0.6f64).ln(),
                        "top_logprobs": [
                            {"token": "Yes", "logprob": (0.6f64).ln()},
                            {"token": "No", "logprob": (0.2f64).ln()},
                            {"token": " yes", "logprob": (0.1f64).ln()},
                            {"token": "The", "logprob": (0.05f64).ln()}]}]},
                     "finish_reason": "length"}]
    })
    .to_string();
    let (base, server) = serve_once(plain("200 OK", "application/json", &body));
    let llm = OpenAiCompatible::new(base, "m", None);
    let p = llm
        .first_word_probabilities(&yes_no(), &["yes", "no"])
        .unwrap()
        .unwrap();
    assert!(
        (p[0] - 0.7).abs() < 1e-5 && (p[1] - 0.2).abs() < 1e-5,
        "{p:?}"
    );
    let sent = server.join().unwrap().body;
    assert_eq!(sent["stream"], false);
    assert_eq!(sent["max_tokens"], 1);
    assert_eq!(sent["logprobs"], true);
    assert_eq!(sent["top_logprobs"], 20);
    assert!(sent.get("stream_options").is_none(), "{sent}");
}

#[test]
fn a_server_that_gives_no_token_probabilities_is_not_asked_again() {
    let without = json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Yes"},
                     "finish_reason": "length"}]
    })
    .to_string();
    let rejected = r#"{"error": {"message": "logprobs is not supported"}}"#;
    for respond in [
        plain("200 OK", "application/json", &without),
        plain("400 Bad Request", "application/json", rejected),
    ] {
        let (base, server) = serve_once(respond);
        let llm = OpenAiCompatible::new(base, "m", None);
        let ask = || llm.first_word_probabilities(&yes_no(), &["yes", "no"]);
        assert_eq!(ask().unwrap(), None);
        server.join().unwrap();
        // The fake server is gone: a second request would fail to connect.
        assert_eq!(ask().unwrap(), None);
    }
}

#[test]
fn token_probabilities_report_a_refused_key() {
    let (base, _server) = serve_once(plain(
        "401 Unauthorized",
        "application/json",
        r#"{"error": {"message": "bad key"}}"#,
    ));
    let llm = OpenAiCompatible::new(base, "m", Some("k".into()));
    let err = llm
        .first_word_probabilities(&yes_no(), &["yes", "no"])
        .unwrap_err();
    assert!(matches!(err, LlmError::Auth { status: 401, .. }), "{err:?}");
}
