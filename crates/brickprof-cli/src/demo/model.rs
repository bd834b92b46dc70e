//! A tiny Llama-style transformer with real CPU kernels and deterministic seeded weights: the
//! workload of `brickprof demo`. Token embedding, RMSNorm, fused QKV projection, RoPE,
//! attention (scores, softmax, weighted sum) over a KV cache, output projection, SwiGLU FFN,
//! residual adds, LM head and greedy sampling.
//!
//! A forward call takes a batch of tokens, as an engine's does: one token for a decode step, the
//! prompt (or a chunk of it) for a prefill, every brick one call over all of them (the
//! projections matrix-matrix products, attention causal within the batch).
//!
//! The model knows nothing of profiling: every kernel is a plain function, and the forward pass
//! reports each brick to a [`Bricks`] observer, which the demo wires to the profiler.

use brickprof::{stats::TileLevel, BrickId, Work};

/// The bricks [`Model::forward`] runs outside the layers (the model row): a `--perturb`,
/// `--nan` or `--nondeterministic` spot outside the layers names one of these.
pub const MODEL_BRICKS: [BrickId; 4] = [
    BrickId::Embedding,
    BrickId::RmsNorm,
    BrickId::LmHead,
    BrickId::Sampling,
];

/// The bricks [`Model::forward`] runs in every layer.
pub const LAYER_BRICKS: [BrickId; 12] = [
    BrickId::RmsNorm,
    BrickId::QkvProjection,
    BrickId::RopeEmbedding,
    BrickId::AttentionScore,
    BrickId::AttentionSoftmax,
    BrickId::AttentionOutput,
    BrickId::OutputProjection,
    BrickId::ResidualAdd,
    BrickId::GateProjection,
    BrickId::UpProjection,
    BrickId::Activation,
    BrickId::DownProjection,
];

/// Shape of the model.
#[derive(Debug, Clone, Copy)]
pub struct ModelConfig {
    pub layers: usize,
    pub hidden: usize,
    pub heads: usize,
    pub ffn: usize,
    pub vocab: usize,
    pub max_seq: usize,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            layers: 4,
            hidden: 256,
            heads: 8,
            ffn: 688,
            vocab: 1024,
            max_seq: 512,
        }
    }
}

/// What the forward pass tells its observer around every brick.
pub trait Bricks {
    /// A brick is about to run.
    fn begin(&mut self, layer: Option<usize>, brick: BrickId);
    /// The brick finished: it did `work` and wrote `out`.
    fn end(&mut self, layer: Option<usize>, brick: BrickId, work: Work, out: &mut [f32]);
    /// Layer boundaries.
    fn layer(&mut self, layer: usize, entering: bool);
    /// A tile of the current brick starts.
    fn tile_begin(&mut self, level: TileLevel);
    /// The seed of a split-K reduction order for this matrix-vector brick, when its order is
    /// to vary (as split-K with atomics does); `None`: the fixed order.
    fn split_k(&mut self, _layer: Option<usize>, _brick: BrickId) -> Option<u64> {
        None
    }
    /// The tile finished, having done `work`.
    fn tile_end(&mut self, level: TileLevel, work: Work);
}

/// One layer's weights (row-major matrices).
pub struct LayerWeights {
    pub attn_norm: Vec<f32>,
    pub wqkv: Vec<f32>,
    pub wo: Vec<f32>,
    pub ffn_norm: Vec<f32>,
    pub w_gate: Vec<f32>,
    pub w_up: Vec<f32>,
    pub w_down: Vec<f32>,
}

/// The weights.
pub struct Model {
    pub cfg: ModelConfig,
    pub embed: Vec<f32>,
    pub layers: Vec<LayerWeights>,
    pub final_norm: Vec<f32>,
    pub lm_head: Vec<f32>,
}

/// Activations (one row per token of a batch) and the KV cache, allocated once.
pub struct State {
    /// Rows allocated: the most tokens one [`Model::forward`] call takes.
    batch: usize,
    x: Vec<f32>,
    xn: Vec<f32>,
    qkv: Vec<f32>,
    scores: Vec<f32>,
    att: Vec<f32>,
    proj: Vec<f32>,
    gate: Vec<f32>,
    up: Vec<f32>,
    down: Vec<f32>,
    logits: Vec<f32>,
    k_cache: Vec<f32>,
    v_cache: Vec<f32>,
    next: [f32; 1],
}

impl State {
    /// The most tokens one [`Model::forward`] call takes.
    pub fn batch(&self) -> usize {
        self.batch
    }
}

/// The most prompt tokens the demo runs as one batch (one call a brick): a longer prompt runs
/// in chunks of this many within its prefill pass, as engines do, so the attention scores of a
/// chunk stay bounded (heads x chunk x context).
pub const PREFILL_CHUNK: usize = 256;

/// SplitMix64: a tiny deterministic generator for the weights and the prompt.
pub struct SplitMix(u64);

