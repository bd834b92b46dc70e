//! `BrickLayer` against tracing-chrome on the same spans, in one run (spec/front-doors.md
//! "tracing layer", "Costs"). The spans are candle-transformers 0.11's quantized Llama spans
//! for 30 layers, created the way `from_gguf` creates them and entered the way `forward` does,
//! with no work inside: what is measured is the subscriber's cost per decode step.
//!
//! - `no_subscriber`: spans created with no subscriber (what candle costs without tracing).
//! - `brick_layer`: `BrickLayer` (candle preset) on `Registry`.
//! - `tracing_chrome`: tracing-chrome's layer on `Registry`, writing a trace file.

use std::hint::black_box;
use std::time::Duration;

use brickprof::tracing_layer::BrickLayer;
use brickprof::{thread as bp, ProfilerConfig};
use criterion::{criterion_group, criterion_main, Criterion};
use tracing::{trace_span, Span};
use tracing_subscriber::layer::SubscriberExt;

const LAYERS: usize = 30;

struct Spans {
    layers: Vec<[Span; 12]>,
    model: Span,
    final_norm: Span,
    output: Span,
    head: Span,
}

fn create() -> Spans {
    let final_norm = trace_span!("rms-norm");
    let layers = (0..LAYERS)
        .map(|_| {
            let (w1, w2, w3) = (
                trace_span!("qmatmul"),
                trace_span!("qmatmul"),
                trace_span!("qmatmul"),
            );
            let (attn, rot, mlp) = (
                trace_span!("attn"),
                trace_span!("attn-rot"),
                trace_span!("attn-mlp"),
            );
            let (wq, wk, wv, wo) = (
                trace_span!("qmatmul"),
                trace_span!("qmatmul"),
                trace_span!("qmatmul"),
                trace_span!("qmatmul"),
            );
            let (an, fnorm) = (trace_span!("rms-norm"), trace_span!("rms-norm"));
            [w1, w2, w3, attn, rot, mlp, wq, wk, wv, wo, an, fnorm]
        })
        .collect();
    Spans {
        layers,
        model: trace_span!("model"),
        final_norm,
        output: trace_span!("output"),
        head: trace_span!("qmatmul"),
    }
}

fn forward(s: &Spans) {
    let _m = s.model.enter();
    for [w1, w2, w3, attn, rot, mlp, wq, wk, wv, wo, an, fnorm] in &s.layers {
        an.in_scope(|| black_box(0));
        {
            let _a = attn.enter();
            for w in [wq, wk, wv] {
                w.in_scope(|| black_box(0));
            }
            rot.in_scope(|| black_box(0));
            rot.in_scope(|| black_box(0));
            wo.in_scope(|| black_box(0));
        }
        let _mlp = mlp.enter();
        fnorm.in_scope(|| black_box(0));
        for w in [w1, w3, w2] {
            w.in_scope(|| black_box(0));
        }
    }
    s.final_norm.in_scope(|| black_box(0));
    let _o = s.output.enter();
    s.head.in_scope(|| black_box(0));
}

fn subscribers(c: &mut Criterion) {
    let mut g = c.benchmark_group("tracing_layer_per_decode_step");
    g.measurement_time(Duration::from_secs(3));
    g.warm_up_time(Duration::from_millis(500));

    let plain = create();
    g.bench_function("no_subscriber", |b| b.iter(|| forward(&plain)));

    bp::configure(ProfilerConfig::with_layers(LAYERS)).unwrap();
    bp::init_thread(None).unwrap();
    bp::set_enabled(true);
    let sub = tracing_subscriber::registry().with(BrickLayer::new(candle_map()));
    let bricked = tracing::subscriber::with_default(sub, create);
    g.bench_function("brick_layer", |b| b.iter(|| forward(&bricked)));

    let dir = std::env::temp_dir().join(format!("brickprof-bench-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let (chrome, guard) = tracing_chrome::ChromeLayerBuilder::new()
        .file(dir.join("trace.json"))
        .build();
    let chromed =
        tracing::subscriber::with_default(tracing_subscriber::registry().with(chrome), create);
    g.bench_function("tracing_chrome", |b| b.iter(|| forward(&chromed)));
    g.finish();
    drop(guard);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, subscribers);
criterion_main!(benches);

/// candle's span map, `brickprof_candle::span_map()`, read from that crate's source (one copy;
/// the candle crate itself is too large a dependency for this).
#[path = "../crates/brickprof-candle/src/span_map.rs"]
mod candle_span_map;
use candle_span_map::span_map as candle_map;
