//! Files whose size or shape would cost memory out of proportion: each is refused, or read,
//! within a stated bound (spec/divergence.md "Capture files", "The token axis").

use brickprof::capture::CaptureStore;
use brickprof::checksum::{KernelKey, Tensor};
use brickprof::Error;

#[test]
fn a_capture_file_larger_than_its_header_says_is_refused_from_the_header() {
    // spec/divergence.md "Capture files": a valid header on a sparse 3 GiB file. Before, the
    // whole file was read (3.08 GB, 10.6 s) before "file not fully covered"; now the header
    // is checked against the file's size first, and the error says what does not fit.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("captures.safetensors");
    let mut store = CaptureStore::with_budget(1 << 20);
    let key = KernelKey {
        pass: 0,
        layer: Some(0),
        brick: "RmsNorm".into(),
        call: 0,
    };
    store.record(key, Tensor::F32(&[1.0, 2.0, 3.0]));
    store.save(&path).unwrap();
    let written = std::fs::metadata(&path).unwrap().len();
    let len = 3u64 << 30;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len)
        .unwrap();
    let err = CaptureStore::load(&path).unwrap_err();
    let shown = err.to_string();
    assert!(matches!(err, Error::Invalid { .. }), "{shown}");
    assert!(
        shown.contains("captures.safetensors")
            && shown.contains("describes 12 bytes of tensor data")
            && shown.contains(&format!("{} after it", len - (written - 12))),
        "{shown}"
    );
}
