//! `brickprof diff`: compare two runs. Checksums are compared with
//! [`crate::compare::divergence()`] when both files carry them, captures elementwise when both
//! runs have them, against a noise run when one is given, with where error is born, the
//! capture options of the next step and the first generated token that differs
//! (`tokens.json` beside both runs) (spec/divergence.md); timings are compared per (phase,
//! brick) when both files are profiles (`timing_diff`, spec/profile-format.md "Comparing
//! runs").

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::noise_check::noise_run_problem;
use super::timing_diff::{timing_diff, TimingDiff};
use super::verdicts::{timing_verdicts, TimingVerdicts, VerdictOptions};
use crate::capture::CaptureStore;
use crate::compare::divergence::{
    apply_captures, apply_noise, check_captures_match, compare_from, error_flow, rerun_plan, Check,
    DivergenceReport, ErrorFlow, NoiseMeasure, Tolerance, Verdict, DEFAULT_NOISE_FACTOR,
    REL_EPSILON,
};
use crate::figures::units::clip;
use crate::profile::generated::{GeneratedTokens, TokenDifference, TOKENS_FILE};
use crate::profile::RunFile;
use crate::{model::PhaseFilter, Error, Phase, Result};

/// What a diff found.
#[derive(Debug, Clone)]
pub struct DiffOutcome {
    /// The printable report.
    pub text: String,
    /// The timing comparison, when both runs are profiles: per (phase, brick) rows of the
    /// passes [`DiffOptions::phase`] keeps (spec/profile-format.md "Comparing runs").
    pub timing: Option<TimingDiff>,
    /// True when a checksum comparison found a divergence or the generated tokens differ.
    /// Timing differences alone are reported here, not judged.
    pub diverged: bool,
    /// The checksum comparison, when both runs had checksums.
    pub checksums: Option<DivergenceReport>,
    /// Where error is born, when both runs had checksums.
    pub flow: Option<ErrorFlow>,
    /// The first generated token that differs, when both runs saved their tokens
    /// (`tokens.json` beside the run's file) and they differ (a difference is a divergence).
    pub first_token_difference: Option<TokenDifference>,
    /// The timing verdicts, when both runs are profiles (spec/timing-verdicts.md): rows of
    /// the phase [`DiffOptions::phase`] keeps. They change [`Self::diverged`] never; gates
    /// read them.
    pub verdicts: Option<TimingVerdicts>,
}

/// How `brickprof diff` judges (spec/divergence.md).
#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// Summary tolerance, for kernels without captures.
    pub tolerance: Tolerance,
    /// Elementwise checks that decide the verdict of kernels both runs captured.
    pub checks: Vec<Check>,
    /// Further runs of the reference setup: each kernel's largest run-to-run distance sets
    /// its noise band (more runs, a steadier band).
    pub noise: Vec<PathBuf>,
    /// Noise band = factor × run-to-run distance (default 3: a candidate may stray up to 3x
    /// as far as the reference strays from itself).
    pub noise_factor: f64,
    /// Which passes' timings are compared (default: all, phase by phase when both runs have
    /// phases). Checksums are compared whatever the phase.
    pub phase: PhaseFilter,
    /// How timing verdicts are made (spec/timing-verdicts.md).
    pub timing: VerdictOptions,
    /// The smallest timing change each phase's rows are asked about, as a fraction (`None`:
    /// every phase), e.g. the sizes of the CLI's `--fail-on` gates: a row is asked about the
    /// smallest size covering it (at least [`VerdictOptions`]' minimum practical size), so a
    /// noise band wider than that reads "cannot judge" (spec/timing-verdicts.md "Cannot
    /// judge"). Empty: every row is asked about the minimum practical size.
    pub asked: Vec<(Option<Phase>, f64)>,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            tolerance: Tolerance::default(),
            checks: Vec::new(),
            noise: Vec::new(),
            noise_factor: DEFAULT_NOISE_FACTOR,
            phase: PhaseFilter::default(),
            timing: VerdictOptions::default(),
            asked: Vec::new(),
        }
    }
}

