//! What a demo run produced ([`DemoRun`]), its trace files, and [`report`]: the table printed
//! and the files saved.

use std::path::PathBuf;

use brickprof::capture::CaptureStore;
use brickprof::{
    compare::CAPTURE_FILE,
    output::{render_table, write_output, Snapshot, TableOptions},
};
use brickprof::{io::RunFolder, roofline::MeasuredPeaks, BrickProfiler, Profile, Result, Timeline};

use super::options::DemoOptions;
use crate::output::Stdout;

/// What a demo run produced.
pub struct DemoRun {
    pub profile: Profile,
    /// Trace files written.
    pub traces: Vec<PathBuf>,
    pub generated: Vec<usize>,
    /// Lines printed after the table (what a timeline has to say about the run).
    pub notes: Vec<String>,
    /// This CPU's measured peaks, when the roofline uses them.
    pub cpu_peaks: Option<MeasuredPeaks>,
    /// The captured outputs, when a capture plan was given.
    pub captures: Option<CaptureStore>,
}

/// Stream the trace into `opts.trace_files` (in the run folder), each in its format; the
/// paths written.
pub fn write_traces<T: Timeline>(
    opts: &DemoOptions,
    prof: &BrickProfiler<T>,
) -> Result<Vec<PathBuf>> {
    let Some(view) = prof.view().trace_view() else {
        return Ok(Vec::new());
    };
    let mut written = Vec::new();
    for (format, path) in &opts.trace_files {
        write_output(*format, &Snapshot::Trace(&view), path)?;
        written.push(path.clone());
    }
    Ok(written)
}

/// Print the demo's report and save its files into the run folder `out` (the traces are
/// already in it), stamped with the run's id, then swap the run in whole
/// (spec/profile-format.md "A run folder").
pub fn report(run: DemoRun, out: Option<RunFolder>, stdout: &mut Stdout) -> Result<()> {
    stdout.print(&render_table(&run.profile, &TableOptions::default()))?;
    for note in &run.notes {
        stdout.line(note)?;
    }
    if let Some(m) = &run.cpu_peaks {
        stdout.line(&m.to_string())?;
    }
    stdout.line(&format!(
        "generated {} tokens: {:?}",
        run.generated.len(),
        &run.generated[..run.generated.len().min(16)]
    ))?;
    if let Some(c) = &run.captures {
        if c.overflow_tensors > 0 {
            stdout.line(&format!(
                "capture budget: {} tensors ({} bytes) over --capture-budget {} were not captured",
                c.overflow_tensors, c.overflow_bytes, c.budget_bytes
            ))?;
        }
    }
    let Some(folder) = out else { return Ok(()) };
    let id = folder.run_id().clone();
    let DemoRun {
        mut profile,
        traces,
        captures,
        ..
    } = run;
    profile.set_run_id(Some(id.clone()));
    profile.save(folder.path("profile.json")?)?;
    if let Some(log) = &profile.checksums {
        log.save(folder.path("checksums.json")?)?;
    }
    let captured = match captures {
        Some(mut c) => {
            c.run_id = Some(id);
            c.save(&folder.path(CAPTURE_FILE)?)?;
            Some((c.tensors.len(), c.bytes))
        }
        None => None,
    };
    let done = folder.commit()?;
    let at = |name: &str| done.path.join(name).display().to_string();
    stdout.line(&format!("profile written to {}", at("profile.json")))?;
    for path in &traces {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        stdout.line(&format!(
            "trace written to {} (open it in ui.perfetto.dev)",
            at(&name)
        ))?;
    }
    if let Some((n, bytes)) = captured {
        stdout.line(&format!(
            "{n} captured tensors ({bytes} bytes) written to {}",
            at(CAPTURE_FILE)
        ))?;
    }
    if let Some(log) = &profile.checksums {
        stdout.line(&format!(
            "{} kernel checksums written to {}",
            log.entries.len(),
            at("checksums.json")
        ))?;
    }
    for name in &done.removed {
        stdout.line(&format!(
            "removed {} of an earlier run (this run has none)",
            at(name)
        ))?;
    }
    if let Some(kept) = done.kept.as_deref() {
        stdout.line(&format!(
            "the earlier run's folder stays at {}: something appeared in {} meanwhile under a \
             name it holds; look there",
            kept.display(),
            done.path.display()
        ))?;
    }
    Ok(())
}
