//! What a demo run produced ([`DemoRun`]), its trace files, and [`report`]: the table printed
//! and the files saved.

use std::path::PathBuf;

use brickprof::report::{render_table, write_trace, TableOptions};
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
            let stale = dir.join("checksums.json");
            if stale.is_file() {
                std::fs::remove_file(&stale).map_err(|e| brickprof::Error::Io {
                    path: stale.clone(),
                    source: e,
                })?;
                said.push(format!(
                    "removed {} of an earlier run (this run has no checksums)",
                    stale.display()
                ));
            }
        }
    }
    for line in said {
        stdout.line(&line)?;
    }
    Ok(())
}
