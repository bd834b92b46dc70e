//! `brickprof vendor` (spec/imports.md "Run under a vendor tool"): the command lines it builds
//! (`--dry-run`), one line and exit 2 for a tool not on PATH or a run that fails, and whole runs
//! under stand-in tools: shell scripts first on PATH that answer `--version`, check the flags
//! and the ranges' variable they were given, run the program, and write the fixture files where
//! the real tool would. So no vendor tool is needed.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::cli::{assert_clean_error, bin, brickprof, text};

fn vendor(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/vendor")
        .join(name)
}

/// `brickprof ARGS` in `cwd` with `path` as the whole of `$PATH`.
fn run_with_path(cwd: &Path, path: &std::ffi::OsStr, args: &[&str]) -> Output {
    bin()
        .args(args)
        .current_dir(cwd)
        .env("PATH", path)
        .env_remove("BRICKPROF_VENDOR_RANGES")
        .output()
        .expect("run brickprof")
}

/// A folder of stand-in tools (`(name, script)`), put before the rest of `$PATH`.
fn stand_ins(dir: &Path, tools: &[(&str, String)]) -> std::ffi::OsString {
    use std::os::unix::fs::PermissionsExt;
    let bin_dir = dir.join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    for (name, script) in tools {
        let p = bin_dir.join(name);
        std::fs::write(&p, script).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(&rest))).unwrap()
}

/// A stand-in `tool` script: it answers `--version` with `version`; otherwise, when its
/// arguments start with `call` (the first `call.len()` words, `_` for any word), it checks that
/// `$BRICKPROF_VENDOR_RANGES` is `ranges` (when not empty) and runs `body` (shell, which
/// shifts the words off itself); else it exits 97 saying which flags it got (98: the ranges'
/// variable). A tool of two commands (`nsys profile`, `nsys export`) is two of these.
struct StandIn<'a> {
    tool: &'a str,
    version: &'a str,
    call: &'a [&'a str],
    ranges: &'a str,
    body: String,
}

impl StandIn<'_> {
    /// The branch of the script for one call (`nsys profile ...`, `nsys export ...`).
    fn branch(&self) -> String {
        let (mut test, mut want) = (Vec::new(), Vec::new());
        for (i, word) in self.call.iter().enumerate() {
            if *word != "_" {
                test.push(format!("${{{}}}", i + 1));
                want.push(*word);
            }
        }
        format!(
            r#"if [ "{test}" = "{want}" ]; then
  if [ -n "{ranges}" ] && [ "$BRICKPROF_VENDOR_RANGES" != "{ranges}" ]; then
    echo "stand-in {tool}: BRICKPROF_VENDOR_RANGES is '$BRICKPROF_VENDOR_RANGES'" >&2; exit 98
  fi
{body}
fi
"#,
            test = test.join(" "),
            want = want.join(" "),
            ranges = self.ranges,
            tool = self.tool,
            body = self.body,
        )
    }

    /// The whole script, from its branches (`self` and `more`).
    fn script(&self, more: &[StandIn<'_>]) -> String {
        let mut s = format!(
            "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then\n{}\n  exit 0\nfi\n",
            self.version
                .lines()
                .map(|l| format!("  echo \"{l}\""))
                .collect::<Vec<_>>()
                .join("\n")
        );
        for b in std::iter::once(self).chain(more) {
            s += &b.branch();
        }
        s += &format!(
            "echo \"stand-in {}: unexpected flags: $*\" >&2; exit 97\n",
            self.tool
        );
        s
    }
}

/// `brickprof ARGS` in `dir` with the stand-in `tool` (its `script`) first on PATH: it must
/// succeed and print the tool's `version` on stderr. Its stdout, stderr and PATH.
fn stand_in_run(
    dir: &Path,
    (tool, script): (&str, String),
    args: &[&str],
    version: &str,
) -> (String, String, std::ffi::OsString) {
    let path = stand_ins(dir, &[(tool, script)]);
    let o = run_with_path(dir, &path, args);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains(version), "{stderr}");
    (stdout, stderr, path)
}

