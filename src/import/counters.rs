//! [`BrickCounters`]: what a vendor file's hardware counters say about one brick in one row:
//! calls, kernels, DRAM bytes and floating-point operations, and what follows from them
//! (bytes and FLOPs per call, achieved bandwidth and FLOP/s, the measured arithmetic
//! intensity). They sit beside the [`crate::Profile`] an import makes, which has no field for
//! measured work (spec/imports.md "Counters").

use serde::Serialize;

use crate::model::row_key::RowKey;

/// The counters of one (brick, row) of an import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BrickCounters {
    /// The brick's name.
    pub brick: String,
    /// Its row.
    pub row: RowKey,
    /// Calls (range instances with at least one kernel).
    pub calls: u64,
    /// Kernels in those calls.
    pub kernels: u64,
    /// The calls' time, summed (ns): the profile's total for the row.
    pub time_ns: u64,
    /// DRAM bytes read and written over every call; `None` when the file has no such column,
    /// or a kernel of the brick lacked the value.
    pub dram_bytes: Option<u64>,
    /// Floating-point operations over every call (FFMA counted twice, FADD and FMUL once);
    /// `None` as for `dram_bytes`.
    pub flops: Option<u64>,
}

impl BrickCounters {
    /// No call yet; `bytes`, `flops`: whether the file has those counters' columns.
    pub(crate) fn new(brick: String, row: RowKey, bytes: bool, flops: bool) -> Self {
        BrickCounters {
            brick,
            row,
            calls: 0,
            kernels: 0,
            time_ns: 0,
            dram_bytes: bytes.then_some(0),
            flops: flops.then_some(0),
        }
    }

    /// Add one call.
    pub(crate) fn add_call(
        &mut self,
        kernels: u64,
        ns: u64,
        dram_bytes: Option<u64>,
        flops: Option<u64>,
    ) {
        self.calls = self.calls.saturating_add(1);
        self.kernels = self.kernels.saturating_add(kernels);
        self.time_ns = self.time_ns.saturating_add(ns);
        self.dram_bytes = self
            .dram_bytes
            .and_then(|a| Some(a.saturating_add(dram_bytes?)));
        self.flops = self.flops.and_then(|a| Some(a.saturating_add(flops?)));
    }

    /// DRAM bytes per call.
    pub fn bytes_per_call(&self) -> Option<f64> {
        per(self.dram_bytes?, self.calls)
    }

    /// FLOPs per call.
    pub fn flops_per_call(&self) -> Option<f64> {
        per(self.flops?, self.calls)
    }

    /// Achieved DRAM bandwidth over the calls' time, GB/s (bytes per ns).
    pub fn gbps(&self) -> Option<f64> {
        per(self.dram_bytes?, self.time_ns)
    }

    /// Achieved GFLOP/s over the calls' time (FLOPs per ns).
    pub fn gflops(&self) -> Option<f64> {
        per(self.flops?, self.time_ns)
    }

    /// The measured arithmetic intensity, FLOPs per DRAM byte.
    pub fn intensity(&self) -> Option<f64> {
        per(self.flops?, self.dram_bytes?)
    }
}

fn per(n: u64, d: u64) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}
