//! `brickprof merge`: profiles of threads, ranks or runs into one.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use brickprof::{Profile, Result};

use crate::commands::in_file;
use crate::output::Stdout;

/// `brickprof merge`'s flags.
#[derive(Args)]
pub struct MergeArgs {
    /// The profiles to merge.
    #[arg(required = true, num_args = 1..)]
    profiles: Vec<PathBuf>,
    /// Where to write the merged profile.
    #[arg(short, long)]
    output: PathBuf,
}

impl MergeArgs {
    /// The profiles it reads and the file it writes.
    pub fn inputs_and_outputs(&self) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (self.profiles.clone(), vec![self.output.clone()])
    }
}

/// Merge the profiles in order and save the result.
pub fn run(args: MergeArgs, stdout: &mut Stdout) -> Result<ExitCode> {
    let MergeArgs { profiles, output } = args;
    let mut merged: Option<Profile> = None;
    for path in &profiles {
        let p = Profile::load(path)?;
        match merged.as_mut() {
            None => merged = Some(p),
            Some(m) => m.merge(&p).map_err(|e| in_file(path, e))?,
        }
    }
    if let Some(m) = merged {
        m.save(&output)?;
        stdout.line(&format!(
            "merged {} profiles ({} passes, {} tokens) into {}",
            profiles.len(),
            m.meta.counters.passes,
            m.meta.counters.tokens,
            output.display()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
