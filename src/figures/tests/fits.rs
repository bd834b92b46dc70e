//! Cost against shape (spec/work-accounting.md "Cost against shape"): a synthetic model whose
//! bricks cost exactly a + b·x gets a and b back, brick by brick and category by category from
//! the pass series; the lines and the shares as the context grows print as the spec says.

use crate::figures::shape_costs::{
    category_sums, context_shares, default_contexts, render_context_shares,
};
use crate::figures::{brick_fit, render_fits};
use crate::{
    stats::{pass_series::DEFAULT_PASS_SERIES, FitSums, PassRecord, PassSeries, Regressor},
    BrickCategory, PassShape, Phase,
};

const LAYERS: u64 = 4;
/// AttentionScore costs A + B·context per call, in each layer.
const A: u64 = 2_100;
const B: u64 = 3;
/// QkvProjection costs C + D·new tokens per call, in each layer.
const C: u64 = 5_000;
const D: u64 = 40;
/// The FFN costs E per call whatever the shape.
const E: u64 = 9_000;

struct Model {
    score: [FitSums; 2],
    qkv: [FitSums; 2],
    /// The pass records, oldest first.
    records: Vec<PassRecord>,
}

impl Model {
    fn new() -> Model {
        Model {
            score: [FitSums::new(); 2],
            qkv: [FitSums::new(); 2],
            records: Vec::new(),
        }
    }

    /// One pass: every layer calls QkvProjection, AttentionScore and the FFN once. The fit
    /// sums get each brick's time in the pass, the records one with the categories' times.
    fn pass(&mut self, shape: PassShape) {
        let (new, ctx) = (u64::from(shape.new_tokens()), shape.context_tokens());
        let score = LAYERS * (A + B * ctx);
        let qkv = LAYERS * (C + D * new);
        let ffn = LAYERS * E;
        let i = usize::from(shape.phase() == Phase::Decode);
        self.score[i].add(&shape, score, LAYERS);
        self.qkv[i].add(&shape, qkv, LAYERS);
        let mut cats = [0; BrickCategory::COUNT];
        cats[BrickCategory::Attention as usize] = score + qkv;
        cats[BrickCategory::Ffn as usize] = ffn;
        self.records
            .push(PassRecord::new(Some(shape), score + qkv + ffn, cats));
    }

    /// The records as one run's series.
    fn series(&self) -> PassSeries {
        PassSeries::from_run(self.records.clone(), 0, DEFAULT_PASS_SERIES).unwrap()
    }

    /// Three prompts (prefill of 16, 48 and 80 tokens), each followed by 20 decode steps.
    fn run() -> Model {
        let mut m = Model::new();
        for prompt in [16u32, 48, 80] {
            m.pass(PassShape::new(prompt, 1, u64::from(prompt)).unwrap());
            for step in 1..=20 {
                m.pass(PassShape::new(1, 1, u64::from(prompt) + step).unwrap());
            }
        }
        m
    }
}

#[test]
fn a_and_b_are_recovered_exactly_from_the_brick_sums() {
    let m = Model::run();
    let decode = m.score[1].solve(Regressor::Context).unwrap();
    assert_eq!(decode.intercept_ns, (LAYERS * A) as f64);
    assert_eq!(decode.slope_ns, (LAYERS * B) as f64);
    assert_eq!(decode.r2, 1.0);
    assert_eq!((decode.n, decode.x_min, decode.x_max), (60, 17, 100));

    let prefill = m.qkv[0].solve(Regressor::NewTokens).unwrap();
    assert_eq!(
        (prefill.intercept_ns, prefill.slope_ns, prefill.r2),
        ((LAYERS * C) as f64, (LAYERS * D) as f64, 1.0)
    );

    // Per call, as a report shows it: a and b themselves.
    let f = brick_fit("AttentionScore", Phase::Decode, &m.score[1]).unwrap();
    assert_eq!(f.fit.regressor, Regressor::Context);
    assert_eq!(f.calls_per_pass, Some(LAYERS));
    assert_eq!(f.shown(), (A as f64, B as f64));
    // A decode step always has one new token: the projection falls back to the context and
    // finds it flat.
    let q = brick_fit("QkvProjection", Phase::Decode, &m.qkv[1]).unwrap();
    assert_eq!(q.fit.regressor, Regressor::Context);
    assert_eq!(q.shown(), ((C + D) as f64, 0.0));
}

