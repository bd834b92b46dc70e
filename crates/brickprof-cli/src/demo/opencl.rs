//! `demo --timeline opencl`: the demo transformer of [`super::model`] as OpenCL C kernels
//! (`opencl.cl`) on the first OpenCL device, profiled with [`OpenClTimeline`].
//!
//! Weights are uploaded once. A pass enqueues every kernel without waiting (the sampled token
//! stays on the device and feeds the next pass's embedding), so the host only dispatches and
//! the profiler waits once per pass. With `--checksums`, each kernel's output is read back
//! after it runs (a wait per kernel) and checksummed like the CPU demo's.

use std::ffi::c_void;
use std::ptr;

use brickprof::roofline::device::DeviceReport;
use brickprof::{
    timeline::{OpenClDevice, OpenClTimeline},
    BrickId, BrickProfiler, Error, ProfilerConfig, Result, Timeline, Work,
};
use opencl3::error_codes::{error_text, ClError};
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, ClMem, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE};
use opencl3::program::Program;
use opencl3::types::{cl_mem, CL_BLOCKING};

use super::model::{Model, ModelConfig, SplitMix, PREFILL_CHUNK};
use super::options::{DemoOptions, Prefill};
use super::outcome::{write_traces, DemoRun};

const SOURCE: &str = include_str!("opencl.cl");

/// Work-group size of the RMSNorm reduction (a power of two).
const NORM_GROUP: usize = 64;

/// An [`Error::OpenCl`] for a failed call of the demo's own (engine-side) OpenCL work.
fn cl(call: &'static str) -> impl Fn(ClError) -> Error {
    move |e| Error::OpenCl {
        call,
        code: e.0,
        message: error_text(e.0).to_string(),
    }
}

/// A kernel argument.
#[derive(Clone, Copy)]
enum Arg {
    Mem(cl_mem),
    Int(i32),
    Float(f32),
    Local(usize),
}

fn int(n: usize) -> Arg {
    Arg::Int(n as i32)
}

fn mem(b: &Buffer<f32>) -> Arg {
    Arg::Mem(b.get())
}

fn mem_i(b: &Buffer<i32>) -> Arg {
    Arg::Mem(b.get())
}

struct Kernels {
    embedding: Kernel,
    rms_norm: Kernel,
    matmul: Kernel,
    rope: Kernel,
    scores: Kernel,
    softmax: Kernel,
    attention_output: Kernel,
    add_into: Kernel,
    swiglu: Kernel,
    argmax: Kernel,
}

struct LayerBuffers {
    attn_norm: Buffer<f32>,
    wqkv: Buffer<f32>,
    wo: Buffer<f32>,
    ffn_norm: Buffer<f32>,
    w_gate: Buffer<f32>,
    w_up: Buffer<f32>,
    w_down: Buffer<f32>,
}

/// Activations and the KV cache on the device.
struct Activations {
    x: Buffer<f32>,
    xn: Buffer<f32>,
    qkv: Buffer<f32>,
    scores: Buffer<f32>,
    att: Buffer<f32>,
    proj: Buffer<f32>,
    gate: Buffer<f32>,
    up: Buffer<f32>,
    down: Buffer<f32>,
    logits: Buffer<f32>,
    k_cache: Buffer<f32>,
    v_cache: Buffer<f32>,
    next: Buffer<i32>,
    next_f: Buffer<f32>,
    /// The prompt's tokens.
    prompt: Buffer<i32>,
}

/// The model on an OpenCL device. Field order is drop order: everything before the device.
struct DeviceModel {
    cfg: ModelConfig,
    /// Rows of the activations: the most tokens one forward call takes.
    batch: usize,
    kernels: Kernels,
    layers: Vec<LayerBuffers>,
    embed: Buffer<f32>,
    final_norm: Buffer<f32>,
    lm_head: Buffer<f32>,
    act: Activations,
    _program: Program,
    device: OpenClDevice,
}

fn upload(device: &OpenClDevice, data: &[f32]) -> Result<Buffer<f32>> {
    // SAFETY: the host pointer is read (copied) during the call only.
    unsafe {
        Buffer::<f32>::create(
            &device.context,
            CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
            data.len(),
            data.as_ptr() as *mut c_void,
        )
    }
    .map_err(cl("clCreateBuffer"))
}

