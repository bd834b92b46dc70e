//! The lines README.md shows, run on tiny candle models built in memory (no download):
//! - no code change: candle-transformers' own quantized Llama, from a 2-layer GGUF written
//!   here, under `BrickLayer` with `span_map()` and each pass in a `Pass::span`;
//! - explicit bricks: a 2-layer model on candle ops (RmsNorm, Linear, SiLU, residual add),
//!   each op a `brick`, each pass between `Pass::begin` and `Pass::end`, each output's
//!   `record_checksum`.
//!
//! Both assert per-brick rows in every layer and phase, and the passes of each phase; the
//! explicit one also its checksums. One test in this binary uses the thread-local profiler.

use std::collections::BTreeSet;
use std::io::Cursor;

use brickprof::profile::RowKey;
use brickprof::tracing_layer::BrickLayer;
use brickprof::{
    checksum::ChecksumLog, thread as bp, BrickId, BrickProfiler, Phase, Profile, ProfilerConfig,
};
use brickprof_candle::{brick, record_checksum, span_map, Pass};
use candle_core::quantized::gguf_file::{self, Content, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Module, Tensor, D};
use candle_nn::ops::rms_norm;
use candle_nn::Linear;
use candle_transformers::models::quantized_llama::ModelWeights;
use tracing_subscriber::layer::SubscriberExt;

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

const LAYERS: usize = 2;
const HIDDEN: usize = 8;
const FFN: usize = 16;
const VOCAB: usize = 16;

/// A deterministic weight of `shape`: sines of a scaled index, `seed` apart.
fn weight(shape: &[usize], seed: f64) -> candle_core::Result<Tensor> {
    let n: usize = shape.iter().product();
    let i = Tensor::arange(0u32, n as u32, &Device::Cpu)?.to_dtype(DType::F32)?;
    (i * 0.37)?.affine(1.0, seed)?.sin()?.reshape(shape)
}

/// A 2-layer Llama (2 heads of 4, 1 KV head) as GGUF bytes, f32 weights.
fn tiny_llama_gguf() -> AnyResult<Vec<u8>> {
    let ones = |n: usize| Tensor::ones(n, DType::F32, &Device::Cpu);
    let mut tensors: Vec<(String, Tensor)> = vec![
        ("token_embd.weight".into(), weight(&[VOCAB, HIDDEN], 0.1)?),
        ("output_norm.weight".into(), ones(HIDDEN)?),
        ("output.weight".into(), weight(&[VOCAB, HIDDEN], 0.2)?),
    ];
    for l in 0..LAYERS {
        let s = l as f64;
        for (name, shape) in [
            ("attn_q", [HIDDEN, HIDDEN]),
            ("attn_k", [4, HIDDEN]),
            ("attn_v", [4, HIDDEN]),
            ("attn_output", [HIDDEN, HIDDEN]),
            ("ffn_gate", [FFN, HIDDEN]),
            ("ffn_up", [FFN, HIDDEN]),
            ("ffn_down", [HIDDEN, FFN]),
        ] {
            let seed = s + name.len() as f64 * 0.01;
            tensors.push((format!("blk.{l}.{name}.weight"), weight(&shape, seed)?));
        }
        tensors.push((format!("blk.{l}.attn_norm.weight"), ones(HIDDEN)?));
        tensors.push((format!("blk.{l}.ffn_norm.weight"), ones(HIDDEN)?));
    }
    let q: Vec<(String, QTensor)> = tensors
        .into_iter()
        .map(|(n, t)| Ok((n, QTensor::quantize(&t, GgmlDType::F32)?)))
        .collect::<candle_core::Result<_>>()?;
    let metadata = [
        ("general.architecture", Value::String("llama".into())),
        ("llama.attention.head_count", Value::U32(2)),
        ("llama.attention.head_count_kv", Value::U32(1)),
        ("llama.block_count", Value::U32(LAYERS as u32)),
        ("llama.embedding_length", Value::U32(HIDDEN as u32)),
        ("llama.rope.dimension_count", Value::U32(4)),
        ("llama.attention.layer_norm_rms_epsilon", Value::F32(1e-5)),
    ];
    let md: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (*k, v)).collect();
    let ts: Vec<(&str, &QTensor)> = q.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let mut bytes = Cursor::new(Vec::new());
    gguf_file::write(&mut bytes, &md, &ts)?;
    Ok(bytes.into_inner())
}

