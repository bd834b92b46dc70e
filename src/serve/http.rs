//! A small HTTP/1.1 server with every resource bounded (spec/live.md "Bounds"): one accept
//! thread, a fixed pool of workers, a bounded queue of accepted connections, one request per
//! connection, a cap on the request head, and a deadline on every read and write. Requests are
//! parsed by `httparse` (hyper's parser); nothing here knows the endpoints (`routes.rs` does).
//!
//! Why not an HTTP server crate: tiny_http 0.12, the obvious small one, starts a thread per
//! connection it is waiting on (its task pool grows without bound), reads a header line without
//! a length cap and sets no socket timeout, so 50 half-open clients hold 50 threads forever.
//! Async servers would impose a runtime. The bounds below are what the engine's process needs.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The largest request head read (request line and headers); more is answered 431.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Connections accepted and waiting for a worker; more are answered 503 at once and closed.
pub const QUEUE: usize = 64;
/// How long a client has to send its whole request head (a half-open connection holds a
/// worker this long at most).
pub const READ_DEADLINE: Duration = Duration::from_secs(2);
/// How long a client has to read its whole response.
pub const WRITE_DEADLINE: Duration = Duration::from_secs(10);
/// How often the accept thread and idle workers look at the stop flag.
const POLL: Duration = Duration::from_millis(20);

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

    fn head(&self) -> String {
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

/// Counts of what the server did, for tests and `/metrics`.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// Connections answered by a worker.
    pub(crate) answered: AtomicU64,
    /// Connections refused because the queue was full.
    pub(crate) refused: AtomicU64,
    /// Connections closed without a response: the head did not come in time, or the client
    /// went away.
    pub(crate) abandoned: AtomicU64,
}