fn scratch<T>(device: &OpenClDevice, len: usize) -> Result<Buffer<T>> {
    // SAFETY: no host pointer.
    unsafe {
        Buffer::<T>::create(
            &device.context,
            CL_MEM_READ_WRITE,
            len.max(1),
            ptr::null_mut(),
        )
    }
    .map_err(cl("clCreateBuffer"))
}

impl DeviceModel {
    /// Build the kernels and upload the weights and the prompt (once), with activations for
    /// batches of up to `batch` tokens.
    fn new(device: OpenClDevice, model: &Model, prompt: &[usize], batch: usize) -> Result<Self> {
        let c = model.cfg;
        let b = batch.max(1);
        let program =
            Program::create_and_build_from_source(&device.context, SOURCE, "").map_err(|log| {
                Error::OpenCl {
                    call: "clBuildProgram",
                    code: -11,
                    message: format!("the demo's kernels did not build: {log}"),
                }
            })?;
        let k = |name: &str| Kernel::create(&program, name).map_err(cl("clCreateKernel"));
        let kernels = Kernels {
            embedding: k("embedding")?,
            rms_norm: k("rms_norm")?,
            matmul: k("matmul")?,
            rope: k("rope")?,
            scores: k("attention_scores")?,
            softmax: k("softmax_rows")?,
            attention_output: k("attention_output")?,
            add_into: k("add_into")?,
            swiglu: k("swiglu")?,
            argmax: k("argmax")?,
        };
        let layers = model
            .layers
            .iter()
            .map(|w| {
                Ok(LayerBuffers {
                    attn_norm: upload(&device, &w.attn_norm)?,
                    wqkv: upload(&device, &w.wqkv)?,
                    wo: upload(&device, &w.wo)?,
                    ffn_norm: upload(&device, &w.ffn_norm)?,
                    w_gate: upload(&device, &w.w_gate)?,
                    w_up: upload(&device, &w.w_up)?,
                    w_down: upload(&device, &w.w_down)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let (h, cache) = (c.hidden, c.layers * c.max_seq * c.hidden);
        let tokens: Vec<i32> = prompt.iter().map(|&t| t as i32).collect();
        // SAFETY: the host pointer is read (copied) during the call only.
        let prompt = unsafe {
            Buffer::<i32>::create(
                &device.context,
                CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                tokens.len().max(1),
                tokens.as_ptr() as *mut c_void,
            )
        }
        .map_err(cl("clCreateBuffer"))?;
        let act = Activations {
            x: scratch(&device, b * h)?,
            xn: scratch(&device, b * h)?,
            qkv: scratch(&device, b * 3 * h)?,
            scores: scratch(&device, c.heads * b * c.max_seq)?,
            att: scratch(&device, b * h)?,
            proj: scratch(&device, b * h)?,
            gate: scratch(&device, b * c.ffn)?,
            up: scratch(&device, b * c.ffn)?,
            down: scratch(&device, b * h)?,
            logits: scratch(&device, c.vocab)?,
            k_cache: scratch(&device, cache)?,
            v_cache: scratch(&device, cache)?,
            next: scratch(&device, 1)?,
            next_f: scratch(&device, 1)?,
            prompt,
        };
        Ok(DeviceModel {
            cfg: c,
            batch: b,
            kernels,
            layers,
            embed: upload(&device, &model.embed)?,
            final_norm: upload(&device, &model.final_norm)?,
            lm_head: upload(&device, &model.lm_head)?,
            act,
            _program: program,
            device,
        })
    }

    /// Set `args` and enqueue `kernel` over `global` work items (no wait).
    fn enqueue(&self, kernel: &Kernel, args: &[Arg], global: usize, local: Option<usize>) {
        let r = (|| {
            for (i, a) in args.iter().enumerate() {
                let i = i as u32;
                // SAFETY: each argument's type matches the kernel's parameter (opencl_model.cl).
                unsafe {
                    match *a {
                        Arg::Mem(m) => kernel.set_arg(i, &m),
                        Arg::Int(v) => kernel.set_arg(i, &v),
                        Arg::Float(v) => kernel.set_arg(i, &v),
                        Arg::Local(bytes) => kernel.set_arg_local_buffer(i, bytes),
                    }?;
                }
            }
            let global = [global];
            let local = local.map(|l| [l]);
            // SAFETY: work sizes are valid for the duration of the call; buffers live in self.
            unsafe {
                self.device.queue.enqueue_nd_range_kernel(
                    kernel.get(),
                    1,
                    ptr::null(),
                    global.as_ptr(),
                    local.as_ref().map_or(ptr::null(), |l| l.as_ptr()),
                    &[],
                )
            }
            .map(drop)
        })();
        // A failed launch surfaces at the next sync as an error of earlier asynchronous work;
        // report it here too, with the kernel, since the demo has nothing else to do with it.
        if let Err(e) = r {
            crate::output::note(&format!(
                "brickprof demo: enqueueing a kernel failed: {}",
                error_text(e.0)
            ));
        }
    }
}

/// Runs one brick: marks, enqueues, and (with checksums) reads its output back.
struct Pass<'a> {
    m: &'a DeviceModel,
    prof: &'a mut BrickProfiler<OpenClTimeline>,
    checksums: bool,
    host: Vec<f32>,
    error: Option<Error>,
}

impl Pass<'_> {
    #[allow(clippy::too_many_arguments)]
    fn brick(
        &mut self,
        layer: Option<usize>,
        brick: BrickId,
        work: Work,
        kernel: &Kernel,
        args: &[Arg],
        global: usize,
        local: Option<usize>,
        out: (&Buffer<f32>, usize),
    ) {
        let t = self.prof.start_brick(brick);
        self.m.enqueue(kernel, args, global, local);
        self.prof.stop_brick_with(t, work);
        if self.checksums {
            let data = &mut self.host[..out.1];
            // SAFETY: a blocking read into a host slice of the buffer's length or less.
            let read = unsafe {
                self.m
                    .device
                    .queue
                    .enqueue_read_buffer(out.0, CL_BLOCKING, 0, data, &[])
            };
            match read {
                Ok(_) => self.prof.checksums().record(layer, brick, data),
                Err(e) => {
                    self.error
                        .get_or_insert_with(|| cl("clEnqueueReadBuffer")(e));
                }
            }
        }
    }

    /// `out = x wᵀ` as `brick` for `t` tokens (`rows` outputs of `k` inputs each).
    #[allow(clippy::too_many_arguments)]
    fn matmul(
        &mut self,
        layer: Option<usize>,
        brick: BrickId,
        t: usize,
        out: &Buffer<f32>,
        w: &Buffer<f32>,
        x: &Buffer<f32>,
        rows: usize,
        k: usize,
    ) {
        let args = [mem(out), mem(w), mem(x), int(k), int(rows)];
        let work = self.m.cfg.work(brick, t, 0);
        self.brick(
            layer,
            brick,
            work,
            &self.m.kernels.matmul,
            &args,
            t * rows,
            None,
            (out, t * rows),
        );
    }

    /// `xn = rms_norm(x) * w` for `t` rows of `x` from row `first`.
    fn norm(&mut self, layer: Option<usize>, w: &Buffer<f32>, t: usize, first: usize) {
        let (a, h) = (&self.m.act, self.m.cfg.hidden);
        let args = [
            mem(&a.xn),
            mem(&a.x),
            mem(w),
            int(h),
            Arg::Local(NORM_GROUP * 4),
            int(first),
        ];
        let (b, group) = (BrickId::RmsNorm, Some(NORM_GROUP));
        let work = self.m.cfg.work(b, t, 0);
        let kernel = &self.m.kernels.rms_norm;
        let global = t * NORM_GROUP;
        self.brick(layer, b, work, kernel, &args, global, group, (&a.xn, t * h));
    }

    /// An element-wise kernel over `n` items of each of `t` rows writing `out` (residual add,
    /// SwiGLU).
    #[allow(clippy::too_many_arguments)]
    fn elementwise(
        &mut self,
        layer: Option<usize>,
        brick: BrickId,
        t: usize,
        kernel: &Kernel,
        out: &Buffer<f32>,
        y: &Buffer<f32>,
        n: usize,
    ) {
        let work = self.m.cfg.work(brick, t, 0);
        self.brick(
            layer,
            brick,
            work,
            kernel,
            &[mem(out), mem(y)],
            t * n,
            None,
            (out, t * n),
        );
    }

    /// `t` tokens at positions `pos, pos + 1, ...` through the model as one batch (each brick
    /// one call over all of them, as [`Model::forward`] on the CPU): the prompt's tokens from
    /// `Some(first)`, or (`None`, one token) the token the previous pass sampled. The final
    /// norm, LM head and sampling on the last token only.
    fn forward(&mut self, first: Option<usize>, t: usize, pos: usize) {
        let m = self.m;
        let (c, k, a) = (m.cfg, &m.kernels, &m.act);
        let (h, f) = (c.hidden, c.ffn);
        let t = t.clamp(1, m.batch);
        self.embed(first, t, pos);
        for (l, w) in m.layers.iter().enumerate() {
            let ly = Some(l);
            self.prof.begin_layer(l);
            self.norm(ly, &w.attn_norm, t, 0);
            let b = BrickId::QkvProjection;
            self.matmul(ly, b, t, &a.qkv, &w.wqkv, &a.xn, 3 * h, h);
            self.attention(l, t, pos);
            let b = BrickId::OutputProjection;
            self.matmul(ly, b, t, &a.proj, &w.wo, &a.att, h, h);
            let b = BrickId::ResidualAdd;
            self.elementwise(ly, b, t, &k.add_into, &a.x, &a.proj, h);
            self.norm(ly, &w.ffn_norm, t, 0);
            let b = BrickId::GateProjection;
            self.matmul(ly, b, t, &a.gate, &w.w_gate, &a.xn, f, h);
            let b = BrickId::UpProjection;
            self.matmul(ly, b, t, &a.up, &w.w_up, &a.xn, f, h);
            let b = BrickId::Activation;
            self.elementwise(ly, b, t, &k.swiglu, &a.gate, &a.up, f);
            let b = BrickId::DownProjection;
            self.matmul(ly, b, t, &a.down, &w.w_down, &a.gate, h, f);
            let b = BrickId::ResidualAdd;
            self.elementwise(ly, b, t, &k.add_into, &a.x, &a.down, h);
            self.prof.end_layer();
        }
        self.head(t, pos);
    }

    /// The embedding of the pass's `t` tokens (see [`Self::forward`]).
    fn embed(&mut self, first: Option<usize>, t: usize, pos: usize) {
        let m = self.m;
        let (c, k, a) = (m.cfg, &m.kernels, &m.act);
        let h = c.hidden;
        let b = BrickId::Embedding;
        let tokens = match first {
            Some(_) => mem_i(&m.act.prompt),
            None => mem_i(&a.next),
        };
        let args = [
            mem(&a.x),
            mem(&m.embed),
            tokens,
            int(first.unwrap_or(0)),
            int(c.vocab),
            int(h),
        ];
        self.brick(
            None,
            b,
            c.work(b, t, pos),
            &k.embedding,
            &args,
            t * h,
            None,
            (&a.x, t * h),
        );
    }

    /// Layer `l`'s rotary embedding (keys and values into the cache) and attention: scores,
    /// softmax and the weighted values.
    fn attention(&mut self, l: usize, t: usize, pos: usize) {
        let m = self.m;
        let (c, k, a) = (m.cfg, &m.kernels, &m.act);
        let (h, heads) = (c.hidden, c.heads);
        let hd = h / heads;
        let last = c.max_seq - 1;
        // Score rows over the positions attended, and the positions of the last token's row.
        let scored = heads * c.attended(t, pos);
        let ctx = (pos + t - 1).min(last) + 1;
        let (ly, cache) = (Some(l), l * c.max_seq * h);
        let b = BrickId::RopeEmbedding;
        let (kc, vc) = (mem(&a.k_cache), mem(&a.v_cache));
        let at = [int(pos), int(last)];
        let args = [
            mem(&a.qkv),
            kc,
            vc,
            int(h),
            int(hd),
            at[0],
            at[1],
            int(cache),
        ];
        let roped = (t - 1) * 3 * h + 2 * h;
        self.brick(
            ly,
            b,
            c.work(b, t, pos),
            &k.rope,
            &args,
            t * h / 2,
            None,
            (&a.qkv, roped),
        );

        let b = BrickId::AttentionScore;
        let scale = Arg::Float(1.0 / (hd as f32).sqrt());
        let (q, s) = (mem(&a.qkv), mem(&a.scores));
        let args = [
            s,
            q,
            kc,
            int(cache),
            int(h),
            int(hd),
            at[0],
            at[1],
            int(ctx),
            scale,
        ];
        // Work-groups of one position's heads: a fixed local size, so the driver does not
        // specialize (compile) the kernel again for every sequence length.
        let group = Some(heads);
        self.brick(
            ly,
            b,
            c.work(b, t, pos),
            &k.scores,
            &args,
            t * ctx * heads,
            group,
            (&a.scores, scored),
        );

        let b = BrickId::AttentionSoftmax;
        let args = [s, int(heads), at[0], at[1]];
        self.brick(
            ly,
            b,
            c.work(b, t, pos),
            &k.softmax,
            &args,
            t * heads,
            None,
            (&a.scores, scored),
        );

        let b = BrickId::AttentionOutput;
        let args = [
            mem(&a.att),
            s,
            vc,
            int(cache),
            int(h),
            int(hd),
            at[0],
            at[1],
        ];
        let kernel = &k.attention_output;
        let out = (&a.att, t * h);
        self.brick(ly, b, c.work(b, t, pos), kernel, &args, t * h, None, out);
    }

    /// The final norm, LM head and sampling, on the last of the `t` tokens.
    fn head(&mut self, t: usize, pos: usize) {
        let m = self.m;
        let (c, k, a) = (m.cfg, &m.kernels, &m.act);
        let h = c.hidden;
        // The last token only from here on.
        self.norm(None, &m.final_norm, 1, t - 1);
        let b = BrickId::LmHead;
        self.matmul(None, b, 1, &a.logits, &m.lm_head, &a.xn, c.vocab, h);
        let b = BrickId::Sampling;
        let args = [mem(&a.logits), int(c.vocab), mem_i(&a.next), mem(&a.next_f)];
        self.brick(
            None,
            b,
            c.work(b, 1, pos),
            &k.argmax,
            &args,
            1,
            None,
            (&a.next_f, 1),
        );
    }
}

/// Read the token the last pass sampled (after the pass's sync: no extra wait).
fn sampled(m: &DeviceModel) -> Result<usize> {
    let mut next = [0i32];
    // SAFETY: a blocking read of one int into a one-int slice.
    unsafe {
        m.device
            .queue
            .enqueue_read_buffer(&m.act.next, CL_BLOCKING, 0, &mut next, &[])
    }
    .map_err(cl("clEnqueueReadBuffer"))?;
    Ok(next[0].max(0) as usize)
}

/// What the device reports about its compute (spec/work-accounting.md "Device peaks"): OpenCL
/// does not report FMA units, so FLOPs per unit per cycle are its preferred float vector width
/// × 2 (one FMA per lane per cycle: a lower guess).
fn device_report(device: &OpenClDevice) -> DeviceReport {
    let d = &device.device;
    DeviceReport {
        name: device.name.clone(),
        compute_units: d.max_compute_units().ok(),
        clock_mhz: d.max_clock_frequency().ok(),
        flops_per_cu_cycle: d
            .max_preferred_vector_width_float()
            .ok()
            .map(|w| 2 * w.max(1)),
        ..DeviceReport::default()
    }
}

/// Run the demo on the first OpenCL device.
pub fn run(opts: &DemoOptions, config: ProfilerConfig) -> Result<DemoRun> {
    if opts.perturb.is_some() || opts.nan.is_some() {
        return Err(Error::invalid_value(
            "option for --timeline opencl",
            if opts.perturb.is_some() {
                "--perturb"
            } else {
                "--nan"
            },
            "--perturb and --nan change the CPU kernels' outputs; they are not available with \
             --timeline opencl",
        ));
    }
    let device = OpenClDevice::first()?;
    let name = device.name.clone();
    let report = device_report(&device);
    let timeline = OpenClTimeline::new(&device.queue, config.pending_capacity)?;
    let resolution = timeline.resolution_ns();
    let cfg = ModelConfig {
        layers: opts.layers,
        max_seq: (opts.prompt + opts.tokens).max(1),
        ..ModelConfig::default()
    };
    let model = Model::new(cfg, opts.seed);
    let mut rng = SplitMix::new(opts.seed ^ 0xB41C);
    let prompt: Vec<usize> = (0..opts.prompt.max(1))
        .map(|_| (rng.next_u64() % cfg.vocab as u64) as usize)
        .collect();
    let batch = match opts.prefill {
        Prefill::Batched => prompt.len().min(PREFILL_CHUNK),
        Prefill::PerToken => 1,
    }
    .max(1);
    let m = DeviceModel::new(device, &model, &prompt, batch)?;
    drop(model);
    let largest = [
        batch * cfg.ffn,
        batch * 3 * cfg.hidden,
        cfg.vocab,
        cfg.heads * batch * cfg.max_seq,
    ]
    .into_iter()
    .max()
    .unwrap_or(1);
    let mut prof = BrickProfiler::with_timeline(config, timeline)?;
    let mut pass = Pass {
        m: &m,
        prof: &mut prof,
        checksums: opts.checksums,
        host: vec![0.0; largest],
        error: None,
    };

    let mut generated = Vec::with_capacity(opts.tokens);
    pass.prof.begin_pass();
    if let Some(shape) = super::cpu::prompt_shape(prompt.len()) {
        pass.prof.set_pass_shape(shape);
    }
    // The prompt as one batch a chunk (or a token, `--prefill per-token`).
    for first in (0..prompt.len()).step_by(batch) {
        pass.forward(Some(first), batch.min(prompt.len() - first), first);
    }
    pass.prof.end_pass(prompt.len() as u64)?;
    let mut next = sampled(&m)?;
    for i in 0..opts.tokens {
        generated.push(next);
        // No begin_pass here: a decode pass runs from the previous end_pass, so it includes
        // reading the sampled token back, the wait an engine makes each step. (In the Lagged
        // mode that read is the only wait; starting the pass after it would count enqueueing
        // alone and overstate tokens/s.) Its shape: one token, attending everything so far.
        pass.prof
            .set_pass_shape(super::cpu::decode_shape(prompt.len() + i)?);
        pass.forward(None, 1, prompt.len() + i);
        pass.prof.end_pass(1)?;
        next = sampled(&m)?;
    }
    if let Some(e) = pass.error.take() {
        return Err(e);
    }

    let device_line = format!("OpenCL device: {name} (timer resolution {resolution} ns)");
    finish(opts, prof, &report, device_line, generated)
}

/// The run's profile, traces and notes, once its passes are done.
fn finish(
    opts: &DemoOptions,
    mut prof: BrickProfiler<OpenClTimeline>,
    report: &DeviceReport,
    device_line: String,
    generated: Vec<usize>,
) -> Result<DemoRun> {
    prof.finalize()?; // passes still in flight (Lagged mode)
    let (mut device_ns, mut host_ns) = (0u64, 0u64);
    for h in prof.view().registry.handles() {
        let s = prof.view().brick_stats(h);
        device_ns += s.summary().self_ns;
        host_ns += s.summary().host_total_ns;
    }
    let passes = prof.view().counters.passes.max(1) as f64;
    let waits_line = format!(
        "{} waits for {} passes, {} blocking waits",
        prof.timeline().counts().syncs,
        prof.view().counters.passes + prof.view().counters.warmup_passes_excluded,
        prof.view().counters.blocking_waits,
    );
    let time_line = format!(
        "device time {:.3} ms/pass, host dispatch time {:.3} ms/pass ({:.1}% of device time)",
        device_ns as f64 / passes / 1e6,
        host_ns as f64 / passes / 1e6,
        100.0 * host_ns as f64 / device_ns.max(1) as f64,
    );
    let captures =
        (!prof.view().capture_plan.kernels.is_empty()).then(|| prof.checksums().take_captures());
    let mut profile = prof.profile();
    profile.meta.peaks = match &opts.peaks {
        Some(p) => Some(p.clone()),
        // Compute from what the device reports (compute units × clock × float vector width ×
        // 2); what it does not report (memory bandwidth) from this CPU's measured peaks (PoCL
        // runs on this CPU; on another device pass --peaks), the name saying whose is whose.
        None => {
            let measured = brickprof::roofline::measure_cpu_peaks()
                .ok()
                .map(|m| m.peaks);
            report.peaks(measured.as_ref()).ok().flatten()
        }
    };
    let traces = write_traces(opts, &prof)?;
    Ok(DemoRun {
        profile,
        traces,
        generated,
        notes: vec![device_line, time_line, waits_line],
        cpu_peaks: None,
        captures,
    })
}
