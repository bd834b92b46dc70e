//! TTFT, TPOT and the throughputs of hand-built pass series (merged ones too), and the latency
//! block a report prints of them (spec/profile-format.md "Latency: TTFT and TPOT"). Moved from
//! tests/core/pass_series.rs: `render_latency` and `Throughput::tokens_per_sec` are internal.

use crate::figures::latency;
use crate::figures::latency::render_latency;
use crate::{
    stats::{pass_series::DEFAULT_PASS_SERIES, PassRecord, PassSeries},
    BrickCategory, PassShape, Phase,
};

const CATS: usize = BrickCategory::COUNT;

/// A pass of one sequence: `new` new tokens at context `ctx`, `wall` ns of wall time, a third of
/// it in attention.
fn pass(new: u32, ctx: u64, wall: u64) -> PassRecord {
    let mut cats = [0; CATS];
    cats[BrickCategory::Attention as usize] = wall / 3;
    let shape = PassShape::new(new, 1, ctx).unwrap();
    PassRecord::new(Some(shape), wall, cats)
}

/// Nearest rank, as spec/profile-format.md "Latency: TTFT and TPOT" defines it.
fn nearest_rank(values: &[u64], pct: usize) -> u64 {
    let mut v = values.to_vec();
    v.sort();
    let rank = (pct * v.len()).div_ceil(100);
    v[rank.max(1) - 1]
}

fn series_of(records: &[PassRecord]) -> PassSeries {
    PassSeries::from_run(records.to_vec(), 0, DEFAULT_PASS_SERIES).unwrap()
}

// spec/profile-format.md "Latency: TTFT and TPOT": a prompt in two prefill chunks, then decode
// steps of known wall times.
#[test]
fn ttft_and_tpot_are_exact_on_a_hand_built_run() {
    let prompt = [(600u32, 1_000_000u64), (400, 500_000)];
    let decodes = [200_000u64, 310_000, 250_000, 190_000, 420_000, 205_000];
    let mut records: Vec<PassRecord> = Vec::new();
    let mut ctx = 0u64;
    for (new, wall) in prompt {
        ctx += u64::from(new);
        records.push(pass(new, ctx, wall));
    }
    for wall in decodes {
        ctx += 1;
        records.push(pass(1, ctx, wall));
    }
    let l = latency(&series_of(&records)).unwrap();

    let ttft: u64 = prompt.iter().map(|p| p.1).sum();
    assert_eq!(ttft, 1_500_000);
    assert_eq!(l.ttft.values(), [ttft]);
    let (ttft_s, tpot_s) = (l.ttft.summary().unwrap(), l.tpot.summary().unwrap());
    let pcts = |s: &crate::figures::Summary| [(50, s.p50_ns), (90, s.p90_ns), (99, s.p99_ns)];
    for ((pct, t), (_, d)) in pcts(&ttft_s).into_iter().zip(pcts(&tpot_s)) {
        assert_eq!(t, ttft);
        assert_eq!(d, nearest_rank(&decodes, pct));
    }
    let mean = decodes.iter().sum::<u64>() as f64 / decodes.len() as f64;
    assert_eq!(tpot_s.mean_ns, mean);
    assert_eq!(tpot_s.count, decodes.len() as u64);
    assert_eq!(l.tpot.values().len(), decodes.len());

    let prompt_tokens: u32 = prompt.iter().map(|p| p.0).sum();
    assert_eq!(
        (l.prefill.passes, l.prefill.tokens),
        (2, u64::from(prompt_tokens))
    );
    assert_eq!(
        l.prefill.tokens_per_sec(),
        f64::from(prompt_tokens) * 1e9 / ttft as f64
    );
    let decode_wall: u64 = decodes.iter().sum();
    assert_eq!(
        l.decode.tokens_per_sec(),
        decodes.len() as f64 * 1e9 / decode_wall as f64
    );
    assert_eq!(
        (l.mixed.passes, l.cut_prompts, l.unshaped_passes),
        (0, 0, 0)
    );

    let header = render_latency(&l);
    assert!(header.contains("TTFT  p50 1.50ms"), "{header}");
    assert!(header.contains("(1 prompt)"), "{header}");
    assert!(header.contains("(6 decode passes)"), "{header}");
    assert!(header.contains("queueing"), "{header}");
    assert!(header.contains("Prefill 667k tok/s"), "{header}");
    assert!(
        header.lines().all(|line| line.chars().count() <= 100),
        "{header}"
    );
}

