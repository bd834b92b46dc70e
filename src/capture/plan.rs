//! [`CapturePlan`]: which kernels' whole outputs are saved (spec/divergence.md "Capture plans"),
//! in the grammar of the demo's `--capture LAYER:BRICK[,...]`, with pass selection and a byte
//! budget.

use std::fmt;
use std::str::FromStr;

use crate::BrickId;

/// The layer part of a [`KernelPattern`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LayerPattern {
    /// `*`: every layer and the kernels outside the layers.
    Any,
    /// `model`: kernels outside any layer (embedding, LM head).
    Outside,
    /// One layer.
    Layer(u32),
}

/// One `LAYER:BRICK` item of a capture plan: `3:down_proj`, `3:*`, `model:lm_head`, `*:RmsNorm`.
///
/// ```
/// use brickprof::capture::{KernelPattern, LayerPattern};
/// let p: KernelPattern = "3:down_proj".parse().unwrap();
/// assert_eq!((p.layer, p.brick.as_deref()), (LayerPattern::Layer(3), Some("DownProjection")));
/// assert_eq!(p.to_string(), "3:DownProjection");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KernelPattern {
    /// Which layer.
    pub layer: LayerPattern,
    /// Which brick, by name (`None`: `*`, every brick). Built-in aliases (`down_proj`) are
    /// stored under the built-in name (`DownProjection`); other names (registered bricks) as
    /// given.
    pub brick: Option<String>,
}

impl KernelPattern {
    /// True when this pattern takes the kernel `brick` in `layer` (`None`: outside layers).
    pub(crate) fn matches(&self, layer: Option<u32>, brick: &str) -> bool {
        let layer_ok = match (self.layer, layer) {
            (LayerPattern::Any, _) => true,
            (LayerPattern::Outside, None) => true,
            (LayerPattern::Layer(l), Some(k)) => l == k,
            _ => false,
        };
        layer_ok && self.brick.as_deref().is_none_or(|b| b == brick)
    }
}

impl FromStr for KernelPattern {
    type Err = String;

    /// `LAYER:BRICK`: LAYER a number, `model` (outside the layers) or `*`; BRICK a brick name
    /// (built-in names and aliases, or a registered brick's name) or `*`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (layer, brick) = s.split_once(':').ok_or_else(|| {
            format!("{s:?} is not LAYER:BRICK (e.g. 3:down_proj, 3:*, model:lm_head)")
        })?;
        let layer = match layer.trim() {
            "*" => LayerPattern::Any,
            "model" => LayerPattern::Outside,
            n => LayerPattern::Layer(n.parse().map_err(|_| {
                format!("layer {n:?} in {s:?} is not a number, \"model\" or \"*\"")
            })?),
        };
        let brick = match brick.trim() {
            "*" => None,
            "" => return Err(format!("{s:?} names no brick (use * for every brick)")),
            b => Some(match b.parse::<BrickId>() {
                Ok(id) => id.name().to_string(),
                Err(_) => b.to_string(),
            }),
        };
        Ok(KernelPattern { layer, brick })
    }
}

impl fmt::Display for KernelPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.layer {
            LayerPattern::Any => f.write_str("*")?,
            LayerPattern::Outside => f.write_str("model")?,
            LayerPattern::Layer(l) => write!(f, "{l}")?,
        }
        // The brick name may come from a file (a diff's re-run options): escaped.
        let brick = self.brick.as_deref().unwrap_or("*");
        write!(f, ":{}", crate::base::printable::printable(brick))
    }
}

/// Parse `3:down_proj,3:*,model:lm_head` (the `--capture` grammar): comma-separated
/// [`KernelPattern`]s.
#[cfg(test)]
fn parse_patterns(s: &str) -> Result<Vec<KernelPattern>, String> {
    s.split(',').map(|p| p.trim().parse()).collect()
}

/// Default capture budget: 256 MiB.
pub(crate) const DEFAULT_CAPTURE_BUDGET: u64 = 256 << 20;