/// `stdout` is what `brickprof import` prints of the fixture `file`.
fn assert_prints_as_import(stdout: &str, file: &str) {
    let i = brickprof(&["import", vendor(file).to_str().unwrap()]);
    assert!(i.status.success(), "{:?}", text(&i));
    assert_eq!(stdout, text(&i).0, "{file}");
}

const DEFAULT_METRICS: &str = "gpu__time_duration.sum,dram__bytes_read.sum,\
dram__bytes_write.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,\
smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,\
smsp__sass_thread_inst_executed_op_fmul_pred_on.sum";

/// Nsight Compute as brickprof runs it: `--version`, then `ncu --nvtx --csv --page raw
/// --metrics DEFAULT CMD ARGS` with `$BRICKPROF_VENDOR_RANGES=nvtx`; it runs the program and
/// prints the recorded CSV on standard output, exiting with the program's status.
fn ncu_stand_in() -> String {
    StandIn {
        tool: "ncu",
        version: "NVIDIA (R) Nsight Compute Command Line Profiler\n\
                  Version 2025.3.1.0 (build 36398880) (public-release)",
        call: &[
            "--nvtx",
            "--csv",
            "--page",
            "raw",
            "--metrics",
            DEFAULT_METRICS,
        ],
        ranges: "nvtx",
        body: format!(
            "  shift 6\n  \"$@\"\n  status=$?\n  cat '{}'\n  exit $status",
            vendor("ncu_raw_nvtx.csv").display()
        ),
    }
    .script(&[])
}

/// Nsight Systems as brickprof runs it: `nsys profile --trace cuda,nvtx --cuda-graph-trace
/// node --force-overwrite true -o DIR/brickprof CMD ARGS` with `$BRICKPROF_VENDOR_RANGES=nvtx`
/// (it runs the program and writes DIR/brickprof.nsys-rep), then `nsys export --type sqlite
/// --force-overwrite true -o OUT REP` (it checks REP is there and writes `sqlite` to OUT).
fn nsys_stand_in(sqlite: &Path) -> String {
    let version = "NVIDIA Nsight Systems version 2025.3.1.90-253135822126v0";
    let profile = StandIn {
        tool: "nsys",
        version,
        call: &[
            "profile",
            "--trace",
            "cuda,nvtx",
            "--cuda-graph-trace",
            "node",
            "--force-overwrite",
            "true",
            "-o",
        ],
        ranges: "nvtx",
        body: "  rep=\"$9.nsys-rep\"\n  shift 9\n  \"$@\" || exit $?\n  echo report > \"$rep\"\n  exit 0"
            .to_string(),
    };
    let export = StandIn {
        tool: "nsys",
        version,
        call: &[
            "export",
            "--type",
            "sqlite",
            "--force-overwrite",
            "true",
            "-o",
        ],
        ranges: "",
        body: format!(
            "  [ -f \"$8\" ] || {{ echo \"stand-in nsys: no report $8\" >&2; exit 96; }}\n  \
             cp '{}' \"$7\"\n  exit 0",
            sqlite.display()
        ),
    };
    profile.script(&[export])
}

/// rocprofv3 as brickprof runs it: `--kernel-trace --marker-trace --kernel-rename
/// --output-format csv -d DIR -o NAME -- CMD ARGS` with `$BRICKPROF_VENDOR_RANGES=roctx`; it
/// runs the program, then writes DIR/NAME_kernel_trace.csv and DIR/NAME_marker_api_trace.csv.
fn rocprofv3_stand_in() -> String {
    rocprofv3_writing(
        &vendor("rocprofv3/3141_kernel_trace.csv"),
        &vendor("rocprofv3/3141_marker_api_trace.csv"),
        "$dir/$name",
    )
}