// spec/profile-format.md "Latency: TTFT and TPOT": several sequences in a decode pass each get
// their token in its wall time; mixed and unshaped passes are counted apart.
#[test]
fn batched_mixed_and_unshaped_passes_are_kept_out_of_ttft_and_tpot() {
    let batch = PassShape::new(4, 4, 4 * 100).unwrap();
    let mixed = PassShape::new(20, 4, 500).unwrap().with_phase(Phase::Mixed);
    let records = [
        pass(16, 16, 900),
        PassRecord::new(Some(batch), 400, [0; CATS]),
        PassRecord::new(Some(mixed), 1_000, [0; CATS]),
        PassRecord::new(None, 50, [0; CATS]),
        PassRecord::new(Some(batch), 600, [0; CATS]),
    ];
    let l = latency(&series_of(&records)).unwrap();
    assert_eq!(l.ttft.values(), [900]);
    assert_eq!(l.tpot.values(), [400, 600]);
    assert_eq!(
        (l.decode.passes, l.decode.tokens, l.decode.wall_ns),
        (2, 8, 1_000)
    );
    assert_eq!((l.mixed.passes, l.mixed.tokens), (1, 20));
    assert_eq!(l.unshaped_passes, 1);
    assert!(render_latency(&l).contains("nor the throughputs: 1 (20 new tokens, 1.00µs)"));
    // A series with no shaped pass has no latency to report.
    assert_eq!(
        latency(&series_of(&[PassRecord::new(None, 5, [0; CATS])])),
        None
    );
}

// spec/hot-path.md "Pass series": the ring keeps the newest passes and counts the dropped ones;
// spec/profile-format.md "Latency: TTFT and TPOT": a prompt whose first chunks were dropped is
// left out of TTFT, not counted short.
#[test]
fn a_ring_that_drops_passes_counts_them_and_skips_the_cut_prompt() {
    // prompt A (2 chunks), 2 decodes, prompt B (2 chunks), 1 decode; the ring keeps 6.
    let records = [
        pass(8, 8, 1_000),
        pass(8, 16, 2_000),
        pass(1, 17, 100),
        pass(1, 18, 110),
        pass(8, 8, 3_000),
        pass(8, 16, 4_000),
        pass(1, 17, 120),
    ];
    // What a ring of 6 keeps of them, the newest 6 and 1 dropped (the ring itself is checked on
    // these passes by the unit test `stats::tests::a_ring_keeps_the_newest_passes`).
    let series = PassSeries::from_run(records[1..].to_vec(), 1, 6).unwrap();
    assert_eq!(series.runs()[0].dropped(), 1);

    let l = latency(&series).unwrap();
    assert_eq!(l.cut_prompts, 1, "prompt A lost its first chunk");
    assert_eq!(l.ttft.values(), [3_000 + 4_000], "only prompt B is whole");
    assert_eq!(l.tpot.values(), [100, 110, 120]);
    assert!(render_latency(&l).contains("1 prompt(s) left out of TTFT"));

    // Without the drop, both prompts are whole.
    let whole = latency(&series_of(&records)).unwrap();
    assert_eq!(whole.ttft.values(), [3_000, 7_000]);
    assert_eq!(whole.cut_prompts, 0);
}

// spec/profile-format.md "Pass series": a merge keeps runs apart (a prompt never spans two runs)
// and is commutative.
#[test]
fn merge_keeps_runs_apart() {
    // Run A ends in prefill, run B starts in prefill: two prompts, never one.
    let a = series_of(&[pass(1, 9, 50), pass(4, 4, 1_000)]);
    let b = series_of(&[pass(4, 4, 2_000), pass(1, 5, 60)]);
    let mut ab = a.clone();
    ab.merge(&b);
    let mut ba = b.clone();
    ba.merge(&a);
    assert_eq!(ab, ba);
    assert_eq!(ab.runs().len(), 2);
    assert_eq!(ab.records().count(), 4);
    let l: crate::figures::Latency = latency(&ab).unwrap();
    assert_eq!(l.ttft.values(), [1_000, 2_000]);
    assert_eq!(l.tpot.values(), [50, 60]);
    assert_eq!(ab.merge_dropped().runs, 0);
    // Merging an empty series changes nothing.
    let mut same = ab.clone();
    same.merge(&PassSeries::default());
    assert_eq!(same, ab);
}
