//! spec/profile-format.md "Reading and writing files" (the output rules): every file brickprof
//! writes goes through one path, `OutputFile`. A regular file or a new path is replaced
//! atomically; a symbolic link is written through (the link stays); a named pipe or a
//! character device is written in place, only once the output is whole; a directory is
//! refused; a failed write (a read-only folder, a full disk, a bad `convert` input) leaves the
//! old file byte for byte and no temporary file. The special files are made in each test's
//! own temporary folder (`tests/common/special_files.rs`), never the machine's `/dev`.

use super::bad_traces;
use super::special;

use std::io::Write;
use std::path::Path;

use bad_traces::{bad_traces, chrome_trace};
use brickprof::output::{convert, output, outputs, trace_output_of, Output, Takes};
use brickprof::{io::OutputFile, Error};

const OLD: &[u8] = b"old output, complete\n";

/// Write `bytes` to `path` through an `OutputFile`, committing.
fn write(path: &Path, bytes: &[u8]) -> brickprof::Result<()> {
    let mut out = OutputFile::create(path)?;
    out.write_all(bytes).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    out.commit()
}

#[test]
fn a_regular_file_is_replaced_only_at_the_commit_and_keeps_its_permissions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.html");
    std::fs::write(&path, OLD).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    let mut out = OutputFile::create(&path).unwrap();
    out.write_all(b"new, ").unwrap();
    out.flush().unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        OLD,
        "changed before the commit"
    );
    out.write_all(b"whole").unwrap();
    out.commit().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"new, whole");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
    }
    assert_eq!(special::names_in(dir.path()), ["report.html"]);
}

#[test]
fn dropped_without_a_commit_nothing_is_put_in_place() {
    // An error, a panic or an early return between create and commit.
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("trace.json");
    std::fs::write(&old, OLD).unwrap();
    let new = dir.path().join("sub").join("new.json");
    for path in [&old, &new] {
        let mut out = OutputFile::create(path).unwrap();
        out.write_all(b"half a trace").unwrap();
        drop(out);
    }
    assert_eq!(std::fs::read(&old).unwrap(), OLD);
    assert!(!new.exists(), "an uncommitted new file appeared");
    assert!(special::temps_in(dir.path()).is_empty());
    assert!(special::temps_in(&dir.path().join("sub")).is_empty());

    // A panic half way.
    let panicked = std::panic::catch_unwind(|| {
        let mut out = OutputFile::create(&old).unwrap();
        out.write_all(b"half").unwrap();
        panic!("the writer fails");
    });
    assert!(panicked.is_err());
    assert_eq!(std::fs::read(&old).unwrap(), OLD);
    assert!(special::temps_in(dir.path()).is_empty());
}

#[test]
#[cfg(unix)]
fn a_symlink_and_a_chain_of_them_are_written_through_and_stay_links() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    let real = shared.join("report.html");
    std::fs::write(&real, OLD).unwrap();
    // link -> shared/report.html (absolute); chain -> link (relative).
    let link = dir.path().join("link.html");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let chain = dir.path().join("chain.html");
    std::os::unix::fs::symlink("link.html", &chain).unwrap();

    write(&link, b"through the link").unwrap();
    assert!(special::is_link(&link));
    assert_eq!(std::fs::read(&real).unwrap(), b"through the link");

    write(&chain, b"through the chain").unwrap();
    assert!(special::is_link(&chain) && special::is_link(&link));
    assert_eq!(std::fs::read(&real).unwrap(), b"through the chain");
    // The temporary file was beside the target, and is gone.
    assert!(special::temps_in(&shared).is_empty());
    assert!(special::temps_in(dir.path()).is_empty());
}

