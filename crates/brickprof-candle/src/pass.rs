//! [`Pass`]: one forward pass of a sequence and its shape, begun and ended on a profiler.

use brickprof::{BrickProfiler, PassShape, Phase, Result, Timeline};

/// One forward pass of one sequence: new tokens after those already in the KV cache, and its
/// phase. Its shape (new tokens, context attended, one sequence) puts the pass in its phase's
/// books, so the profile has prefill and decode rows, TTFT and TPOT.
///
/// - Under [`BrickLayer`](brickprof::tracing_layer::BrickLayer): enter [`Pass::span`] around
///   the model's forward.
/// - With an explicit [`BrickProfiler`]: [`Pass::begin`] before the forward, [`Pass::end`]
///   after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    shape: PassShape,
}

impl Pass {
    /// A prompt pass: `tokens` new tokens after `cached` tokens in the KV cache. Its phase is
    /// prefill whatever the count, so a prompt fed one token a pass is a prefill too. An error
    /// when `tokens` is 0.
    pub fn prefill(tokens: usize, cached: usize) -> Result<Pass> {
        let new = u32::try_from(tokens).unwrap_or(u32::MAX);
        let context = (cached as u64).saturating_add(tokens as u64);
        Ok(Pass {
            shape: PassShape::new(new, 1, context)?.with_phase(Phase::Prefill),
        })
    }

    /// A decode step: one new token after `cached` tokens in the KV cache.
    pub fn decode(cached: usize) -> Pass {
        let context = (cached as u64).saturating_add(1);
        let shape = PassShape::new(1, 1, context).expect("one token attending itself is a pass");
        Pass {
            shape: shape.with_phase(Phase::Decode),
        }
    }

    /// The pass's shape.
    pub fn shape(&self) -> PassShape {
        self.shape
    }

    /// A `forward` span carrying the shape (`tokens`, `context`, `sequences`, `phase`), which
    /// [`span_map`](crate::span_map) reads as a shaped pass: entering it begins the pass,
    /// exiting it ends it. Without a subscriber it costs next to nothing.
    pub fn span(&self) -> tracing::Span {
        let phase: &'static str = self.shape.phase().into();
        tracing::trace_span!(
            "forward",
            tokens = u64::from(self.shape.new_tokens()),
            context = self.shape.context_tokens(),
            sequences = u64::from(self.shape.sequences()),
            phase = phase
        )
    }

    /// Begin the pass on an explicit profiler.
    pub fn begin<T: Timeline>(&self, prof: &mut BrickProfiler<T>) {
        prof.begin_pass();
        prof.set_pass_shape(self.shape);
    }

    /// End the pass on an explicit profiler, counting its new tokens.
    pub fn end<T: Timeline>(&self, prof: &mut BrickProfiler<T>) -> Result<()> {
        prof.end_pass(u64::from(self.shape.new_tokens()))
    }
}
