//! `/metrics`: a profile snapshot in the Prometheus text exposition format (version 0.0.4),
//! written by the official `prometheus-client` crate from a [`Collector`] that encodes constant
//! histograms, counters and gauges (spec/live.md "Metrics").
//!
//! Every number comes from the books, never from the bounded pass series ring, so counts only
//! grow between scrapes (until `reset`, or the end of warm-up, which Prometheus reads as a
//! counter reset).

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use crate::stats::histogram::{bucket_range, LogHistogram};
use crate::{model::Counters, stats::BrickStats, Phase, Profile};

/// The first and last power-of-two bucket edges, ns (2^5 = 32 ns to 2^35 ns ≈ 34.4 s): every
/// one is a bucket edge of [`LogHistogram`], so the cumulative counts are exact. The
/// histogram's last bucket holds every value from 2^36 − 2^31 ns up (its 16th sub-bucket of
/// [2^35, 2^36) and everything above), so 2^36 is not an edge of it.
const FIRST_EDGE: u32 = 5;
const LAST_EDGE: u32 = 35;

/// What a scrape shows besides the profile.
#[derive(Debug, Clone, Default)]
pub(crate) struct Extras {
    /// The longest a snapshot held the profiler's shelf lock, ns (a live handle's).
    pub(crate) longest_hold_ns: Option<u64>,
}

/// The metrics of one snapshot.
#[derive(Debug)]
struct Snapshot {
    profile: Option<Profile>,
    extras: Extras,
    layer_labels: bool,
}

/// The exposition of `profile` (`None`: nothing published yet; only the server's own gauges).
pub(crate) fn render(profile: Option<Profile>, extras: Extras, layer_labels: bool) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Snapshot {
        profile,
        extras,
        layer_labels,
    }));
    let mut out = String::new();
    // Writing into a String does not fail; an encoder error would leave a partial text.
    if prometheus_client::encoding::prometheus_text::encode(&mut out, &registry).is_err() {
        out.clear();
    }
    out
}

/// Seconds from ns.
fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The per-edge (non-cumulative) counts of `h` at the power-of-two edges: `(le seconds,
/// values below the edge and at or above the previous one)`. Values at or above the last edge
/// are only in `+Inf` (the encoder adds it from the count).
pub(crate) fn power_of_two_buckets(h: &LogHistogram) -> Vec<(f64, u64)> {
    let mut out: Vec<(f64, u64)> = (FIRST_EDGE..=LAST_EDGE)
        .map(|e| (secs(1u64 << e), 0))
        .collect();
    for (i, c) in h.nonzero() {
        let (_, high) = bucket_range(i);
        // The first edge at or above the bucket's end: every value of the bucket is below it.
        let e = if high <= 1 << FIRST_EDGE {
            FIRST_EDGE
        } else {
            64 - (high - 1).leading_zeros()
        };
        if let Some(slot) = e
            .checked_sub(FIRST_EDGE)
            .and_then(|k| out.get_mut(k as usize))
        {
            slot.1 += c;
        }
    }
    out
}