#[test]
#[cfg(unix)]
fn a_dangling_symlink_gets_its_target_made_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("out.json");
    std::os::unix::fs::symlink("later/real.json", &link).unwrap();
    std::fs::create_dir(dir.path().join("later")).unwrap();
    let chain = dir.path().join("chain.json");
    std::os::unix::fs::symlink("out.json", &chain).unwrap();

    write(&chain, b"made through two links").unwrap();
    assert!(special::is_link(&chain) && special::is_link(&link));
    assert_eq!(
        std::fs::read(dir.path().join("later/real.json")).unwrap(),
        b"made through two links"
    );
}

#[test]
#[cfg(unix)]
fn a_symlink_loop_is_an_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let err = write(&a, b"x").unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("a.json"), "{err}");
    assert!(special::is_link(&a) && special::is_link(&b));
}

#[test]
#[cfg(unix)]
fn a_named_pipe_gets_the_whole_output_at_the_commit_and_nothing_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fifo) = special::fifo(dir.path(), "pipe") else {
        return;
    };
    let big: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
    let (got, ()) = special::sent_through_fifo(&fifo, || write(&fifo, &big).unwrap());
    assert!(
        got == big,
        "the reader got {} of {} bytes",
        got.len(),
        big.len()
    );
    assert!(special::is_fifo(&fifo), "the pipe was replaced");

    let (got, ()) = special::sent_through_fifo(&fifo, || {
        let mut out = OutputFile::create(&fifo).unwrap();
        out.write_all(&big).unwrap();
        // Dropped: the run failed.
    });
    assert!(
        got.is_empty(),
        "an uncommitted output sent {} bytes",
        got.len()
    );
    assert!(special::is_fifo(&fifo));
    assert_eq!(special::names_in(dir.path()), ["pipe"]);
}

#[test]
#[cfg(unix)]
fn a_symlink_to_a_named_pipe_writes_into_the_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fifo) = special::fifo(dir.path(), "pipe") else {
        return;
    };
    let link = dir.path().join("trace.json");
    std::os::unix::fs::symlink("pipe", &link).unwrap();
    let (got, ()) = special::sent_through_fifo(&fifo, || write(&link, b"via the link").unwrap());
    assert_eq!(got, b"via the link");
    assert!(special::is_link(&link) && special::is_fifo(&fifo));
}

#[test]
fn a_null_device_made_here_is_written_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let Some(null) = special::null_device(dir.path()) else {
        return;
    };
    write(&null, b"into the device").unwrap();
    assert!(special::is_char_device(&null), "the device was replaced");
    assert_eq!(special::names_in(dir.path()), ["null"]);
}

#[test]
fn a_full_device_made_here_is_a_full_disk_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let Some(full) = special::full_device(dir.path()) else {
        return;
    };
    let err = write(&full, b"does not fit").unwrap_err();
    match &err {
        Error::Io { path, source } => {
            assert_eq!(path, &full);
            assert_eq!(source.kind(), std::io::ErrorKind::StorageFull, "{err}");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("full"), "{err}");
    assert!(special::is_char_device(&full), "the device was replaced");
    assert_eq!(special::names_in(dir.path()), ["full"]);
}

#[test]
fn a_directory_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("report.html");
    std::fs::create_dir(&target).unwrap();
    let err = OutputFile::create(&target).unwrap_err();
    match &err {
        Error::NotAnOutput { path, what } => {
            assert_eq!(path, &target);
            assert_eq!(*what, "a directory");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("report.html"), "{err}");
    assert!(target.is_dir());
    assert!(special::names_in(&target).is_empty());
    assert_eq!(special::names_in(dir.path()), ["report.html"]);
}