impl SplitMix {
    pub fn new(seed: u64) -> Self {
        SplitMix(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    fn next_f32(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    fn matrix(&mut self, rows: usize, cols: usize) -> Vec<f32> {
        let scale = 1.0 / (cols as f32).sqrt();
        (0..rows * cols).map(|_| self.next_f32() * scale).collect()
    }

    fn norm_weights(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| 1.0 + 0.1 * self.next_f32()).collect()
    }
}

impl Model {
    pub fn new(cfg: ModelConfig, seed: u64) -> Model {
        let mut rng = SplitMix::new(seed);
        let (h, f) = (cfg.hidden, cfg.ffn);
        let embed = (0..cfg.vocab * h).map(|_| rng.next_f32()).collect();
        let layers = (0..cfg.layers)
            .map(|_| LayerWeights {
                attn_norm: rng.norm_weights(h),
                wqkv: rng.matrix(3 * h, h),
                wo: rng.matrix(h, h),
                ffn_norm: rng.norm_weights(h),
                w_gate: rng.matrix(f, h),
                w_up: rng.matrix(f, h),
                w_down: rng.matrix(h, f),
            })
            .collect();
        Model {
            cfg,
            embed,
            layers,
            final_norm: rng.norm_weights(h),
            lm_head: rng.matrix(cfg.vocab, h),
        }
    }

    /// Activations for batches of up to `batch` tokens (at least one), and the KV cache.
    pub fn state(&self, batch: usize) -> State {
        let c = &self.cfg;
        let b = batch.clamp(1, PREFILL_CHUNK);
        State {
            batch: b,
            x: vec![0.0; b * c.hidden],
            xn: vec![0.0; b * c.hidden],
            qkv: vec![0.0; b * 3 * c.hidden],
            scores: vec![0.0; c.heads * b * c.max_seq],
            att: vec![0.0; b * c.hidden],
            proj: vec![0.0; b * c.hidden],
            gate: vec![0.0; b * c.ffn],
            up: vec![0.0; b * c.ffn],
            down: vec![0.0; b * c.hidden],
            logits: vec![0.0; c.vocab],
            k_cache: vec![0.0; c.layers * c.max_seq * c.hidden],
            v_cache: vec![0.0; c.layers * c.max_seq * c.hidden],
            next: [0.0],
        }
    }

    /// Run `tokens` (at most [`State::batch`]; one for a decode step, a prompt's chunk for a
    /// prefill) at positions `pos, pos + 1, ...` through the model as one batch: every brick
    /// is one call over all of them (the projections matrix-matrix products, attention causal
    /// within the batch). The final norm, the LM head and sampling run on the last token only,
    /// as engines do. Returns the greedy next token after the last one.
    pub fn forward(
        &self,
        st: &mut State,
        tokens: &[usize],
        pos: usize,
        obs: &mut impl Bricks,
    ) -> usize {
        let tokens = &tokens[..tokens.len().min(st.batch)];
        let t = tokens.len().max(1);
        self.embed(st, tokens, pos, obs);
        for (l, w) in self.layers.iter().enumerate() {
            obs.layer(l, true);
            self.qkv_rope(l, w, st, t, pos, obs);
            self.attend(l, st, t, pos, obs);
            self.attention_out(l, w, st, t, pos, obs);
            self.feed_forward(l, w, st, t, pos, obs);
            obs.layer(l, false);
        }
        self.head(st, t, pos, obs)
    }

    /// The embedding of `tokens` into the activations.
    fn embed(&self, st: &mut State, tokens: &[usize], pos: usize, obs: &mut impl Bricks) {
        let c = self.cfg;
        let (h, t) = (c.hidden, tokens.len().max(1));
        let work = |brick| c.work(brick, t, pos);
        obs.begin(None, BrickId::Embedding);
        for (i, &token) in tokens.iter().enumerate() {
            let row = token % c.vocab;
            st.x[i * h..(i + 1) * h].copy_from_slice(&self.embed[row * h..(row + 1) * h]);
        }
        obs.end(
            None,
            BrickId::Embedding,
            work(BrickId::Embedding),
            &mut st.x[..t * h],
        );
    }

    /// A layer's attention norm, QKV projection and rotary embedding (the keys and values
    /// into the cache).
    fn qkv_rope(
        &self,
        l: usize,
        w: &LayerWeights,
        st: &mut State,
        t: usize,
        pos: usize,
        obs: &mut impl Bricks,
    ) {
        let c = self.cfg;
        let (h, hd, ly) = (c.hidden, c.hidden / c.heads, Some(l));
        let at = |i: usize| (pos + i).min(c.max_seq - 1);
        let work = |brick| c.work(brick, t, pos);
        obs.begin(ly, BrickId::RmsNorm);
        rms_norm_rows(&mut st.xn[..t * h], &st.x[..t * h], &w.attn_norm);
        obs.end(
            ly,
            BrickId::RmsNorm,
            work(BrickId::RmsNorm),
            &mut st.xn[..t * h],
        );

        obs.begin(ly, BrickId::QkvProjection);
        project(
            ly,
            BrickId::QkvProjection,
            t,
            &mut st.qkv[..t * 3 * h],
            &w.wqkv,
            &st.xn[..t * h],
            obs,
        );
        obs.end(
            ly,
            BrickId::QkvProjection,
            work(BrickId::QkvProjection),
            &mut st.qkv[..t * 3 * h],
        );

        obs.begin(ly, BrickId::RopeEmbedding);
        for (i, row) in st.qkv[..t * 3 * h].chunks_exact_mut(3 * h).enumerate() {
            let (q, kv) = row.split_at_mut(h);
            rope(q, hd, at(i));
            rope(&mut kv[..h], hd, at(i));
            let base = (l * c.max_seq + at(i)) * h;
            st.k_cache[base..base + h].copy_from_slice(&kv[..h]);
            st.v_cache[base..base + h].copy_from_slice(&kv[h..2 * h]);
        }
        // Its output: every token's rotated query and key (the values between them ride
        // along, untouched).
        let roped = (t - 1) * 3 * h + 2 * h;
        obs.end(
            ly,
            BrickId::RopeEmbedding,
            work(BrickId::RopeEmbedding),
            &mut st.qkv[..roped],
        );
    }

    /// A layer's attention proper: scores, softmax and the weighted values.
    fn attend(&self, l: usize, st: &mut State, t: usize, pos: usize, obs: &mut impl Bricks) {
        let c = self.cfg;
        let (h, heads, ly) = (c.hidden, c.heads, Some(l));
        let hd = h / heads;
        let at = |i: usize| (pos + i).min(c.max_seq - 1);
        let work = |brick| c.work(brick, t, pos);
        // Token i attends positions 0..=at(i) (causal); its scores sit after those of the
        // tokens before it, head by head.
        let cache = l * c.max_seq * h;
        let kc = &st.k_cache[cache..cache + c.max_seq * h];
        let vc = &st.v_cache[cache..cache + c.max_seq * h];
        let scale = 1.0 / (hd as f32).sqrt();
        // (offset of its scores, positions it attends) of token `i`.
        let row = |i: usize| (heads * c.attended(i, pos), at(i) + 1);
        let scored = heads * c.attended(t, pos);

        obs.begin(ly, BrickId::AttentionScore);
        for i in 0..t {
            let (off, seq) = row(i);
            let q = &st.qkv[i * 3 * h..i * 3 * h + h];
            for hh in 0..heads {
                let qh = &q[hh * hd..(hh + 1) * hd];
                let sc = &mut st.scores[off + hh * seq..off + (hh + 1) * seq];
                for (p, s) in sc.iter_mut().enumerate() {
                    *s = dot(qh, &kc[p * h + hh * hd..p * h + (hh + 1) * hd]) * scale;
                }
            }
        }
        obs.end(
            ly,
            BrickId::AttentionScore,
            work(BrickId::AttentionScore),
            &mut st.scores[..scored],
        );

        obs.begin(ly, BrickId::AttentionSoftmax);
        for (off, seq) in (0..t).map(row) {
            for hh in 0..heads {
                softmax(&mut st.scores[off + hh * seq..off + (hh + 1) * seq]);
            }
        }
        obs.end(
            ly,
            BrickId::AttentionSoftmax,
            work(BrickId::AttentionSoftmax),
            &mut st.scores[..scored],
        );

        obs.begin(ly, BrickId::AttentionOutput);
        st.att[..t * h].fill(0.0);
        for i in 0..t {
            let (off, seq) = row(i);
            for hh in 0..heads {
                let p = &st.scores[off + hh * seq..off + (hh + 1) * seq];
                let out = &mut st.att[i * h + hh * hd..i * h + (hh + 1) * hd];
                for (s, &pt) in p.iter().enumerate() {
                    let v = &vc[s * h + hh * hd..s * h + (hh + 1) * hd];
                    for (o, &vv) in out.iter_mut().zip(v) {
                        *o += pt * vv;
                    }
                }
            }
        }
        obs.end(
            ly,
            BrickId::AttentionOutput,
            work(BrickId::AttentionOutput),
            &mut st.att[..t * h],
        );
    }

    /// A layer's output projection and the residual add after it.
    fn attention_out(
        &self,
        l: usize,
        w: &LayerWeights,
        st: &mut State,
        t: usize,
        pos: usize,
        obs: &mut impl Bricks,
    ) {
        let c = self.cfg;
        let (h, ly) = (c.hidden, Some(l));
        let work = |brick| c.work(brick, t, pos);
        obs.begin(ly, BrickId::OutputProjection);
        project(
            ly,
            BrickId::OutputProjection,
            t,
            &mut st.proj[..t * h],
            &w.wo,
            &st.att[..t * h],
            obs,
        );
        obs.end(
            ly,
            BrickId::OutputProjection,
            work(BrickId::OutputProjection),
            &mut st.proj[..t * h],
        );

        obs.begin(ly, BrickId::ResidualAdd);
        add_into(&mut st.x[..t * h], &st.proj[..t * h]);
        obs.end(
            ly,
            BrickId::ResidualAdd,
            work(BrickId::ResidualAdd),
            &mut st.x[..t * h],
        );
    }

    /// A layer's feed-forward block: norm, gate and up projections, activation, down
    /// projection and the residual add.
    fn feed_forward(
        &self,
        l: usize,
        w: &LayerWeights,
        st: &mut State,
        t: usize,
        pos: usize,
        obs: &mut impl Bricks,
    ) {
        let c = self.cfg;
        let (h, f, ly) = (c.hidden, c.ffn, Some(l));
        let work = |brick| c.work(brick, t, pos);
        obs.begin(ly, BrickId::RmsNorm);
        rms_norm_rows(&mut st.xn[..t * h], &st.x[..t * h], &w.ffn_norm);
        obs.end(
            ly,
            BrickId::RmsNorm,
            work(BrickId::RmsNorm),
            &mut st.xn[..t * h],
        );

        obs.begin(ly, BrickId::GateProjection);
        project(
            ly,
            BrickId::GateProjection,
            t,
            &mut st.gate[..t * f],
            &w.w_gate,
            &st.xn[..t * h],
            obs,
        );
        obs.end(
            ly,
            BrickId::GateProjection,
            work(BrickId::GateProjection),
            &mut st.gate[..t * f],
        );

        obs.begin(ly, BrickId::UpProjection);
        project(
            ly,
            BrickId::UpProjection,
            t,
            &mut st.up[..t * f],
            &w.w_up,
            &st.xn[..t * h],
            obs,
        );
        obs.end(
            ly,
            BrickId::UpProjection,
            work(BrickId::UpProjection),
            &mut st.up[..t * f],
        );

        obs.begin(ly, BrickId::Activation);
        swiglu(&mut st.gate[..t * f], &st.up[..t * f]);
        obs.end(
            ly,
            BrickId::Activation,
            work(BrickId::Activation),
            &mut st.gate[..t * f],
        );

        obs.begin(ly, BrickId::DownProjection);
        project(
            ly,
            BrickId::DownProjection,
            t,
            &mut st.down[..t * h],
            &w.w_down,
            &st.gate[..t * f],
            obs,
        );
        obs.end(
            ly,
            BrickId::DownProjection,
            work(BrickId::DownProjection),
            &mut st.down[..t * h],
        );

        obs.begin(ly, BrickId::ResidualAdd);
        add_into(&mut st.x[..t * h], &st.down[..t * h]);
        obs.end(
            ly,
            BrickId::ResidualAdd,
            work(BrickId::ResidualAdd),
            &mut st.x[..t * h],
        );
    }

    /// The final norm, the LM head and sampling, on the last of the `t` tokens: the greedy
    /// next token.
    fn head(&self, st: &mut State, t: usize, pos: usize, obs: &mut impl Bricks) -> usize {
        let c = self.cfg;
        let h = c.hidden;
        // The last token only from here on: its logits are the ones sampled.
        let last = &st.x[(t - 1) * h..t * h];
        obs.begin(None, BrickId::RmsNorm);
        rms_norm(&mut st.xn[..h], last, &self.final_norm);
        obs.end(
            None,
            BrickId::RmsNorm,
            c.work(BrickId::RmsNorm, 1, pos),
            &mut st.xn[..h],
        );

        obs.begin(None, BrickId::LmHead);
        project(
            None,
            BrickId::LmHead,
            1,
            &mut st.logits,
            &self.lm_head,
            &st.xn[..h],
            obs,
        );
        obs.end(
            None,
            BrickId::LmHead,
            c.work(BrickId::LmHead, 1, pos),
            &mut st.logits,
        );

        obs.begin(None, BrickId::Sampling);
        let next = argmax(&st.logits);
        st.next[0] = next as f32;
        obs.end(
            None,
            BrickId::Sampling,
            c.work(BrickId::Sampling, 1, pos),
            &mut st.next,
        );
        next
    }
}

impl ModelConfig {
    /// Positions that `tokens` new tokens from position `pos` attend in all (causal: the
    /// token at `p` attends `p + 1`), positions clamped to the cache as the model clamps them.
    pub fn attended(&self, tokens: usize, pos: usize) -> usize {
        (0..tokens)
            .map(|i| (pos + i).min(self.max_seq.max(1) - 1) + 1)
            .sum()
    }

    /// The work of one call of `brick` over `tokens` new tokens from position `pos` (a decode
    /// step: 1 token; a prefill: the prompt's chunk, each weight read once for all of them).
    pub fn work(&self, brick: BrickId, tokens: usize, pos: usize) -> Work {
        let (h, f, heads) = (self.hidden, self.ffn, self.heads);
        let t = tokens.max(1);
        let bytes = |n: usize| (4 * n) as u64;
        // Score rows over the positions attended, and the cache rows read (each once).
        let seen = self.attended(t, pos);
        let att = (heads * seen) as u64;
        let cached = (pos + t).min(self.max_seq.max(1));
        match brick {
            BrickId::Embedding => Work {
                elements: (t * h) as u64,
                flops: 0,
                bytes: bytes(2 * t * h),
            },
            BrickId::RmsNorm => Work {
                elements: (t * h) as u64,
                flops: 4 * (t * h) as u64,
                bytes: bytes(2 * t * h + h),
            },
            BrickId::QkvProjection => matmul_work(3 * h, h, t),
            BrickId::RopeEmbedding => Work {
                elements: 2 * (t * h) as u64,
                flops: 6 * (t * h) as u64,
                bytes: bytes(6 * t * h),
            },
            BrickId::AttentionScore => Work {
                elements: att,
                flops: 2 * (seen * h) as u64,
                bytes: bytes(cached * h + t * h + heads * seen),
            },
            BrickId::AttentionSoftmax => Work {
                elements: att,
                flops: 5 * att,
                bytes: bytes(2 * heads * seen),
            },
            BrickId::AttentionOutput => Work {
                elements: (t * h) as u64,
                flops: 2 * (seen * h) as u64,
                bytes: bytes(cached * h + heads * seen + t * h),
            },
            BrickId::OutputProjection => matmul_work(h, h, t),
            BrickId::ResidualAdd => Work {
                elements: (t * h) as u64,
                flops: (t * h) as u64,
                bytes: bytes(3 * t * h),
            },
            BrickId::GateProjection | BrickId::UpProjection => matmul_work(f, h, t),
            BrickId::Activation => Work {
                elements: (t * f) as u64,
                flops: 6 * (t * f) as u64,
                bytes: bytes(3 * t * f),
            },
            BrickId::DownProjection => matmul_work(h, f, t),
            BrickId::LmHead => matmul_work(self.vocab, h, t),
            BrickId::Sampling => Work {
                elements: self.vocab as u64,
                flops: self.vocab as u64,
                bytes: bytes(self.vocab),
            },
            _ => Work::default(),
        }
    }
}

/// FLOPs and bytes of an `n x k` f32 matrix-vector product.
pub fn matvec_work(n: usize, k: usize) -> Work {
    matmul_work(n, k, 1)
}

/// FLOPs and bytes of an `n x k` f32 matrix times `t` vectors (a `t x k` activation matrix):
/// the weights read once, the activations and outputs once per token.
pub fn matmul_work(n: usize, k: usize, t: usize) -> Work {
    Work {
        elements: (n * t) as u64,
        flops: 2 * (n * k * t) as u64,
        bytes: 4 * (n * k + k * t + n * t) as u64,
    }
}

/// Eight independent accumulators so the loop vectorizes without fast-math.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Rows of a macro tile (about 128 KiB of a 256-wide f32 matrix: an L2-sized block).
pub const MACRO_ROWS: usize = 128;
/// Rows of a micro tile (16 dot products sharing the vector in registers and L1).
pub const MICRO_ROWS: usize = 16;

/// `out = W x`, cache-blocked into macro tiles of [`MACRO_ROWS`] rows and micro tiles of
/// [`MICRO_ROWS`] rows, each reported to the observer with its work.
pub fn matvec_tiled(out: &mut [f32], w: &[f32], x: &[f32], obs: &mut impl Bricks) {
    let k = x.len();
    for (mo, mw) in out.chunks_mut(MACRO_ROWS).zip(w.chunks(MACRO_ROWS * k)) {
        obs.tile_begin(TileLevel::Macro);
        for (uo, uw) in mo.chunks_mut(MICRO_ROWS).zip(mw.chunks(MICRO_ROWS * k)) {
            obs.tile_begin(TileLevel::Micro);
            matvec(uo, uw, x);
            obs.tile_end(TileLevel::Micro, matvec_work(uo.len(), k));
        }
        obs.tile_end(TileLevel::Macro, matvec_work(mo.len(), k));
    }
}

/// `out = W x` for `brick` in `layer`, for `t` tokens: `x` is one row of `k` inputs per token,
/// `out` one row of outputs per token. Tiled: a matrix-vector product for one token, a
/// matrix-matrix product for several; in the split-K order the observer asks for.
fn project(
    layer: Option<usize>,
    brick: BrickId,
    t: usize,
    out: &mut [f32],
    w: &[f32],
    x: &[f32],
    obs: &mut impl Bricks,
) {
    let t = t.max(1);
    let k = x.len() / t;
    match obs.split_k(layer, brick) {
        None if t == 1 => matvec_tiled(out, w, x, obs),
        None => matmul_tiled(out, w, x, k, obs),
        Some(seed) => {
            let mut rng = SplitMix::new(seed);
            let n = out.len() / t;
            for (orow, xrow) in out.chunks_exact_mut(n).zip(x.chunks_exact(k)) {
                for (o, row) in orow.iter_mut().zip(w.chunks_exact(k)) {
                    *o = dot_split_k(row, xrow, &mut rng);
                }
            }
        }
    }
}

/// Tokens a micro tile of [`matmul_tiled`] carries through its weight rows (their activation
/// rows, 32 KiB at hidden 256, stay in L1 and L2 beside the tile's weights).
pub const TOKEN_TILE: usize = 32;

/// `out = X Wᵀ` for `t` tokens (`x`: `t x k`, `w`: `n x k`, `out`: `t x n`, all row-major),
/// cache-blocked as [`matvec_tiled`] is: macro tiles of [`MACRO_ROWS`] weight rows (read from
/// memory once for all the tokens) and, for each [`TOKEN_TILE`] of tokens, micro tiles of
/// [`MICRO_ROWS`] rows (read from L2 once per tile of tokens), each computed in register
/// blocks of 4 rows x 2 tokens. Every output is the same sum, in the same order, as
/// [`dot`] of its row and its token: bit for bit what [`matvec`] gives token by token.
pub fn matmul_tiled(out: &mut [f32], w: &[f32], x: &[f32], k: usize, obs: &mut impl Bricks) {
    let k = k.max(1);
    let n = w.len() / k;
    let t = x.len() / k;
    for (m, mw) in w.chunks(MACRO_ROWS * k).enumerate() {
        obs.tile_begin(TileLevel::Macro);
        for (b, xb) in x.chunks(TOKEN_TILE * k).enumerate() {
            for (u, uw) in mw.chunks(MICRO_ROWS * k).enumerate() {
                obs.tile_begin(TileLevel::Micro);
                let row0 = m * MACRO_ROWS + u * MICRO_ROWS;
                gemm_block(out, n, row0, uw, b * TOKEN_TILE, xb, k);
                obs.tile_end(TileLevel::Micro, matmul_work(uw.len() / k, k, xb.len() / k));
            }
        }
        obs.tile_end(TileLevel::Macro, matmul_work(mw.len() / k, k, t));
    }
}

/// The outputs of weight rows `w` (rows `row0..` of an `n`-row matrix) for the tokens `x`
/// (tokens `tok0..`) into `out` (`t x n`): 4 x 2 register blocks, the rest one by one. Built
/// for AVX2 too (eight lanes a register, as [`dot`]'s accumulators are) and chosen at run time:
/// the same multiplies and adds in the same order (no fused multiply-add), so the same bits.
fn gemm_block(out: &mut [f32], n: usize, row0: usize, w: &[f32], tok0: usize, x: &[f32], k: usize) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: this CPU has AVX2 (checked just above).
        unsafe { gemm_block_avx2(out, n, row0, w, tok0, x, k) };
        return;
    }
    gemm_block_lanes(out, n, row0, w, tok0, x, k);
}

