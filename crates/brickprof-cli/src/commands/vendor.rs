//! `brickprof vendor ncu|nsys|rocprofv3 [--metrics SET] [--dry-run] [-o OUT] -- CMD ARGS...`
//! (spec/imports.md "Run under a vendor tool"): run a program under a vendor profiler with the
//! flags brickprof's ranges need, then read the tool's file back as `brickprof import` does.
//!
//! One [`VendorTool`] a tool (an open set: a new tool is one new type, listed in [`tools`]): it
//! names itself and how to install it, and plans the command lines ([`Plan`]). This module finds
//! the tool on `PATH`, asks its version, runs the plan with `$BRICKPROF_VENDOR_RANGES` set for
//! the program, and imports the result.

mod ncu;
mod nsys;
mod rocprofv3;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};

use clap::Args;

use brickprof::import::import;
use brickprof::{Error, ProfilerConfig, Result};

use crate::output::{self, Stdout};

/// One vendor profiler `brickprof vendor` can run.
pub trait VendorTool: Sync {
    /// The command's name, as on `PATH` and on brickprof's command line (`ncu`).
    fn name(&self) -> &'static str;
    /// What the tool is, for people (`Nsight Compute`).
    fn product(&self) -> &'static str;
    /// Where to get it, said when it is not on `PATH`.
    fn install(&self) -> &'static str;
    /// The range tool the program must push to (`nvtx`, `roctx`): the value of
    /// `$BRICKPROF_VENDOR_RANGES` for the program.
    fn ranges(&self) -> &'static str;
    /// The command lines that run `request.command` under the tool and leave the file to
    /// import in `request.dir`. A flag the tool cannot use (`--metrics` where there is no
    /// metric to choose) is an error.
    fn plan(&self, request: &Request) -> Result<Plan>;
    /// The file to import once the plan ran: by default the one the plan named, which must
    /// exist.
    fn result(&self, plan: &Plan) -> Result<PathBuf> {
        if plan.result.is_file() {
            Ok(plan.result.clone())
        } else {
            Err(Error::invalid_value(
                "vendor output",
                plan.result.display(),
                format!("{} wrote no such file", self.name()),
            ))
        }
    }
}

/// Every tool, in the order `--help` lists them.
pub fn tools() -> [&'static dyn VendorTool; 3] {
    [&ncu::Ncu, &nsys::Nsys, &rocprofv3::Rocprofv3]
}

/// What to run under the tool.
pub struct Request {
    /// The folder the tool's files go to (created).
    pub dir: PathBuf,
    /// `--metrics`, when given.
    pub metrics: Option<String>,
    /// The program and its arguments.
    pub command: Vec<OsString>,
}

/// The command lines to run, in order, and the file they leave to import.
pub struct Plan {
    /// The command lines.
    pub steps: Vec<Step>,
    /// The file to import (see [`VendorTool::result`]).
    pub result: PathBuf,
}

/// One command line: the tool with its arguments.
pub struct Step {
    /// The arguments after the tool's name.
    pub args: Vec<OsString>,
    /// Where its standard output goes (ncu prints its CSV there); `None`: the terminal.
    pub stdout: Option<PathBuf>,
    /// Whether the user's program runs under this step (it then gets
    /// `$BRICKPROF_VENDOR_RANGES`).
    pub runs_program: bool,
}

impl Step {
    /// A step that runs the user's program.
    fn program(args: Vec<OsString>) -> Step {
        Step {
            args,
            stdout: None,
            runs_program: true,
        }
    }
}

/// Refuse `--metrics` for a tool that traces kernels and has no metric set to choose.
fn no_metrics(tool: &dyn VendorTool, request: &Request) -> Result<()> {
    match &request.metrics {
        Some(m) => Err(Error::invalid_value(
            "--metrics",
            m,
            format!(
                "{} traces kernels and takes no metric set (--metrics is for ncu)",
                tool.name()
            ),
        )),
        None => Ok(()),
    }
}

