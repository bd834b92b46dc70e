//! spec/sync-modes.md "OpenCL": with no OpenCL device, opening one is a typed error that names
//! what to install. The ICD loader is pointed at an empty vendor directory before the first
//! OpenCL call (this file is its own process), so it finds no platform.

use brickprof::{timeline::OpenClDevice, Error};

#[test]
fn no_platform_is_a_typed_error_naming_what_to_install() {
    let empty = tempfile::tempdir().expect("temp dir");
    // Before any OpenCL call in this process: the loader reads it when it first enumerates.
    std::env::set_var("OCL_ICD_VENDORS", empty.path());
    match OpenClDevice::first() {
        Err(Error::NoDevice {
            timeline, install, ..
        }) => {
            assert_eq!(timeline, "opencl");
            assert!(install.contains("pocl-opencl-icd"), "{install}");
        }
        Err(other) => panic!("expected Error::NoDevice, got {other}"),
        Ok(d) => panic!("found {} with no vendor files", d.name),
    }
    let shown = OpenClDevice::first().unwrap_err().to_string();
    assert!(shown.starts_with("no opencl device: "), "{shown}");
}