impl DiffOptions {
    /// Refuse options that would make the judgement meaningless, before any file is read
    /// (spec/divergence.md "Options that mean something"): a tolerance that is not finite and
    /// 0 or more ([`Tolerance::validate`]), a check threshold every output passes or none does
    /// ([`Check::validate`]), a noise factor that is not finite and 0 or more, timing settings
    /// out of range ([`VerdictOptions`]' minimum practical size and noise factor). Each is an
    /// [`Error::InvalidValue`].
    pub(crate) fn validate(&self) -> Result<()> {
        self.tolerance.validate()?;
        for c in &self.checks {
            c.validate()
                .map_err(|why| Error::invalid_value("check", c, why))?;
        }
        let f = self.noise_factor;
        if !(f.is_finite() && f >= 0.0) {
            return Err(Error::invalid_value(
                "noise factor",
                f,
                "a finite, non-negative number",
            ));
        }
        self.timing.settings().map(|_| ())
    }
}

/// Compare the runs saved at `reference` and `candidate` (profiles or checksum logs) with
/// `tolerance` only: every error names the file it is about (`brickprof diff`).
#[cfg(test)]
pub(crate) fn diff_files(
    reference: &Path,
    candidate: &Path,
    tolerance: Tolerance,
) -> Result<DiffOutcome> {
    diff_files_with(
        reference,
        candidate,
        &DiffOptions {
            tolerance,
            ..DiffOptions::default()
        },
    )
}

/// `diff_files` with captures, checks and noise runs (spec/divergence.md). Captures are read
/// from `captures.safetensors` beside each run's file, when there is one, and must match the
/// run's checksum log. Files read together that carry different run ids are an
/// [`Error::MixedRun`] (spec/profile-format.md "A run folder"). Options that would make the
/// judgement meaningless are refused first (`DiffOptions::validate`).
pub fn diff_files_with(
    reference: &Path,
    candidate: &Path,
    options: &DiffOptions,
) -> Result<DiffOutcome> {
    options.validate()?;
    let runs = [Run::load(reference)?, Run::load(candidate)?];
    let noise = options
        .noise
        .iter()
        .map(|p| Run::load(p))
        .collect::<Result<Vec<_>>>()?;
    diff_from(&runs, &noise, options)
}

/// One run: its file, where it was read, its captures and its generated tokens.
struct Run {
    file: RunFile,
    path: Option<PathBuf>,
    captures: Option<CaptureStore>,
    tokens: Option<GeneratedTokens>,
}

/// The name of the capture file beside a run's files.
pub const CAPTURE_FILE: &str = "captures.safetensors";

/// Every file a comparison ([`diff_files_with`], `report --diff`) reads for the run at `path`:
/// the file itself, then the [`CAPTURE_FILE`] and the [`crate::profile::TOKENS_FILE`] beside it (read
/// when they exist). A command's outputs are checked against these
/// ([`crate::io::check_outputs_apart`]).
pub fn run_files(path: &Path) -> [PathBuf; 3] {
    let beside = |name: &str| {
        path.parent()
            .map_or_else(|| PathBuf::from(name), |d| d.join(name))
    };
    [
        path.to_path_buf(),
        beside(CAPTURE_FILE),
        beside(TOKENS_FILE),
    ]
}

impl Run {
    fn load(path: &Path) -> Result<Run> {
        let [path, beside, tokens_file] = run_files(path);
        let file = RunFile::load(&path)?;
        let tokens = if tokens_file.is_file() {
            Some(GeneratedTokens::load(&tokens_file)?)
        } else {
            None
        };
        let captures = if beside.is_file() {
            Some(CaptureStore::load(&beside)?)
        } else {
            None
        };
        // Files of two runs are named as such, before their contents disagree.
        crate::io::run_id::same_run(&[
            (&path, file.run_id()),
            (&beside, captures.as_ref().and_then(|c| c.run_id.as_ref())),
            (
                &tokens_file,
                tokens.as_ref().and_then(GeneratedTokens::run_id),
            ),
        ])?;
        if let (Some(c), Some(log)) = (&captures, file.checksums()) {
            check_captures_match(c, log, &beside)?;
        }
        Ok(Run {
            file,
            path: Some(path),
            captures,
            tokens,
        })
    }
}

/// Compare with captures, checks and noise applied.
fn judged(a: &Run, b: &Run, options: &DiffOptions) -> Result<Option<DivergenceReport>> {
    let (Some(la), Some(lb)) = (a.file.checksums(), b.file.checksums()) else {
        return Ok(None);
    };
    let mut report = compare_from(
        la,
        lb,
        options.tolerance,
        [a.path.as_deref(), b.path.as_deref()],
    )?;
    if let (Some(ca), Some(cb)) = (&a.captures, &b.captures) {
        apply_captures(&mut report, ca, cb, &options.checks);
    } else {
        report.checks = options.checks.clone();
    }
    Ok(Some(report))
}

