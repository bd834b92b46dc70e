//! SmolLM2's forward pass written on candle ops (QMatMul, rms_norm, rope, softmax), mirroring
//! candle-transformers' `quantized_llama`, with brickprof's full per-layer brick set timed by
//! the explicit API and a kernel checksum of every brick's output.

use brickprof::{BrickId, BrickProfiler, Work};
use candle_core::quantized::{gguf_file::Content, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Result, Tensor, D};

/// A spot to perturb: a brick's output in one layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spot {
    /// The layer.
    pub layer: usize,
    /// The brick.
    pub brick: BrickId,
}

/// The bricks the forward pass runs in every layer (a [`Spot`] names one of them).
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

impl std::str::FromStr for Spot {
    type Err = String;
    /// `LAYER:BRICK`, BRICK one the layers run ([`LAYER_BRICKS`]): a spot that names no
    /// kernel would silently perturb nothing. (The layer is checked against the model's count
    /// once the model is read.)
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let (l, b) = s
            .split_once(':')
            .ok_or_else(|| format!("expected LAYER:BRICK (e.g. 7:softmax), got {s:?}"))?;
        let layer = l
            .parse()
            .map_err(|_| format!("{l:?} is not a layer number"))?;
        let brick: BrickId = b
            .parse()
            .map_err(|_| format!("{b:?} is not a brick name (e.g. softmax, down_proj)"))?;
        if !LAYER_BRICKS.contains(&brick) {
            return Err(format!(
                "the model runs no {brick} in a layer; its kernels there: {}",
                LAYER_BRICKS.map(BrickId::name).join(", ")
            ));
        }
        Ok(Spot { layer, brick })
    }
}

/// A planted slowdown: a spot's brick stretched by `pct` percent of its own time
/// (`--slow LAYER:BRICK:PCT`; spec/timing-verdicts.md "Planting a slowdown").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slow {
    /// The brick and layer (layer 0 when `every_layer`).
    pub spot: Spot,
    /// LAYER was `*`: the brick in every layer, so its (phase, brick) time per pass moves by
    /// the whole percentage.
    pub every_layer: bool,
    /// Percent of its time added, in (0, 1000].
    pub pct: f64,
}

impl std::str::FromStr for Slow {
    type Err = String;
    /// `LAYER:BRICK:PCT`, e.g. `7:down_proj:10` or `7:down_proj:10%`; LAYER `*`: every layer.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let (spot, pct) = s
            .rsplit_once(':')
            .filter(|(spot, _)| spot.contains(':'))
            .ok_or_else(|| format!("expected LAYER:BRICK:PCT (e.g. 7:down_proj:10), got {s:?}"))?;
        let (every_layer, spot) = match spot.strip_prefix("*:") {
            Some(brick) => (true, format!("0:{brick}").parse::<Spot>()?),
            None => (false, spot.parse::<Spot>()?),
        };
        let pct = pct
            .trim()
            .trim_end_matches('%')
            .parse::<f64>()
            .ok()
            .filter(|p| p.is_finite() && *p > 0.0 && *p <= 1000.0)
            .ok_or_else(|| format!("{pct:?} is not a percentage above 0 and at most 1000"))?;
        Ok(Slow {
            spot,
            every_layer,
            pct,
        })
    }
}

struct Layer {
    attn_norm: Tensor,
    wq: QMatMul,
    wk: QMatMul,
    wv: QMatMul,
    wo: QMatMul,
    ffn_norm: Tensor,
    w1: QMatMul,
    w2: QMatMul,
    w3: QMatMul,
    cache: Option<(Tensor, Tensor)>,
}

/// The model's weights and its KV cache.
pub struct Model {
    embeddings: Tensor,
    layers: Vec<Layer>,
    norm: Tensor,
    head: QMatMul,
    cos: Tensor,
    sin: Tensor,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    eps: f32,
    /// Add a tiny value to this brick's output (a planted divergence).
    pub perturb: Option<Spot>,
    /// Stretch this brick's time (a planted slowdown).
    pub slow: Option<Slow>,
    /// Checksum every brick's output (reads each output back; off the timed regions).
    pub checksums: bool,
}

fn md_u32(ct: &Content, k: &str) -> Result<u32> {
    match ct.metadata.get(k) {
        Some(v) => v.to_u32(),
        None => candle_core::bail!("the GGUF file has no {k}"),
    }
}