/// [`gemm_block_lanes`] compiled for AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gemm_block_avx2(
    out: &mut [f32],
    n: usize,
    row0: usize,
    w: &[f32],
    tok0: usize,
    x: &[f32],
    k: usize,
) {
    gemm_block_lanes(out, n, row0, w, tok0, x, k);
}

/// The body of [`gemm_block`], inlined into each build of it.
#[inline(always)]
fn gemm_block_lanes(
    out: &mut [f32],
    n: usize,
    row0: usize,
    w: &[f32],
    tok0: usize,
    x: &[f32],
    k: usize,
) {
    let (rows, toks) = (w.len() / k, x.len() / k);
    let row = |r: usize| &w[r * k..(r + 1) * k];
    let tok = |j: usize| &x[j * k..(j + 1) * k];
    let (r4, t2) = (rows / 4 * 4, toks / 2 * 2);
    for j in (0..t2).step_by(2) {
        for r in (0..r4).step_by(4) {
            let d = dot4x2(
                [row(r), row(r + 1), row(r + 2), row(r + 3)],
                [tok(j), tok(j + 1)],
            );
            for (dr, rr) in d.iter().zip(r..) {
                for (&v, jj) in dr.iter().zip(j..) {
                    out[(tok0 + jj) * n + row0 + rr] = v;
                }
            }
        }
    }
    // The rows and tokens outside the blocks.
    for j in 0..toks {
        let from = if j < t2 { r4 } else { 0 };
        for r in from..rows {
            out[(tok0 + j) * n + row0 + r] = dot(row(r), tok(j));
        }
    }
}

