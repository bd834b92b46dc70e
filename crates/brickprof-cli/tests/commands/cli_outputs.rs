//! spec/profile-format.md "Reading and writing files" (the output rules), through the binary:
//! every file the CLI writes (`report --html / --flamegraph / --folded / --dot`, `convert -o`,
//! `merge -o`) goes through one path. A symbolic link is written through and stays a link; a
//! named pipe or a character device is written in place, whole; a directory, a read-only
//! folder and a full disk are clean errors (exit 2, naming the path) that leave the old file;
//! a `convert` that fails leaves its old output byte for byte. No output may be one of its
//! command's inputs, by any name (`./`, a symbolic or hard link): exit 2, the input kept. A
//! named pipe no reader opens is an error, never a hang. The special files are made in each
//! test's own temporary folder, never the machine's `/dev`.

use super::bad_traces;
use super::special;
use crate::common;
use crate::common::cli;

use std::path::{Path, PathBuf};
use std::process::Output;

use cli::{assert_clean_error, brickprof, text};

const OLD: &[u8] = b"old output, complete\n";

/// The inputs every writer reads: a saved profile and a Chrome trace.
struct Inputs {
    profile: PathBuf,
    trace: PathBuf,
    /// Where the reference outputs (each written to a new regular file) are.
    dir: tempfile::TempDir,
}

fn inputs() -> Inputs {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.json");
    common::fixed_profile(false).save(&profile).unwrap();
    let trace = dir.path().join("t.json");
    std::fs::write(&trace, bad_traces::chrome_trace()).unwrap();
    Inputs {
        profile,
        trace,
        dir,
    }
}

/// Every CLI command that writes a file, by the flag that names it.
const WRITERS: [&str; 6] = [
    "report --html",
    "report --flamegraph",
    "report --folded",
    "report --dot",
    "convert -o",
    "merge -o",
];

fn args(writer: &str, inp: &Inputs, out: &Path) -> Vec<String> {
    let (p, t, out) = (
        inp.profile.display().to_string(),
        inp.trace.display().to_string(),
        out.display().to_string(),
    );
    let v: Vec<&str> = match writer {
        "convert -o" => vec!["convert", &t, "-o", &out, "--to", "perfetto"],
        "merge -o" => vec!["merge", "-o", &out, &p],
        report => {
            let flag = report.strip_prefix("report ").unwrap();
            vec!["report", &p, flag, &out]
        }
    };
    v.into_iter().map(String::from).collect()
}

fn run(writer: &str, inp: &Inputs, out: &Path) -> Output {
    let a = args(writer, inp, out);
    brickprof(&a.iter().map(String::as_str).collect::<Vec<_>>())
}

fn run_ok(writer: &str, inp: &Inputs, out: &Path) {
    let o = run(writer, inp, out);
    assert!(
        o.status.success(),
        "{writer} {}: {:?}",
        out.display(),
        text(&o)
    );
}

/// What `writer` writes into a new regular file: what every other kind of path must get.
fn reference(writer: &str, inp: &Inputs) -> Vec<u8> {
    let path = inp
        .dir
        .path()
        .join(format!("ref-{}", writer.replace(' ', "_")));
    if !path.exists() {
        run_ok(writer, inp, &path);
    }
    let bytes = std::fs::read(&path).unwrap();
    assert!(!bytes.is_empty(), "{writer}");
    bytes
}

#[test]
#[cfg(unix)]
fn every_output_writes_through_a_symlink_and_keeps_it() {
    let inp = inputs();
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    for (i, writer) in WRITERS.iter().enumerate() {
        let real = shared.join(format!("out{i}"));
        std::fs::write(&real, OLD).unwrap();
        let link = dir.path().join(format!("link{i}"));
        std::os::unix::fs::symlink(&real, &link).unwrap();
        run_ok(writer, &inp, &link);
        assert!(special::is_link(&link), "{writer}: the link was replaced");
        assert!(
            std::fs::read(&real).unwrap() == reference(writer, &inp),
            "{writer}: the link's target was not updated"
        );
    }
    assert!(special::temps_in(dir.path()).is_empty());
    assert!(special::temps_in(&shared).is_empty());
}

#[test]
#[cfg(unix)]
fn every_output_through_a_dangling_symlink_makes_its_target() {
    let inp = inputs();
    let dir = tempfile::tempdir().unwrap();
    for (i, writer) in WRITERS.iter().enumerate() {
        let link = dir.path().join(format!("link{i}"));
        std::os::unix::fs::symlink(format!("made{i}"), &link).unwrap();
        run_ok(writer, &inp, &link);
        assert!(special::is_link(&link), "{writer}: the link was replaced");
        let made = std::fs::read(dir.path().join(format!("made{i}"))).unwrap();
        assert!(made == reference(writer, &inp), "{writer}");
    }
}

