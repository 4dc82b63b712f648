//! A bounded line reader between the upstream's output and rmcp's line transport.
//!
//! Lines up to the limit pass through unchanged, as they arrive. A line over the limit is
//! discarded as it arrives (never held: rmcp's own buffer stops at the limit, and this reader
//! keeps only the line's first and last [`PEEK`] bytes), and when it ends, rmcp is handed a
//! JSON-RPC error response for the line's `id`, recovered from those bytes, with
//! [`OVERSIZE_CODE`] and the limit in its `data`, which the proxy's `call` classifies as
//! `invalid_result`. A line whose id cannot be recovered, or that is not a response (a
//! request or notification from the upstream), is dropped.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncRead, BufReader, ReadBuf};

/// How many bytes of an oversize line's start and end are kept to find its id.
pub(crate) const PEEK: usize = 4096;

/// The JSON-RPC error code of a synthesized "answer over the limit" response (in the range
/// JSON-RPC leaves to implementations); its `data` carries [`OVERSIZE_DATA_KEY`].
pub(crate) const OVERSIZE_CODE: i32 = -32099;

/// The key in a synthesized response's `data` that holds the limit, in bytes.
pub(crate) const OVERSIZE_DATA_KEY: &str = "io.toolwright/answer-over-limit";

/// The longest string id the reader answers for (the proxy's own ids are numbers).
const MAX_ID_CHARS: usize = 256;

/// The bounded reader. `limit` counts a line's bytes with its newline, as rmcp's
/// `AsyncRwTransport::with_max_line_length` does; that transport must be given the same limit.
pub(crate) struct BoundedLines<R> {
    inner: BufReader<R>,
    limit: usize,
    /// Bytes of the current line seen so far.
    line_len: usize,
    /// The current line's first bytes.
    head: Vec<u8>,
    /// The current line's last bytes.
    tail: VecDeque<u8>,
    /// The current line went over the limit: the rest of it is discarded.
    discarding: bool,
    /// Bytes to hand out before reading on: a newline ending rmcp's partial line, then the
    /// synthesized response.
    pending: Vec<u8>,
    pending_at: usize,
}

impl<R: AsyncRead> BoundedLines<R> {
    pub(crate) fn new(inner: R, limit: usize) -> Self {
        BoundedLines {
            inner: BufReader::new(inner),
            limit,
            line_len: 0,
            head: Vec::with_capacity(PEEK),
            tail: VecDeque::with_capacity(PEEK),
            discarding: false,
            pending: Vec::new(),
            pending_at: 0,
        }
    }
}