/// The noise runs' profiles for the timing verdicts of `reference` (spec/timing-verdicts.md
/// "Noise runs must be of the reference's model"): a checksum log, or a profile of another
/// model, machine or timeline, is an error naming its file, never silently left out.
fn timing_noise<'a>(
    reference: &crate::Profile,
    noise: &'a [Run],
    options: &DiffOptions,
) -> Result<Vec<&'a crate::Profile>> {
    let refuse = |n: &Run, message: String| match n.path.as_deref() {
        Some(path) => Error::invalid(path, message),
        None => Error::NothingToDo {
            what: "a noise run is not of the reference setup",
            hint: "give --noise runs of the reference's model, machine and timeline",
        },
    };
    noise
        .iter()
        .map(|n| {
            let p = n.file.profile().ok_or_else(|| {
                refuse(
                    n,
                    "a checksum log gives no timings: give the noise run's profile.json as                      --noise (a run recorded with --checksums carries its checksums too)"
                        .to_string(),
                )
            })?;
            match noise_run_problem(reference, p, options.timing.across_machines) {
                Some(why) => Err(refuse(n, why)),
                None => Ok(p),
            }
        })
        .collect()
}

/// Ask each row of `v` about the smallest of the `asked` sizes covering its phase
/// ([`DiffOptions::asked`]).
fn ask(v: &mut TimingVerdicts, asked: &[(Option<Phase>, f64)]) {
    v.ask(|row| {
        asked
            .iter()
            .filter(|(phase, _)| phase.is_none_or(|p| p == row.phase))
            .map(|(_, size)| *size)
            .reduce(f64::min)
    });
}

fn diff_from(runs: &[Run; 2], noise: &[Run], options: &DiffOptions) -> Result<DiffOutcome> {
    let [reference, candidate] = runs;
    let mut text = String::new();
    let timing = match (reference.file.profile(), candidate.file.profile()) {
        (Some(a), Some(b)) => {
            let t = timing_diff(a, b, options.phase);
            text.push_str(&t.render(a, b));
            Some(t)
        }
        _ => None,
    };
    let verdicts = match (reference.file.profile(), candidate.file.profile()) {
        (Some(a), Some(b)) => {
            let noise = timing_noise(a, noise, options)?;
            let mut v = timing_verdicts(a, b, &noise, &options.timing);
            ask(&mut v, &options.asked);
            if let PhaseFilter::Only(p) = options.phase {
                v.rows.retain(|r| r.phase == p);
            }
            text.push('\n');
            text.push_str(&v.render());
            Some(v)
        }
        _ => None,
    };
    let timed = timing.is_some();
    let mut report = judged(reference, candidate, options)?;
    if let (Some(r), false) = (report.as_mut(), noise.is_empty()) {
        let mut noise_reports = Vec::with_capacity(noise.len());
        for n in noise {
            noise_reports.push(judged(reference, n, options)?.ok_or_else(|| {
                let message = "the noise run carries no checksums: record it with --checksums";
                match n.path.as_deref() {
                    Some(path) => Error::invalid(path, message),
                    None => Error::NothingToDo {
                        what: "the noise run carries no checksums",
                        hint: "record it with --checksums, as the runs it is compared with",
                    },
                }
            })?);
        }
        apply_noise(r, &noise_reports, options.noise_factor);
    }
    let mut flow = None;
    if let (Some(r), Some(log)) = (&report, reference.file.checksums()) {
        if timed {
            text.push('\n');
        }
        let _ = writeln!(text, "{r}");
        text.push_str(&render_elementwise(r));
        if let Some(factor) = r.noise_factor {
            text.push_str(&render_noise(r, factor));
        }
        let f = error_flow(r, log);
        text.push_str(&render_flow(&f));
        flow = Some(f);
        let captured = |k: &crate::checksum::KernelKey| {
            r.divergences
                .iter()
                .any(|d| &d.key == k && d.elementwise.is_some())
        };
        // The capture options to re-run both sides with, when a kernel differs and the first
        // diverged kernel was not captured by both.
        let rerun = rerun_plan(r, log).filter(|_| {
            r.first_diverged()
                .or_else(|| r.first())
                .is_some_and(|d| !captured(&d.key))
        });
        if let Some(plan) = &rerun {
            let _ = writeln!(
                text,
                "Next: re-run both sides with `{plan}`\n  (that kernel, the rest of its layer \
                 and its layer's input), then diff again element by element."
            );
        }
    }
    let first_token_difference = match (&reference.tokens, &candidate.tokens) {
        (Some(a), Some(b)) => {
            let d = a.first_difference(b);
            let _ = match &d {
                Some(d) => writeln!(text, "\nFirst differing token: {d}"),
                None => writeln!(
                    text,
                    "\nGenerated tokens: the same {} tokens in both runs",
                    a.ids().len()
                ),
            };
            d
        }
        _ => None,
    };
    if !timed && report.is_none() {
        return Err(Error::NothingToDo {
            what: "nothing to compare",
            hint: "give two profiles, or two runs that both carry checksums \
             (run the demo with --checksums, or enable ProfilerConfig::checksums)",
        });
    }
    Ok(DiffOutcome {
        text,
        timing,
        diverged: report.as_ref().is_some_and(|r| !r.is_match())
            || first_token_difference.is_some(),
        checksums: report,
        flow,
        first_token_difference,
        verdicts,
    })
}

