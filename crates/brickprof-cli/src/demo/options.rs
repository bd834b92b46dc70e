//! What `brickprof demo` is asked to run: [`DemoOptions`], the kernel and list arguments, and
//! the sizes the demo model accepts ([`check`]).

use std::path::PathBuf;

use brickprof::output::Output;
use brickprof::{roofline::DevicePeaks, timeline::TimelineKind, BrickId, Result, SyncMode};

use super::model::{LAYER_BRICKS, MODEL_BRICKS};

/// Options of `brickprof demo`.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    pub layers: usize,
    pub tokens: usize,
    pub prompt: usize,
    /// How the prompt runs in its prefill pass (`--prefill`).
    pub prefill: Prefill,
    pub seed: u64,
    /// The rank written into the profile and its traces (`--rank`).
    pub rank: u32,
    pub timeline: TimelineKind,
    pub sync_mode: SyncMode,
    pub warmup: u64,
    /// The run folder the run's files go to (`--out`; `None`: `--no-save`).
    pub out: Option<PathBuf>,
    pub checksums: bool,
    /// What to mark (every brick, layer boundaries, every Nth pass).
    pub sampling: brickprof::model::Sampling,
    /// Which kernels are checksummed, with which algorithm.
    pub checksum_plan: brickprof::profiler::ChecksumPlan,
    /// Add a tiny perturbation to this kernel's output (every pass).
    pub perturb: Option<KernelSpot>,
    /// Put a NaN into this kernel's output (every pass).
    pub nan: Option<KernelSpot>,
    /// Which kernels' whole outputs are captured (`--capture`, `--capture-passes`,
    /// `--capture-budget`).
    pub capture_plan: brickprof::capture::CapturePlan,
    /// Make this matrix-vector kernel's split-K reduction order vary from run to run.
    pub nondeterministic: Option<KernelSpot>,
    /// Stretch this kernel by a percentage of its own time (a planted slowdown).
    pub slow: Option<SlowSpot>,
    /// The seed of those orders (`None`: a new one each run).
    pub order_seed: Option<u64>,
    /// Noise on the simulated GPU (`--sim-jitter`): the run's speed and each launch's.
    pub sim_jitter: Option<SimJitter>,
    /// Device peaks for the roofline; `None`: measured (cpu) or the simulated GPU's (sim).
    pub peaks: Option<DevicePeaks>,
    /// Trace formats to write into `out` (`--trace-format`).
    pub trace_formats: Vec<&'static dyn Output>,
    /// The trace files the run writes, each with its format: in the run folder, once it is
    /// made ([`brickprof::io::RunFolder::path`]); empty: none.
    pub trace_files: Vec<(&'static dyn Output, PathBuf)>,
    /// Serve live metrics while generating for a while (`--serve`, `--duration`).
    pub serve: Option<ServeOptions>,
}

/// How the demo runs its prompt in the prefill pass (`--prefill`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Prefill {
    /// As an engine does: every brick one call over all the prompt's tokens (the projections
    /// matrix-matrix products, attention causal over the prompt; a prompt longer than
    /// [`super::model::PREFILL_CHUNK`] tokens in chunks of that many).
    #[default]
    Batched,
    /// One forward call a token, each brick a matrix-vector product as in decode (how the
    /// demo ran its prompt up to 0.3: checksum files recorded then compare with this).
    PerToken,
}

impl std::str::FromStr for Prefill {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "batched" => Ok(Prefill::Batched),
            "per-token" => Ok(Prefill::PerToken),
            _ => Err("expected batched or per-token".to_string()),
        }
    }
}

/// `--serve ADDR --duration SECS [--serve-layer-labels] [--linger SECS]`.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where to listen.
    pub addr: String,
    /// How long to keep generating.
    pub duration: std::time::Duration,
    /// Label series with their layer too.
    pub layer_labels: bool,
    /// How long to keep serving the final state once generation has stopped (`--linger`).
    pub linger: std::time::Duration,
}

/// A kernel of the demo model: a brick in a layer (`None`: outside the layers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSpot {
    pub layer: Option<usize>,
    pub brick: BrickId,
}

impl std::fmt::Display for KernelSpot {
    /// `2:AttentionSoftmax`, `model:LmHead`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.layer {
            Some(l) => write!(f, "{l}:{}", self.brick),
            None => write!(f, "model:{}", self.brick),
        }
    }
}

impl std::str::FromStr for KernelSpot {
    type Err = String;

