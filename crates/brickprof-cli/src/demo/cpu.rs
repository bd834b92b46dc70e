//! The demo on the CPU timeline: the model's CPU kernels ([`super::model`]) timed by the host
//! clock, wired to the profiler brick by brick. The simulated GPU ([`super::sim`]) and the HIP
//! event path (`hip`) drive the same kernels through [`drive`].

use brickprof::{
    roofline::measure_cpu_peaks,
    stats::{TileLevel, TileTimer},
    BrickId, BrickProfiler, CpuTimeline, PassShape, Phase, ProfilerConfig, Result, Timeline, Work,
};

use super::model::{Bricks, Model, ModelConfig, SplitMix};
use super::options::{seq_len, DemoOptions, KernelSpot, Prefill, MAX_SEQ};
use super::outcome::{write_traces, DemoRun};

/// A device beside the CPU kernels on which each kernel is launched too (the simulated GPU).
pub trait Device {
    /// Launch a kernel that does `work`, its time multiplied by `stretch` (1: as is; `--slow`).
    fn launch(&self, work: Work, stretch: f64);
}

/// The prompt pass's shape: `n` new tokens of one sequence, context `n` (a prefill, even of
/// one token: the engine says so); `None` for an empty prompt.
pub fn prompt_shape(n: usize) -> Option<PassShape> {
    let n = u32::try_from(n).ok()?;
    PassShape::new(n, 1, u64::from(n))
        .ok()
        .map(|s| s.with_phase(Phase::Prefill))
}

/// The shape of the decode step at position `pos`: one new token of one sequence, context
/// `pos + 1`.
pub fn decode_shape(pos: usize) -> Result<PassShape> {
    PassShape::new(1, 1, pos as u64 + 1)
}

/// Run the demo on the CPU timeline.
pub fn run(opts: &DemoOptions, config: ProfilerConfig) -> Result<DemoRun> {
    let prof = BrickProfiler::with_timeline(config, CpuTimeline::default())?;
    let mut run = drive(opts, prof, None)?;
    cpu_roof(opts, &mut run);
    Ok(run)
}

/// The roof when `--peaks` is not given: this CPU's measured peaks, reported under the table.
pub fn cpu_roof(opts: &DemoOptions, run: &mut DemoRun) {
    if opts.peaks.is_some() {
        return;
    }
    // A measurement that came out as zero (a clock too coarse) leaves no roof.
    run.profile.meta.peaks = measure_cpu_peaks().ok().map(|m| {
        let p = m.peaks.clone();
        run.cpu_peaks = Some(m);
        p
    });
}

/// Wires the model's bricks to a profiler (and to a device beside the CPU, when there is one).
struct Instrument<'a, T: Timeline> {
    prof: &'a mut BrickProfiler<T>,
    device: Option<&'a dyn Device>,
    open: Option<brickprof::BrickToken>,
    tiles: [Option<TileTimer>; 3],
    opts: &'a DemoOptions,
    /// The seed of this forward pass's split-K orders (`--nondeterministic`).
    order: u64,
    /// When the `--slow` kernel began (on the host clock), while it runs.
    slow_began: Option<std::time::Instant>,
}

impl<T: Timeline> Instrument<'_, T> {
    /// The `--slow` stretch of the kernel at (`layer`, `brick`), if it is the one.
    fn slow(&self, layer: Option<usize>, brick: BrickId) -> Option<f64> {
        self.opts
            .slow
            .filter(|s| s.covers(layer, brick))
            .map(|s| s.factor())
    }
}

/// Spin until `began + (now − began) × factor`: the kernel's own time so far, stretched.
fn stretch_on_host(began: std::time::Instant, factor: f64) {
    let extra = began.elapsed().mul_f64(factor - 1.0);
    let until = std::time::Instant::now() + extra;
    while std::time::Instant::now() < until {
        std::hint::spin_loop();
    }
}

impl<T: Timeline> Bricks for Instrument<'_, T> {
    fn begin(&mut self, layer: Option<usize>, brick: BrickId) {
        self.open = Some(self.prof.start_brick(brick));
        if self.slow(layer, brick).is_some() {
            self.slow_began = Some(std::time::Instant::now());
        }
    }

    fn end(&mut self, layer: Option<usize>, brick: BrickId, work: Work, out: &mut [f32]) {
        let stretch = self.slow(layer, brick).unwrap_or(1.0);
        match (self.device, self.slow_began.take()) {
            (Some(device), _) => device.launch(work, stretch),
            // No device: the host clock times the kernel, so the host spins the extra time.
            (None, Some(began)) => stretch_on_host(began, stretch),
            (None, None) => {}
        }
        if let Some(t) = self.open.take() {
            self.prof.stop_brick_with(t, work);
        }
        let here = Some(KernelSpot { layer, brick });
        if let Some(x) = out.get_mut(out.len() / 2) {
            if self.opts.perturb == here {
                *x += 1e-4 * x.abs().max(1e-3);
            }
            if self.opts.nan == here {
                *x = f32::NAN;
            }
        }
        self.prof.checksums().record(layer, brick, out);
    }

    fn split_k(&mut self, layer: Option<usize>, brick: BrickId) -> Option<u64> {
        (self.opts.nondeterministic == Some(KernelSpot { layer, brick })).then_some(self.order)
    }

    fn tile_begin(&mut self, level: TileLevel) {
        self.tiles[level as usize] = Some(self.prof.start_tile(level));
    }

    fn tile_end(&mut self, level: TileLevel, work: Work) {
        if let Some(t) = self.tiles[level as usize].take() {
            self.prof.stop_tile(t, work);
        }
    }

    fn layer(&mut self, layer: usize, entering: bool) {
        if entering {
            self.prof.begin_layer(layer);
        } else {
            self.prof.end_layer();
        }
    }
}