/// The running server: its threads stop when it drops.
pub(crate) struct HttpServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    pub(crate) stats: Arc<Stats>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// Serve on `listener` with `workers` worker threads until `stop` is set.
    pub(crate) fn start(
        listener: TcpListener,
        workers: usize,
        handler: Arc<Handler>,
        stop: Arc<AtomicBool>,
    ) -> std::io::Result<HttpServer> {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let stats = Arc::new(Stats::default());
        let (tx, rx) = sync_channel::<TcpStream>(QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        let mut threads = Vec::with_capacity(workers + 1);
        for i in 0..workers.max(1) {
            let (rx, stop, handler, stats) = (
                Arc::clone(&rx),
                Arc::clone(&stop),
                Arc::clone(&handler),
                Arc::clone(&stats),
            );
            threads.push(
                std::thread::Builder::new()
                    .name(format!("brickprof-serve-{i}"))
                    .spawn(move || work(&rx, &stop, &*handler, &stats))?,
            );
        }
        let (accept_stop, accept_stats) = (Arc::clone(&stop), Arc::clone(&stats));
        threads.push(
            std::thread::Builder::new()
                .name("brickprof-serve-accept".into())
                .spawn(move || accept(&listener, &tx, &accept_stop, &accept_stats))?,
        );
        Ok(HttpServer {
            addr,
            stop,
            threads,
            stats,
        })
    }

    /// The address it listens on.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop accepting, let the workers finish what they hold (each bounded by its deadlines),
    /// and join every thread.
    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The accept loop: hand each connection to the queue, or refuse it when the queue is full.
fn accept(listener: &TcpListener, tx: &SyncSender<TcpStream>, stop: &AtomicBool, stats: &Stats) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                if stream.set_nonblocking(false).is_err() {
                    continue;
                }
                match tx.try_send(stream) {
                    Ok(()) => {}
                    Err(TrySendError::Full(stream)) => {
                        stats.refused.fetch_add(1, Ordering::Relaxed);
                        refuse(stream);
                    }
                    Err(TrySendError::Disconnected(_)) => return,
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(POLL),
            // Out of file descriptors, a connection reset before it was accepted: wait a
            // moment and go on.
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

/// A 503 written without waiting (the socket's buffer takes it, or the client misses it).
fn refuse(mut stream: TcpStream) {
    let r = Response::text(503, "busy: too many connections waiting; try again");
    if stream.set_nonblocking(true).is_ok() {
        let _ = stream.write(r.head().as_bytes());
        let _ = stream.write(&r.body);
    }
}

/// A worker: take connections from the queue until the server stops.
fn work(rx: &Mutex<Receiver<TcpStream>>, stop: &AtomicBool, handler: &Handler, stats: &Stats) {
    while !stop.load(Ordering::Relaxed) {
        let next = rx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .recv_timeout(POLL);
        match next {
            Ok(stream) => {
                let counter = if serve_one(stream, handler) {
                    &stats.answered
                } else {
                    &stats.abandoned
                };
                counter.fetch_add(1, Ordering::Relaxed);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Read one request from `stream`, answer it, close. `false` when nothing was answered (the
/// head never came whole, or the client went away).
fn serve_one(mut stream: TcpStream, handler: &Handler) -> bool {
    let response = match read_head(&mut stream) {
        Head::Request(buf, len) => answer(&buf[..len], handler),
        Head::TooLarge => Response::text(
            431,
            format!("the request head is over {MAX_HEAD_BYTES} bytes"),
        ),
        Head::Gone => return false,
    };
    write_response(&mut stream, &response)
}

/// What reading a request head gave.
enum Head {
    /// A whole head in the first bytes of the buffer (the buffer, the bytes read).
    Request(Vec<u8>, usize),
    /// Over [`MAX_HEAD_BYTES`].
    TooLarge,
    /// Closed, reset, or not whole by [`READ_DEADLINE`].
    Gone,
}

/// Read until the head is whole (an empty line), within [`MAX_HEAD_BYTES`] and
/// [`READ_DEADLINE`].
fn read_head(stream: &mut TcpStream) -> Head {
    let deadline = Instant::now() + READ_DEADLINE;
    let mut buf = vec![0u8; MAX_HEAD_BYTES];
    let mut len = 0;
    loop {
        if head_end(&buf[..len]) {
            return Head::Request(buf, len);
        }
        if len == buf.len() {
            return Head::TooLarge;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return Head::Gone;
        }
        match stream.read(&mut buf[len..]) {
            Ok(0) => {
                // The client closed its side: answer what came, if anything did.
                return if len > 0 {
                    Head::Request(buf, len)
                } else {
                    Head::Gone
                };
            }
            Ok(n) => len += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Head::Gone,
        }
    }
}

/// Whether `bytes` hold a blank line (the end of a head).
fn head_end(bytes: &[u8]) -> bool {
    bytes.windows(4).any(|w| w == b"\r\n\r\n") || bytes.windows(2).any(|w| w == b"\n\n")
}

/// Parse a head and route it; 400 when it is not HTTP.
fn answer(head: &[u8], handler: &Handler) -> Response {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let (method, target) = match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => match (req.method, req.path) {
            (Some(m), Some(p)) => (m, p),
            _ => return bad_request(),
        },
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

fn bad_request() -> Response {
    Response::text(400, "not an HTTP/1.x request")
}

/// Write the whole response within [`WRITE_DEADLINE`]; `true` when it all went out.
fn write_response(stream: &mut TcpStream, response: &Response) -> bool {
    let deadline = Instant::now() + WRITE_DEADLINE;
    let head = response.head();
    let ok = write_all_by(stream, head.as_bytes(), deadline)
        && write_all_by(stream, &response.body, deadline);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    ok
}

fn write_all_by(stream: &mut TcpStream, mut bytes: &[u8], deadline: Instant) -> bool {
    while !bytes.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_write_timeout(Some(left)).is_err() {
            return false;
        }
        match stream.write(bytes) {
            Ok(0) => return false,
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}