/// The layers each brick has rows in, per phase.
fn layers_of(p: &Profile, brick: &str, phase: Phase) -> BTreeSet<usize> {
    let b = p
        .brick(brick)
        .unwrap_or_else(|| panic!("no {brick} in the profile"));
    b.rows
        .iter()
        .filter(|r| r.phase == phase && r.stats.summary().count > 0)
        .filter_map(|r| match r.row {
            RowKey::Layer(l) => Some(l),
            _ => None,
        })
        .collect()
}

/// Whether `brick` has a row outside every layer (the model row) in `phase`.
fn in_model_row(p: &Profile, brick: &str, phase: Phase) -> bool {
    p.brick(brick).is_some_and(|b| {
        b.rows
            .iter()
            .any(|r| r.phase == phase && !matches!(r.row, RowKey::Layer(_)))
    })
}

/// The passes each phase holds.
fn passes(p: &Profile, phase: Phase) -> u64 {
    p.phase_passes
        .iter()
        .find(|pp| pp.phase == phase)
        .map_or(0, |pp| pp.stats.summary().count)
}

#[test]
fn candle_quantized_llama_under_brick_layer() -> AnyResult<()> {
    let gguf = tiny_llama_gguf()?;
    let mut file = Cursor::new(gguf);
    let prompt: Vec<u32> = vec![1, 5, 9, 3];

    // README "No code change": the subscriber first (candle binds its spans at load).
    bp::configure(ProfilerConfig::with_layers(LAYERS))?;
    bp::set_enabled(true);
    let subscriber = tracing_subscriber::registry().with(BrickLayer::new(span_map()));
    let _default = tracing::subscriber::set_default(subscriber);
    let content = Content::read(&mut file)?;
    let mut model = ModelWeights::from_gguf(content, &mut file, &Device::Cpu)?;

    let mut next = {
        let _pass = Pass::prefill(prompt.len(), 0)?.span().entered();
        let input = Tensor::new(prompt.as_slice(), &Device::Cpu)?.unsqueeze(0)?;
        let logits = model.forward(&input, 0)?;
        logits.squeeze(0)?.argmax(D::Minus1)?.to_scalar::<u32>()?
    };
    for cached in prompt.len()..prompt.len() + 3 {
        let _pass = Pass::decode(cached).span().entered();
        let input = Tensor::new(&[next], &Device::Cpu)?.unsqueeze(0)?;
        let logits = model.forward(&input, cached)?;
        next = logits.squeeze(0)?.argmax(D::Minus1)?.to_scalar::<u32>()?;
    }
    let profile = bp::collect()?;
    bp::set_enabled(false);

    assert_eq!(profile.meta.counters.passes, 4);
    assert_eq!(passes(&profile, Phase::Prefill), 1);
    assert_eq!(passes(&profile, Phase::Decode), 3);
    let every_layer: BTreeSet<usize> = (0..LAYERS).collect();
    for phase in [Phase::Prefill, Phase::Decode] {
        // Each qmatmul in its projection and layer, by creation order; the norms too.
        for brick in [
            "RmsNorm",
            "QkvProjection",
            "OutputProjection",
            "GateProjection",
            "UpProjection",
            "DownProjection",
            "RopeEmbedding",
            "Attention",
            "Mlp",
        ] {
            assert_eq!(
                layers_of(&profile, brick, phase),
                every_layer,
                "{brick} {phase}"
            );
        }
        // The final norm and the LM head are the model's, outside the layers.
        assert!(in_model_row(&profile, "RmsNorm", phase), "{phase}");
        assert!(in_model_row(&profile, "LmHead", phase), "{phase}");
        assert!(layers_of(&profile, "LmHead", phase).is_empty(), "{phase}");
    }
    // QKV: three qmatmuls a layer a pass.
    let qkv = profile.brick("QkvProjection").unwrap();
    let calls: u64 = qkv.rows.iter().map(|r| r.stats.summary().count).sum();
    assert_eq!(calls, 3 * LAYERS as u64 * 4);
    Ok(())
}

