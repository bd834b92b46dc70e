//! A tiny Llama-style transformer with real CPU kernels and deterministic seeded weights: the
//! workload of `brickprof demo`. Token embedding, RMSNorm, fused QKV projection, RoPE,
//! attention (scores, softmax, weighted sum) over a KV cache, output projection, SwiGLU FFN,
//! residual adds, LM head and greedy sampling.
//!
//! The model knows nothing of profiling: every kernel is a plain function, and the forward pass
//! reports each brick to a [`Bricks`] observer, which the demo wires to the profiler.

use brickprof::{BrickId, TileLevel, Work};

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

/// Activations and the KV cache, allocated once.
pub struct State {
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

    pub fn state(&self) -> State {
        let c = &self.cfg;
        State {
            x: vec![0.0; c.hidden],
            xn: vec![0.0; c.hidden],
            qkv: vec![0.0; 3 * c.hidden],
            scores: vec![0.0; c.heads * c.max_seq],
            att: vec![0.0; c.hidden],
            proj: vec![0.0; c.hidden],
            gate: vec![0.0; c.ffn],
            up: vec![0.0; c.ffn],
            down: vec![0.0; c.hidden],
            logits: vec![0.0; c.vocab],
            k_cache: vec![0.0; c.layers * c.max_seq * c.hidden],
            v_cache: vec![0.0; c.layers * c.max_seq * c.hidden],
            next: [0.0],
        }
    }