#[test]
fn a_read_only_folder_is_an_error_naming_the_file_and_the_old_file_stays() {
    let dir = tempfile::tempdir().unwrap();
    let Some(ro) = special::read_only_dir(dir.path(), "ro") else {
        return;
    };
    for name in ["old.txt", "new.txt"] {
        let path = ro.path.join(name);
        let err = write(&path, b"new").unwrap_err();
        match &err {
            Error::Io { path: p, source } => {
                assert_eq!(p, &path);
                assert_eq!(source.kind(), std::io::ErrorKind::PermissionDenied);
            }
            other => panic!("{other:?}"),
        }
        assert!(err.to_string().contains(name), "{err}");
    }
    assert_eq!(
        std::fs::read(ro.path.join("old.txt")).unwrap(),
        b"old, complete"
    );
    assert_eq!(special::names_in(&ro.path), ["old.txt"]);
}

// convert: whole or not at all (spec/traces.md "Streaming and bounded memory").

#[test]
fn the_bad_traces_are_good_ones_spoiled_near_their_end() {
    // The fixtures are what the tests below claim: the good traces convert, and each bad one
    // is a good one changed only after most of its slices (so a writer has written them).
    let dir = tempfile::tempdir().unwrap();
    let good_json = chrome_trace().into_bytes();
    let good_pf = bad_traces::perfetto_trace();
    for (name, good, to) in [
        ("good.json", &good_json, output("perfetto").unwrap()),
        ("good.pftrace", &good_pf, output("chrome").unwrap()),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, good).unwrap();
        convert(&path, &dir.path().join(format!("out-{name}")), to).unwrap();
    }
    for (name, bad) in bad_traces() {
        let good = if name.ends_with(".json") {
            &good_json
        } else {
            &good_pf
        };
        let same = bad
            .iter()
            .zip(good.iter())
            .take_while(|(a, b)| a == b)
            .count();
        assert!(
            same * 10 > good.len() * 8,
            "{name}: differs from byte {same} of {}",
            good.len()
        );
    }
}

#[test]
fn a_convert_that_fails_leaves_the_old_output_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in bad_traces() {
        let input = dir.path().join(name);
        std::fs::write(&input, &bytes).unwrap();
        let to = other_trace_output(trace_output_of(&input).unwrap());
        let output = dir.path().join(format!("out-{name}.{}", to.extension()));
        std::fs::write(&output, OLD).unwrap();
        let err = convert(&input, &output, to).unwrap_err();
        assert_eq!(
            std::fs::read(&output).unwrap(),
            OLD,
            "{name}: the old output was replaced ({err})"
        );
        // A new output path is not made at all.
        let fresh = dir.path().join(format!("fresh-{name}.{}", to.extension()));
        convert(&input, &fresh, to).unwrap_err();
        assert!(!fresh.exists(), "{name}: a partial output appeared");
    }
    assert!(special::temps_in(dir.path()).is_empty());
}

#[test]
#[cfg(unix)]
fn a_convert_that_fails_sends_nothing_into_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fifo) = special::fifo(dir.path(), "pipe") else {
        return;
    };
    for (name, bytes) in bad_traces() {
        let input = dir.path().join(name);
        std::fs::write(&input, &bytes).unwrap();
        let to = other_trace_output(trace_output_of(&input).unwrap());
        let (got, result) = special::sent_through_fifo(&fifo, || convert(&input, &fifo, to));
        assert!(result.is_err(), "{name}");
        assert!(
            got.is_empty(),
            "{name}: {} bytes went into the pipe",
            got.len()
        );
    }
    // And a good one goes through whole.
    let good = dir.path().join("good.json");
    std::fs::write(&good, chrome_trace()).unwrap();
    let (got, result) =
        special::sent_through_fifo(&fifo, || convert(&good, &fifo, output("perfetto").unwrap()));
    result.unwrap();
    let whole = dir.path().join("whole.pftrace");
    convert(&good, &whole, output("perfetto").unwrap()).unwrap();
    assert_eq!(got, std::fs::read(&whole).unwrap());
}