#[test]
fn a_and_b_are_recovered_exactly_through_the_pass_series() {
    let m = Model::run();
    let series = m.series();
    let sums = category_sums(&series, Phase::Decode);
    let attention = sums[BrickCategory::Attention as usize]
        .solve(Regressor::Context)
        .unwrap();
    // Attention = the scores (A + B·ctx per layer) plus the one-token projection (C + D).
    assert_eq!(attention.intercept_ns, (LAYERS * (A + C + D)) as f64);
    assert_eq!(attention.slope_ns, (LAYERS * B) as f64);
    assert_eq!(attention.r2, 1.0);
    let ffn = sums[BrickCategory::Ffn as usize]
        .solve(Regressor::Context)
        .unwrap();
    assert_eq!((ffn.intercept_ns, ffn.slope_ns), ((LAYERS * E) as f64, 0.0));
    assert!(sums[BrickCategory::Head as usize].total_ns() == 0);
}

#[test]
fn a_fit_prints_per_call_with_its_goodness_and_range() {
    let m = Model::run();
    let f = brick_fit("AttentionScore", Phase::Decode, &m.score[1]).unwrap();
    assert_eq!(
        f.line(),
        "AttentionScore per call: 2.10µs + 3.00µs per 1k context (R² 1.00, 60 passes × 4 \
         calls, context 17–100)"
    );
    let text = render_fits(&[
        f,
        brick_fit("QkvProjection", Phase::Decode, &m.qkv[1]).unwrap(),
    ]);
    assert!(text.starts_with("Cost against shape (decode)"), "{text}");
    assert!(
        text.contains("\n  QkvProjection  per call: 5.04µs + 0ns per 1k context"),
        "{text}"
    );
    // A name from a file cannot drive the terminal.
    let evil = brick_fit("\u{1b}[2Jattn", Phase::Decode, &m.score[1]).unwrap();
    assert!(!evil.line().contains('\u{1b}'));
}

#[test]
fn shares_as_the_context_grows_mark_extrapolation() {
    let m = Model::run();
    let series = m.series();
    let contexts = default_contexts(17, 100);
    assert_eq!(contexts, [17, 100, 400, 1_600]);
    let s = context_shares(&series, Phase::Decode, &contexts).unwrap();
    let cats: Vec<BrickCategory> = s.trends.iter().map(|t| t.category).collect();
    assert!(
        s.trends.iter().all(|t| !t.held),
        "exact lines follow the context"
    );
    assert_eq!(cats, [BrickCategory::Attention, BrickCategory::Ffn]);
    for row in &s.rows {
        let attention = (LAYERS * (A + C + D + B * row.context)) as f64;
        let ffn = (LAYERS * E) as f64;
        let want = attention * 100.0 / (attention + ffn);
        let shares = row.shares.as_ref().unwrap();
        assert!((shares[0] - want).abs() < 1e-9, "{row:?}");
        assert!((shares[0] + shares[1] - 100.0).abs() < 1e-9);
        assert_eq!(row.extrapolated, row.context > 100);
    }
    assert_eq!(
        context_shares(&series, Phase::Decode, &[]).as_ref(),
        Some(&s)
    );
    let text = render_context_shares(&s);
    assert!(
        text.contains("(decode, fitted over 60 passes, context 17–100)"),
        "{text}"
    );
    assert!(text.contains("        400*"), "{text}");
    assert!(text.contains("        100 "), "{text}");
    assert!(!text.contains("100*"), "{text}");
    assert!(
        text.contains("* beyond the contexts seen (17–100)"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    // Prefill passes alone are three: enough for a line against the context.
    assert!(context_shares(&series, Phase::Prefill, &contexts).is_some());
    assert!(context_shares(&series, Phase::Mixed, &contexts).is_none());
}
