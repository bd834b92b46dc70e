//! One Llama block's bricks in call order (two norms, two residual adds): shared by the
//! benches that time a realistic pass (`#[path = "common/block.rs"] mod block;`).

use brickprof::BrickId::{self, *};

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