#[test]
#[cfg(unix)]
fn every_output_goes_whole_into_a_named_pipe() {
    let inp = inputs();
    let dir = tempfile::tempdir().unwrap();
    let Some(fifo) = special::fifo(dir.path(), "pipe") else {
        return;
    };
    for writer in WRITERS {
        let (got, o) = special::sent_through_fifo(&fifo, || run(writer, &inp, &fifo));
        assert!(o.status.success(), "{writer}: {:?}", text(&o));
        assert!(special::is_fifo(&fifo), "{writer}: the pipe was replaced");
        let want = reference(writer, &inp);
        assert!(
            got == want,
            "{writer}: the reader got {} bytes of {}",
            got.len(),
            want.len()
        );
    }
    assert_eq!(special::names_in(dir.path()), ["pipe"]);
}

#[test]
fn every_output_into_a_null_device_made_here_leaves_it_a_device() {
    let inp = inputs();
    let dir = tempfile::tempdir().unwrap();
    let Some(null) = special::null_device(dir.path()) else {
        return;
    };
    for writer in WRITERS {
        run_ok(writer, &inp, &null);
        assert!(
            special::is_char_device(&null),
            "{writer}: the device was replaced"
        );
    }
    assert_eq!(special::names_in(dir.path()), ["null"]);
}

#[test]
fn every_output_into_a_full_device_made_here_is_a_clean_error() {
    // A full disk: every write fails with "no space left on device".
    let inp = inputs();
    let dir = tempfile::tempdir().unwrap();
    let Some(full) = special::full_device(dir.path()) else {
        return;
    };
    for writer in WRITERS {
        let o = run(writer, &inp, &full);
        assert_clean_error(&o, &full.display().to_string());
        let (_, err) = text(&o);
        assert!(err.to_lowercase().contains("space"), "{writer}: {err}");
        assert!(
            special::is_char_device(&full),
            "{writer}: the device was replaced"
        );
    }
    assert_eq!(special::names_in(dir.path()), ["full"]);
}

#[test]
fn every_output_refuses_a_directory_by_name() {
    let inp = inputs();
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out");
    std::fs::create_dir(&target).unwrap();
    for writer in WRITERS {
        let o = run(writer, &inp, &target);
        assert_clean_error(&o, "out: cannot write an output there: it is a directory");
        assert!(target.is_dir(), "{writer}");
        assert!(special::names_in(&target).is_empty(), "{writer}");
        assert_eq!(special::names_in(dir.path()), ["out"], "{writer}");
    }
}

#[test]
fn every_output_into_a_read_only_folder_is_a_clean_error_and_keeps_the_old_file() {
    let inp = inputs();
    let dir = tempfile::tempdir().unwrap();
    let Some(ro) = special::read_only_dir(dir.path(), "ro") else {
        return;
    };
    for writer in WRITERS {
        for name in ["old.txt", "new.txt"] {
            let path = ro.path.join(name);
            let o = run(writer, &inp, &path);
            // The file asked for, not a temporary file beside it.
            assert_clean_error(&o, &format!("{}: ", path.display()));
            let (_, err) = text(&o);
            assert!(err.contains("ermission denied"), "{writer}: {err}");
        }
    }
    assert_eq!(
        std::fs::read(ro.path.join("old.txt")).unwrap(),
        b"old, complete"
    );
    assert_eq!(special::names_in(&ro.path), ["old.txt"]);
}

#[test]
fn a_failed_convert_exits_2_and_leaves_the_old_output_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in bad_traces::bad_traces() {
        let input = dir.path().join(name);
        std::fs::write(&input, &bytes).unwrap();
        let output = dir.path().join(format!("{name}.out"));
        std::fs::write(&output, OLD).unwrap();
        let to = if name.ends_with(".json") {
            "perfetto"
        } else {
            "chrome"
        };
        let o = brickprof(&[
            "convert",
            input.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
            "--to",
            to,
        ]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert_eq!(
            std::fs::read(&output).unwrap(),
            OLD,
            "{name}: the old output was replaced"
        );
    }
    assert!(special::temps_in(dir.path()).is_empty());
}

#[test]
#[cfg(unix)]
fn a_failed_convert_sends_nothing_into_a_named_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fifo) = special::fifo(dir.path(), "pipe") else {
        return;
    };
    for (name, bytes) in bad_traces::bad_traces() {
        let input = dir.path().join(name);
        std::fs::write(&input, &bytes).unwrap();
        let (got, o) = special::sent_through_fifo(&fifo, || {
            brickprof(&[
                "convert",
                input.to_str().unwrap(),
                "-o",
                fifo.to_str().unwrap(),
                "--to",
                if name.ends_with(".json") {
                    "perfetto"
                } else {
                    "chrome"
                },
            ])
        });
        assert_eq!(o.status.code(), Some(2), "{name}: {:?}", text(&o));
        assert!(
            got.is_empty(),
            "{name}: {} bytes went into the pipe",
            got.len()
        );
        assert!(special::is_fifo(&fifo));
    }
}