/// Which kernels' whole outputs are captured: kernel patterns, passes, and a byte budget.
/// Captures are taken by the checksum recording calls (`prof.checksums().record*`), never on the
/// timing hot path; the default plan captures nothing.
///
/// ```
/// use brickprof::capture::CapturePlan;
/// use brickprof::{BrickId, BrickProfiler, ProfilerConfig};
/// let plan = CapturePlan {
///     kernels: vec!["0:rms_norm".parse()?],
///     passes: Some(vec![1]),
///     ..CapturePlan::default()
/// };
/// let mut prof = BrickProfiler::new(ProfilerConfig { layers: 1, capture_plan: plan, ..Default::default() })?;
/// for pass in 0..3 {
///     prof.checksums().record(Some(0), BrickId::RmsNorm, &[pass as f32]);
///     prof.end_pass(1)?;
/// }
/// let caps = prof.checksums().take_captures();
/// assert_eq!(caps.tensors.len(), 1);
/// assert_eq!(caps.tensors[0].key.pass, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturePlan {
    /// The kernels to capture (empty: none).
    pub kernels: Vec<KernelPattern>,
    /// Only these passes (`None`: every pass).
    pub passes: Option<Vec<u64>>,
    /// At most this many bytes of tensor data are kept; tensors past it are counted as
    /// overflow, not kept.
    pub budget_bytes: u64,
}

impl Default for CapturePlan {
    fn default() -> Self {
        CapturePlan {
            kernels: Vec::new(),
            passes: None,
            budget_bytes: DEFAULT_CAPTURE_BUDGET,
        }
    }
}

impl CapturePlan {
    /// True when the plan captures nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }

    /// True when the plan captures `brick` in `layer` in `pass`.
    pub(crate) fn selects(&self, pass: u64, layer: Option<u32>, brick: &str) -> bool {
        self.passes.as_ref().is_none_or(|ps| ps.contains(&pass))
            && self.kernels.iter().any(|k| k.matches(layer, brick))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_and_print_back() {
        // spec/divergence.md "Capture plans".
        for (s, back) in [
            ("3:down_proj", "3:DownProjection"),
            ("*:rms", "*:RmsNorm"),
            ("model:*", "model:*"),
            ("0:moe_router", "0:moe_router"),
        ] {
            let p: KernelPattern = s.parse().unwrap();
            assert_eq!(p.to_string(), back);
            assert_eq!(back.parse::<KernelPattern>().unwrap(), p);
        }
        // (the examples of KernelPattern's doc, before `matches` became internal)
        let p: KernelPattern = "3:down_proj".parse().unwrap();
        assert!(p.matches(Some(3), "DownProjection"));
        assert!(!p.matches(Some(2), "DownProjection"));
        assert!("model:*"
            .parse::<KernelPattern>()
            .unwrap()
            .matches(None, "LmHead"));
        for bad in ["", "3", "x:rms", "3:", "-1:rms"] {
            assert!(bad.parse::<KernelPattern>().is_err(), "{bad}");
        }
    }

    #[test]
    fn pattern_lists_parse() {
        // (the examples of `parse_patterns` and `parse_passes`, public before 0.4.0)
        let ps = parse_patterns("2:*, model:lm_head").unwrap();
        assert_eq!(ps.len(), 2);
        assert!(parse_patterns("2").is_err());
    }

    #[test]
    fn selection_takes_layers_passes_and_bricks() {
        let plan = CapturePlan {
            kernels: parse_patterns("1:*,model:LmHead").unwrap(),
            passes: Some(vec![0, 2]),
            ..CapturePlan::default()
        };
        assert!(plan.selects(0, Some(1), "RmsNorm"));
        assert!(plan.selects(2, None, "LmHead"));
        assert!(!plan.selects(1, Some(1), "RmsNorm"));
        assert!(!plan.selects(0, Some(0), "RmsNorm"));
        assert!(!plan.selects(0, None, "Embedding"));
        assert!(!CapturePlan::default().selects(0, Some(0), "RmsNorm"));
    }
}
