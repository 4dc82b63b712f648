//! Who may use the page: the token (a bearer header or the cookie), the origin a cookie-signed
//! decision must come from, and the headers every answer carries.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use subtle::ConstantTimeEq as _;

use super::{api, html, Shared, Token, COOKIE};

/// How a request proved it holds the token.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum SignedIn {
    Bearer,
    Cookie,
}

/// Equal, in time that does not depend on where the two first differ (`subtle`'s comparison;
/// only the length, which is no secret, can end it early).
pub(super) fn holds(given: &str, token: &Token) -> bool {
    bool::from(given.as_bytes().ct_eq(token.as_str().as_bytes()))
}

fn signed_in(token: &Token, headers: &HeaderMap) -> Option<SignedIn> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if bearer.is_some_and(|given| holds(given, token)) {
        return Some(SignedIn::Bearer);
    }
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value);
    cookie
        .is_some_and(|given| holds(given, token))
        .then_some(SignedIn::Cookie)
}

/// Whether the request holds the token, by either means.
pub(super) fn authorized(token: &Token, headers: &HeaderMap) -> bool {
    signed_in(token, headers).is_some()
}

/// In front of every route but the front door: the token, and for a decision signed in by the
/// cookie, the page's own origin.
pub(super) async fn require_token(
    State(review): State<Shared>,
    request: Request,
    next: Next,
) -> Response {
    // The API is answered in JSON, the page in HTML (the path is the one inside the router,
    // whatever it is nested at).
    let api = request.uri().path().starts_with("/api/");
    match signed_in(&review.token, request.headers()) {
        None if api => api::unauthorized(),
        None => html::unauthorized(),
        Some(SignedIn::Cookie)
            if request.method() != Method::GET
                && request.method() != Method::HEAD
                && !from_the_page(request.headers(), &review.origins) =>
        {
            if api {
                api::other_origin()
            } else {
                html::other_origin()
            }
        }
        Some(_) => next.run(request).await,
    }
}

/// Whether a request was made by the page itself: its `Origin` is the page's own (the scheme
/// and the `Host` it was sent to, port included) or one of `allowed`, or, for a browser that
/// sent no `Origin`, its `Sec-Fetch-Site` is `same-origin`. A request with neither is refused:
/// every browser that supports `SameSite` sends one of them with a form's `POST`.
fn from_the_page(headers: &HeaderMap, allowed: &[String]) -> bool {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    match text(header::ORIGIN) {
        Some(origin) => {
            let origin = origin.to_ascii_lowercase();
            let own = text(header::HOST).is_some_and(|host| {
                let host = host.to_ascii_lowercase();
                origin == format!("http://{host}") || origin == format!("https://{host}")
            });
            own || allowed.contains(&origin)
        }
        None => headers
            .get("sec-fetch-site")
            .is_some_and(|site| site.as_bytes() == b"same-origin"),
    }
}

/// The headers every answer carries: nothing cached (a page of tickets, a token in a
/// redirect), no referrer to another site (the address once carried the token; `no-referrer`
/// would also make the browser send `Origin: null` with the page's own forms, which the origin
/// check refuses), no framing (a decision is a click: another site must not overlay the page),
/// forms posted only back to the page.
pub(super) async fn hardened(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("frame-ancestors 'none'; form-action 'self'; base-uri 'none'"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn the_page_s_own_origin_and_an_allowed_one_pass_and_no_other() {
        let allowed = ["https://review.example.com".to_owned()];
        let own = headers(&[
            ("host", "127.0.0.1:7878"),
            ("origin", "http://127.0.0.1:7878"),
        ]);
        assert!(from_the_page(&own, &allowed));
        let proxied = headers(&[
            ("host", "10.0.0.5:80"),
            ("origin", "https://Review.example.com"),
        ]);
        assert!(from_the_page(&proxied, &allowed));
        let port = headers(&[
            ("host", "127.0.0.1:7878"),
            ("origin", "http://127.0.0.1:7879"),
        ]);
        assert!(!from_the_page(&port, &allowed));
        let no_host = headers(&[("origin", "http://127.0.0.1:7878")]);
        assert!(!from_the_page(&no_host, &[]));
        assert!(!from_the_page(&headers(&[]), &allowed));
    }

    #[test]
    fn a_token_that_differs_anywhere_or_in_length_is_refused() {
        let token = Token::new("0123456789abcdef").unwrap();
        assert!(holds("0123456789abcdef", &token));
        assert!(!holds("0123456789abcdeF", &token));
        assert!(!holds("0123456789abcde", &token));
        assert!(!holds("", &token));
    }
}
