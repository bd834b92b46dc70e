//! CUPTI activity records, read from the bytes CUPTI delivers (spec/sync-modes.md "CUPTI").
//!
//! Only the leading fields every recent version of each record shares are read, at the offsets
//! of NVIDIA's `cupti_activity.h` (`CUpti_ActivityKernel5` to `CUpti_ActivityKernel10`, the
//! 216-byte record CUPTI 2025.3 emits; `CUpti_ActivityMemcpy6`, `CUpti_ActivityMemset4`,
//! `CUpti_ActivityExternalCorrelation`, `CUpti_ActivityAPI`; all `packed(8)`). A record
//! shorter than what is read is skipped, never read past.

use super::api::kind;

/// What a device activity record was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Kernel,
    Memcpy,
    Memset,
}

/// One record, as the timeline uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Record {
    /// A kernel, memory copy or memory set that ran: CUPTI ns (wall clock).
    Activity {
        op: Op,
        start: u64,
        end: u64,
        device: u32,
        stream: u32,
        correlation: u32,
        graph_node: u64,
        graph: u32,
    },
    /// An external id pushed on the launching thread when API call `correlation` was made.
    External {
        kind: u32,
        id: u64,
        correlation: u32,
    },
    /// A runtime or driver API call.
    Api {
        /// [`kind::RUNTIME`] or [`kind::DRIVER`].
        kind: u32,
        cbid: u32,
        start: u64,
        end: u64,
        thread: u32,
        correlation: u32,
    },
}

/// Bytes read from each record kind (the last field read ends there).
pub(crate) const KERNEL_BYTES: usize = 160;
pub(crate) const MEMORY_BYTES: usize = 76;
pub(crate) const EXTERNAL_BYTES: usize = 24;
pub(crate) const API_BYTES: usize = 40;

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_ne_bytes(w)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_ne_bytes(w)
}

/// How many bytes a record of activity kind `k` must have for [`parse`] to read it (0: a kind
/// the timeline ignores).
pub(crate) fn bytes_needed(k: u32) -> usize {
    match k {
        kind::KERNEL | kind::CONCURRENT_KERNEL => KERNEL_BYTES,
        kind::MEMCPY | kind::MEMSET => MEMORY_BYTES,
        kind::EXTERNAL_CORRELATION => EXTERNAL_BYTES,
        kind::RUNTIME | kind::DRIVER => API_BYTES,
        _ => 0,
    }
}

/// The record in `b` (which starts with its `kind`), or `None` for a kind the timeline ignores
/// or bytes too short.
pub(crate) fn parse(b: &[u8]) -> Option<Record> {
    if b.len() < 4 {
        return None;
    }
    let k = u32_at(b, 0);
    let need = bytes_needed(k);
    if need == 0 || b.len() < need {
        return None;
    }
    Some(match k {
        kind::KERNEL | kind::CONCURRENT_KERNEL => Record::Activity {
            op: Op::Kernel,
            start: u64_at(b, 16),
            end: u64_at(b, 24),
            device: u32_at(b, 40),
            stream: u32_at(b, 48),
            correlation: u32_at(b, 92),
            graph_node: u64_at(b, 144),
            graph: u32_at(b, 156),
        },
        kind::MEMCPY | kind::MEMSET => Record::Activity {
            op: if k == kind::MEMCPY {
                Op::Memcpy
            } else {
                Op::Memset
            },
            start: u64_at(b, 16),
            end: u64_at(b, 24),
            device: u32_at(b, 32),
            stream: u32_at(b, 40),
            correlation: u32_at(b, 44),
            graph_node: u64_at(b, 64),
            graph: u32_at(b, 72),
        },
        kind::EXTERNAL_CORRELATION => Record::External {
            kind: u32_at(b, 4),
            id: u64_at(b, 8),
            correlation: u32_at(b, 16),
        },
        _ => Record::Api {
            kind: k,
            cbid: u32_at(b, 4),
            start: u64_at(b, 8),
            end: u64_at(b, 16),
            thread: u32_at(b, 28),
            correlation: u32_at(b, 32),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put32(b: &mut [u8], at: usize, v: u32) {
        b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
    }
    fn put64(b: &mut [u8], at: usize, v: u64) {
        b[at..at + 8].copy_from_slice(&v.to_ne_bytes());
    }

    /// spec/sync-modes.md "CUPTI": the fields are read at cupti_activity.h's offsets (a
    /// 216-byte CUpti_ActivityKernel10), and short or unknown records are skipped.
    #[test]
    fn reads_the_header_offsets_and_skips_short_records() {
        let mut k = vec![0u8; 216];
        put32(&mut k, 0, kind::CONCURRENT_KERNEL);
        put64(&mut k, 16, 100);
        put64(&mut k, 24, 250);
        put32(&mut k, 40, 1);
        put32(&mut k, 48, 13);
        put32(&mut k, 92, 26);
        put64(&mut k, 144, 8_589_934_592);
        put32(&mut k, 156, 2);
        assert_eq!(
            parse(&k),
            Some(Record::Activity {
                op: Op::Kernel,
                start: 100,
                end: 250,
                device: 1,
                stream: 13,
                correlation: 26,
                graph_node: 8_589_934_592,
                graph: 2,
            })
        );
        assert_eq!(parse(&k[..KERNEL_BYTES - 1]), None);
        let mut e = vec![0u8; 24];
        put32(&mut e, 0, kind::EXTERNAL_CORRELATION);
        put32(&mut e, 4, 4);
        put64(&mut e, 8, 7000);
        put32(&mut e, 16, 30);
        assert_eq!(
            parse(&e),
            Some(Record::External {
                kind: 4,
                id: 7000,
                correlation: 30
            })
        );
        let mut m = vec![0u8; 80];
        put32(&mut m, 0, kind::MEMSET);
        put64(&mut m, 16, 5);
        put64(&mut m, 24, 9);
        put32(&mut m, 40, 14);
        put32(&mut m, 44, 2501);
        assert!(matches!(
            parse(&m),
            Some(Record::Activity {
                op: Op::Memset,
                start: 5,
                end: 9,
                stream: 14,
                correlation: 2501,
                ..
            })
        ));
        let mut a = vec![0u8; 40];
        put32(&mut a, 0, kind::RUNTIME);
        put32(&mut a, 4, 211);
        put32(&mut a, 28, 77);
        put32(&mut a, 32, 3);
        assert!(matches!(
            parse(&a),
            Some(Record::Api {
                cbid: 211,
                thread: 77,
                correlation: 3,
                ..
            })
        ));
        put32(&mut a, 0, 22); // a kind the timeline ignores
        assert_eq!(parse(&a), None);
        assert_eq!(parse(&a[..2]), None);
    }
}
