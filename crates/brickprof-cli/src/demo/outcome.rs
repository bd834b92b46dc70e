//! What a demo run produced ([`DemoRun`]), its trace files, and [`report`]: the table printed
//! and the files saved.

use std::path::PathBuf;

use brickprof::capture::CaptureStore;
use brickprof::report::{render_table, write_trace, TableOptions, CAPTURE_FILE};
use brickprof::{BrickProfiler, MeasuredPeaks, Profile, Result, Timeline};

use super::options::DemoOptions;
use crate::out_dir::OutDir;
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

/// Stream the trace into `out` in each requested format; the paths written.
pub fn write_traces<T: Timeline>(
    opts: &DemoOptions,
    prof: &BrickProfiler<T>,
) -> Result<Vec<PathBuf>> {
    let (Some(dir), Some(view)) = (&opts.out, prof.trace_view()) else {
        return Ok(Vec::new());
    };
    let mut written = Vec::new();
    for &format in &opts.trace_formats {
        let path = dir.join(format!("trace.{}", format.extension()));
        write_trace(&view, &path, format)?;
        written.push(path);
    }
    Ok(written)
}

/// Print the demo's report and save its files into `out` (locked while they are written, so
/// two demos writing one directory leave one demo's complete set; traces are streamed during
/// the run).
pub fn report(run: &DemoRun, out: Option<&OutDir>, stdout: &mut Stdout) -> Result<()> {
    stdout.print(&render_table(&run.profile, &TableOptions::default()))?;
    for note in &run.notes {
        stdout.line(note)?;
    }
    if let Some(m) = &run.cpu_peaks {
        stdout.line(&m.describe())?;
    }
    stdout.line(&format!(
        "generated {} tokens: {:?}",
        run.generated.len(),
        &run.generated[..run.generated.len().min(16)]
    ))?;
    if let Some(c) = &run.captures {
        if c.overflow_tensors() > 0 {
            stdout.line(&format!(
                "capture budget: {} tensors ({} bytes) over --capture-budget {} were not captured",
                c.overflow_tensors(),
                c.overflow_bytes(),
                c.budget_bytes()
            ))?;
        }
    }
    let Some(dir) = out else { return Ok(()) };
    let mut said = Vec::new();
    {
        let _lock = dir.lock()?;
        let path = dir.join("profile.json");
        run.profile.save(&path)?;
        said.push(format!("profile written to {}", path.display()));
        for path in &run.traces {
            said.push(format!(
                "trace written to {} (open it in ui.perfetto.dev)",
                path.display()
            ));
        }
        let captures = dir.join(CAPTURE_FILE);
        match &run.captures {
            Some(c) => {
                c.save(&captures)?;
                said.push(format!(
                    "{} captured tensors ({} bytes) written to {}",
                    c.len(),
                    c.bytes(),
                    captures.display()
                ));
            }
            None => remove_stale(&captures, &mut said)?,
        }
        if let Some(log) = &run.profile.checksums {
            let path = dir.join("checksums.json");
            log.save(&path)?;
            said.push(format!(
                "{} kernel checksums written to {}",
                log.len(),
                path.display()
            ));
        } else {
            // A checksum log left by an earlier run would pair with this run's profile.
            remove_stale(&dir.join("checksums.json"), &mut said)?;
        }
    }
    for line in said {
        stdout.line(&line)?;
    }
    Ok(())
}

/// Remove a file an earlier run left in the output folder (it would pair with this run's).
fn remove_stale(stale: &std::path::Path, said: &mut Vec<String>) -> Result<()> {
    if stale.is_file() {
        std::fs::remove_file(stale).map_err(|e| brickprof::Error::Io {
            path: stale.to_path_buf(),
            source: e,
        })?;
        said.push(format!(
            "removed {} of an earlier run (this run has none)",
            stale.display()
        ));
    }
    Ok(())
}
