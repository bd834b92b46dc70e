//! [`span_map`]: what candle-transformers' tracing spans mean as bricks.

use brickprof::tracing_layer::{BrickName, SpanMap, SpanRule};
use brickprof::BrickId;

/// The span map for candle-transformers 0.11's quantized Llama
/// (`models::quantized_llama::ModelWeights`), to give to
/// [`BrickLayer::new`](brickprof::tracing_layer::BrickLayer::new): every span candle emits
/// lands in its brick and its layer, with no change to the model's code.
///
/// | span | brick |
/// |---|---|
/// | `forward` ([`Pass::span`](crate::Pass::span)), `model` | the pass (the outermost one), not a brick |
/// | `attn` | `Attention` (a dynamic brick); sets the layer of the spans inside it |
/// | `attn-mlp`, `mlp` | `Mlp` (a dynamic brick); sets the layer too |
/// | `attn-rot`, `rope` | `RopeEmbedding` |
/// | `rms-norm` | `RmsNorm`: the final norm (created first, in the model row), then each layer's attention and FFN norms |
/// | `qmatmul` | by creation order, per layer: `GateProjection`, `DownProjection`, `UpProjection`, `QkvProjection` (q, k, v), `OutputProjection`; the last one is `LmHead` |
/// | `output` | not timed (its `qmatmul` is `LmHead`) |
/// | `embedding` | `Embedding` |
/// | `softmax` | `AttentionSoftmax` |
/// | any other name | a brick of that name: built-in if it parses as one, else dynamic |
///
/// candle creates its spans when the model is loaded, and a span reports to the subscriber
/// that was the default when it was created: install the subscriber before loading the model.
/// Spans map by creation order within a model, so load one model per subscriber.
pub fn span_map() -> SpanMap {
    use BrickId::*;
    SpanMap::default()
        .with(
            "rms-norm",
            SpanRule::Instances {
                skip: 1,
                bricks: vec![RmsNorm.into(), RmsNorm.into()],
                outside: RmsNorm.into(),
            },
        )
        .with(
            "qmatmul",
            SpanRule::Instances {
                skip: 0,
                bricks: [
                    GateProjection,
                    DownProjection,
                    UpProjection,
                    QkvProjection,
                    QkvProjection,
                    QkvProjection,
                    OutputProjection,
                ]
                .map(BrickName::from)
                .to_vec(),
                outside: LmHead.into(),
            },
        )
        .with("output", SpanRule::Ignore)
}