#[test]
#[cfg(unix)]
fn a_convert_onto_its_input_by_any_name_is_refused_and_the_input_kept() {
    // spec/profile-format.md "Reading and writing files": an output is never one of its
    // command's inputs, compared by device and inode, not by spelling.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.json");
    std::fs::write(&input, chrome_trace()).unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink("t.json", &link).unwrap();
    let hard = dir.path().join("hard.json");
    std::fs::hard_link(&input, &hard).unwrap();
    for out in [
        input.clone(),
        dir.path().join(".").join("t.json"),
        link,
        hard,
    ] {
        for to in [output("chrome").unwrap(), output("perfetto").unwrap()] {
            match convert(&input, &out, to) {
                Err(Error::OutputIsInput { output, input: i }) => {
                    assert_eq!((&output, &i), (&out, &input));
                }
                other => panic!("{}: {other:?}", out.display()),
            }
        }
        assert_eq!(std::fs::read(&input).unwrap(), chrome_trace().as_bytes());
    }
    assert!(special::is_link(&dir.path().join("link.json")));
    // And the check itself: any input, any output; paths that do not exist are no clash.
    let other = dir.path().join("other.json");
    std::fs::write(&other, "x").unwrap();
    brickprof::io::check_outputs_apart(&[&other, &input], &[&dir.path().join("new.json")]).unwrap();
    assert!(matches!(
        brickprof::io::check_outputs_apart(&[&other, &input], &[&dir.path().join("hard.json")]),
        Err(Error::OutputIsInput { .. })
    ));
    assert!(special::temps_in(dir.path()).is_empty());
}

#[test]
#[cfg(target_os = "linux")]
fn a_named_pipe_no_reader_opens_is_an_error_naming_it_not_a_hang() {
    // spec/profile-format.md "Reading and writing files": the commit waits a few seconds for a
    // reader, then fails naming the pipe; the pipe stays a pipe and nothing is left behind. A
    // commit still waiting after two minutes fails the test (a hang guard, not a speed target).
    let dir = tempfile::tempdir().unwrap();
    let Some(fifo) = special::fifo(dir.path(), "pipe") else {
        return;
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || tx.send(write(&path, b"whole")).unwrap());
    let result = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the commit still waits on a pipe no reader opened");
    let err = result.unwrap_err();
    assert!(
        err.to_string().contains(&format!(
            "{}: a named pipe that no reader opened",
            fifo.display()
        )),
        "{err}"
    );
    assert!(special::is_fifo(&fifo));
    assert_eq!(special::names_in(dir.path()), ["pipe"]);
}

#[test]
#[cfg(target_os = "linux")]
fn a_reader_that_opens_the_pipe_after_the_writer_still_gets_the_whole_output() {
    // The writer waits for its reader (up to a few seconds): a reader started second is served.
    let dir = tempfile::tempdir().unwrap();
    let Some(fifo) = special::fifo(dir.path(), "pipe") else {
        return;
    };
    let bytes: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
    let (path, sent) = (fifo.clone(), bytes.clone());
    let writer = std::thread::spawn(move || write(&path, &sent));
    // A blocking open for reading: it returns once the writer opens its end.
    let read_from = fifo.clone();
    let reader = std::thread::spawn(move || std::fs::read(read_from).unwrap());
    let written = writer.join().unwrap();
    if written.is_err() {
        // Release the reader (its open waits for a writer) before failing.
        use std::os::unix::fs::OpenOptionsExt;
        const O_NONBLOCK: i32 = 0o4000;
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(O_NONBLOCK)
            .open(&fifo);
    }
    let got = reader.join().unwrap();
    written.unwrap();
    assert!(
        got == bytes,
        "the reader got {} of {} bytes",
        got.len(),
        bytes.len()
    );
}

/// The trace output a file of `from` converts to: the other one.
fn other_trace_output(from: &dyn Output) -> &'static dyn Output {
    let others: Vec<_> = outputs()
        .iter()
        .copied()
        .filter(|o| o.takes() == Takes::Trace && o.name() != from.name())
        .collect();
    assert_eq!(others.len(), 1, "two trace formats");
    others[0]
}
