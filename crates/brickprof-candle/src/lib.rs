//! brickprof for [candle](https://github.com/huggingface/candle): per-brick profiles, phases
//! and checksums of a candle model, in a few lines (README.md shows them for a real model).
//!
//! | item | what it is for |
//! |---|---|
//! | [`span_map`] | [`BrickLayer`]'s map for candle-transformers' span names: the model profiled with no code change |
//! | [`Pass`] | one forward pass and its shape (prefill or decode): a span for [`BrickLayer`], or begin/end on an explicit profiler |
//! | [`brick`] | a candle op timed as a brick on an explicit [`BrickProfiler`], its output's elements as the work |
//! | [`record_checksum`] | a candle tensor's checksum (and capture) into the profiler's checksum log |
//!
//! Two ways in, as brickprof has:
//! - **No code change**: [`BrickLayer`] with [`span_map`] as the default subscriber while the
//!   model loads (candle binds its spans then), and the forward inside a [`Pass::span`]. The
//!   thread-local profiler ([`brickprof::thread`]) collects the profile.
//! - **Explicit bricks**: a forward written on candle ops, each op in a [`brick`], each pass
//!   between [`Pass::begin`] and [`Pass::end`], and each output's [`record_checksum`] when
//!   checksums are on. Checksums need this way: they are recorded on a [`BrickProfiler`].
//!
//! ```
//! use brickprof::{BrickId, BrickProfiler, Phase, ProfilerConfig};
//! use brickprof_candle::{brick, record_checksum, Pass};
//! use candle_core::{Device, Tensor};
//!
//! let mut prof = BrickProfiler::new(ProfilerConfig { layers: 1, checksums: true, ..Default::default() })?;
//! let x = Tensor::ones((4, 8), candle_core::DType::F32, &Device::Cpu)?;
//! let w = Tensor::ones((8, 8), candle_core::DType::F32, &Device::Cpu)?;
//! let pass = Pass::prefill(4, 0)?; // the prompt's 4 tokens, nothing cached
//! pass.begin(&mut prof);
//! prof.begin_layer(0);
//! let y = brick(&mut prof, BrickId::UpProjection, || x.matmul(&w))?;
//! record_checksum(&mut prof, Some(0), BrickId::UpProjection, &y)?;
//! prof.end_layer();
//! pass.end(&mut prof)?;
//!
//! assert_eq!(prof.view().checksum_log.entries.len(), 1);
//! let profile = prof.profile();
//! let up = profile.brick("UpProjection").unwrap();
//! assert!(up.rows.iter().all(|r| r.phase == Phase::Prefill));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The binary of this crate (`brickprof-candle generate|compare|overhead`, src/bin/) runs
//! SmolLM2-135M both ways on this library.
//!
//! [`BrickLayer`]: brickprof::tracing_layer::BrickLayer
//! [`BrickProfiler`]: brickprof::BrickProfiler

#![warn(missing_docs)]

mod brick;
mod checksum;
mod pass;
mod span_map;

pub use brick::brick;
pub use checksum::record_checksum;
pub use pass::Pass;
pub use span_map::span_map;
