//! spec/profile-format.md "Reading and writing files": bounded reads, byte-order marks,
//! invalid UTF-8, atomic saves, through the public API.

use super::special;
use crate::common;

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use brickprof::compare::{diff_files_with, DiffOptions};
use brickprof::{checksum::ChecksumLog, Error, Profile};

/// Run `f` on a thread and give up after `secs`: a read that never ends fails the test
/// instead of hanging it.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("the read did not finish: it is not bounded")
}

#[test]
#[cfg(unix)]
fn a_zero_device_is_a_clear_error_not_a_hang() {
    // A zero device made in this test's folder (root only), never the machine's /dev/zero.
    let dir = tempfile::tempdir().unwrap();
    let Some(zero) = special::zero_device(dir.path()) else {
        return;
    };
    for load in [
        |p: &Path| Profile::load(p).map(drop),
        // A run file of either kind, as `brickprof diff` reads one.
        |p: &Path| diff_files_with(p, p, &DiffOptions::default()).map(drop),
        |p: &Path| ChecksumLog::load(p).map(drop),
    ] {
        let path = zero.clone();
        let err = within(20, move || load(&path)).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains(&*zero.to_string_lossy()) && msg.contains("character device"),
            "{msg}"
        );
    }
}

#[test]
fn a_file_over_the_limit_is_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.json");
    // Sparse: costs no disk, and a bounded reader never reads it.
    let f = std::fs::File::create(&path).unwrap();
    f.set_len((1 << 30) + 1).unwrap();
    drop(f);
    let p = path.clone();
    let err = within(20, move || Profile::load(&p)).unwrap_err();
    assert!(
        matches!(&err, Error::FileTooLarge { limit, .. } if *limit == 1 << 30),
        "{err}"
    );
    assert!(err.to_string().contains("huge.json"), "{err}");
}

#[test]
fn a_utf8_byte_order_mark_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    let p = common::fixed_profile(true);
    p.save(&path).unwrap();
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(&path).unwrap());
    std::fs::write(&path, bytes).unwrap();
    assert_eq!(Profile::load(&path).unwrap(), p);
    // Read as a run file of either kind too (`RunFile` is internal): src/profile/tests.rs.
}

#[test]
fn invalid_utf8_is_a_parse_error_at_the_bad_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    std::fs::write(&path, b"{\n  \"kind\": \"prof\xC3ile\"}").unwrap();
    match Profile::load(&path).unwrap_err() {
        Error::Parse {
            path: p,
            line,
            column,
            message,
        } => {
            assert_eq!(p, path);
            assert_eq!((line, column), (2, 16));
            assert!(message.contains("not UTF-8"), "{message}");
        }
        other => panic!("expected a parse error, got {other}"),
    }
}

#[test]
fn saves_replace_the_file_whole_and_leave_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    let small = common::fixed_profile(false);
    let big = common::fixed_profile(true);
    for p in [&big, &small, &big] {
        p.save(&path).unwrap();
        assert_eq!(&Profile::load(&path).unwrap(), p);
        assert!(
            special::temps_in(dir.path()).is_empty(),
            "{:?}",
            special::temps_in(dir.path())
        );
    }
    let log = big.checksums.clone().unwrap();
    let log_path = dir.path().join("sub/checksums.json");
    log.save(&log_path).unwrap();
    assert_eq!(ChecksumLog::load(&log_path).unwrap(), log);
}

#[test]
fn a_save_that_cannot_replace_its_target_keeps_it() {
    // The target is a directory: the save fails, naming it; nothing is left behind.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("inside"), "kept").unwrap();
    let err = common::fixed_profile(false).save(&path).unwrap_err();
    assert!(err.to_string().contains("p.json"), "{err}");
    assert_eq!(
        std::fs::read_to_string(path.join("inside")).unwrap(),
        "kept"
    );
    assert!(special::temps_in(dir.path()).is_empty());
}

#[test]
fn concurrent_saves_of_one_path_leave_one_whole_file() {
    // Threads saving different profiles to one path: every read in between and the file at
    // the end is one of them, whole.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    let a = common::fixed_profile(false);
    let b = common::fixed_profile(true);
    a.save(&path).unwrap();
    std::thread::scope(|s| {
        for p in [&a, &b, &a, &b] {
            let path = &path;
            s.spawn(move || {
                for _ in 0..10 {
                    p.save(path).unwrap();
                }
            });
        }
        for _ in 0..20 {
            let got = Profile::load(&path).unwrap();
            assert!(got == a || got == b);
        }
    });
    let got = Profile::load(&path).unwrap();
    assert!(got == a || got == b);
    assert!(special::temps_in(dir.path()).is_empty());
}
