//! `brickprof diff` across instruments (spec/imports.md "Cross-instrument diff"): which two
//! files are two instruments of one run, read them (a vendor file with `import`, a profile as
//! saved), and print the library's comparison; exit 0, a comparison and not a verdict.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use brickprof::compare::instrument_diff;
use brickprof::import;
use brickprof::{Error, Profile, Result};

use crate::commands::diff::DiffArgs;
use crate::output::Stdout;

/// One side of a cross-instrument comparison: its profile, what it was read from, and the
/// notes the import made.
#[derive(Debug, Clone)]
pub(crate) struct Instrument {
    /// The profile (a vendor file's import, or a saved profile).
    pub(crate) profile: Profile,
    /// The import's notes (empty for a profile).
    pub(crate) notes: Vec<String>,
}

impl Instrument {
    /// Read `path`: a vendor file any importer recognises is imported, anything else loads
    /// as a saved profile. Errors name the file.
    pub(crate) fn load(path: &Path) -> Result<Instrument> {
        match import::importer_of(path) {
            Ok(importer) => {
                let imported = importer.read(path)?;
                Ok(Instrument {
                    profile: imported.profile,
                    notes: imported.notes,
                })
            }
            Err(_) => Ok(Instrument {
                profile: Profile::load(path)?,
                notes: Vec::new(),
            }),
        }
    }
}

/// Whether `diff reference candidate` is a cross-instrument comparison, and both sides when
/// it is: either file is a vendor file, or both are profiles (without checksums) whose
/// timelines differ. `None` when it is an ordinary diff (files that are neither are left to
/// it, and so are its errors).
pub(crate) fn cross_instrument(
    reference: &Path,
    candidate: &Path,
) -> Result<Option<[Instrument; 2]>> {
    let vendor = |p: &Path| import::importer_of(p).is_ok();
    if vendor(reference) || vendor(candidate) {
        return Ok(Some([
            Instrument::load(reference)?,
            Instrument::load(candidate)?,
        ]));
    }
    let (Ok(a), Ok(b)) = (Profile::load(reference), Profile::load(candidate)) else {
        return Ok(None);
    };
    if a.meta.timeline == b.meta.timeline || a.checksums.is_some() || b.checksums.is_some() {
        return Ok(None);
    }
    let own = |profile| Instrument {
        profile,
        notes: Vec::new(),
    };
    Ok(Some([own(a), own(b)]))
}

/// Both sides when the diff is a cross-instrument one: asked with `--instruments`, or a
/// vendor file on either side, or profiles of different timelines (unless
/// `--timing-across-machines` asks for verdicts across them).
pub(crate) fn sides(args: &DiffArgs) -> Result<Option<[Instrument; 2]>> {
    let (a, b) = (&args.reference, &args.candidate);
    if args.instruments {
        return Ok(Some([Instrument::load(a)?, Instrument::load(b)?]));
    }
    let vendor = |p: &PathBuf| brickprof::import::importer_of(p).is_ok();
    if args.timing_across_machines && !vendor(a) && !vendor(b) {
        return Ok(None);
    }
    cross_instrument(a, b)
}

/// Print the cross-instrument comparison (text or JSON), the imports' notes on stderr; exit
/// 0: it is a comparison, not a verdict. Flags that gate or judge are refused.
pub(crate) fn run(
    args: &DiffArgs,
    sides: [Instrument; 2],
    stdout: &mut Stdout,
) -> Result<ExitCode> {
    fn joined<T: ToString>(items: &[T]) -> Option<String> {
        (!items.is_empty()).then(|| {
            items
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        })
    }
    let paths = |p: &[PathBuf]| joined(&p.iter().map(|p| p.display()).collect::<Vec<_>>());
    let judging = [
        ("--fail-on", joined(&args.fail_on)),
        ("--budget", joined(&args.budget)),
        ("--check", joined(&args.check)),
        ("--noise", paths(&args.noise)),
        ("--junit", paths(args.junit.as_slice())),
    ];
    if let Some((flag, Some(value))) = judging.into_iter().find(|(_, v)| v.is_some()) {
        return Err(Error::invalid_value(
            flag,
            value,
            "a cross-instrument diff gives no verdict to gate or judge",
        ));
    }
    for (side, path) in sides.iter().zip([&args.reference, &args.candidate]) {
        for note in &side.notes {
            crate::output::note(&format!("{}: {note}", path.display()));
        }
    }
    let label = |p: &PathBuf| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let diff = instrument_diff(
        &sides[0].profile,
        &sides[1].profile,
        [&label(&args.reference), &label(&args.candidate)],
        args.by_layer,
    );
    if args.format == "json" {
        let json = serde_json::to_string_pretty(&diff)
            .map_err(|e| Error::invalid_value("--format", "json", e.to_string()))?;
        stdout.print(&format!("{json}\n"))?;
    } else {
        for line in diff.render().lines() {
            stdout.safe_line(line)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