fn md_f32(ct: &Content, k: &str) -> Option<f32> {
    ct.metadata.get(k).and_then(|v| v.to_f32().ok())
}

/// How the matrix weights are multiplied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// As stored (Q4_1 blocks): candle's quantized matmul (activations quantized to Q8_1).
    Quantized,
    /// Dequantized to f32 at load: the same weights through f32 matmuls, a reference path.
    Dequantized,
}

impl Weights {
    /// A matrix weight as this path multiplies it.
    fn matmul(self, q: QTensor, dev: &Device) -> Result<QMatMul> {
        match self {
            Weights::Quantized => QMatMul::from_qtensor(q),
            Weights::Dequantized => Ok(QMatMul::Tensor(q.dequantize(dev)?)),
        }
    }
}

impl Model {
    /// Load the weights (Llama architecture, GGUF), multiplied as `weights` says.
    pub fn from_gguf<R: std::io::Seek + std::io::Read>(
        ct: &Content,
        r: &mut R,
        dev: &Device,
        weights: Weights,
    ) -> Result<Model> {
        let heads = md_u32(ct, "llama.attention.head_count")? as usize;
        let kv_heads = md_u32(ct, "llama.attention.head_count_kv")? as usize;
        let blocks = md_u32(ct, "llama.block_count")? as usize;
        let hidden = md_u32(ct, "llama.embedding_length")? as usize;
        let rope_dim = md_u32(ct, "llama.rope.dimension_count")? as usize;
        let eps = md_f32(ct, "llama.attention.layer_norm_rms_epsilon").unwrap_or(1e-5);
        let base = md_f32(ct, "llama.rope.freq_base").unwrap_or(10_000.0);
        let embd_q = ct.tensor(r, "token_embd.weight", dev)?;
        let embeddings = embd_q.dequantize(dev)?;
        let head = match ct.tensor(r, "output.weight", dev) {
            Ok(t) => t,
            Err(_) => embd_q, // tied output embedding
        };
        let mut t = |n: &str| ct.tensor(r, n, dev);
        let mm = |q: QTensor| weights.matmul(q, dev);
        let mut layers = Vec::with_capacity(blocks);
        for i in 0..blocks {
            let p = format!("blk.{i}");
            layers.push(Layer {
                attn_norm: t(&format!("{p}.attn_norm.weight"))?.dequantize(dev)?,
                wq: mm(t(&format!("{p}.attn_q.weight"))?)?,
                wk: mm(t(&format!("{p}.attn_k.weight"))?)?,
                wv: mm(t(&format!("{p}.attn_v.weight"))?)?,
                wo: mm(t(&format!("{p}.attn_output.weight"))?)?,
                ffn_norm: t(&format!("{p}.ffn_norm.weight"))?.dequantize(dev)?,
                w1: mm(t(&format!("{p}.ffn_gate.weight"))?)?,
                w2: mm(t(&format!("{p}.ffn_down.weight"))?)?,
                w3: mm(t(&format!("{p}.ffn_up.weight"))?)?,
                cache: None,
            });
        }
        let norm = t("output_norm.weight")?.dequantize(dev)?;
        // RoPE tables as candle's quantized_llama computes them.
        let theta: Vec<f32> = (0..rope_dim)
            .step_by(2)
            .map(|i| 1f32 / base.powf(i as f32 / rope_dim as f32))
            .collect();
        let theta = Tensor::new(theta.as_slice(), dev)?;
        let max_seq = 4096;
        let idx = Tensor::arange(0, max_seq as u32, dev)?
            .to_dtype(DType::F32)?
            .reshape((max_seq, 1))?
            .matmul(&theta.reshape((1, theta.elem_count()))?)?;
        Ok(Model {
            embeddings,
            layers,
            norm,
            head: mm(head)?,
            cos: idx.cos()?,
            sin: idx.sin()?,
            heads,
            kv_heads,
            head_dim: hidden / heads,
            eps,
            perturb: None,
            slow: None,
            checksums: false,
        })
    }

    /// Forget the KV cache.
    pub fn clear_cache(&mut self) {
        for l in &mut self.layers {
            l.cache = None;
        }
    }