    /// Run one token at position `pos` through the model; returns the greedy next token.
    pub fn forward(
        &self,
        st: &mut State,
        token: usize,
        pos: usize,
        obs: &mut impl Bricks,
    ) -> usize {
        let c = self.cfg;
        let (h, heads) = (c.hidden, c.heads);
        let hd = h / heads;
        let pos = pos.min(c.max_seq - 1);

        obs.begin(None, BrickId::Embedding);
        let row = token % c.vocab;
        st.x.copy_from_slice(&self.embed[row * h..(row + 1) * h]);
        obs.end(
            None,
            BrickId::Embedding,
            c.work(BrickId::Embedding, 0),
            &mut st.x,
        );

        for (l, w) in self.layers.iter().enumerate() {
            let ly = Some(l);
            obs.layer(l, true);

            obs.begin(ly, BrickId::RmsNorm);
            rms_norm(&mut st.xn, &st.x, &w.attn_norm);
            obs.end(
                ly,
                BrickId::RmsNorm,
                c.work(BrickId::RmsNorm, 0),
                &mut st.xn,
            );

            obs.begin(ly, BrickId::QkvProjection);
            project(
                ly,
                BrickId::QkvProjection,
                &mut st.qkv,
                &w.wqkv,
                &st.xn,
                obs,
            );
            obs.end(
                ly,
                BrickId::QkvProjection,
                c.work(BrickId::QkvProjection, 0),
                &mut st.qkv,
            );

            obs.begin(ly, BrickId::RopeEmbedding);
            let (q, kv) = st.qkv.split_at_mut(h);
            rope(q, hd, pos);
            rope(&mut kv[..h], hd, pos);
            let base = (l * c.max_seq + pos) * h;
            st.k_cache[base..base + h].copy_from_slice(&kv[..h]);
            st.v_cache[base..base + h].copy_from_slice(&kv[h..2 * h]);
            obs.end(
                ly,
                BrickId::RopeEmbedding,
                c.work(BrickId::RopeEmbedding, 0),
                &mut st.qkv[..2 * h],
            );

            let seq = pos + 1;
            let cache = l * c.max_seq * h;
            let kc = &st.k_cache[cache..cache + seq * h];
            let vc = &st.v_cache[cache..cache + seq * h];
            let scale = 1.0 / (hd as f32).sqrt();

            obs.begin(ly, BrickId::AttentionScore);
            for hh in 0..heads {
                let qh = &st.qkv[hh * hd..(hh + 1) * hd];
                let sc = &mut st.scores[hh * seq..(hh + 1) * seq];
                for (t, s) in sc.iter_mut().enumerate() {
                    *s = dot(qh, &kc[t * h + hh * hd..t * h + (hh + 1) * hd]) * scale;
                }
            }
            obs.end(
                ly,
                BrickId::AttentionScore,
                c.work(BrickId::AttentionScore, seq),
                &mut st.scores[..heads * seq],
            );

            obs.begin(ly, BrickId::AttentionSoftmax);
            for hh in 0..heads {
                softmax(&mut st.scores[hh * seq..(hh + 1) * seq]);
            }
            obs.end(
                ly,
                BrickId::AttentionSoftmax,
                c.work(BrickId::AttentionSoftmax, seq),
                &mut st.scores[..heads * seq],
            );

            obs.begin(ly, BrickId::AttentionOutput);
            st.att.fill(0.0);
            for hh in 0..heads {
                let p = &st.scores[hh * seq..(hh + 1) * seq];
                let out = &mut st.att[hh * hd..(hh + 1) * hd];
                for (t, &pt) in p.iter().enumerate() {
                    let v = &vc[t * h + hh * hd..t * h + (hh + 1) * hd];
                    for (o, &vv) in out.iter_mut().zip(v) {
                        *o += pt * vv;
                    }
                }
            }
            obs.end(
                ly,
                BrickId::AttentionOutput,
                c.work(BrickId::AttentionOutput, seq),
                &mut st.att,
            );

            obs.begin(ly, BrickId::OutputProjection);
            project(
                ly,
                BrickId::OutputProjection,
                &mut st.proj,
                &w.wo,
                &st.att,
                obs,
            );
            obs.end(
                ly,
                BrickId::OutputProjection,
                c.work(BrickId::OutputProjection, 0),
                &mut st.proj,
            );

            obs.begin(ly, BrickId::ResidualAdd);
            add_into(&mut st.x, &st.proj);
            obs.end(
                ly,
                BrickId::ResidualAdd,
                c.work(BrickId::ResidualAdd, 0),
                &mut st.x,
            );

            obs.begin(ly, BrickId::RmsNorm);
            rms_norm(&mut st.xn, &st.x, &w.ffn_norm);
            obs.end(
                ly,
                BrickId::RmsNorm,
                c.work(BrickId::RmsNorm, 0),
                &mut st.xn,
            );

            obs.begin(ly, BrickId::GateProjection);
            project(
                ly,
                BrickId::GateProjection,
                &mut st.gate,
                &w.w_gate,
                &st.xn,
                obs,
            );
            obs.end(
                ly,
                BrickId::GateProjection,
                c.work(BrickId::GateProjection, 0),
                &mut st.gate,
            );

            obs.begin(ly, BrickId::UpProjection);
            project(ly, BrickId::UpProjection, &mut st.up, &w.w_up, &st.xn, obs);
            obs.end(
                ly,
                BrickId::UpProjection,
                c.work(BrickId::UpProjection, 0),
                &mut st.up,
            );

            obs.begin(ly, BrickId::Activation);
            swiglu(&mut st.gate, &st.up);
            obs.end(
                ly,
                BrickId::Activation,
                c.work(BrickId::Activation, 0),
                &mut st.gate,
            );

            obs.begin(ly, BrickId::DownProjection);
            project(
                ly,
                BrickId::DownProjection,
                &mut st.down,
                &w.w_down,
                &st.gate,
                obs,
            );
            obs.end(
                ly,
                BrickId::DownProjection,
                c.work(BrickId::DownProjection, 0),
                &mut st.down,
            );

            obs.begin(ly, BrickId::ResidualAdd);
            add_into(&mut st.x, &st.down);
            obs.end(
                ly,
                BrickId::ResidualAdd,
                c.work(BrickId::ResidualAdd, 0),
                &mut st.x,
            );

            obs.layer(l, false);
        }

        obs.begin(None, BrickId::RmsNorm);
        rms_norm(&mut st.xn, &st.x, &self.final_norm);
        obs.end(
            None,
            BrickId::RmsNorm,
            c.work(BrickId::RmsNorm, 0),
            &mut st.xn,
        );

        obs.begin(None, BrickId::LmHead);
        project(
            None,
            BrickId::LmHead,
            &mut st.logits,
            &self.lm_head,
            &st.xn,
            obs,
        );
        obs.end(
            None,
            BrickId::LmHead,
            c.work(BrickId::LmHead, 0),
            &mut st.logits,
        );

        obs.begin(None, BrickId::Sampling);
        let next = argmax(&st.logits);
        st.next[0] = next as f32;
        obs.end(
            None,
            BrickId::Sampling,
            c.work(BrickId::Sampling, 0),
            &mut st.next,
        );
        next
    }
}

