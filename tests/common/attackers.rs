//! Clients that try to hold the live server's connections (spec/live.md "Bounds"): slowloris
//! (a request head one byte a second, reconnecting when the server closes it) and idle
//! connections (connected, sending nothing, reconnecting too). Loopback only; they stop when
//! dropped.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running attack: `n` connections kept open against `addr` by one thread.
pub struct Attack {
    stop: Arc<AtomicBool>,
    /// Connections made so far (reconnections included).
    pub connects: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Attack {
    /// `n` connections each sending one byte of a never-ending request head a second.
    pub fn slowloris(addr: SocketAddr, n: usize) -> Attack {
        Attack::start(addr, n, true)
    }

    /// `n` connections sending nothing.
    pub fn idle(addr: SocketAddr, n: usize) -> Attack {
        Attack::start(addr, n, false)
    }

    fn start(addr: SocketAddr, n: usize, trickle: bool) -> Attack {
        let stop = Arc::new(AtomicBool::new(false));
        let connects = Arc::new(AtomicU64::new(0));
        let (s, c) = (Arc::clone(&stop), Arc::clone(&connects));
        // All `n` open before this returns.
        let mut socks: Vec<Option<TcpStream>> = (0..n).map(|_| open(addr, trickle, &c)).collect();
        let thread = std::thread::spawn(move || {
            // One turn every 100 ms: each tenth of the sockets gets its byte (one a second
            // each); a socket the server closed (read gives 0 or an error) is opened again.
            let mut turn = 0usize;
            while !s.load(Ordering::Relaxed) {
                let started = Instant::now();
                for (i, slot) in socks.iter_mut().enumerate() {
                    let alive = match slot {
                        Some(sock) => alive(sock, trickle && i % 10 == turn % 10),
                        None => false,
                    };
                    if !alive {
                        *slot = open(addr, trickle, &c);
                    }
                }
                turn += 1;
                let spent = started.elapsed();
                std::thread::sleep(Duration::from_millis(100).saturating_sub(spent));
            }
        });
        Attack {
            stop,
            connects,
            thread: Some(thread),
        }
    }
}

impl Drop for Attack {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A connection; a slowloris one has sent the start of a request head.
fn open(addr: SocketAddr, trickle: bool, connects: &AtomicU64) -> Option<TcpStream> {
    let mut s = TcpStream::connect(addr).ok()?;
    connects.fetch_add(1, Ordering::Relaxed);
    s.set_nonblocking(true).ok()?;
    if trickle {
        let _ = s.write(b"GET /metrics HTTP/1.1\r\nX-Slow: ");
    }
    Some(s)
}

/// Whether the server still holds `sock` open; with `send`, one more byte of the header.
fn alive(sock: &mut TcpStream, send: bool) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match sock.read(&mut buf) {
            // The server answered (a 408, a 503) or closed: this one is done.
            Ok(_) => return false,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    !send || matches!(sock.write(b"a"), Ok(1))
}
