//! Captured tensors (spec/divergence.md "Capture plans" and "Capture files"): a [`CapturePlan`]
//! picks kernels (the `--capture LAYER:BRICK[,...]` grammar), passes and a byte budget; the
//! checksum recording calls copy the selected outputs whole into a [`CaptureStore`] (never the
//! timing hot path); the store is saved as safetensors, in each tensor's dtype, for `brickprof
//! diff` and Python.
//!
//! | file | what lives there |
//! |---|---|
//! | `plan.rs` | [`CapturePlan`], [`KernelPattern`], the `--capture` grammar |
//! | `store.rs` | [`CaptureStore`] (budget, overflow), [`CapturedTensor`] (bytes, decoding) |
//! | `file.rs` | the safetensors file: save, validated load |

mod file;
mod plan;
mod store;

pub use plan::{CapturePlan, KernelPattern, LayerPattern};
pub use store::{CaptureStore, CapturedTensor};