    /// One decode step: the logits of the token after `token` at position `pos`.
    pub fn forward(&mut self, prof: &mut BrickProfiler, token: u32, pos: usize) -> Result<Tensor> {
        let dev = self.embeddings.device().clone();
        let (heads, kv_heads, hd, eps) = (self.heads, self.kv_heads, self.head_dim, self.eps);
        let cos = self.cos.narrow(0, pos, 1)?;
        let sin = self.sin.narrow(0, pos, 1)?;
        let mut b = Bricks {
            prof,
            perturb: self.perturb,
            slow: self.slow,
            checksums: self.checksums,
        };

        let ids = Tensor::new(&[token], &dev)?;
        let mut x = b.run(None, BrickId::Embedding, || {
            self.embeddings.index_select(&ids, 0)?.unsqueeze(0)
        })?; // (1, 1, hidden)
        for (li, l) in self.layers.iter_mut().enumerate() {
            b.prof.begin_layer(li);
            let at = Some(li);
            let h = b.run(at, BrickId::RmsNorm, || {
                candle_nn::ops::rms_norm(&x, &l.attn_norm, eps)
            })?;
            let (q, k, v) = b.run3(at, BrickId::QkvProjection, || {
                Ok((l.wq.forward(&h)?, l.wk.forward(&h)?, l.wv.forward(&h)?))
            })?;
            let q = q.reshape((1, 1, heads, hd))?.transpose(1, 2)?;
            let k = k.reshape((1, 1, kv_heads, hd))?.transpose(1, 2)?;
            let v = v
                .reshape((1, 1, kv_heads, hd))?
                .transpose(1, 2)?
                .contiguous()?;
            let (q, k) = b.run2(at, BrickId::RopeEmbedding, || {
                Ok((
                    candle_nn::rotary_emb::rope_i(&q.contiguous()?, &cos, &sin)?,
                    candle_nn::rotary_emb::rope_i(&k.contiguous()?, &cos, &sin)?,
                ))
            })?;
            let (k, v) = match &l.cache {
                Some((kc, vc)) => (Tensor::cat(&[kc, &k], 2)?, Tensor::cat(&[vc, &v], 2)?),
                None => (k, v),
            };
            l.cache = Some((k.clone(), v.clone()));
            let rep = heads / kv_heads;
            let k = candle_transformers::utils::repeat_kv(k, rep)?;
            let v = candle_transformers::utils::repeat_kv(v, rep)?;
            let scores = b.run(at, BrickId::AttentionScore, || {
                q.matmul(&k.t()?)? / (hd as f64).sqrt()
            })?;
            let p = b.run(at, BrickId::AttentionSoftmax, || {
                candle_nn::ops::softmax_last_dim(&scores)
            })?;
            let y = b.run(at, BrickId::AttentionOutput, || p.matmul(&v.contiguous()?))?;
            let y = y.transpose(1, 2)?.reshape((1, 1, heads * hd))?;
            let y = b.run(at, BrickId::OutputProjection, || l.wo.forward(&y))?;
            let x1 = b.run(at, BrickId::ResidualAdd, || &x + &y)?;
            let h = b.run(at, BrickId::RmsNorm, || {
                candle_nn::ops::rms_norm(&x1, &l.ffn_norm, eps)
            })?;
            let gate = b.run(at, BrickId::GateProjection, || l.w1.forward(&h))?;
            let up = b.run(at, BrickId::UpProjection, || l.w3.forward(&h))?;
            let act = b.run(at, BrickId::Activation, || {
                candle_nn::ops::silu(&gate)? * &up
            })?;
            let down = b.run(at, BrickId::DownProjection, || l.w2.forward(&act))?;
            x = b.run(at, BrickId::ResidualAdd, || &x1 + &down)?;
            b.prof.end_layer();
        }
        let h = b.run(None, BrickId::RmsNorm, || {
            candle_nn::ops::rms_norm(&x, &self.norm, eps)
        })?;
        let logits = b.run(None, BrickId::LmHead, || self.head.forward(&h))?;
        logits.squeeze(0)?.squeeze(0)
    }
}

/// Times each brick with the explicit API, then (outside the timed region) checksums its
/// output and applies the planted perturbation.
struct Bricks<'a> {
    prof: &'a mut BrickProfiler,
    perturb: Option<Spot>,
    slow: Option<Slow>,
    checksums: bool,
}