// ---------------------------------------------------------------------------------------------
// spec/profile-format.md "Reading and writing files": an output is never one of its command's
// inputs, compared by identity (device and inode), not by spelling.

/// One command whose output names one of its inputs: its arguments (`OUT` where the output
/// goes) and that input.
struct Clash {
    args: Vec<String>,
    input: PathBuf,
}

impl Clash {
    fn new(args: &[&str], input: &Path) -> Clash {
        Clash {
            args: args.iter().map(|a| a.to_string()).collect(),
            input: input.to_path_buf(),
        }
    }

    fn with_output(&self, out: &Path) -> Vec<String> {
        let out = out.display().to_string();
        self.args
            .iter()
            .map(|a| if a == "OUT" { out.clone() } else { a.clone() })
            .collect()
    }
}

/// The names an existing file can go by: as given, with `./` inside, a symbolic link to it and
/// a hard link of it (both made beside it, `n` keeping them apart).
#[cfg(unix)]
fn spellings(file: &Path, n: usize) -> Vec<(&'static str, PathBuf)> {
    let dir = file.parent().unwrap();
    let name = file.file_name().unwrap().to_str().unwrap();
    let link = dir.join(format!("link{n}-{name}"));
    std::os::unix::fs::symlink(name, &link).unwrap();
    let hard = dir.join(format!("hard{n}-{name}"));
    std::fs::hard_link(file, &hard).unwrap();
    vec![
        ("as given", file.to_path_buf()),
        ("with ./", dir.join(".").join(name)),
        ("a symbolic link", link),
        ("a hard link", hard),
    ]
}

/// A small demo run with captures in `dir/name`, so that a comparison reads a capture file too.
fn captured_run(dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    cli::demo(&out, &["--capture", "0:*"]);
    assert!(out.join("captures.safetensors").is_file());
    out
}

#[test]
#[cfg(unix)]
fn an_output_naming_an_input_is_refused_by_any_name_and_the_input_kept() {
    // Every command that writes a file, each output against each of its inputs: the profile
    // of `report` (every --NAME output and --junit), its --compare and its --diff run (with
    // the capture file beside it), `diff`'s two runs and --noise run (and their capture
    // files), `merge`'s profiles, `convert`'s trace. `demo` reads no file.
    let inp = inputs();
    let s = |p: &Path| p.display().to_string();
    let p = s(&inp.profile);
    let q = inp.dir.path().join("q.json");
    std::fs::copy(&inp.profile, &q).unwrap();
    let runs = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        captured_run(runs.path(), "a"),
        captured_run(runs.path(), "b"),
        captured_run(runs.path(), "c"),
    );
    let (ap, bp, cp) = (
        a.join("profile.json"),
        b.join("profile.json"),
        c.join("profile.json"),
    );
    let (ap_, bp_, cp_) = (s(&ap), s(&bp), s(&cp));
    let cap = |run: &Path| run.join("captures.safetensors");
    let mut clashes = Vec::new();
    let profile_outputs = brickprof::output::outputs()
        .iter()
        .filter(|o| o.takes() == brickprof::output::Takes::Profile)
        .map(|o| o.name())
        .chain(["flamegraph"]);
    for name in profile_outputs {
        let flag = format!("--{name}");
        clashes.push(Clash::new(&["report", &p, &flag, "OUT"], &inp.profile));
    }
    let budget = "Embedding:p99=1000s";
    clashes.extend([
        Clash::new(
            &["report", &p, "--budget", budget, "--junit", "OUT"],
            &inp.profile,
        ),
        Clash::new(&["report", &p, "--compare", &s(&q), "--html", "OUT"], &q),
        Clash::new(&["report", &ap_, "--diff", &bp_, "--html", "OUT"], &bp),
        Clash::new(&["report", &ap_, "--diff", &bp_, "--html", "OUT"], &cap(&a)),
        Clash::new(&["report", &ap_, "--diff", &bp_, "--csv", "OUT"], &cap(&b)),
        Clash::new(&["diff", &ap_, &bp_, "--junit", "OUT"], &ap),
        Clash::new(&["diff", &ap_, &bp_, "--junit", "OUT"], &bp),
        Clash::new(&["diff", &ap_, &bp_, "--junit", "OUT"], &cap(&b)),
        Clash::new(
            &["diff", &ap_, &bp_, "--noise", &cp_, "--junit", "OUT"],
            &cp,
        ),
        Clash::new(
            &["diff", &ap_, &bp_, "--noise", &cp_, "--junit", "OUT"],
            &cap(&c),
        ),
        Clash::new(&["merge", &p, &s(&q), "-o", "OUT"], &inp.profile),
        Clash::new(&["merge", &p, &s(&q), "-o", "OUT"], &q),
        Clash::new(
            &["convert", &s(&inp.trace), "-o", "OUT", "--to", "perfetto"],
            &inp.trace,
        ),
    ]);
    // Each input's other names, made once.
    let mut names: Vec<(PathBuf, Vec<(&str, PathBuf)>)> = Vec::new();
    for (n, clash) in clashes.iter().enumerate() {
        if !names.iter().any(|(f, _)| *f == clash.input) {
            names.push((clash.input.clone(), spellings(&clash.input, n)));
        }
    }
    for clash in &clashes {
        // The command is fine with another output (so a refusal below is the clash's).
        let fine = inp.dir.path().join("fine.out");
        let o = brickprof(
            &clash
                .with_output(&fine)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        assert_ne!(o.status.code(), Some(2), "{:?}: {:?}", clash.args, text(&o));
        let before = std::fs::read(&clash.input).unwrap();
        let spelled = &names.iter().find(|(f, _)| *f == clash.input).unwrap().1;
        for (how, out) in spelled {
            let args = clash.with_output(out);
            let o = brickprof(&args.iter().map(String::as_str).collect::<Vec<_>>());
            let (_, err) = text(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?} ({how}): {err}");
            assert_clean_error(&o, "this output is the input");
            assert!(err.contains(&s(out)), "{args:?} ({how}): {err}");
            assert!(
                std::fs::read(&clash.input).unwrap() == before,
                "{args:?} ({how}): the input was changed"
            );
            if *how == "a symbolic link" {
                assert!(special::is_link(out), "{args:?}: the link was replaced");
            }
        }
    }
    for dir in [inp.dir.path(), &a, &b, &c] {
        assert!(special::temps_in(dir).is_empty(), "{}", dir.display());
    }
}

