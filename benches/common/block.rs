//! One Llama block's bricks in call order (two norms, two residual adds): shared by the
//! benches that time a realistic pass (`#[path = "common/block.rs"] mod block;`).

use std::hint::black_box;

use brickprof::BrickId::{self, *};
use brickprof::BrickProfiler;

/// One Llama block, in call order.
pub const BLOCK: [BrickId; 14] = [
    RmsNorm,
    QkvProjection,
    RopeEmbedding,
    AttentionScore,
    AttentionSoftmax,
    AttentionOutput,
    OutputProjection,
    ResidualAdd,
    RmsNorm,
    GateProjection,
    UpProjection,
    Activation,
    DownProjection,
    ResidualAdd,
];

/// A pass's bricks (no `begin_pass`, no `end_pass`): the embedding, one [`BLOCK`] per layer
/// inside `begin_layer`/`end_layer`, the final norm and the LM head.
#[inline(always)]
pub fn llama_bricks(prof: &mut BrickProfiler, layers: usize) {
    let t = prof.start_brick(Embedding);
    black_box(Embedding);
    prof.stop_brick(t, 1);
    for layer in 0..layers {
        prof.begin_layer(layer);
        for b in BLOCK {
            let t = prof.start_brick(b);
            black_box(b);
            prof.stop_brick(t, 1);
        }
        prof.end_layer();
    }
    for b in [RmsNorm, LmHead] {
        let t = prof.start_brick(b);
        black_box(b);
        prof.stop_brick(t, 1);
    }
}