impl Bricks<'_> {
    /// For the `--slow` brick, spin until its time so far is stretched by its percentage
    /// (before its brick stops, so the profile times the stretch).
    fn stretch(&self, layer: Option<usize>, brick: BrickId, began: std::time::Instant) {
        let Some(slow) = self
            .slow
            .filter(|s| s.spot.brick == brick)
            .filter(|s| layer.is_some_and(|l| s.every_layer || l == s.spot.layer))
        else {
            return;
        };
        let until = std::time::Instant::now() + began.elapsed().mul_f64(slow.pct / 100.0);
        while std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
    }

    fn run(
        &mut self,
        layer: Option<usize>,
        brick: BrickId,
        f: impl FnOnce() -> Result<Tensor>,
    ) -> Result<Tensor> {
        let (t, began) = (self.prof.start_brick(brick), std::time::Instant::now());
        let out = f()?;
        self.stretch(layer, brick, began);
        self.prof
            .stop_brick_with(t, Work::elements(out.elem_count() as u64));
        self.after(layer, brick, out)
    }

    fn run2(
        &mut self,
        layer: Option<usize>,
        brick: BrickId,
        f: impl FnOnce() -> Result<(Tensor, Tensor)>,
    ) -> Result<(Tensor, Tensor)> {
        let (t, began) = (self.prof.start_brick(brick), std::time::Instant::now());
        let (a, b) = f()?;
        let n = a.elem_count() + b.elem_count();
        self.stretch(layer, brick, began);
        self.prof.stop_brick_with(t, Work::elements(n as u64));
        Ok((self.after(layer, brick, a)?, self.after(layer, brick, b)?))
    }

    fn run3(
        &mut self,
        layer: Option<usize>,
        brick: BrickId,
        f: impl FnOnce() -> Result<(Tensor, Tensor, Tensor)>,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let (t, began) = (self.prof.start_brick(brick), std::time::Instant::now());
        let (a, b, c) = f()?;
        let n = a.elem_count() + b.elem_count() + c.elem_count();
        self.stretch(layer, brick, began);
        self.prof.stop_brick_with(t, Work::elements(n as u64));
        Ok((
            self.after(layer, brick, a)?,
            self.after(layer, brick, b)?,
            self.after(layer, brick, c)?,
        ))
    }

    /// Checksum `out` (a no-op unless checksums are on) and perturb it if it is the spot.
    fn after(&mut self, layer: Option<usize>, brick: BrickId, out: Tensor) -> Result<Tensor> {
        let out = match self.perturb {
            Some(s) if Some(s.layer) == layer && s.brick == brick => perturbed(&out)?,
            _ => out,
        };
        if self.checksums {
            brickprof_candle::record_checksum(self.prof, layer, brick, &out)?;
        }
        Ok(out)
    }
}

/// `t` with 1e-3 added to its first element.
fn perturbed(t: &Tensor) -> Result<Tensor> {
    let mut data = t.flatten_all()?.to_vec1::<f32>()?;
    if let Some(x) = data.first_mut() {
        *x += 1e-3;
    }
    Tensor::from_vec(data, t.shape(), t.device())
}

/// The id of the largest logit.
pub fn argmax(logits: &Tensor) -> Result<u32> {
    logits.argmax(D::Minus1)?.to_scalar::<u32>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slowdown_names_a_kernel_and_a_percentage() {
        // spec/timing-verdicts.md "Planting a slowdown".
        let s: Slow = "7:down_proj:10%".parse().unwrap();
        assert_eq!(
            (s.spot.layer, s.spot.brick, s.pct),
            (7, BrickId::DownProjection, 10.0)
        );
        assert!(!s.every_layer);
        let every: Slow = "*:down_proj:10".parse().unwrap();
        assert!(every.every_layer && every.spot.brick == BrickId::DownProjection);
        for bad in [
            "*:lm_head:10",
            "**:down_proj:10",
            "7:down_proj",
            "7:down_proj:0",
            "7:down_proj:x",
            "7:lm_head:10",
        ] {
            assert!(bad.parse::<Slow>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_spot_names_a_kernel_the_layers_run() {
        // `--perturb` of a brick no layer runs would silently perturb nothing.
        let s: Spot = "7:softmax".parse().unwrap();
        assert_eq!((s.layer, s.brick), (7, BrickId::AttentionSoftmax));
        for bad in [
            "7:lm_head",
            "0:layer_norm",
            "1:embed",
            "x:softmax",
            "softmax",
        ] {
            assert!(bad.parse::<Spot>().is_err(), "{bad}");
        }
    }
}