/// Eight dot products (4 rows x 2 tokens) sharing their loads, each summed exactly as [`dot`]
/// sums it (eight lanes, then the lanes in order, then the tail).
#[inline(always)]
fn dot4x2(w: [&[f32]; 4], x: [&[f32]; 2]) -> [[f32; 2]; 4] {
    let k = x[0].len();
    let full = k / 8 * 8;
    let mut acc = [[[0.0f32; 8]; 2]; 4];
    for c in (0..full).step_by(8) {
        let xs: [&[f32; 8]; 2] = [
            x[0][c..c + 8].try_into().unwrap_or(&[0.0; 8]),
            x[1][c..c + 8].try_into().unwrap_or(&[0.0; 8]),
        ];
        for (ar, wr) in acc.iter_mut().zip(&w) {
            let ws: &[f32; 8] = wr[c..c + 8].try_into().unwrap_or(&[0.0; 8]);
            for (a, xj) in ar.iter_mut().zip(&xs) {
                for i in 0..8 {
                    a[i] += ws[i] * xj[i];
                }
            }
        }
    }
    let mut d = [[0.0f32; 2]; 4];
    for (r, (dr, ar)) in d.iter_mut().zip(&acc).enumerate() {
        for (j, (o, a)) in dr.iter_mut().zip(ar).enumerate() {
            let tail: f32 = w[r][full..k]
                .iter()
                .zip(&x[j][full..k])
                .map(|(p, q)| p * q)
                .sum();
            *o = a.iter().sum::<f32>() + tail;
        }
    }
    d
}

