//! The clock a peak measurement's trials run on: the measuring thread's own CPU time where the
//! system offers it (Linux: `CLOCK_THREAD_CPUTIME_ID`), so that a trial preempted by another
//! process measures the kernel, not the machine's load (spec/work-accounting.md "Measured CPU
//! peaks"); wall time elsewhere.

use std::time::{Duration, Instant};

/// A start point on the trial clock.
#[derive(Debug, Clone, Copy)]
pub(super) struct TrialClock {
    wall: Instant,
    cpu: Option<Duration>,
}

impl TrialClock {
    /// Now.
    pub(super) fn start() -> Self {
        TrialClock {
            wall: Instant::now(),
            cpu: thread_cpu_time(),
        }
    }

    /// Time since [`Self::start`]: the thread's CPU time when it can be read, else wall time.
    pub(super) fn elapsed(&self) -> Duration {
        match (self.cpu, thread_cpu_time()) {
            (Some(start), Some(now)) => now.saturating_sub(start),
            _ => self.wall.elapsed(),
        }
    }
}

/// The calling thread's CPU time.
#[cfg(target_os = "linux")]
fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the call only writes it.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if r != 0 {
        return None;
    }
    Some(Duration::new(
        u64::try_from(ts.tv_sec).ok()?,
        u32::try_from(ts.tv_nsec).ok()?,
    ))
}

#[cfg(not(target_os = "linux"))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    // spec/work-accounting.md "Measured CPU peaks": the trial clock counts the thread's own
    // work, not time it spent off the CPU.
    #[test]
    fn sleeping_does_not_count_on_the_trial_clock() {
        let t = TrialClock::start();
        std::thread::sleep(Duration::from_millis(30));
        let slept = t.elapsed();
        let spin = TrialClock::start();
        let mut x = 0u64;
        while spin.elapsed() < Duration::from_millis(5) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        if cfg!(target_os = "linux") {
            assert!(slept < Duration::from_millis(10), "slept {slept:?} counted");
        } else {
            assert!(slept >= Duration::from_millis(30));
        }
        assert!(spin.elapsed() >= Duration::from_millis(5));
    }
}