    /// `LAYER:BRICK`, LAYER a number or `model` (outside the layers), e.g. `2:softmax`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let (layer, brick) = s
            .split_once(':')
            .ok_or_else(|| format!("{s:?} is not LAYER:BRICK (e.g. 2:softmax or model:lm_head)"))?;
        let layer =
            match layer.trim() {
                "model" | "none" | "-" => None,
                n => Some(n.parse::<usize>().map_err(|_| {
                    format!("layer {n:?} in {s:?} is neither a number nor \"model\"")
                })?),
            };
        let brick = brick.trim().parse::<BrickId>().map_err(|_| {
            format!(
                "unknown brick {brick:?} in {s:?}; bricks: {}",
                BrickId::ALL.map(BrickId::name).join(", ")
            )
        })?;
        Ok(KernelSpot { layer, brick })
    }
}

/// `--slow LAYER:BRICK:PCT`: one kernel stretched by `pct` percent of its own time
/// (spec/timing-verdicts.md "Measured rates").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowSpot {
    /// The kernel (with `every_layer`, its layer is 0: a placeholder that exists).
    pub spot: KernelSpot,
    /// `*:BRICK:PCT`: the brick in every layer.
    pub every_layer: bool,
    /// Percent of the kernel's own time added, in (0, 1000].
    pub pct: f64,
}

impl SlowSpot {
    /// The factor a kernel's time is multiplied by: `1 + pct/100`.
    pub fn factor(&self) -> f64 {
        1.0 + self.pct / 100.0
    }

    /// Whether the kernel at (`layer`, `brick`) is stretched.
    pub fn covers(&self, layer: Option<usize>, brick: BrickId) -> bool {
        brick == self.spot.brick
            && if self.every_layer {
                layer.is_some()
            } else {
                layer == self.spot.layer
            }
    }
}

impl std::str::FromStr for SlowSpot {
    type Err = String;

    /// `LAYER:BRICK:PCT`, e.g. `1:down_proj:10` or `model:lm_head:5%`; LAYER `*`: every layer.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let (spot, pct) = s
            .rsplit_once(':')
            .filter(|(spot, _)| spot.contains(':'))
            .ok_or_else(|| {
                format!("{s:?} is not LAYER:BRICK:PCT (e.g. 1:down_proj:10 or model:lm_head:5%)")
            })?;
        let every_layer = spot.trim_start().starts_with("*:");
        let spot: KernelSpot = if every_layer {
            format!("0:{}", &spot.trim_start()[2..]).parse()?
        } else {
            spot.parse()?
        };
        let text = pct.trim().trim_end_matches('%');
        let pct = text
            .parse::<f64>()
            .ok()
            .filter(|p| p.is_finite() && *p > 0.0 && *p <= 1000.0)
            .ok_or_else(|| {
                format!("slowdown {pct:?} in {s:?} is not a percentage above 0 and at most 1000")
            })?;
        Ok(SlowSpot {
            spot,
            every_layer,
            pct,
        })
    }
}

/// `--sim-jitter RUN[,KERNEL]`: noise on the simulated GPU, drawn from `--seed`
/// (spec/timing-verdicts.md "Measured rates"). Machine-wide: every kernel of the run is slower
/// or faster by one factor `1 + u·RUN/100` (`u` uniform in [−1, 1]), as a loaded machine, a
/// clock or a shared runner moves a whole run; per kernel: each launch further by up to
/// ±KERNEL %.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimJitter {
    /// Machine-wide, percent, in [0, 90].
    pub run_pct: f64,
    /// Per launch, percent, in [0, 90].
    pub kernel_pct: f64,
}

impl SimJitter {
    /// The run's speed factor from `seed`: `1 + u·run_pct/100`, `u` uniform in [−1, 1].
    pub fn run_factor(&self, seed: u64) -> f64 {
        // SplitMix64's finalizer of the seed (mixed with a constant so the weights' seed and
        // this draw differ), then a uniform in [−1, 1].
        let mut z = seed ^ 0x5349_4d4a_4954_5452; // "SIMJITTR"
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let u = (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
        1.0 + u * self.run_pct / 100.0
    }
}

impl std::str::FromStr for SimJitter {
    type Err = String;

    /// `RUN` or `RUN,KERNEL`, percentages, e.g. `15` or `15,5%`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let pct = |t: &str| {
            t.trim()
                .trim_end_matches('%')
                .parse::<f64>()
                .ok()
                .filter(|p| p.is_finite() && (0.0..=90.0).contains(p))
                .ok_or_else(|| {
                    format!("{s:?} is not RUN[,KERNEL], percentages from 0 to 90 (e.g. 15 or 15,5)")
                })
        };
        let (run, kernel) = s.split_once(',').unwrap_or((s, "0"));
        Ok(SimJitter {
            run_pct: pct(run)?,
            kernel_pct: pct(kernel)?,
        })
    }
}

/// `--checksum-layers`: layer numbers, and `model` for kernels outside the layers.
#[derive(Debug, Clone, Default)]
pub struct LayerList {
    /// The layers (`None`: every layer).
    pub layers: Option<Vec<usize>>,
    /// Whether `model` was listed.
    pub model: bool,
}