impl<R> BoundedLines<R> {
    /// Remembers `bytes` of the current line in its head and tail.
    fn record(&mut self, bytes: &[u8]) {
        if self.head.len() < PEEK {
            let room = PEEK - self.head.len();
            self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        if bytes.len() >= PEEK {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - PEEK..]);
        } else {
            let over = (self.tail.len() + bytes.len()).saturating_sub(PEEK);
            self.tail.drain(..over);
            self.tail.extend(bytes);
        }
    }

    fn next_line(&mut self) {
        self.line_len = 0;
        self.head.clear();
        self.tail.clear();
    }

    /// The oversize line ended: end rmcp's partial line and queue the error response.
    fn end_oversize(&mut self) {
        self.discarding = false;
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        self.pending.clear();
        self.pending_at = 0;
        self.pending.push(b'\n');
        match oversize_answer_id(&self.head, &tail) {
            Some(id) => {
                tracing::warn!(
                    limit = self.limit,
                    %id,
                    "the upstream's answer exceeded the proxy's limit; answering it with an error"
                );
                let response = json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {
                        "code": OVERSIZE_CODE,
                        "message": format!("the answer was over the proxy's limit of {} bytes and was discarded", self.limit),
                        "data": { OVERSIZE_DATA_KEY: self.limit },
                    }
                });
                self.pending
                    .extend_from_slice(response.to_string().as_bytes());
                self.pending.push(b'\n');
            }
            None => tracing::warn!(
                limit = self.limit,
                "the upstream sent a message over the proxy's limit with no answer id; discarded"
            ),
        }
        self.next_line();
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if buf.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            if this.pending_at < this.pending.len() {
                let rest = &this.pending[this.pending_at..];
                let n = rest.len().min(buf.remaining());
                buf.put_slice(&rest[..n]);
                this.pending_at += n;
                if this.pending_at == this.pending.len() {
                    this.pending.clear();
                    this.pending_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let available = ready!(Pin::new(&mut this.inner).poll_fill_buf(cx))?;
            if available.is_empty() {
                return Poll::Ready(Ok(())); // end of stream
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            // The chunk is copied out so `record` can borrow `this`; at most one buffer.
            if this.discarding {
                let chunk = available[..take].to_vec();
                this.record(&chunk);
                Pin::new(&mut this.inner).consume(take);
                if newline.is_some() {
                    this.end_oversize();
                }
                continue;
            }
            let room = this.limit - this.line_len;
            if take <= room {
                let n = take.min(buf.remaining());
                let chunk = available[..n].to_vec();
                buf.put_slice(&chunk);
                this.record(&chunk);
                Pin::new(&mut this.inner).consume(n);
                this.line_len += n;
                if newline.is_some() && n == take {
                    this.next_line();
                }
                return Poll::Ready(Ok(()));
            }
            // The line goes over the limit in this chunk. rmcp gets exactly `limit` bytes of it
            // (so its own check drops the line when the newline comes), the rest is discarded.
            if room > 0 {
                let n = room.min(buf.remaining());
                let chunk = available[..n].to_vec();
                buf.put_slice(&chunk);
                this.record(&chunk);
                Pin::new(&mut this.inner).consume(n);
                this.line_len += n;
                return Poll::Ready(Ok(()));
            }
            this.discarding = true;
        }
    }
}

/// The id of an oversize line, when its first and last bytes show it is a response (a
/// top-level `result` or `error`, no `method`) and hold its top-level `id`.
pub(crate) fn oversize_answer_id(head: &[u8], tail: &[u8]) -> Option<Value> {
    let mut members = leading_members(head);
    members.extend(trailing_members(tail));
    let has = |key: &str| members.iter().any(|(k, _)| k == key);
    if has("method") || !(has("result") || has("error")) {
        return None;
    }
    members
        .into_iter()
        .find_map(|(k, v)| (k == "id").then_some(v).flatten())
        .filter(|id| match id {
            Value::Number(_) => true,
            Value::String(s) => s.chars().count() <= MAX_ID_CHARS,
            _ => false,
        })
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && bytes[at].is_ascii_whitespace() {
        at += 1;
    }
    at
}

/// The end (one past the closing quote) of the string starting at `at`, if it ends in `bytes`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The end of the JSON value starting at `at`, if it ends in `bytes`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let end = bytes[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
                .map(|p| at + p)?;
            Some(end)
        }
    }
}

/// The top-level members at the start of a line: each key, with its value when that value
/// ends within `head` (the member whose value runs past it is listed without one).
fn leading_members(head: &[u8]) -> Vec<(String, Option<Value>)> {
    let mut members = Vec::new();
    let mut at = skip_ws(head, 0);
    if head.get(at) != Some(&b'{') {
        return members;
    }
    at += 1;
    loop {
        at = skip_ws(head, at);
        if head.get(at) != Some(&b'"') {
            return members;
        }
        let Some(key_end) = string_end(head, at) else {
            return members;
        };
        let Ok(key) = serde_json::from_slice::<String>(&head[at..key_end]) else {
            return members;
        };
        at = skip_ws(head, key_end);
        if head.get(at) != Some(&b':') {
            return members;
        }
        at = skip_ws(head, at + 1);
        let Some(end) = value_end(head, at) else {
            members.push((key, None));
            return members;
        };
        members.push((key, serde_json::from_slice(&head[at..end]).ok()));
        at = skip_ws(head, end);
        if head.get(at) != Some(&b',') {
            return members;
        }
        at += 1;
    }
}