/// Start the binary with `args`, its standard error kept for the test.
fn spawn(args: &[String]) -> std::process::Child {
    cli::bin()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run brickprof")
}

#[test]
#[cfg(target_os = "linux")]
fn an_output_into_a_named_pipe_no_reader_opens_fails_instead_of_hanging() {
    // spec/profile-format.md "Reading and writing files": the output waits a few seconds for
    // a reader to open the pipe, then fails naming it, exit 2; nothing is left behind.
    use std::time::{Duration, Instant};
    let inp = inputs();
    let dir = tempfile::tempdir().unwrap();
    let p = inp.profile.display().to_string();
    let q = inp.dir.path().join("q.json");
    std::fs::copy(&inp.profile, &q).unwrap();
    let q = q.display().to_string();
    let mut commands: Vec<Vec<String>> = WRITERS
        .iter()
        .map(|w| args(w, &inp, Path::new("OUT")))
        .collect();
    for extra in [
        vec!["report", &p, "--json", "OUT"],
        vec!["report", &p, "--csv", "OUT"],
        vec![
            "report",
            &p,
            "--budget",
            "Embedding:p99=1000s",
            "--junit",
            "OUT",
        ],
        vec!["diff", &p, &q, "--junit", "OUT"],
    ] {
        commands.push(extra.into_iter().map(String::from).collect());
    }
    // All at once: each waits for its reader on its own pipe. One still running after two
    // minutes is killed and fails the test: a guard against a hang, not a speed target.
    let Some(fifos) = (0..commands.len())
        .map(|i| special::fifo(dir.path(), &format!("pipe{i}")))
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    let mut running = Vec::new();
    for (command, fifo) in commands.iter().zip(fifos) {
        let args: Vec<String> = command
            .iter()
            .map(|a| {
                if a == "OUT" {
                    fifo.display().to_string()
                } else {
                    a.clone()
                }
            })
            .collect();
        let child = spawn(&args);
        running.push((args, fifo, child));
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut hung = Vec::new();
    let mut done = Vec::new();
    for (args, fifo, mut child) in running {
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                done.push((args, fifo, child, status));
                break;
            }
            if Instant::now() > deadline {
                // Every child this test started ends with it, hung or not.
                let _ = child.kill();
                let _ = child.wait();
                hung.push(args);
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    assert!(
        hung.is_empty(),
        "still waiting on a pipe no reader opened: {hung:?}"
    );
    for (args, fifo, mut child, status) in done {
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "{}: a named pipe that no reader opened",
                fifo.display()
            )),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(special::is_fifo(&fifo), "{args:?}");
    }
    assert!(special::temps_in(dir.path()).is_empty());
}
