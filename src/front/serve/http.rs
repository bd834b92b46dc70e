//! HTTP/1.1 as the live server speaks it (spec/live.md "Endpoints"): the request head's limits,
//! its parse (by `httparse`, hyper's parser), and the responses. The connections, threads and
//! deadlines are in `server.rs`; nothing here knows the endpoints (`routes.rs` does).

/// The largest request head read (request line and headers); more is answered 431.
pub(crate) const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The most header lines a request may have; more is answered 431.
pub(crate) const MAX_HEADERS: usize = 64;

/// A request the router answers: its method and target, parsed.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub(crate) method: &'a str,
    pub(crate) path: &'a str,
    pub(crate) query: Option<&'a str>,
}

/// A response, whole in memory (its size is bounded by the endpoint that made it).
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) body: Vec<u8>,
    /// Extra header lines (`Name: value`), without the line end.
    pub(crate) headers: Vec<String>,
}

impl Response {
    /// A plain-text response.
    pub(crate) fn text(status: u16, body: impl Into<String>) -> Response {
        let mut body = body.into();
        body.push('\n');
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into_bytes(),
            headers: Vec::new(),
        }
    }

    /// The status line and headers, with the blank line that ends them.
    pub(crate) fn head(&self) -> String {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        );
        for h in &self.headers {
            head.push_str(h);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        head
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

/// Answers one parsed request (the router); called on a worker thread.
pub(crate) type Handler = dyn Fn(&Request<'_>) -> Response + Send + Sync;

/// What the bytes of a request head read so far are.
pub(crate) enum Head {
    /// A whole head: its length (bytes after it, a body, are not read for the request).
    Complete(usize),
    /// The start of a head: more may come.
    Partial,
    /// Not a request this server answers: the response that says why (400, or 431 past
    /// [`MAX_HEADERS`]).
    Refused(Response),
}

/// Classify `bytes`, the first bytes of a connection.
pub(crate) fn head(bytes: &[u8]) -> Head {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => Head::Complete(n),
        Ok(httparse::Status::Partial) => Head::Partial,
        Err(httparse::Error::TooManyHeaders) => Head::Refused(too_many_headers()),
        Err(_) => Head::Refused(bad_request()),
    }
}

/// Parse a whole head and route it (a head [`head`] found complete).
pub(crate) fn answer(head: &[u8], handler: &Handler) -> Response {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let (method, target) = match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => match (req.method, req.path) {
            (Some(m), Some(p)) => (m, p),
            _ => return bad_request(),
        },
        Err(httparse::Error::TooManyHeaders) => return too_many_headers(),
        Ok(httparse::Status::Partial) | Err(_) => return bad_request(),
    };
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    handler(&Request {
        method,
        path,
        query,
    })
}

pub(crate) fn bad_request() -> Response {
    Response::text(400, "not an HTTP/1.x request")
}

fn too_many_headers() -> Response {
    Response::text(
        431,
        format!("the request has more than {MAX_HEADERS} header lines"),
    )
}

/// The request head is over [`MAX_HEAD_BYTES`].
pub(crate) fn too_large() -> Response {
    Response::text(
        431,
        format!("the request head is over {MAX_HEAD_BYTES} bytes"),
    )
}