/// `args` as owned arguments.
fn os_args<I, S>(args: I) -> Vec<OsString>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    args.into_iter()
        .map(|a| a.as_ref().to_os_string())
        .collect()
}

/// `brickprof vendor`'s flags.
#[derive(Args)]
pub struct VendorArgs {
    /// The vendor tool: ncu (Nsight Compute), nsys (Nsight Systems) or rocprofv3 (ROCm).
    #[arg(value_parser = parse_tool)]
    tool: &'static dyn VendorTool,
    /// ncu's metric set: default (duration, DRAM bytes read and written, FFMA/FADD/FMUL thread
    /// instructions), time, memory, full (default's and SM and memory throughput), or a
    /// comma-separated list of metric names.
    #[arg(long, value_name = "SET")]
    metrics: Option<String>,
    /// Print the command line(s), shell-quoted, and run nothing.
    #[arg(long)]
    dry_run: bool,
    /// The folder the tool's files are written to (default: brickprof-TOOL in the current
    /// folder).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    #[command(flatten)]
    show: super::import::ShowArgs,
    /// The program to run under the tool, and its arguments (after `--`).
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<OsString>,
}

/// A tool by its name.
fn parse_tool(s: &str) -> std::result::Result<&'static dyn VendorTool, String> {
    tools().into_iter().find(|t| t.name() == s).ok_or_else(|| {
        let names: Vec<&str> = tools().iter().map(|t| t.name()).collect();
        format!(
            "not a vendor tool brickprof runs (it runs {})",
            names.join(", ")
        )
    })
}

impl VendorArgs {
    /// No file read before the run (the tool's file is checked against `-o` once known); the
    /// profile written with `-o`.
    pub fn inputs_and_outputs(&self) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (Vec::new(), self.show.output.iter().cloned().collect())
    }
}

