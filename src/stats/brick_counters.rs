//! [`BrickCounters`]: what a vendor profiler counted for one brick in one row (spec/imports.md
//! "Counters"): calls, kernels, their time, DRAM bytes and floating-point operations, and what
//! follows from them (bytes and FLOPs per call, achieved bandwidth and FLOP/s, the measured
//! arithmetic intensity). An import's [`crate::Profile`] carries them in `hardware_counters`
//! (spec/profile-format.md): what ran, beside the `Work` an engine declares.

use serde::{Deserialize, Serialize};

use crate::base::exact_int;
use crate::model::row_key::RowKey;

/// The counters of one (brick, row) of an import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrickCounters {
    /// The brick's name.
    pub brick: String,
    /// Its row.
    pub row: RowKey,
    /// Calls (range instances with at least one kernel).
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    pub calls: u64,
    /// Kernels in those calls.
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    pub kernels: u64,
    /// The calls' time, summed (ns): at import, the profile's total for the row.
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    pub time_ns: u64,
    /// DRAM bytes read and written over every call; `None` when the file has no such column,
    /// or a kernel of the brick lacked the value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "exact_int::ser_opt_u64",
        deserialize_with = "exact_int::de_opt_u64"
    )]
    pub dram_bytes: Option<u64>,
    /// Floating-point operations over every call (FFMA counted twice, FADD and FMUL once);
    /// `None` as for `dram_bytes`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "exact_int::ser_opt_u64",
        deserialize_with = "exact_int::de_opt_u64"
    )]
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
        self.dram_bytes = add(self.dram_bytes, dram_bytes);
        self.flops = add(self.flops, flops);
    }

    /// Add another tally of the same (brick, row) (a merge: saturating; a counter absent on
    /// either side is absent, since it is not known over every call).
    pub(crate) fn merge(&mut self, other: &BrickCounters) {
        self.calls = self.calls.saturating_add(other.calls);
        self.kernels = self.kernels.saturating_add(other.kernels);
        self.time_ns = self.time_ns.saturating_add(other.time_ns);
        self.dram_bytes = add(self.dram_bytes, other.dram_bytes);
        self.flops = add(self.flops, other.flops);
    }

    /// Whether the file had a hardware counter for it (DRAM bytes or FLOPs), beyond the
    /// calls, kernels and time every trace has.
    pub(crate) fn has_counters(&self) -> bool {
        self.dram_bytes.is_some() || self.flops.is_some()
    }

    /// What follows from the counters: per call, per ns, and per byte.
    pub fn rates(&self) -> CounterRates {
        CounterRates {
            bytes_per_call: self.bytes_per_call(),
            flops_per_call: self.flops_per_call(),
            gbps: self.gbps(),
            gflops: self.gflops(),
            intensity: self.intensity(),
        }
    }

    /// DRAM bytes per call.
    pub(crate) fn bytes_per_call(&self) -> Option<f64> {
        per(self.dram_bytes?, self.calls)
    }

    /// FLOPs per call.
    pub(crate) fn flops_per_call(&self) -> Option<f64> {
        per(self.flops?, self.calls)
    }

    /// Achieved DRAM bandwidth over the calls' time, GB/s (bytes per ns).
    pub(crate) fn gbps(&self) -> Option<f64> {
        per(self.dram_bytes?, self.time_ns)
    }

    /// Achieved GFLOP/s over the calls' time (FLOPs per ns).
    pub(crate) fn gflops(&self) -> Option<f64> {
        per(self.flops?, self.time_ns)
    }

    /// The measured arithmetic intensity, FLOPs per DRAM byte.
    pub(crate) fn intensity(&self) -> Option<f64> {
        per(self.flops?, self.dram_bytes?)
    }
}

/// What follows from a [`BrickCounters`] ([`BrickCounters::rates`]); each `None` when a
/// counter it needs is absent (or its divisor is 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterRates {
    /// DRAM bytes per call.
    pub bytes_per_call: Option<f64>,
    /// FLOPs per call.
    pub flops_per_call: Option<f64>,
    /// Achieved DRAM bandwidth over the calls' time, GB/s (bytes per ns).
    pub gbps: Option<f64>,
    /// Achieved GFLOP/s over the calls' time (FLOPs per ns).
    pub gflops: Option<f64>,
    /// The measured arithmetic intensity, FLOPs per DRAM byte.
    pub intensity: Option<f64>,
}

/// The sum of two counters, absent when either is.
fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(a?.saturating_add(b?))
}

fn per(n: u64, d: u64) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}