type Labels = Vec<(&'static str, String)>;

/// One histogram sample: its labels and its statistics.
fn histogram(
    family: &mut prometheus_client::encoding::MetricEncoder<'_>,
    labels: &Labels,
    stats: &BrickStats,
) -> Result<(), std::fmt::Error> {
    family
        .encode_family(labels)?
        .encode_histogram::<NoLabelSet>(
            secs(stats.total_ns()),
            stats.count(),
            &power_of_two_buckets(stats.histogram()),
            None,
        )
}

fn counter(
    family: &mut prometheus_client::encoding::MetricEncoder<'_>,
    labels: &Labels,
    value: impl prometheus_client::encoding::EncodeCounterValue,
) -> Result<(), std::fmt::Error> {
    family
        .encode_family(labels)?
        .encode_counter::<NoLabelSet, _, u64>(&value, None)
}

/// Each brick's statistics per (phase[, layer]) with their labels.
fn brick_series(profile: &Profile, layer_labels: bool) -> Vec<(Labels, BrickStats)> {
    let mut out = Vec::new();
    for b in &profile.bricks {
        let base = |phase: Phase| -> Labels {
            vec![
                ("brick", b.name.clone()),
                ("phase", phase.to_string()),
                ("category", b.category.name().to_string()),
            ]
        };
        if layer_labels {
            for r in &b.rows {
                let mut l = base(r.phase);
                l.push(("layer", r.row.to_string()));
                out.push((l, r.stats.clone()));
            }
            continue;
        }
        for phase in Phase::ALL {
            let rows: Vec<&BrickStats> = b
                .rows
                .iter()
                .filter(|r| r.phase == phase)
                .map(|r| &r.stats)
                .collect();
            if !rows.is_empty() {
                out.push((base(phase), BrickStats::merged(rows)));
            }
        }
    }
    out
}

impl prometheus_client::collector::Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if let Some(ns) = self.extras.longest_hold_ns {
            let mut m = encoder.encode_descriptor(
                "brickprof_live_snapshot_lock_max",
                "Longest time a snapshot held the profiler's shelf lock (the longest the engine thread could wait for a scrape)",
                Some(&Unit::Seconds),
                MetricType::Gauge,
            )?;
            m.encode_gauge(&secs(ns))?;
        }
        let Some(p) = &self.profile else {
            return Ok(());
        };
        encode_bricks(&mut encoder, p, self.layer_labels)?;
        encode_counters(&mut encoder, &p.meta.counters)?;
        encode_phases(&mut encoder, p)?;
        Ok(())
    }
}