/// Parts of a split-K reduction.
pub const SPLIT_K: usize = 4;

/// A dot product split into [`SPLIT_K`] partial sums added in an order drawn from `rng`: the
/// same products, a different rounding, as when split-K partials land through atomics.
pub fn dot_split_k(a: &[f32], b: &[f32], rng: &mut SplitMix) -> f32 {
    let part = a.len().div_ceil(SPLIT_K).max(1);
    let mut partial = [0f32; SPLIT_K];
    for (p, (ca, cb)) in partial.iter_mut().zip(a.chunks(part).zip(b.chunks(part))) {
        *p = dot(ca, cb);
    }
    let mut order = [0, 1, 2, 3];
    for i in (1..SPLIT_K).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    order.iter().fold(0.0, |acc, &i| acc + partial[i])
}

/// `out = W x` with `W` row-major `out.len() x x.len()`.
pub fn matvec(out: &mut [f32], w: &[f32], x: &[f32]) {
    let k = x.len();
    for (o, row) in out.iter_mut().zip(w.chunks_exact(k)) {
        *o = dot(row, x);
    }
}

fn rms_norm(out: &mut [f32], x: &[f32], w: &[f32]) {
    let ms = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let inv = 1.0 / (ms + 1e-5).sqrt();
    for ((o, &v), &g) in out.iter_mut().zip(x).zip(w) {
        *o = v * inv * g;
    }
}