/// Run the demo model's CPU kernels under `prof` (launching each on `device` too, when there is
/// one) and write the traces; the run, its roof from `--peaks` only (each backend fills its
/// default).
pub fn drive<T: Timeline>(
    opts: &DemoOptions,
    mut prof: BrickProfiler<T>,
    device: Option<&dyn Device>,
) -> Result<DemoRun> {
    let cfg = ModelConfig {
        layers: opts.layers,
        max_seq: seq_len(opts).unwrap_or(MAX_SEQ).max(1),
        ..ModelConfig::default()
    };
    let model = Model::new(cfg, opts.seed);
    let mut rng = SplitMix::new(opts.seed ^ 0xB41C);
    let prompt: Vec<usize> = (0..opts.prompt.max(1))
        .map(|_| (rng.next_u64() % cfg.vocab as u64) as usize)
        .collect();

    let mut generated = Vec::with_capacity(opts.tokens);
    let passes = match &opts.serve {
        None => generate(&model, &prompt, opts, &mut prof, device, &mut generated),
        // The prompt and its tokens again and again while serving; the last round's tokens
        // are the run's.
        Some(serve) => super::serve::serving(serve, &mut prof, |prof| {
            generated.clear();
            generate(&model, &prompt, opts, prof, device, &mut generated)
        }),
    }
    // The final flush resolves passes still in flight (Lagged mode).
    .and_then(|()| prof.finalize());
    // The trace is written even when the run stopped on an error: what was recorded is there.
    let traces = write_traces(opts, &prof);
    if let Err(e) = passes {
        for path in traces.iter().flatten() {
            crate::output::note(&format!(
                "partial trace written to {} (the run failed: --out keeps its earlier run)",
                path.display()
            ));
        }
        return Err(e);
    }
    let traces = traces?;
    let captures =
        (!prof.view().capture_plan.kernels.is_empty()).then(|| prof.checksums().take_captures());
    let mut profile = prof.profile();
    profile.meta.peaks = opts.peaks.clone();
    let c = prof.view().counters;
    let notes = if profile.meta.sync_mode == brickprof::SyncMode::Lagged {
        vec![format!(
            "{} passes, {} blocking waits",
            c.passes + c.warmup_passes_excluded,
            c.blocking_waits
        )]
    } else {
        Vec::new()
    };
    Ok(DemoRun {
        profile,
        traces,
        generated,
        notes,
        cpu_peaks: None,
        captures,
    })
}

/// The prefill pass, then one decode pass per generated token.
fn generate<T: Timeline>(
    model: &Model,
    prompt: &[usize],
    opts: &DemoOptions,
    prof: &mut BrickProfiler<T>,
    device: Option<&dyn Device>,
    generated: &mut Vec<usize>,
) -> Result<()> {
    let batch = match opts.prefill {
        Prefill::Batched => prompt.len(),
        Prefill::PerToken => 1,
    };
    let mut state = model.state(batch);
    // A new seed each run unless one is given: the split-K order varies run to run.
    let order_seed = opts.order_seed.unwrap_or_else(|| {
        use std::hash::{BuildHasher, Hasher};
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    });
    let mut pos = 0;
    let mut next = 0;
    // Prefill: the prompt as one pass, of shape (n new tokens, 1 sequence, context n), its
    // tokens batched (each brick one call over them all; a long prompt in chunks) or, with
    // `--prefill per-token`, one forward call a token.
    prof.begin_pass();
    if let Some(shape) = prompt_shape(prompt.len()) {
        prof.set_pass_shape(shape);
    }
    for chunk in prompt.chunks(state.batch()) {
        let mut ins = Instrument {
            prof: &mut *prof,
            device,
            open: None,
            tiles: [None; 3],
            opts,
            order: order_seed ^ (pos as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            slow_began: None,
        };
        next = model.forward(&mut state, chunk, pos, &mut ins);
        pos += chunk.len();
    }
    prof.end_pass(prompt.len() as u64)?;
    // Decode: one pass per generated token.
    for _ in 0..opts.tokens {
        generated.push(next);
        // A decode step: 1 new token of 1 sequence, attending everything so far.
        prof.begin_pass();
        prof.set_pass_shape(decode_shape(pos)?);
        let mut ins = Instrument {
            prof: &mut *prof,
            device,
            open: None,
            tiles: [None; 3],
            opts,
            order: order_seed ^ (pos as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            slow_began: None,
        };
        next = model.forward(&mut state, &[next], pos, &mut ins);
        pos += 1;
        prof.end_pass(1)?;
    }
    Ok(())
}