/// Parse `0,3,model`.
pub fn parse_layer_list(s: &str) -> std::result::Result<LayerList, String> {
    let mut out = LayerList {
        layers: Some(Vec::new()),
        model: false,
    };
    for item in s.split(',').map(str::trim) {
        match item {
            "model" => out.model = true,
            n => {
                out.layers
                    .get_or_insert_with(Vec::new)
                    .push(n.parse().map_err(|_| {
                        format!("{n:?} in {s:?} is neither a layer number nor \"model\"")
                    })?)
            }
        }
    }
    Ok(out)
}

/// `--checksum-bricks`: brick names.
#[derive(Debug, Clone)]
pub struct BrickList(pub Vec<String>);

/// Parse `qkv,down_proj` into brick names.
pub fn parse_brick_list(s: &str) -> std::result::Result<BrickList, String> {
    s.split(',')
        .map(|b| {
            b.trim()
                .parse::<BrickId>()
                .map(|id| id.name().to_string())
                .map_err(|_| {
                    format!(
                        "unknown brick {b:?} in {s:?}; bricks: {}",
                        BrickId::ALL.map(BrickId::name).join(", ")
                    )
                })
        })
        .collect::<std::result::Result<_, _>>()
        .map(BrickList)
}

/// `--capture`: kernel patterns.
#[derive(Debug, Clone)]
pub struct CaptureList(pub Vec<brickprof::capture::KernelPattern>);

/// `--capture-passes`: pass numbers.
#[derive(Debug, Clone)]
pub struct PassList(pub Vec<u64>);

/// `--capture`: kernel patterns whose bricks the demo model has.
pub fn parse_capture_list(s: &str) -> std::result::Result<CaptureList, String> {
    let patterns = s
        .split(',')
        .map(|p| p.trim().parse::<brickprof::capture::KernelPattern>())
        .collect::<std::result::Result<Vec<_>, String>>()?;
    for p in &patterns {
        if let Some(b) = p.brick.as_deref().filter(|b| b.parse::<BrickId>().is_err()) {
            return Err(format!(
                "unknown brick {b:?} in {s:?}; bricks: {}",
                BrickId::ALL.map(BrickId::name).join(", ")
            ));
        }
    }
    Ok(CaptureList(patterns))
}

/// Parse `0,5` (`--capture-passes`).
pub fn parse_pass_list(s: &str) -> std::result::Result<PassList, String> {
    s.split(',')
        .map(|p| {
            p.trim()
                .parse()
                .map_err(|_| format!("{p:?} in {s:?} is not a pass number"))
        })
        .collect::<std::result::Result<_, _>>()
        .map(PassList)
}

/// The bricks whose split-K order `--nondeterministic` can vary: the matrix-vector products.
pub const SPLIT_K_BRICKS: [BrickId; 6] = [
    BrickId::QkvProjection,
    BrickId::OutputProjection,
    BrickId::GateProjection,
    BrickId::UpProjection,
    BrickId::DownProjection,
    BrickId::LmHead,
];

/// Largest model the demo builds (each layer holds about 3 MiB of weights).
pub const MAX_LAYERS: usize = 64;
/// Longest sequence (prompt plus generated tokens) the demo runs.
pub const MAX_SEQ: usize = 8192;

/// Prompt plus generated tokens (`None` when the sum overflows).
pub fn seq_len(opts: &DemoOptions) -> Option<usize> {
    opts.prompt.checked_add(opts.tokens)
}

/// Reject sizes the demo model cannot run in reasonable time and memory. Every size product
/// in [`super::model`] (at most layers × max_seq × hidden = 64 × 8192 × 256 floats per cache) is
/// bounded by these checks, so none can overflow; the one sum of user sizes is checked.
pub fn check(opts: &DemoOptions) -> Result<()> {
    check_sizes(opts)?;
    check_listed_layers(opts)?;
    check_spot_bricks(opts)?;
    check_timelines(opts)?;
    check_spot_layers(opts)
}

/// The option, the value given, and what the demo model allows.
fn bad(what: &'static str, value: String, expected: String) -> Result<()> {
    Err(brickprof::Error::invalid_value(what, value, expected))
}

/// Layers, sequence length, and a server the timeline can feed.
fn check_sizes(opts: &DemoOptions) -> Result<()> {
    if opts.layers > MAX_LAYERS {
        return bad(
            "--layers",
            opts.layers.to_string(),
            format!("too many for the demo model (at most {MAX_LAYERS})"),
        );
    }
    if opts.serve.is_some() && opts.timeline == TimelineKind::OpenCl {
        return bad(
            "--serve with --timeline",
            opts.timeline.to_string(),
            "demo --serve runs the cpu, sim or hip timelines".to_string(),
        );
    }
    if seq_len(opts).is_none_or(|n| n > MAX_SEQ) {
        return bad(
            "--prompt plus --tokens",
            format!("{} + {}", opts.prompt, opts.tokens),
            format!("exceeds the demo's {MAX_SEQ}-token context"),
        );
    }
    Ok(())
}

