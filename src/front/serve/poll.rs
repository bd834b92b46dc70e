//! Waiting for sockets (spec/live.md "Bounds"): the server's one I/O thread waits here for any
//! of its sockets to become readable or writable, or for a worker to wake it. On Linux this is
//! `poll(2)` and a socket pair; elsewhere every socket is reported ready after a short sleep
//! (every socket is non-blocking, so a socket that was not ready answers `WouldBlock`).

use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// The sockets of one wait, in the order they were added; after [`PollSet::wait`],
/// [`PollSet::ready`] says which of them may be read or written without blocking.
#[derive(Debug, Default)]
pub(crate) struct PollSet {
    #[cfg(target_os = "linux")]
    fds: Vec<libc::pollfd>,
    #[cfg(not(target_os = "linux"))]
    count: usize,
}

#[cfg(target_os = "linux")]
impl PollSet {
    pub(crate) fn clear(&mut self) {
        self.fds.clear();
    }

    fn add(&mut self, fd: std::os::fd::RawFd, write: bool) {
        let events = if write { libc::POLLOUT } else { libc::POLLIN };
        self.fds.push(libc::pollfd {
            fd,
            events,
            revents: 0,
        });
    }

    /// A connection, to read (`write` false) or to write.
    pub(crate) fn add_stream(&mut self, s: &TcpStream, write: bool) {
        use std::os::fd::AsRawFd;
        self.add(s.as_raw_fd(), write);
    }

    pub(crate) fn add_listener(&mut self, l: &TcpListener) {
        use std::os::fd::AsRawFd;
        self.add(l.as_raw_fd(), false);
    }

    pub(crate) fn add_waker(&mut self, w: &Waker) {
        use std::os::fd::AsRawFd;
        self.add(w.rx.as_raw_fd(), false);
    }

    /// Wait until one of the sockets is ready or `timeout` passes.
    pub(crate) fn wait(&mut self, timeout: Duration) {
        let ms = timeout.as_millis().clamp(1, 1000) as libc::c_int;
        // SAFETY: `fds` is a valid array of `len` pollfd structures that outlives the call.
        let n = unsafe { libc::poll(self.fds.as_mut_ptr(), self.fds.len() as libc::nfds_t, ms) };
        if n < 0 {
            // EINTR, or out of memory in the kernel: report nothing ready, the caller comes
            // back after its deadlines.
            for f in &mut self.fds {
                f.revents = 0;
            }
        }
    }

    /// Whether the `i`-th socket added is ready (or in error, or closed: reading or writing it
    /// says which).
    pub(crate) fn ready(&self, i: usize) -> bool {
        self.fds.get(i).is_some_and(|f| f.revents != 0)
    }
}

#[cfg(not(target_os = "linux"))]
impl PollSet {
    pub(crate) fn clear(&mut self) {
        self.count = 0;
    }

    pub(crate) fn add_stream(&mut self, _: &TcpStream, _write: bool) {
        self.count += 1;
    }

    pub(crate) fn add_listener(&mut self, _: &TcpListener) {
        self.count += 1;
    }

    pub(crate) fn add_waker(&mut self, _: &Waker) {
        self.count += 1;
    }

    /// Sleep a little (at most 2 ms): every socket is then tried.
    pub(crate) fn wait(&mut self, timeout: Duration) {
        std::thread::sleep(timeout.min(Duration::from_millis(2)));
    }

    pub(crate) fn ready(&self, i: usize) -> bool {
        i < self.count
    }
}

/// Wakes the I/O thread from [`PollSet::wait`] when a worker has a response for it.
#[derive(Debug)]
pub(crate) struct Waker {
    #[cfg(target_os = "linux")]
    rx: std::os::unix::net::UnixStream,
    #[cfg(target_os = "linux")]
    tx: std::sync::Arc<std::os::unix::net::UnixStream>,
}

/// A worker's end of a [`Waker`].
#[derive(Debug, Clone)]
pub(crate) struct Wake {
    #[cfg(target_os = "linux")]
    tx: std::sync::Arc<std::os::unix::net::UnixStream>,
}

impl Waker {
    #[cfg(target_os = "linux")]
    pub(crate) fn new() -> std::io::Result<Waker> {
        let (rx, tx) = std::os::unix::net::UnixStream::pair()?;
        rx.set_nonblocking(true)?;
        tx.set_nonblocking(true)?;
        Ok(Waker {
            rx,
            tx: std::sync::Arc::new(tx),
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn new() -> std::io::Result<Waker> {
        Ok(Waker {})
    }

    pub(crate) fn wake_handle(&self) -> Wake {
        Wake {
            #[cfg(target_os = "linux")]
            tx: std::sync::Arc::clone(&self.tx),
        }
    }

    /// Empty the wake-ups sent so far.
    pub(crate) fn drain(&self) {
        #[cfg(target_os = "linux")]
        {
            use std::io::Read;
            let mut buf = [0u8; 64];
            while matches!((&self.rx).read(&mut buf), Ok(n) if n > 0) {}
        }
    }
}

impl Wake {
    /// Wake the I/O thread (a byte it reads back; when the pair's buffer is full, a wake-up is
    /// pending already).
    pub(crate) fn wake(&self) {
        #[cfg(target_os = "linux")]
        {
            use std::io::Write;
            let _ = (&*self.tx).write(&[1]);
        }
    }
}

/// The kernel's queue of connections not accepted yet: std listens with 128, which a burst of
/// clients connecting at once (hundreds reconnecting) overflows, and a connection whose SYN
/// is dropped is tried again only a second later. Linux takes a second `listen(2)` on a
/// listening socket as a new backlog (capped by `net.core.somaxconn`).
pub(crate) const LISTEN_BACKLOG: i32 = 1024;

/// Raise `l`'s listen backlog to [`LISTEN_BACKLOG`] (Linux; elsewhere std's stays).
pub(crate) fn raise_backlog(l: &TcpListener) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: listen(2) on a socket we own; a failure leaves the old backlog.
        let _ = unsafe { libc::listen(l.as_raw_fd(), LISTEN_BACKLOG) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = l;
}