/// Plan, then print the plan (`--dry-run`) or find the tool, run it and import its file.
pub fn run(args: VendorArgs, stdout: &mut Stdout) -> Result<ExitCode> {
    let tool = args.tool;
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("brickprof-{}", tool.name())));
    let plan = tool.plan(&Request {
        dir: dir.clone(),
        metrics: args.metrics.clone(),
        command: args.command.clone(),
    })?;
    if args.dry_run {
        for step in &plan.steps {
            stdout.line(&shell_line(tool, step))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some(path) = on_path(tool.name()) else {
        output::print_error(&format!(
            "{} ({}) is not on PATH: {}",
            tool.name(),
            tool.product(),
            tool.install()
        ));
        return Ok(ExitCode::from(2));
    };
    output::note(&format!(
        "{} ({}): {}",
        tool.name(),
        path.display(),
        version(&path)
    ));
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
        path: dir.clone(),
        source,
    })?;
    for step in &plan.steps {
        let status = run_step(tool, &path, step)?;
        if !status.success() {
            output::print_error(&format!(
                "{} {}: `{}` (its files are in {})",
                tool.name(),
                exit_text(status),
                shell_line(tool, step),
                dir.display()
            ));
            return Ok(ExitCode::from(2));
        }
    }
    let file = tool.result(&plan)?;
    if let Some(out) = &args.show.output {
        // The tool's file is known only now: `-o` must not overwrite it.
        brickprof::io::check_outputs_apart(&[file.as_path()], &[out.as_path()])?;
    }
    let imported = import(&file)?;
    super::import::show(&imported, &file, &args.show, stdout)?;
    let outside = imported
        .profile
        .meta
        .outside_bricks
        .as_ref()
        .map_or(0, |o| o.kernels);
    if imported.profile.hardware_counters.is_empty() && outside > 0 {
        output::note(&format!(
            "{}: all {outside} kernels ran outside brickprof's ranges: the program must be \
             built with brickprof's `{}` cargo feature and create its profiler from \
             ProfilerConfig::default() (which reads ${})",
            file.display(),
            tool.ranges(),
            ProfilerConfig::VENDOR_RANGES_ENV
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// Run one step: the tool at `path`, its standard output where the step says, the ranges'
/// variable set when it runs the program.
fn run_step(tool: &dyn VendorTool, path: &Path, step: &Step) -> Result<ExitStatus> {
    let mut cmd = Command::new(path);
    cmd.args(&step.args);
    if step.runs_program {
        cmd.env(ProfilerConfig::VENDOR_RANGES_ENV, tool.ranges());
    }
    if let Some(out) = &step.stdout {
        let file = File::create(out).map_err(|source| Error::Io {
            path: out.clone(),
            source,
        })?;
        cmd.stdout(Stdio::from(file));
    }
    cmd.status().map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// "exited with status 3", "was killed by signal 9".
fn exit_text(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return format!("was killed by signal {sig}");
        }
    }
    "failed".to_string()
}

/// The first executable file named `name` in `$PATH`'s folders.
fn on_path(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(p) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    meta.is_file()
}

/// The tool's `--version` line: the last line naming a version, else its first line.
fn version(path: &Path) -> String {
    let Ok(out) = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
    else {
        return "version unknown (--version did not run)".to_string();
    };
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines
        .iter()
        .rev()
        .find(|l| l.to_lowercase().contains("version"))
        .or(lines.first())
        .map_or("version unknown".to_string(), |l| l.to_string())
}

/// A step as one shell line: the ranges' variable (when it runs the program), the tool, its
/// arguments, and the redirection of its standard output, each word shell-quoted.
fn shell_line(tool: &dyn VendorTool, step: &Step) -> String {
    let mut words = Vec::new();
    if step.runs_program {
        words.push(format!(
            "{}={}",
            ProfilerConfig::VENDOR_RANGES_ENV,
            shell_quote(OsStr::new(tool.ranges()))
        ));
    }
    words.push(shell_quote(OsStr::new(tool.name())));
    words.extend(step.args.iter().map(|a| shell_quote(a)));
    if let Some(out) = &step.stdout {
        words.push(">".to_string());
        words.push(shell_quote(out.as_os_str()));
    }
    words.join(" ")
}

/// `word` as a shell reads it back: as it is when every character is safe, otherwise in single
/// quotes (a `'` as `'\''`); a word holding a control or bidirectional formatting character is
/// written `$'...'` with that character escaped (bash, zsh, ksh), so the printed line is the
/// command and no such character reaches the terminal. Bytes that are not UTF-8 are shown as
/// U+FFFD.
pub fn shell_quote(word: &OsStr) -> String {
    let w = word.to_string_lossy();
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !w.is_empty() && w.chars().all(safe) {
        w.into_owned()
    } else if w.chars().any(hidden) {
        let mut out = String::from("$'");
        for c in w.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\'' => out.push_str("\\'"),
                c if hidden(c) && (c as u32) < 0x80 => {
                    out.push_str(&format!("\\x{:02x}", c as u32))
                }
                c if hidden(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('\'');
        out
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::shell_quote;
    use std::ffi::OsStr;

    #[test]
    fn words_are_quoted_as_a_shell_reads_them_back() {
        let q = |s: &str| shell_quote(OsStr::new(s));
        assert_eq!(
            q("gpu__time_duration.sum,dram__bytes_read.sum"),
            "gpu__time_duration.sum,dram__bytes_read.sum"
        );
        assert_eq!(q("--page"), "--page");
        assert_eq!(q(""), "''");
        assert_eq!(q("a b"), "'a b'");
        assert_eq!(q("it's"), r"'it'\''s'");
        assert_eq!(q("a\nb'\\"), r"$'a\x0ab\'\\'");
        assert_eq!(q("x\u{202e}y"), r"$'x\u202ey'");
    }
}