/// Layers named by `--checksum-layers` and `--capture` exist.
fn check_listed_layers(opts: &DemoOptions) -> Result<()> {
    if let Some(l) = opts
        .checksum_plan
        .layers
        .iter()
        .flatten()
        .find(|&&l| l >= opts.layers)
    {
        return bad(
            "--checksum-layers layer",
            l.to_string(),
            format!(
                "layer {l} does not exist: the demo model has layers 0..{}",
                opts.layers
            ),
        );
    }
    if let Some(l) = opts
        .capture_plan
        .kernels
        .iter()
        .find_map(|k| match k.layer {
            brickprof::capture::LayerPattern::Layer(l) if l as usize >= opts.layers => Some(l),
            _ => None,
        })
    {
        return bad(
            "--capture layer",
            l.to_string(),
            format!(
                "layer {l} does not exist: the demo model has layers 0..{}",
                opts.layers
            ),
        );
    }
    Ok(())
}

/// Each spot names a kernel the model runs in its row.
fn check_spot_bricks(opts: &DemoOptions) -> Result<()> {
    // A spot must name a kernel the model runs in that row, or the option would silently do
    // nothing and a diff would say MATCH.
    for (flag, spot) in [
        ("--perturb", opts.perturb),
        ("--nan", opts.nan),
        ("--nondeterministic", opts.nondeterministic),
        ("--slow", opts.slow.map(|s| s.spot)),
    ] {
        let Some(spot) = spot else { continue };
        let (row, bricks) = match spot.layer {
            None => ("outside the layers (model)", &MODEL_BRICKS[..]),
            Some(_) => ("in a layer", &LAYER_BRICKS[..]),
        };
        if !bricks.contains(&spot.brick) {
            return bad(
                flag,
                spot.to_string(),
                format!(
                    "the demo model runs no {} {row}; its kernels there: {}",
                    spot.brick,
                    bricks
                        .iter()
                        .map(|b| b.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
    }
    Ok(())
}

/// Options that need a timeline: `--nondeterministic`, `--sim-jitter`, `--slow`.
fn check_timelines(opts: &DemoOptions) -> Result<()> {
    if let Some(spot) = opts.nondeterministic {
        if !SPLIT_K_BRICKS.contains(&spot.brick) {
            return bad(
                "--nondeterministic brick",
                spot.brick.to_string(),
                format!(
                    "only a matrix-vector brick has a split-K order ({})",
                    SPLIT_K_BRICKS.map(|b| b.name()).join(", ")
                ),
            );
        }
        if opts.timeline == TimelineKind::OpenCl {
            return bad(
                "--timeline with --nondeterministic",
                "opencl".into(),
                "--nondeterministic runs the CPU kernels: use --timeline cpu, sim or hip".into(),
            );
        }
    }
    if opts.sim_jitter.is_some() && opts.timeline != TimelineKind::Sim {
        return bad(
            "--timeline with --sim-jitter",
            opts.timeline.to_string(),
            "--sim-jitter adds noise to the simulated GPU: use --timeline sim".into(),
        );
    }
    if opts.slow.is_some() && opts.timeline == TimelineKind::OpenCl {
        return bad(
            "--timeline with --slow",
            "opencl".into(),
            "--slow stretches the CPU kernels (and the simulated GPU's): use --timeline cpu, \
             sim or hip"
                .into(),
        );
    }
    Ok(())
}

/// Each spot's layer exists.
fn check_spot_layers(opts: &DemoOptions) -> Result<()> {
    for spot in [
        opts.perturb,
        opts.nan,
        opts.nondeterministic,
        opts.slow.map(|s| s.spot),
    ]
    .into_iter()
    .flatten()
    {
        if let Some(l) = spot.layer.filter(|&l| l >= opts.layers) {
            return bad(
                "layer",
                format!("{l}:{}", spot.brick),
                format!(
                    "layer {l} does not exist: the demo model has layers 0..{}",
                    opts.layers
                ),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_and_pass_lists_parse() {
        // (the examples of brickprof::capture::parse_patterns and parse_passes, library
        // functions before 0.4.0)
        assert_eq!(parse_capture_list("2:*, model:lm_head").unwrap().0.len(), 2);
        assert!(parse_capture_list("2").is_err());
        assert_eq!(parse_pass_list("0, 5").unwrap().0, vec![0, 5]);
        assert!(parse_pass_list("0,x").is_err());
    }
}