/// The top-level members at the end of a line whose values are strings, numbers or
/// literals, read backwards from the closing brace until a value that is not.
fn trailing_members(tail: &[u8]) -> Vec<(String, Option<Value>)> {
    let mut members = Vec::new();
    let mut end = tail.len();
    while end > 0 && tail[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    if end == 0 || tail[end - 1] != b'}' {
        return members;
    }
    end -= 1; // the closing brace
    loop {
        // A value: a string, or a number or literal, ending at `end`.
        let value_stop = back_ws(tail, end);
        let value_start = if value_stop > 0 && tail[value_stop - 1] == b'"' {
            match string_start(tail, value_stop - 1) {
                Some(start) => start,
                None => return members,
            }
        } else {
            let mut s = value_stop;
            while s > 0
                && (tail[s - 1].is_ascii_alphanumeric()
                    || matches!(tail[s - 1], b'-' | b'+' | b'.'))
            {
                s -= 1;
            }
            if s == value_stop {
                return members; // a container, or nothing
            }
            s
        };
        let Ok(value) = serde_json::from_slice::<Value>(&tail[value_start..value_stop]) else {
            return members;
        };
        let colon = back_ws(tail, value_start);
        if colon == 0 || tail[colon - 1] != b':' {
            return members;
        }
        let key_stop = back_ws(tail, colon - 1);
        if key_stop == 0 || tail[key_stop - 1] != b'"' {
            return members;
        }
        let Some(key_start) = string_start(tail, key_stop - 1) else {
            return members;
        };
        let Ok(key) = serde_json::from_slice::<String>(&tail[key_start..key_stop]) else {
            return members;
        };
        members.push((key, Some(value)));
        let before = back_ws(tail, key_start);
        if before == 0 || tail[before - 1] != b',' {
            return members;
        }
        end = before - 1;
    }
}

fn back_ws(bytes: &[u8], mut at: usize) -> usize {
    while at > 0 && bytes[at - 1].is_ascii_whitespace() {
        at -= 1;
    }
    at
}

/// The opening quote of the string whose closing quote is at `close`: the first quote before
/// it not escaped (preceded by an even number of backslashes).
fn string_start(bytes: &[u8], close: usize) -> Option<usize> {
    let mut i = close;
    while i > 0 {
        i -= 1;
        if bytes[i] == b'"' {
            let backslashes = bytes[..i].iter().rev().take_while(|b| **b == b'\\').count();
            if backslashes % 2 == 0 {
                return Some(i);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_found_first_or_last_and_only_in_a_response() {
        let big = "x".repeat(10_000);
        let first =
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"text":"{big}"}}]}}}}"#);
        let bytes = first.as_bytes();
        let (head, tail) = (&bytes[..PEEK], &bytes[bytes.len() - PEEK..]);
        assert_eq!(oversize_answer_id(head, tail), Some(json!(7)));

        let last =
            format!(r#"{{"result":{{"t":"{big}","id":1}}, "id" : "a\"b" , "jsonrpc":"2.0"}}"#);
        let bytes = last.as_bytes();
        let (head, tail) = (&bytes[..PEEK], &bytes[bytes.len() - PEEK..]);
        assert_eq!(oversize_answer_id(head, tail), Some(json!("a\"b")));

        let request = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{{"t":"{big}"}}}}"#
        );
        let bytes = request.as_bytes();
        let (head, tail) = (&bytes[..PEEK], &bytes[bytes.len() - PEEK..]);
        assert_eq!(oversize_answer_id(head, tail), None);

        let nested_only = format!(r#"{{"result":{{"t":"{big}","id":1}}}}"#);
        let bytes = nested_only.as_bytes();
        let (head, tail) = (&bytes[..PEEK], &bytes[bytes.len() - PEEK..]);
        assert_eq!(oversize_answer_id(head, tail), None);

        for junk in [
            &b""[..],
            b"}",
            b"\"",
            b"{\"id\":",
            b"{\"a\\",
            b"\\\"}",
            b"{{{{[[[",
        ] {
            let _ = oversize_answer_id(junk, junk);
        }
    }
}