/// The per-brick families: inclusive time, self time, calls.
fn encode_bricks(
    encoder: &mut DescriptorEncoder,
    p: &Profile,
    layer_labels: bool,
) -> Result<(), std::fmt::Error> {
    let series = brick_series(p, layer_labels);
    {
        let mut m = encoder.encode_descriptor(
            "brickprof_brick",
            "Inclusive time of a brick's calls (its own stop minus its own start)",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for (l, s) in &series {
            histogram(&mut m, l, s)?;
        }
    }
    {
        let mut m = encoder.encode_descriptor(
            "brickprof_brick_self",
            "Self time of a brick's calls (inclusive minus the bricks nested directly inside)",
            Some(&Unit::Seconds),
            MetricType::Counter,
        )?;
        for (l, s) in &series {
            counter(&mut m, l, secs(s.self_ns()))?;
        }
    }
    {
        let mut m = encoder.encode_descriptor(
            "brickprof_brick_calls",
            "Calls of a brick recorded",
            None,
            MetricType::Counter,
        )?;
        for (l, s) in &series {
            counter(&mut m, l, s.count())?;
        }
    }
    Ok(())
}

/// The run's counters, one family each.
fn encode_counters(encoder: &mut DescriptorEncoder, c: &Counters) -> Result<(), std::fmt::Error> {
    for (name, help, value) in [
        (
            "brickprof_passes",
            "Forward passes counted (warm-up excluded)",
            c.passes,
        ),
        ("brickprof_tokens", "Tokens of the counted passes", c.tokens),
        (
            "brickprof_dropped_measurements",
            "Measurements dropped (full buffer, exhausted event pool, failed resolve)",
            c.dropped,
        ),
        (
            "brickprof_unclosed_bricks",
            "Bricks started and never stopped, closed unrecorded at a pass end",
            c.unclosed,
        ),
        (
            "brickprof_blocking_waits",
            "Waits the Lagged sync mode had to make",
            c.blocking_waits,
        ),
        ("brickprof_syncs", "Timeline synchronizations", c.syncs),
        (
            "brickprof_graph_replays",
            "Graph replays timed as passes (also in brickprof_passes)",
            c.graph_replays,
        ),
        (
            "brickprof_untimed_graph_replays",
            "Graph replays counted, not timed (a graph never adopted, or a timeline that cannot time replays)",
            c.untimed_replays,
        ),
        (
            "brickprof_trace_dropped_events",
            "Trace events that did not fit the profiler's trace buffer",
            c.trace_dropped,
        ),
    ] {
        let mut m = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        m.encode_counter::<NoLabelSet, _, u64>(&value, None)?;
    }
    Ok(())
}

/// TTFT and TPOT, and the calibration's error bound.
fn encode_phases(encoder: &mut DescriptorEncoder, p: &Profile) -> Result<(), std::fmt::Error> {
    for (name, help, phase) in [
        (
            "brickprof_ttft",
            "Time to first token: the wall time of each prefill pass (a prompt prefilled in chunks gives one sample per chunk)",
            Phase::Prefill,
        ),
        (
            "brickprof_tpot",
            "Time per output token: the wall time of each decode pass",
            Phase::Decode,
        ),
    ] {
        let stats = p.phase_passes(phase);
        let mut m =
            encoder.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
        m.encode_histogram::<NoLabelSet>(
            secs(stats.total_ns()),
            stats.count(),
            &power_of_two_buckets(stats.histogram()),
            None,
        )?;
    }
    if let Some(ns) = p.meta.calibration_bound_ns {
        let mut m = encoder.encode_descriptor(
            "brickprof_calibration_bound",
            "Error bound of the device clock calibration",
            Some(&Unit::Seconds),
            MetricType::Gauge,
        )?;
        m.encode_gauge(&secs(ns))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// spec/live.md "Metrics": every power-of-two edge is a bucket edge of the histogram, so
    /// the cumulative count at an edge is exactly the values below it.
    #[test]
    fn power_of_two_edges_count_exactly_the_values_below_them() {
        let values: Vec<u64> = (0..2000u64)
            .map(|i| i * i * 37 % 90_000_000_000)
            .chain([
                31,
                32,
                33,
                1023,
                1024,
                1025,
                1 << 35,
                (1 << 35) - 1,
                1 << 36,
            ])
            .collect();
        let mut h = LogHistogram::default();
        for &v in &values {
            h.record(v);
        }
        let mut cumulative = 0;
        for (e, (le, c)) in (FIRST_EDGE..=LAST_EDGE).zip(power_of_two_buckets(&h)) {
            cumulative += c;
            let edge = 1u64 << e;
            assert_eq!(le, edge as f64 * 1e-9);
            let below = values.iter().filter(|&&v| v < edge).count() as u64;
            assert_eq!(cumulative, below, "edge 2^{e}");
        }
    }
}

#[cfg(test)]
mod graph_tests {
    use super::*;
    use crate::{timeline::SimDevice, BrickId, BrickProfiler, ProfilerConfig};

    /// spec/live.md "Metrics", spec/sync-modes.md "Graph capture": replays timed and replays
    /// counted, not timed, are counters of their own.
    #[test]
    fn graph_replays_are_exported() {
        let device = SimDevice::new(0);
        let mut prof =
            BrickProfiler::with_timeline(ProfilerConfig::default(), device.timeline(64)).unwrap();
        let graph = device
            .capture(|| {
                let t = prof.start_brick(BrickId::LmHead);
                device.launch(1_000);
                prof.stop_brick(t, 1);
                prof.end_pass(1)
            })
            .unwrap();
        prof.graphs().adopt(graph).unwrap();
        let stranger = crate::timeline::DeviceGraph::from_raw(1, 2);
        for g in [graph, graph, stranger] {
            let r = prof.graphs().begin_replay(g).unwrap();
            let _ = device.launch_graph(&g);
            prof.graphs().end_replay(r, 1).unwrap();
        }
        let text = render(Some(prof.profile()), Extras::default(), false);
        assert!(text.contains("brickprof_graph_replays_total 2"), "{text}");
        assert!(
            text.contains("brickprof_untimed_graph_replays_total 1"),
            "{text}"
        );
    }
}