/// A statistic in 3 significant digits: `1.23e-5`, `inf`, `-inf`, `n/a` for NaN.
fn stat(x: f64) -> String {
    if x.is_nan() {
        "n/a".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else if x == 0.0 {
        "0".into()
    } else if (1e-2..1e4).contains(&x.abs()) {
        format!("{x:.4}")
    } else {
        format!("{x:.2e}")
    }
}

/// Elementwise statistics of every kernel both runs captured that differs (fits 100 columns).
fn render_elementwise(r: &DivergenceReport) -> String {
    let rows: Vec<_> = r
        .divergences
        .iter()
        .filter_map(|d| d.elementwise.map(|s| (d, s)))
        .collect();
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    let checks: Vec<String> = r.checks.iter().map(ToString::to_string).collect();
    let _ = writeln!(
        out,
        "\nElementwise, {} captured kernels that differ (max rel: |c - r| / max(|r|, {REL_EPSILON:e}))\n\
         verdict by {}",
        rows.len(),
        if checks.is_empty() {
            "the bits (give --check STAT:THRESHOLD)".to_string()
        } else {
            checks.join(", ")
        }
    );
    let _ = writeln!(
        out,
        "{:<26} {:<8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "Kernel",
        "Verdict",
        "max abs",
        "max rel",
        "mean abs",
        "p99 abs",
        "cosine",
        "SQNR dB",
        "NMSE"
    );
    out.push_str(&"-".repeat(98));
    out.push('\n');
    for (d, s) in rows.iter().take(40) {
        let verdict = match d.verdict {
            Verdict::BitwiseEqual => "equal",
            Verdict::WithinTolerance => "pass",
            Verdict::WithinNoise => "noise",
            Verdict::Diverged => "FAIL",
        };
        let (cosine, sqnr) = (cosine_text(s.cosine), sqnr_text(s.sqnr_db));
        let _ = writeln!(
            out,
            "{:<27} {:<7} {:>8} {:>8} {:>8} {:>8} {:>9} {:>7} {:>8}",
            clip(&short_key(&d.key), 27),
            verdict,
            stat(s.max_abs),
            stat(s.max_rel),
            stat(s.mean_abs),
            stat(s.p99_abs),
            cosine,
            sqnr,
            stat(s.nmse),
        );
    }
    if rows.len() > 40 {
        let _ = writeln!(out, "... and {} more", rows.len() - 40);
    }
    out
}

/// A kernel key in a table: `p0 L2 DownProjection #1`, `p3 model LmHead` (escaped).
fn short_key(k: &crate::checksum::KernelKey) -> String {
    let layer = k.layer.map_or("model".to_string(), |l| format!("L{l}"));
    let call = if k.call > 0 {
        format!(" #{}", k.call)
    } else {
        String::new()
    };
    format!(
        "p{} {layer} {}{call}",
        k.pass,
        crate::base::printable::printable(&k.brick)
    )
}

/// The noise section.
fn render_noise(r: &DivergenceReport, factor: f64) -> String {
    let mut out = String::new();
    let within = r
        .divergences
        .iter()
        .filter(|d| d.noise.is_some_and(|n| n.within))
        .count();
    let banded = r.divergences.iter().filter(|d| d.noise.is_some()).count();
    let _ = writeln!(
        out,
        "\nNoise floor (band = {factor} x the noise runs' largest distance): {within} within \
         noise, {} beyond",
        banded - within
    );
    let beyond = r
        .divergences
        .iter()
        .find_map(|d| d.noise.filter(|n| !n.within).map(|n| (d, n)));
    match beyond {
        Some((d, n)) => {
            let _ = writeln!(
                out,
                "First beyond noise: {} (distance {}, band {} by {})",
                d.key,
                stat(n.distance),
                stat(n.band),
                match n.measure {
                    NoiseMeasure::Rmse => "RMSE",
                    NoiseMeasure::Summary => "summary",
                }
            );
        }
        None => {
            let _ = writeln!(out, "Every differing kernel is within noise.");
        }
    }
    out
}

/// Where error is born: by pass, the origin, and the error through the layers.
fn render_flow(f: &ErrorFlow) -> String {
    let mut out = String::new();
    let Some(first) = f.first_pass else {
        return out;
    };
    let mut line =
        format!("\nBy pass: first diverging pass {first}; diverged kernels (pass:count)");
    for p in f.by_pass.iter().filter(|p| p.diverged > 0) {
        let item = format!(" {}:{}", p.pass, p.diverged);
        if line.len() + item.len() > 96 {
            line.push_str(" ...");
            break;
        }
        line.push_str(&item);
    }
    let _ = writeln!(out, "{line}");
    for k in f.born.iter().take(3) {
        let _ = writeln!(out, "Error is born at {k} (input and layer input within)");
    }
    if f.born.len() > 3 {
        let _ = writeln!(
            out,
            "  ... and at {} more kernels of pass {first}",
            f.born.len() - 3
        );
    }
    let _ = writeln!(
        out,
        "Carried by {} diverged kernels whose input had diverged",
        f.carried
    );
    if f.layers.is_empty() {
        return out;
    }
    let forward = match (f.forwards, f.layers.first()) {
        (n, Some(l)) if n > 1 => format!(", forward {} of {n}", l.forward + 1),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "Error through the layers (pass {first}{forward}; error: sqrt(NMSE) of captures, \
         else summary):"
    );
    // Cosine and SQNR of each layer's output, when the layers' outputs were captured.
    let captured = f.layers.iter().any(|l| l.leaving_stats.is_some());
    let _ = writeln!(
        out,
        "{:>6} {:>10} {:>10} {:>10}{}  note",
        "layer",
        "entering",
        "leaving",
        "amplif.",
        if captured {
            format!(" {:>10} {:>8}", "cosine", "SQNR dB")
        } else {
            String::new()
        }
    );
    let top = f.top_amplifier().map(|l| l.layer);
    for l in &f.layers {
        let amp = l
            .amplification()
            .map_or("-".to_string(), |a| format!("{a:.3}x"));
        let note = if l.is_birthplace() {
            "error born here"
        } else if top == Some(l.layer) && l.amplification().is_some_and(|a| a > 1.0) {
            "largest amplification"
        } else {
            ""
        };
        let elementwise = match (captured, &l.leaving_stats) {
            (false, _) => String::new(),
            (true, None) if l.leaving == 0.0 => format!(" {:>10} {:>8}", "1", "inf"),
            (true, None) => format!(" {:>10} {:>8}", "-", "-"),
            (true, Some(s)) => {
                format!(" {:>10} {:>8}", cosine_text(s.cosine), sqnr_text(s.sqnr_db))
            }
        };
        let row = format!(
            "{:>6} {:>10} {:>10} {:>10}{elementwise}  {note}",
            l.layer,
            stat(l.entering),
            stat(l.leaving),
            amp
        );
        let _ = writeln!(out, "{}", row.trim_end());
    }
    out
}

/// A cosine in a table: near 1 its digits are all nines, so `1-x` shows how far below 1.
fn cosine_text(c: f64) -> String {
    if c.is_finite() && c > 0.9999 && c < 1.0 {
        format!("1-{:.1e}", 1.0 - c)
    } else {
        stat(c)
    }
}

/// An SQNR in dB, one decimal.
fn sqnr_text(db: f64) -> String {
    if db.is_finite() {
        format!("{db:.1}")
    } else {
        stat(db)
    }
}