impl ModelConfig {
    /// The work of one call of `brick` (attention bricks over `seq` cached positions).
    pub fn work(&self, brick: BrickId, seq: usize) -> Work {
        let (h, f, heads) = (self.hidden, self.ffn, self.heads);
        let bytes = |n: usize| (4 * n) as u64;
        let att = (heads * seq) as u64;
        match brick {
            BrickId::Embedding => Work::elements(h as u64).with_bytes(bytes(2 * h)),
            BrickId::RmsNorm => Work::elements(h as u64)
                .with_flops(4 * h as u64)
                .with_bytes(bytes(3 * h)),
            BrickId::QkvProjection => matvec_work(3 * h, h),
            BrickId::RopeEmbedding => Work::elements(2 * h as u64)
                .with_flops(6 * h as u64)
                .with_bytes(bytes(6 * h)),
            BrickId::AttentionScore => Work::elements(att)
                .with_flops(2 * (seq * h) as u64)
                .with_bytes(bytes(seq * h + h + heads * seq)),
            BrickId::AttentionSoftmax => Work::elements(att)
                .with_flops(5 * att)
                .with_bytes(bytes(2 * heads * seq)),
            BrickId::AttentionOutput => Work::elements(h as u64)
                .with_flops(2 * (seq * h) as u64)
                .with_bytes(bytes(seq * h + heads * seq + h)),
            BrickId::OutputProjection => matvec_work(h, h),
            BrickId::ResidualAdd => Work::elements(h as u64)
                .with_flops(h as u64)
                .with_bytes(bytes(3 * h)),
            BrickId::GateProjection | BrickId::UpProjection => matvec_work(f, h),
            BrickId::Activation => Work::elements(f as u64)
                .with_flops(6 * f as u64)
                .with_bytes(bytes(3 * f)),
            BrickId::DownProjection => matvec_work(h, f),
            BrickId::LmHead => matvec_work(self.vocab, h),
            BrickId::Sampling => Work::elements(self.vocab as u64)
                .with_flops(self.vocab as u64)
                .with_bytes(bytes(self.vocab)),
            _ => Work::NONE,
        }
    }
}

/// FLOPs and bytes of an `n x k` f32 matrix-vector product.
pub fn matvec_work(n: usize, k: usize) -> Work {
    Work::elements(n as u64)
        .with_flops(2 * (n * k) as u64)
        .with_bytes(4 * (n * k + k + n) as u64)
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

/// `out = W x` for `brick` in `layer`: tiled, in the split-K order the observer asks for.
fn project(
    layer: Option<usize>,
    brick: BrickId,
    out: &mut [f32],
    w: &[f32],
    x: &[f32],
    obs: &mut impl Bricks,
) {
    match obs.split_k(layer, brick) {
        None => matvec_tiled(out, w, x, obs),
        Some(seed) => {
            let k = x.len();
            let mut rng = SplitMix::new(seed);
            for (o, row) in out.iter_mut().zip(w.chunks_exact(k)) {
                *o = dot_split_k(row, x, &mut rng);
            }
        }
    }
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
        let mut st = model.state();
        let mut seen = Kernels::default();
        model.forward(&mut st, 3, 0, &mut seen);
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