/// A 2-layer model on candle ops, every op a brick.
struct Tiny {
    layers: Vec<(Tensor, Linear, Linear)>,
}

impl Tiny {
    fn new() -> candle_core::Result<Tiny> {
        let layers = (0..LAYERS)
            .map(|l| {
                let s = l as f64;
                Ok((
                    Tensor::ones(HIDDEN, DType::F32, &Device::Cpu)?,
                    Linear::new(weight(&[FFN, HIDDEN], s)?, None),
                    Linear::new(weight(&[HIDDEN, FFN], s + 0.5)?, None),
                ))
            })
            .collect::<candle_core::Result<_>>()?;
        Ok(Tiny { layers })
    }

    /// README "Explicit bricks": one pass over `x` (tokens, hidden).
    fn forward(
        &self,
        prof: &mut BrickProfiler,
        mut x: Tensor,
        checksums: bool,
    ) -> AnyResult<Tensor> {
        for (l, (norm, up, down)) in self.layers.iter().enumerate() {
            prof.begin_layer(l);
            let h = brick(prof, BrickId::RmsNorm, || rms_norm(&x, norm, 1e-5))?;
            let u = brick(prof, BrickId::UpProjection, || up.forward(&h))?;
            let a = brick(prof, BrickId::Activation, || candle_nn::ops::silu(&u))?;
            let d = brick(prof, BrickId::DownProjection, || down.forward(&a))?;
            let y = brick(prof, BrickId::ResidualAdd, || &x + &d)?;
            if checksums {
                record_checksum(prof, Some(l), BrickId::RmsNorm, &h)?;
                record_checksum(prof, Some(l), BrickId::UpProjection, &u)?;
                record_checksum(prof, Some(l), BrickId::Activation, &a)?;
                record_checksum(prof, Some(l), BrickId::DownProjection, &d)?;
                record_checksum(prof, Some(l), BrickId::ResidualAdd, &y)?;
            }
            prof.end_layer();
            x = y;
        }
        Ok(x)
    }
}

/// README "Explicit bricks": a prompt of 3 tokens, then 2 decode steps; the profile, the
/// checksums and the outputs.
fn explicit_run() -> AnyResult<(Profile, ChecksumLog, Vec<Tensor>)> {
    let model = Tiny::new()?;
    let checksums = true;
    let mut outs = Vec::new();
    let x = weight(&[3, HIDDEN], 1.0)?;
    let mut prof = BrickProfiler::new(ProfilerConfig {
        layers: LAYERS,
        checksums: true,
        ..ProfilerConfig::default()
    })?;
    let pass = Pass::prefill(x.dim(0)?, 0)?; // the prompt's tokens, nothing cached
    pass.begin(&mut prof);
    let out = model.forward(&mut prof, x, checksums)?;
    pass.end(&mut prof)?;
    outs.push(out);
    for cached in 3..5 {
        let x = weight(&[1, HIDDEN], cached as f64)?;
        let pass = Pass::decode(cached);
        pass.begin(&mut prof);
        outs.push(model.forward(&mut prof, x, checksums)?);
        pass.end(&mut prof)?;
    }
    let profile = prof.profile();
    let log = prof.checksums().take_log();
    Ok((profile, log, outs))
}