/// The rocprofv3 stand-in, writing these two files as `{to}_kernel_trace.csv` and
/// `{to}_marker_api_trace.csv` (`to` a shell word: `$dir`, `$name`).
fn rocprofv3_writing(kernels: &Path, markers: &Path, to: &str) -> String {
    StandIn {
        tool: "rocprofv3",
        version: "rocprofv3 stand-in version 1.0.0",
        call: &[
            "--kernel-trace",
            "--marker-trace",
            "--kernel-rename",
            "--output-format",
            "csv",
            "-d",
            "_",
            "-o",
            "_",
            "--",
        ],
        ranges: "roctx",
        body: format!(
            "  dir=\"$7\"\n  name=\"$9\"\n  shift 10\n  \"$@\" || exit $?\n  to=\"{to}\"\n  \
             mkdir -p \"$(dirname \"$to\")\"\n  cp '{}' \"${{to}}_kernel_trace.csv\"\n  \
             cp '{}' \"${{to}}_marker_api_trace.csv\"\n  exit 0",
            kernels.display(),
            markers.display()
        ),
    }
    .script(&[])
}

#[test]
fn dry_run_prints_each_tools_command_line_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let dry = |args: &[&str]| {
        // No tool on PATH: a dry run needs none.
        let o = run_with_path(dir.path(), empty.as_os_str(), args);
        let (stdout, stderr) = text(&o);
        assert!(o.status.success(), "{args:?}: {stderr}");
        stdout
    };
    let cmd = ["--", "./engine", "--prompt", "it's a test"];
    let with =
        |head: &[&'static str]| -> Vec<&'static str> { head.iter().copied().chain(cmd).collect() };
    assert_eq!(
        dry(&with(&["vendor", "ncu", "--dry-run"])),
        format!(
            "BRICKPROF_VENDOR_RANGES=nvtx ncu --nvtx --csv --page raw --metrics {DEFAULT_METRICS} \
             ./engine --prompt 'it'\\''s a test' > brickprof-ncu/ncu_raw.csv\n"
        )
    );
    assert_eq!(
        dry(&with(&["vendor", "nsys", "--dry-run", "--dir", "out dir"])),
        "BRICKPROF_VENDOR_RANGES=nvtx nsys profile --trace cuda,nvtx --cuda-graph-trace node \
         --force-overwrite true -o 'out dir/brickprof' ./engine --prompt 'it'\\''s a test'\n\
         nsys export --type sqlite --force-overwrite true -o 'out dir/brickprof.sqlite' \
         'out dir/brickprof.nsys-rep'\n"
    );
    assert_eq!(
        dry(&with(&["vendor", "rocprofv3", "--dry-run"])),
        "BRICKPROF_VENDOR_RANGES=roctx rocprofv3 --kernel-trace --marker-trace --kernel-rename \
         --output-format csv -d brickprof-rocprofv3 -o brickprof -- ./engine --prompt \
         'it'\\''s a test'\n"
    );
    // ncu's metric sets, and a list of metric names (the duration added first).
    let metrics = |set: &str| {
        let line = dry(&["vendor", "ncu", "--dry-run", "--metrics", set, "--", "./e"]);
        line.split(" --metrics ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(metrics("default"), DEFAULT_METRICS);
    assert_eq!(metrics("time"), "gpu__time_duration.sum");
    assert_eq!(
        metrics("memory"),
        "gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum"
    );
    assert_eq!(
        metrics("full"),
        format!(
            "{DEFAULT_METRICS},sm__throughput.avg.pct_of_peak_sustained_elapsed,\
             gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
        )
    );
    assert_eq!(
        metrics("dram__bytes_read.sum"),
        "gpu__time_duration.sum,dram__bytes_read.sum"
    );
    // Nothing ran, nothing was made.
    let made: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(made, ["empty"]);
}

#[test]
fn a_tool_not_on_path_is_one_line_saying_how_to_install_it_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (tool, says) in [
        (
            "ncu",
            "ncu (Nsight Compute) is not on PATH: install it with the CUDA toolkit",
        ),
        (
            "nsys",
            "nsys (Nsight Systems) is not on PATH: install it with the CUDA toolkit",
        ),
        (
            "rocprofv3",
            "rocprofv3 (ROCm rocprofiler-sdk) is not on PATH: install ROCm's",
        ),
    ] {
        let o = run_with_path(
            dir.path(),
            dir.path().as_os_str(),
            &["vendor", tool, "--", "true"],
        );
        assert_clean_error(&o, says);
    }
    // A metric set ncu does not know, and --metrics for a tool with none: one line, exit 2.
    let o = brickprof(&[
        "vendor",
        "ncu",
        "--metrics",
        "bogus",
        "--dry-run",
        "--",
        "true",
    ]);
    assert_clean_error(&o, "bogus");
    for tool in ["nsys", "rocprofv3"] {
        let o = brickprof(&[
            "vendor",
            tool,
            "--metrics",
            "time",
            "--dry-run",
            "--",
            "true",
        ]);
        assert_clean_error(&o, "--metrics is for ncu");
    }
}

#[test]
fn a_stand_in_ncu_run_imports_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ncu.json");
    let (stdout, stderr, path) = stand_in_run(
        dir.path(),
        ("ncu", ncu_stand_in()),
        &[
            "vendor",
            "ncu",
            "-o",
            out.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "echo the program ran",
        ],
        "Version 2025.3.1.0 (build 36398880)",
    );
    // The CSV ncu printed is in the folder, the program's output with it.
    let csv = std::fs::read_to_string(dir.path().join("brickprof-ncu/ncu_raw.csv")).unwrap();
    assert!(
        csv.starts_with("the program ran\n==PROF=="),
        "{}",
        &csv[..80]
    );
    // What it prints is what `import` prints of the file.
    assert_prints_as_import(&stdout, "ncu_raw_nvtx.csv");
    assert!(
        stdout.contains("Hardware counters (ncu), per call:"),
        "{stdout}"
    );
    let down = stdout
        .lines()
        .find(|l| l.starts_with("DownProjection") && l.contains("layer 0"))
        .unwrap();
    assert!(down.ends_with("4.12"), "{down}");
    // Saved with -o: a profile every command reads.
    assert!(stderr.contains("profile written to"), "{stderr}");
    let r = brickprof(&["report", out.to_str().unwrap()]);
    assert!(r.status.success(), "{:?}", text(&r));
    assert!(text(&r).0.contains("timeline ncu"));
    // -o is never the tool's file.
    let csv_path = dir.path().join("brickprof-ncu/ncu_raw.csv");
    let o = run_with_path(
        dir.path(),
        &path,
        &[
            "vendor",
            "ncu",
            "-o",
            csv_path.to_str().unwrap(),
            "--",
            "true",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    assert!(text(&o).1.contains("ncu_raw.csv"), "{:?}", text(&o));
    let csv = std::fs::read_to_string(&csv_path).unwrap();
    assert!(csv.contains("==PROF=="), "the CSV is still there");
}

#[test]
fn a_stand_in_rocprofv3_run_imports_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, _, _) = stand_in_run(
        dir.path(),
        ("rocprofv3", rocprofv3_stand_in()),
        &["vendor", "rocprofv3", "--dir", "traces", "--", "true"],
        "rocprofv3 stand-in version 1.0.0",
    );
    let kernels = dir.path().join("traces/brickprof_kernel_trace.csv");
    assert!(kernels.is_file());
    assert_prints_as_import(&stdout, "rocprofv3/3141_kernel_trace.csv");
    assert!(stdout.contains("timeline rocprofv3"), "{stdout}");
    assert!(stdout.contains("(outside any brick)"), "{stdout}");

    // A rocprofv3 that writes into %hostname%/%pid% folders: the trace is found there.
    let other = dir.path().join("other");
    let path = stand_ins(
        &other,
        &[(
            "rocprofv3",
            rocprofv3_writing(
                &vendor("rocprofv3/3141_kernel_trace.csv"),
                &vendor("rocprofv3/3141_marker_api_trace.csv"),
                "$dir/node7/3141/3141",
            ),
        )],
    );
    let o = run_with_path(&other, &path, &["vendor", "rocprofv3", "--", "true"]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(text(&o).0, stdout);
    assert!(
        text(&o)
            .1
            .contains("brickprof-rocprofv3/node7/3141/3141_kernel_trace.csv: ranges from"),
        "{}",
        text(&o).1
    );
}

#[test]
fn a_stand_in_nsys_run_imports_end_to_end() {
    // spec/imports.md "Run under a vendor tool" and "Pass ranges": profile, then export, then
    // the export imported, its passes with it.
    let dir = tempfile::tempdir().unwrap();
    let fixture = "nsys/brickprof_passes.sqlite";
    let (stdout, _, path) = stand_in_run(
        dir.path(),
        ("nsys", nsys_stand_in(&vendor(fixture))),
        &["vendor", "nsys", "--", "sh", "-c", "echo the program ran"],
        "NVIDIA Nsight Systems version 2025.3.1.90",
    );
    assert!(dir
        .path()
        .join("brickprof-nsys/brickprof.nsys-rep")
        .is_file());
    assert!(dir.path().join("brickprof-nsys/brickprof.sqlite").is_file());
    // What it prints is what `import` prints of the export, after the program's output.
    let stdout = stdout.strip_prefix("the program ran\n").unwrap_or_default();
    assert_prints_as_import(stdout, fixture);
    assert!(stdout.contains("| 3 passes, 0 tokens |"), "{stdout}");
    assert!(stdout.contains("timeline nsys"), "{stdout}");
    assert!(!stdout.contains("no passes marked"), "{stdout}");
    assert!(stdout.contains("Phases (self %, p50)"), "{stdout}");
    // A program that fails: nsys passes its status on, one line naming the tool, exit 2.
    let o = run_with_path(
        dir.path(),
        &path,
        &["vendor", "nsys", "--", "sh", "-c", "exit 5"],
    );
    assert_failed_run(&o, "nsys exited with status 5");
}

#[test]
fn a_program_that_pushes_no_range_is_told_how_to_make_it() {
    // A program without brickprof's ranges: rocprofv3 keeps the kernels' own names and records
    // no marker.
    let dir = tempfile::tempdir().unwrap();
    let kernels = dir.path().join("plain_kernel_trace.csv");
    let markers = dir.path().join("plain_marker_api_trace.csv");
    let head = "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\
                \"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n";
    let mut csv = head.to_string();
    for k in 0..3u64 {
        csv += &format!(
            "\"KERNEL_DISPATCH\",2,1,1,77,{k},1,\"void gemm(float*, int)\",{k},{},{}\n",
            1000 + 100 * k,
            1050 + 100 * k
        );
    }
    std::fs::write(&kernels, csv).unwrap();
    std::fs::write(
        &markers,
        "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\
         \"Start_Timestamp\",\"End_Timestamp\"\n",
    )
    .unwrap();
    let path = stand_ins(
        dir.path(),
        &[(
            "rocprofv3",
            rocprofv3_writing(&kernels, &markers, "$dir/$name"),
        )],
    );
    let o = run_with_path(dir.path(), &path, &["vendor", "rocprofv3", "--", "true"]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(stdout.contains("(outside any brick)"), "{stdout}");
    assert!(
        stderr.contains(
            "all 3 kernels ran outside brickprof's ranges: the program must be built with \
             brickprof's `roctx` cargo feature"
        ),
        "{stderr}"
    );
}

/// A failed run: exit 2, and after what the tool itself said (its version, its own errors) one
/// error line naming `needle`, last; no panic.
fn assert_failed_run(o: &Output, needle: &str) {
    let (_, err) = text(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let errors: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("brickprof: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert_eq!(err.trim_end().lines().last(), Some(errors[0]), "{err}");
    assert!(errors[0].contains(needle), "expected {needle:?} in {err:?}");
}

#[test]
fn a_failing_run_is_one_line_naming_the_tool_and_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let path = stand_ins(
        dir.path(),
        &[("ncu", ncu_stand_in()), ("rocprofv3", rocprofv3_stand_in())],
    );
    let o = run_with_path(
        dir.path(),
        &path,
        &["vendor", "ncu", "--", "sh", "-c", "exit 3"],
    );
    assert_failed_run(
        &o,
        "ncu exited with status 3: `BRICKPROF_VENDOR_RANGES=nvtx ncu",
    );
    let o = run_with_path(
        dir.path(),
        &path,
        &["vendor", "rocprofv3", "--", "sh", "-c", "exit 4"],
    );
    assert_failed_run(&o, "rocprofv3 exited with status 4");
    // The stand-in refuses flags other than brickprof's: a tool's own failure reads the same.
    let o = run_with_path(
        dir.path(),
        &path,
        &["vendor", "ncu", "--metrics", "time", "--", "true"],
    );
    assert_failed_run(&o, "ncu exited with status 97");
}
