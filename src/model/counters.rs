//! [`Counters`]: the event counts a run keeps beside its statistics (passes, tokens, dropped
//! measurements, syncs, unclosed bricks, ...). Plain data: each stage of the profiler counts
//! its own events, and a profile saves the sum.

/// Event counts a report shows next to the statistics (saved in profiles as they are).
/// Counts saturate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counters {
    /// Forward passes counted (warm-up excluded).
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub passes: u64,
    /// Tokens counted in those passes.
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub tokens: u64,
    /// Warm-up passes whose timings were discarded.
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub warmup_passes_excluded: u64,
    /// Measurements dropped (full buffer with [`crate::model::OverflowPolicy::Drop`], an exhausted event
    /// pool, a failed resolve).
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub dropped: u64,
    /// Timeline synchronizations performed.
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub syncs: u64,
    /// Times the pending buffer was flushed because it was full.
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub overflow_flushes: u64,
    /// `begin_layer` calls with a layer index out of range.
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub out_of_range_layers: u64,
    /// Trace events that did not fit the trace buffer.
    #[serde(default)]
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub trace_dropped: u64,
    /// Bricks started and never stopped (a leaked token, an early return): closed, unrecorded,
    /// by `end_pass`.
    #[serde(default)]
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub unclosed: u64,
    /// Stops of tokens this profiler does not have open: a token from another profiler, or
    /// one whose brick `end_pass` or `reset` already closed. Nothing is recorded for them.
    #[serde(default)]
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub stray_stops: u64,
    /// Passes whose stream was being captured into a graph (CUDA graphs): not timed, and not
    /// counted in `passes` (spec/sync-modes.md "CUDA").
    #[serde(default)]
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub captured_passes: u64,
    /// Waits the Lagged sync mode had to make (more passes in flight than allowed, the pending
    /// buffer or the event pool about to run out, or a timeline that cannot be polled: then
    /// every pass end): each one stalls the host until the device catches up. Also counted in
    /// `syncs`.
    #[serde(default)]
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub blocking_waits: u64,
    /// Brick starts the sampling plan ([`crate::model::Sampling`]) left unmarked while measuring was
    /// on: each saved a start and a stop mark (a runtime call apiece on a device timeline).
    #[serde(default)]
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub sampled_out: u64,
    /// Replays of adopted graphs, each timed as a pass (also counted in `passes`;
    /// spec/sync-modes.md "Graph capture").
    #[serde(default)]
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub graph_replays: u64,
    /// Replays that were not timed: of a graph never adopted, on a timeline that cannot time
    /// replays (HIP, CPU), in sync mode `None`, or left open (a `Replay` never ended). Not
    /// counted in `passes`; the run's facts name their graphs (`RunMeta::untimed_graphs`).
    #[serde(default)]
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub untimed_replays: u64,
}

impl Counters {
    /// Add another run's counts to these (saturating).
    pub(crate) fn merge(&mut self, o: &Counters) {
        let add = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        add(&mut self.passes, o.passes);
        add(&mut self.tokens, o.tokens);
        add(&mut self.warmup_passes_excluded, o.warmup_passes_excluded);
        add(&mut self.dropped, o.dropped);
        add(&mut self.syncs, o.syncs);
        add(&mut self.overflow_flushes, o.overflow_flushes);
        add(&mut self.out_of_range_layers, o.out_of_range_layers);
        add(&mut self.trace_dropped, o.trace_dropped);
        add(&mut self.unclosed, o.unclosed);
        add(&mut self.stray_stops, o.stray_stops);
        add(&mut self.captured_passes, o.captured_passes);
        add(&mut self.blocking_waits, o.blocking_waits);
        add(&mut self.sampled_out, o.sampled_out);
        add(&mut self.graph_replays, o.graph_replays);
        add(&mut self.untimed_replays, o.untimed_replays);
    }
}
