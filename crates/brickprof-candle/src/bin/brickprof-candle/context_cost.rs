//! Attention's cost against the context, from the profile's fits (brickprof's public API: each
//! brick's `FitSums` per phase, solved by `brickprof::figures::brick_fit`) for the bricks that
//! time attention's core, whose work grows with the tokens attended: `AttentionScore`,
//! `AttentionSoftmax` and `AttentionOutput` in explicit mode (explicit.rs), and in tracing
//! mode the dynamic `Attention` brick (candle's `attn` span; its self time is what the
//! projections and RoPE inside it leave: scores, softmax, A·V, the KV cache's growth).

use brickprof::figures::{brick_fit, render_fits, BrickFit};
use brickprof::{stats::Regressor, BrickId, Phase, Profile};

/// Whether brick `name` is one of attention's core in either profiling mode.
fn attention_core(name: &str) -> bool {
    let explicit = [
        BrickId::AttentionScore,
        BrickId::AttentionSoftmax,
        BrickId::AttentionOutput,
    ];
    name == "Attention" || explicit.iter().any(|b| b.name() == name)
}

/// The fits against the context of attention's core bricks, per phase (prefill, decode,
/// mixed), in the profile's brick order. A phase whose passes all had one context (tracing
/// mode's single prompt pass) gives none.
pub fn attention_fits(p: &Profile) -> Vec<BrickFit> {
    let mut fits = Vec::new();
    for phase in [Phase::Prefill, Phase::Decode, Phase::Mixed] {
        for b in p.bricks.iter().filter(|b| attention_core(&b.name)) {
            let Some(f) = b.fits.iter().find(|f| f.phase == phase) else {
                continue;
            };
            if let Some(fit) = brick_fit(&b.name, phase, &f.sums)
                .filter(|fit| fit.fit.regressor == Regressor::Context)
            {
                fits.push(fit);
            }
        }
    }
    fits
}

/// Below this R², a fit's line says little: [`render`] notes it.
pub const WEAK_R2: f64 = 0.5;

/// The fits as printed: one "Cost against shape (PHASE)" block per phase, and a note under a
/// phase whose fits explain less than [`WEAK_R2`] of the time's variance.
pub fn render(fits: &[BrickFit]) -> String {
    let mut out = String::new();
    for phase in [Phase::Prefill, Phase::Decode, Phase::Mixed] {
        let of_phase: Vec<BrickFit> = fits.iter().filter(|f| f.phase == phase).cloned().collect();
        out.push_str(&render_fits(&of_phase));
        let weak: Vec<&BrickFit> = of_phase.iter().filter(|f| f.fit.r2 < WEAK_R2).collect();
        if let Some(first) = weak.first() {
            let names: Vec<String> = weak
                .iter()
                .map(|f| brickprof::output::printable(&f.name).into_owned())
                .collect();
            out.push_str(&format!(
                "  note: R² under {WEAK_R2} ({}): over context {}–{} the time varies more with \
                 the machine than with the context\n",
                names.join(", "),
                first.fit.x_min,
                first.fit.x_max
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use brickprof::{
        timeline::{SimDevice, SimTimeline},
        BrickId, BrickProfiler, PassShape, ProfilerConfig,
    };

    /// spec/work-accounting.md "Cost against shape": the attention bricks, and only they,
    /// are fitted against the context, per phase; a phase with one context has no line. On
    /// the simulated device: exact kernel times.
    #[test]
    fn attention_bricks_are_fitted_against_the_context() {
        let device = SimDevice::new(0);
        let mut prof =
            BrickProfiler::with_timeline(ProfilerConfig::with_layers(1), device.timeline(64))
                .unwrap();
        let pass = |prof: &mut BrickProfiler<SimTimeline>, shape: PassShape, attn_ns: u64| {
            prof.begin_pass();
            prof.set_pass_shape(shape);
            let t = prof.start_brick(BrickId::QkvProjection);
            device.launch(1000);
            prof.stop_brick(t, 1);
            let t = prof.start_brick(BrickId::AttentionScore);
            device.launch(attn_ns);
            prof.stop_brick(t, 1);
            prof.end_pass(u64::from(shape.new_tokens())).unwrap();
        };
        pass(&mut prof, PassShape::new(300, 1, 300).unwrap(), 9000);
        for ctx in 301..=340u64 {
            pass(&mut prof, PassShape::new(1, 1, ctx).unwrap(), 100 + 2 * ctx);
        }
        let fits = attention_fits(&prof.profile());
        assert_eq!(fits.len(), 1, "{fits:?}");
        let f = &fits[0];
        assert_eq!(
            (f.name.as_str(), f.phase),
            ("AttentionScore", Phase::Decode)
        );
        assert!((f.fit.slope_ns - 2.0).abs() < 1e-9, "{f:?}");
        assert!((f.fit.intercept_ns - 100.0).abs() < 1e-6, "{f:?}");
        assert_eq!((f.fit.x_min, f.fit.x_max), (301, 340));
        let text = render(&fits);
        assert!(text.starts_with("Cost against shape (decode)"), "{text}");
        assert!(text.contains("per 1k context"), "{text}");
        assert!(
            !text.contains("note: R²"),
            "an exact line is not weak: {text}"
        );
    }

    /// Both modes' attention core, and neither mode's projections (their decode time never
    /// varies with new tokens, so a fit would fall back to the context: a line through noise).
    #[test]
    fn attention_core_is_the_explicit_bricks_and_tracing_modes_attention() {
        for name in [
            "AttentionScore",
            "AttentionSoftmax",
            "AttentionOutput",
            "Attention",
        ] {
            assert!(attention_core(name), "{name}");
        }
        for name in [
            "QkvProjection",
            "OutputProjection",
            "Mlp",
            "QMatMul",
            "RopeEmbedding",
        ] {
            assert!(!attention_core(name), "{name}");
        }
    }

    #[test]
    fn a_weak_fit_is_noted_under_its_phase() {
        let fit = |r2| BrickFit {
            name: "Attention".into(),
            phase: Phase::Decode,
            fit: brickprof::stats::Fit {
                regressor: Regressor::Context,
                intercept_ns: 1000.0,
                slope_ns: 2.0,
                r2,
                n: 63,
                x_min: 417,
                x_max: 479,
            },
            calls_per_pass: Some(30),
        };
        let text = render(&[fit(0.26)]);
        assert!(
            text.contains("note: R² under 0.5 (Attention): over context 417–479"),
            "{text}"
        );
        assert!(!render(&[fit(0.9)]).contains("note"));
    }
}