/// [`rms_norm`] of each `w.len()`-wide row of `x`.
fn rms_norm_rows(out: &mut [f32], x: &[f32], w: &[f32]) {
    let h = w.len().max(1);
    for (o, xr) in out.chunks_exact_mut(h).zip(x.chunks_exact(h)) {
        rms_norm(o, xr, w);
    }
}

fn rope(v: &mut [f32], head_dim: usize, pos: usize) {
    for head in v.chunks_exact_mut(head_dim) {
        for i in 0..head_dim / 2 {
            let theta = pos as f32 / 10_000f32.powf(2.0 * i as f32 / head_dim as f32);
            let (s, c) = theta.sin_cos();
            let (a, b) = (head[2 * i], head[2 * i + 1]);
            head[2 * i] = a * c - b * s;
            head[2 * i + 1] = a * s + b * c;
        }
    }
}

fn softmax(v: &mut [f32]) {
    let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for x in v.iter_mut() {
        *x = (*x - max).exp();
        sum += *x;
    }
    for x in v.iter_mut() {
        *x /= sum;
    }
}

fn swiglu(gate: &mut [f32], up: &[f32]) {
    for (g, &u) in gate.iter_mut().zip(up) {
        let silu = *g / (1.0 + (-*g).exp());
        *g = silu * u;
    }
}

