//! spec/front-doors.md "tracing layer": `BrickLayer` maps spans to bricks (table, overrides,
//! unknown names), layers from fields or span identity, passes from a pass span, and composes
//! with `tracing_subscriber::Registry` and other layers.
#![cfg(feature = "tracing")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use brickprof::profile::RowKey;
use brickprof::tracing_layer::{BrickLayer, BrickName, SpanMap, SpanRule};
use brickprof::{thread as bp, BrickCategory, BrickId, Profile, ProfilerConfig};
use tracing::{trace_span, Span};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer;

// One lock for the front door in this test binary (tests/library.rs).
use crate::SERIAL;

fn fresh(layers: usize) -> Serial {
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    bp::reset();
    bp::configure(ProfilerConfig::with_layers(layers)).unwrap();
    bp::set_enabled(true);
    Serial(g)
}

/// Holds the lock for one test; detaches this test thread's profiler before releasing it, so
/// the thread's exit cannot publish into the next test's collector.
struct Serial(#[allow(dead_code)] std::sync::MutexGuard<'static, ()>);

impl Drop for Serial {
    fn drop(&mut self) {
        bp::reset();
    }
}

fn spin() {
    std::hint::black_box((0..500u64).sum::<u64>());
}

/// The spans of candle-transformers 0.11.1's quantized Llama, created in `from_gguf`'s order.
struct CandleLike {
    final_norm: Span,
    layers: Vec<[Span; 12]>,
    model: Span,
    output: Span,
    lm_head: Span,
}

impl CandleLike {
    fn new(n: usize) -> Self {
        let final_norm = trace_span!("rms-norm");
        let layers = (0..n)
            .map(|_| {
                let w1 = trace_span!("qmatmul");
                let w2 = trace_span!("qmatmul");
                let w3 = trace_span!("qmatmul");
                let attn = trace_span!("attn");
                let rot = trace_span!("attn-rot");
                let mlp = trace_span!("attn-mlp");
                let wq = trace_span!("qmatmul");
                let wk = trace_span!("qmatmul");
                let wv = trace_span!("qmatmul");
                let wo = trace_span!("qmatmul");
                let attention_norm = trace_span!("rms-norm");
                let ffn_norm = trace_span!("rms-norm");
                [
                    w1,
                    w2,
                    w3,
                    attn,
                    rot,
                    mlp,
                    wq,
                    wk,
                    wv,
                    wo,
                    attention_norm,
                    ffn_norm,
                ]
            })
            .collect();
        let model = trace_span!("model");
        let output = trace_span!("output");
        let lm_head = trace_span!("qmatmul");
        CandleLike {
            final_norm,
            layers,
            model,
            output,
            lm_head,
        }
    }

    /// One decode step, entering spans the way `ModelWeights::forward` does.
    fn forward(&self) {
        let _m = self.model.enter();
        for [w1, w2, w3, attn, rot, mlp, wq, wk, wv, wo, attention_norm, ffn_norm] in &self.layers {
            attention_norm.in_scope(spin);
            {
                let _a = attn.enter();
                for w in [wq, wk, wv] {
                    w.in_scope(spin);
                }
                rot.in_scope(spin);
                rot.in_scope(spin);
                spin(); // scores, softmax, A·V: the attention span's self time
                wo.in_scope(spin);
            }
            let _mlp = mlp.enter();
            ffn_norm.in_scope(spin);
            for w in [w1, w3, w2] {
                w.in_scope(spin);
            }
            spin();
        }
        self.final_norm.in_scope(spin);
        let _o = self.output.enter();
        self.lm_head.in_scope(spin);
    }
}

fn rows(p: &Profile, brick: &str) -> Vec<(RowKey, u64)> {
    p.brick(brick)
        .unwrap_or_else(|| panic!("no brick {brick}"))
        .rows
        .iter()
        .map(|r| (r.row, r.stats.summary().count))
        .collect()
}

#[test]
fn candle_preset_puts_every_span_in_its_layer_and_brick() {
    let _s = fresh(3);
    let subscriber = tracing_subscriber::registry().with(BrickLayer::new(candle_map()));
    tracing::subscriber::with_default(subscriber, || {
        let model = CandleLike::new(3);
        for _ in 0..2 {
            model.forward();
        }
    });
    let p = bp::collect().unwrap();
    assert_eq!(p.meta.counters.passes, 2, "one pass per `model` span exit");
    let per_layer = |n| (0..3).map(|l| (RowKey::Layer(l), n)).collect::<Vec<_>>();
    assert_eq!(rows(&p, "QkvProjection"), per_layer(6));
    assert_eq!(rows(&p, "RopeEmbedding"), per_layer(4));
    for b in ["GateProjection", "UpProjection", "DownProjection"] {
        assert_eq!(rows(&p, b), per_layer(2), "{b}");
    }
    assert_eq!(rows(&p, "OutputProjection"), per_layer(2));
    assert_eq!(rows(&p, "Attention"), per_layer(2));
    assert_eq!(rows(&p, "Mlp"), per_layer(2));
    let model_row = RowKey::Model;
    let mut norm = per_layer(4);
    norm.push((model_row, 2)); // attention_norm and ffn_norm per layer; the final norm
    assert_eq!(rows(&p, "RmsNorm"), norm);
    assert_eq!(rows(&p, "LmHead"), vec![(model_row, 2)]);
    assert!(p.brick("output").is_none(), "ignored by the preset");
    assert!(
        p.brick("QMatMul").is_none(),
        "every qmatmul got its projection"
    );
}

#[test]
fn default_map_uses_span_identity_for_layers_and_registers_unknown_names() {
    let _s = fresh(2);
    let subscriber = tracing_subscriber::registry().with(BrickLayer::new(SpanMap::default()));
    tracing::subscriber::with_default(subscriber, || {
        let model = CandleLike::new(2);
        model.forward();
        trace_span!("my-custom-kernel").in_scope(spin);
        trace_span!("softmax").in_scope(spin);
    });
    let p = bp::collect().unwrap();
    // qmatmul spans inherit the layer of the enclosing attn / attn-mlp span.
    let q = rows(&p, "QMatMul");
    assert_eq!(&q[..2], &[(RowKey::Layer(0), 7), (RowKey::Layer(1), 7)]);
    assert_eq!(
        rows(&p, "Attention"),
        vec![(RowKey::Layer(0), 1), (RowKey::Layer(1), 1)]
    );
    let custom = p.brick("my-custom-kernel").unwrap();
    assert_eq!((custom.stats.summary().count, custom.builtin), (1, false));
    assert_eq!(
        p.brick("AttentionSoftmax").unwrap().stats.summary().count,
        1
    );
    assert_eq!(p.brick("LmHead").unwrap().stats.summary().count, 1);
}

#[test]
fn layer_fields_overrides_and_pass_tokens() {
    let _s = fresh(4);
    let map = SpanMap::default()
        .with(
            "decoder",
            SpanRule::Layer(BrickName::Dynamic("Block".into(), BrickCategory::Other)),
        )
        .with("step", SpanRule::Pass)
        .with("gemm", SpanRule::Brick(BrickId::DownProjection.into()))
        .with("noise", SpanRule::Ignore);
    let subscriber = tracing_subscriber::registry().with(BrickLayer::new(map));
    tracing::subscriber::with_default(subscriber, || {
        let _p = trace_span!("step", tokens = 5u64).entered();
        for layer in [3u64, 1] {
            let _l = trace_span!("decoder", layer).entered();
            trace_span!("gemm").in_scope(spin);
            trace_span!("noise").in_scope(spin);
        }
        trace_span!("gemm", idx = 2u64).in_scope(spin);
    });
    let p = bp::collect().unwrap();
    assert_eq!(
        rows(&p, "DownProjection"),
        vec![
            (RowKey::Layer(1), 1),
            (RowKey::Layer(2), 1),
            (RowKey::Layer(3), 1)
        ]
    );
    assert!(p.brick("noise").is_none());
    assert_eq!((p.meta.counters.passes, p.meta.counters.tokens), (1, 5));
}

#[test]
fn a_pass_span_with_a_shape_lands_in_its_phase() {
    // spec/front-doors.md "tracing layer": `context`, `sequences` and `phase` fields shape the
    // pass; `tokens` alone leaves it unshaped, as before.
    use brickprof::Phase;
    let _s = fresh(1);
    let map = SpanMap::default()
        .with("forward", SpanRule::Pass)
        .with("gemm", SpanRule::Brick(BrickId::DownProjection.into()));
    let subscriber = tracing_subscriber::registry().with(BrickLayer::new(map));
    tracing::subscriber::with_default(subscriber, || {
        // The prompt: 6 tokens, context 6 (one sequence by default).
        trace_span!("forward", tokens = 6u64, context = 6u64).in_scope(|| {
            trace_span!("gemm", layer = 0u64).in_scope(spin);
        });
        // Two decode steps of 4 sequences.
        for ctx in [40u64, 44] {
            trace_span!("forward", tokens = 4u64, sequences = 4u64, context = ctx).in_scope(|| {
                trace_span!("gemm", layer = 0u64).in_scope(spin);
            });
        }
        // Said by the engine: a mixed pass, its context recorded after creation.
        let mixed = trace_span!(
            "forward",
            tokens = 9u64,
            sequences = 2u64,
            phase = "mixed",
            context = tracing::field::Empty
        );
        mixed.record("context", 100u64);
        mixed.in_scope(|| trace_span!("gemm", layer = 0u64).in_scope(spin));
        // `tokens` alone: unshaped.
        trace_span!("forward", tokens = 1u64).in_scope(|| {
            trace_span!("gemm", layer = 0u64).in_scope(spin);
        });
        // A shape that describes no pass (context below the new tokens): unshaped.
        trace_span!("forward", tokens = 5u64, context = 2u64).in_scope(|| {
            trace_span!("gemm", layer = 0u64).in_scope(spin);
        });
    });
    let p = bp::collect().unwrap();
    let rows: Vec<(Phase, u64)> = p
        .brick("DownProjection")
        .unwrap()
        .rows
        .iter()
        .map(|r| (r.phase, r.stats.summary().count))
        .collect();
    assert_eq!(
        rows,
        vec![
            (Phase::Unspecified, 2),
            (Phase::Prefill, 1),
            (Phase::Decode, 2),
            (Phase::Mixed, 1)
        ]
    );
    let tokens = |phase| p.phase_passes(phase).summary().work.elements;
    assert_eq!(
        (
            tokens(Phase::Prefill),
            tokens(Phase::Decode),
            tokens(Phase::Mixed),
            tokens(Phase::Unspecified)
        ),
        (6, 8, 9, 6)
    );
}

/// Counts enters and exits, to show the other layer sees every span.
struct Counting(Arc<AtomicUsize>);

impl<S: tracing::Subscriber> Layer<S> for Counting {
    fn on_enter(&self, _id: &tracing::span::Id, _ctx: tracing_subscriber::layer::Context<'_, S>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn composes_with_another_layer_and_follows_global_disable() {
    let _s = fresh(1);
    let entered = Arc::new(AtomicUsize::new(0));
    let subscriber = tracing_subscriber::registry()
        .with(Counting(Arc::clone(&entered)))
        .with(BrickLayer::new(SpanMap::default()));
    tracing::subscriber::with_default(subscriber, || {
        let _l = trace_span!("attn").entered();
        trace_span!("attn-rot").in_scope(spin);
        bp::set_enabled(false);
        trace_span!("attn-rot").in_scope(spin); // not measured
        bp::set_enabled(true);
    });
    assert_eq!(
        entered.load(Ordering::Relaxed),
        3,
        "the other layer saw every span"
    );
    let p = bp::collect().unwrap();
    assert_eq!(rows(&p, "RopeEmbedding"), vec![(RowKey::Layer(0), 1)]);
}

/// candle's span map, `brickprof_candle::span_map()`, read from that crate's source (one copy;
/// the candle crate itself is too large a dependency for this).
#[path = "../../crates/brickprof-candle/src/span_map.rs"]
mod candle_span_map;
use candle_span_map::span_map as candle_map;