#[test]
fn explicit_bricks_phases_and_checksums_on_candle_ops() -> AnyResult<()> {
    let (profile, log, outs) = explicit_run()?;
    assert_eq!(profile.meta.counters.passes, 3);
    assert_eq!(passes(&profile, Phase::Prefill), 1);
    assert_eq!(passes(&profile, Phase::Decode), 2);
    let every_layer: BTreeSet<usize> = (0..LAYERS).collect();
    let bricks = [
        "RmsNorm",
        "UpProjection",
        "Activation",
        "DownProjection",
        "ResidualAdd",
    ];
    for phase in [Phase::Prefill, Phase::Decode] {
        for b in bricks {
            assert_eq!(layers_of(&profile, b, phase), every_layer, "{b} {phase}");
        }
    }
    // The work is the output's elements: 3 tokens x FFN in the prompt's UpProjection.
    let up = profile.brick("UpProjection").unwrap();
    let prefill_up = up
        .rows
        .iter()
        .find(|r| r.phase == Phase::Prefill && r.row == RowKey::Layer(0))
        .unwrap();
    assert_eq!(prefill_up.stats.summary().work.elements, (3 * FFN) as u64);

    // A checksum per brick, layer and pass, of the f32 output, keyed by (pass, layer, brick).
    assert_eq!(log.entries.len(), bricks.len() * LAYERS * 3);
    let keys: BTreeSet<(u64, Option<u32>, String)> = log
        .entries
        .iter()
        .map(|e| (e.key.pass, e.key.layer, e.key.brick.clone()))
        .collect();
    assert_eq!(
        keys.len(),
        log.entries.len(),
        "one entry per (pass, layer, brick)"
    );
    assert!(log
        .entries
        .iter()
        .all(|e| e.dtype == Some(brickprof::checksum::DType::F32)));
    // The last layer's ResidualAdd of each pass is the model's output: its hash is brickprof's
    // checksum of the tensor's f32 values.
    for (pass, out) in outs.iter().enumerate() {
        let values = out.flatten_all()?.to_vec1::<f32>()?;
        let (hash, _) = brickprof::checksum::checksum(
            brickprof::checksum::Algorithm::default(),
            brickprof::checksum::Tensor::F32(&values),
        );
        let e = log
            .entries
            .iter()
            .find(|e| {
                e.key.pass == pass as u64
                    && e.key.layer == Some(LAYERS as u32 - 1)
                    && e.key.brick == "ResidualAdd"
            })
            .unwrap();
        assert_eq!(e.hash, hash, "pass {pass}");
    }
    // The same run again gives the same checksums.
    let (_, again, _) = explicit_run()?;
    let hashes = |l: &ChecksumLog| l.entries.iter().map(|e| e.hash).collect::<Vec<_>>();
    assert_eq!(hashes(&again), hashes(&log));
    Ok(())
}

#[test]
fn half_and_byte_tensors_are_checksummed_in_their_own_dtype() -> AnyResult<()> {
    use brickprof::checksum::DType as Recorded;
    let mut prof = BrickProfiler::new(ProfilerConfig {
        checksums: true,
        ..ProfilerConfig::default()
    })?;
    let x = weight(&[2, 3], 0.3)?;
    for t in [
        x.clone(),
        x.to_dtype(DType::F16)?,
        x.to_dtype(DType::BF16)?,
        x.affine(10.0, 10.0)?.to_dtype(DType::U8)?,
        x.to_dtype(DType::F64)?,
    ] {
        record_checksum(&mut prof, None, BrickId::LmHead, &t)?;
    }
    let dtypes: Vec<_> = prof
        .view()
        .checksum_log
        .entries
        .iter()
        .map(|e| e.dtype)
        .collect();
    assert_eq!(
        dtypes,
        [
            Recorded::F32,
            Recorded::F16,
            Recorded::Bf16,
            Recorded::U8,
            Recorded::F32
        ]
        .map(Some)
    );
    let hashes: Vec<u64> = prof
        .view()
        .checksum_log
        .entries
        .iter()
        .map(|e| e.hash)
        .collect();
    // f64 hashed as its f32 values: the f32 tensor's hash.
    assert_eq!(hashes[4], hashes[0]);
    assert_ne!(hashes[1], hashes[0]);
    // Checksums off: nothing recorded (and no error).
    prof.checksums().set_enabled(false);
    record_checksum(&mut prof, None, BrickId::LmHead, &x)?;
    assert_eq!(prof.view().checksum_log.entries.len(), 5);
    Ok(())
}

/// README.md's code is what these tests run: every code line of its `rust` blocks (comments,
/// imports and blank lines aside) is a line of this file.
#[test]
fn the_readme_shows_lines_these_tests_run() {
    let readme = include_str!("../README.md");
    let here: BTreeSet<&str> = include_str!("adapter.rs").lines().map(str::trim).collect();
    let mut in_rust = false;
    let mut checked = 0;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_rust = line == "```rust";
            continue;
        }
        let code = line.trim();
        // Imports aside: this file gathers them in its own way.
        if !in_rust || code.is_empty() || code.starts_with("//") || code.starts_with("use ") {
            continue;
        }
        assert!(
            here.contains(code),
            "README line not run by tests/adapter.rs: {code}"
        );
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} README code lines found");
}