fn add_into(x: &mut [f32], y: &[f32]) {
    for (a, &b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// Index of the largest value (the first on ties; NaN never wins).
pub fn argmax(v: &[f32]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] || v[best].is_nan() {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_naive() {
        let a: Vec<f32> = (0..37).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..37).map(|i| 1.0 - i as f32 * 0.1).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-3);
    }

    struct NoObserver;
    impl Bricks for NoObserver {
        fn begin(&mut self, _: Option<usize>, _: BrickId) {}
        fn end(&mut self, _: Option<usize>, _: BrickId, _: Work, _: &mut [f32]) {}
        fn layer(&mut self, _: usize, _: bool) {}
        fn tile_begin(&mut self, _: TileLevel) {}
        fn tile_end(&mut self, _: TileLevel, _: Work) {}
    }

    /// The (row is a layer, brick) pairs whose outputs a forward pass reports.
    #[derive(Default)]
    struct Kernels(std::collections::BTreeSet<(bool, BrickId)>);
    impl Bricks for Kernels {
        fn begin(&mut self, _: Option<usize>, _: BrickId) {}
        fn end(&mut self, layer: Option<usize>, brick: BrickId, _: Work, _: &mut [f32]) {
            self.0.insert((layer.is_some(), brick));
        }
        fn layer(&mut self, _: usize, _: bool) {}
        fn tile_begin(&mut self, _: TileLevel) {}
        fn tile_end(&mut self, _: TileLevel, _: Work) {}
    }

    #[test]
    fn the_brick_lists_are_the_kernels_a_forward_pass_runs() {
        // spec/divergence.md "Options that mean something": `--perturb`/`--nan` are checked
        // against these lists.
        let cfg = ModelConfig {
            layers: 2,
            max_seq: 4,
            ..ModelConfig::default()
        };
        let model = Model::new(cfg, 1);
        let mut st = model.state(1);
        let mut seen = Kernels::default();
        model.forward(&mut st, &[3], 0, &mut seen);
        let listed: std::collections::BTreeSet<(bool, BrickId)> = MODEL_BRICKS
            .iter()
            .map(|&b| (false, b))
            .chain(LAYER_BRICKS.iter().map(|&b| (true, b)))
            .collect();
        assert_eq!(seen.0, listed);
    }

    #[test]
    fn tiled_matvec_equals_plain() {
        let (n, k) = (300, 37);
        let w: Vec<f32> = (0..n * k).map(|i| (i as f32 * 0.01).cos()).collect();
        let x: Vec<f32> = (0..k).map(|i| i as f32 * 0.1).collect();
        let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
        matvec(&mut a, &w, &x);
        matvec_tiled(&mut b, &w, &x, &mut NoObserver);
        assert_eq!(a, b);
    }

    #[test]
    fn tiled_matmul_is_matvec_token_by_token_bit_for_bit() {
        // spec/work-accounting.md "The demo's prefill": the batched projection computes every
        // output as the token's matrix-vector product would, so batching changes no token.
        for (n, k, t) in [(300, 37, 5), (768, 256, 16), (17, 8, 33), (5, 3, 1)] {
            let w: Vec<f32> = (0..n * k).map(|i| (i as f32 * 0.013).cos()).collect();
            let x: Vec<f32> = (0..t * k).map(|i| (i as f32 * 0.07).sin()).collect();
            let mut batched = vec![f32::NAN; t * n];
            matmul_tiled(&mut batched, &w, &x, k, &mut NoObserver);
            for (j, xj) in x.chunks_exact(k).enumerate() {
                let mut one = vec![0.0; n];
                matvec(&mut one, &w, xj);
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&batched[j * n..(j + 1) * n]),
                    bits(&one),
                    "{n}x{k}, token {j}"
                );
            }
        }
    }

    /// Each (layer, brick) call with the work it declared.
    #[derive(Default)]
    struct Calls(Vec<(Option<usize>, BrickId, Work)>, Vec<Vec<f32>>);
    impl Bricks for Calls {
        fn begin(&mut self, _: Option<usize>, _: BrickId) {}
        fn end(&mut self, layer: Option<usize>, brick: BrickId, work: Work, out: &mut [f32]) {
            self.0.push((layer, brick, work));
            self.1.push(out.to_vec());
        }
        fn layer(&mut self, _: usize, _: bool) {}
        fn tile_begin(&mut self, _: TileLevel) {}
        fn tile_end(&mut self, _: TileLevel, _: Work) {}
    }

    #[test]
    fn a_batched_prompt_is_one_call_a_brick_and_computes_what_token_by_token_does() {
        // spec/work-accounting.md "The demo's prefill".
        let cfg = ModelConfig {
            layers: 2,
            max_seq: 12,
            ..ModelConfig::default()
        };
        let model = Model::new(cfg, 7);
        let prompt = [5, 900, 17, 3, 250, 64, 1000, 2];
        let (mut one, mut many) = (model.state(1), model.state(prompt.len()));
        let mut per_token = Calls::default();
        let mut next_one = 0;
        for (pos, &tok) in prompt.iter().enumerate() {
            next_one = model.forward(&mut one, &[tok], pos, &mut per_token);
        }
        let mut batched = Calls::default();
        let next_many = model.forward(&mut many, &prompt, 0, &mut batched);
        // The same next token, and (then) the same decode step.
        assert_eq!(next_many, next_one);
        let (mut a, mut b) = (Calls::default(), Calls::default());
        let t = prompt.len();
        assert_eq!(
            model.forward(&mut one, &[next_one], t, &mut a),
            model.forward(&mut many, &[next_many], t, &mut b)
        );
        assert_eq!(a.1, b.1, "the decode step after the prompt differs");
        // One call per brick for the whole prompt.
        let per_pass = MODEL_BRICKS.len() + 2 * (LAYER_BRICKS.len() + 2);
        assert_eq!(batched.0.len(), per_pass);
        assert_eq!(per_token.0.len(), t * per_pass);
        // Each layer's output for every token equals the token-by-token outputs, bit for bit
        // (the attention scores aside, laid out per token: compared through their outputs).
        for (i, (layer, brick, work)) in batched.0.iter().enumerate() {
            let ones: Vec<usize> = (0..t).map(|j| j * per_pass + i).collect();
            assert!(ones
                .iter()
                .all(|&o| per_token.0[o].0 == *layer && per_token.0[o].1 == *brick));
            if layer.is_none() && *brick != BrickId::Embedding {
                // Final norm, LM head, sampling: the last token only.
                assert_eq!(batched.1[i], per_token.1[ones[t - 1]], "{brick}");
                assert_eq!(*work, per_token.0[ones[t - 1]].2, "{brick}");
                continue;
            }
            if *brick != BrickId::RopeEmbedding {
                let joined: Vec<f32> = ones.iter().flat_map(|&o| per_token.1[o].clone()).collect();
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&batched.1[i]), bits(&joined), "{layer:?} {brick}");
            }
            // The work: FLOPs the sum of the tokens'; weights read once.
            let flops: u64 = ones.iter().map(|&o| per_token.0[o].2.flops).sum();
            assert_eq!(work.flops, flops, "{layer:?} {brick}");
            let bytes: u64 = ones.iter().map(|&o| per_token.0[o].2.bytes).sum();
            if matches!(brick, BrickId::QkvProjection | BrickId::DownProjection) {
                let ratio = (work.flops as f64 / work.bytes as f64)
                    / (per_token.0[ones[0]].2.flops as f64 / per_token.0[ones[0]].2.bytes as f64);
                assert!(ratio > 6.0, "{brick}: intensity only {ratio:.1}x decode's");
                assert!(work.bytes < bytes / 6, "{brick}");
            }
        }
    }

    #[test]
    fn split_k_orders_round_differently_and_agree_closely() {
        let a: Vec<f32> = (0..256)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.013)
            .collect();
        let b: Vec<f32> = (0..256)
            .map(|i| ((i * 11 % 53) as f32 - 26.0) * 0.07)
            .collect();
        let fixed = dot(&a, &b);
        let sums: std::collections::HashSet<u32> = (0..64)
            .map(|s| dot_split_k(&a, &b, &mut SplitMix::new(s)).to_bits())
            .collect();
        assert!(sums.len() > 1, "the order must change the rounding");
        for bits in sums {
            assert!((f32::from_bits(bits) - fixed).abs() <= 1e-4 * fixed.abs().max(1.0));
        }
    }

    #[test]
    fn softmax_sums_to_one() {
        let mut v = vec![1.0, 2.0, 3.0, -1.0];
        softmax(&mut v);
        assert!((v.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert_eq!(argmax(&v), 2);
    }
}
