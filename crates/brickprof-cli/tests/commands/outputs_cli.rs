//! The CLI builds its flags from the output list (spec/profile-format.md "The CLI",
//! spec/traces.md "Command line"): every output is offered where its snapshot is made, `report
//! --NAME FILE` writes whole files, `convert` needs no `--to` for a trace it recognises, and a
//! timeline the demo cannot run is a clear error.

use crate::common::cli;

use brickprof::output::{outputs, Takes};
use cli::{assert_clean_error, brickprof, demo, text};

fn help(sub: &str) -> String {
    let o = brickprof(&[sub, "--help"]);
    assert!(o.status.success());
    text(&o).0
}

#[test]
fn every_output_is_offered_where_its_snapshot_is_made() {
    let (report, demo_help, convert_help) = (help("report"), help("demo"), help("convert"));
    for o in outputs() {
        let name = o.name();
        match o.takes() {
            Takes::Profile => {
                assert!(report.contains(&format!("--{name} <")), "report --{name}");
                let formats = report.lines().find(|l| l.contains("--format")).unwrap();
                assert!(formats.contains(name), "report --format {name}: {formats}");
                let to = convert_help.lines().find(|l| l.contains("--to")).unwrap();
                assert!(!to.contains(name), "convert --to offers {name}: {to}");
            }
            Takes::Trace => {
                let line = demo_help
                    .lines()
                    .find(|l| l.contains("--trace-format"))
                    .unwrap();
                assert!(line.contains(name), "demo --trace-format {name}: {line}");
                let to = convert_help.lines().find(|l| l.contains("--to")).unwrap();
                assert!(to.contains(name), "convert --to {name}: {to}");
                assert!(!report.contains(&format!("--{name} <")), "report --{name}");
            }
        }
    }
    // The CLI's own output joins the list the same way.
    assert!(report.contains("--flamegraph <"), "{report}");
    // Every timeline brickprof ships is a value of --timeline, cuda included.
    let line = demo_help
        .lines()
        .find(|l| l.contains("--timeline"))
        .unwrap();
    for k in brickprof::timeline::TimelineKind::built_in() {
        assert!(line.contains(k.name()), "{line}");
    }
}

#[test]
fn report_writes_every_named_file_whole() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path(), &[]);
    let profile = dir.path().join("profile.json");
    let p = profile.to_str().unwrap();
    for name in ["json", "csv", "table"] {
        let stdout = text(&brickprof(&["report", p, "--format", name])).0;
        let file = dir.path().join(format!("r.{name}"));
        let o = brickprof(&["report", p, &format!("--{name}"), file.to_str().unwrap()]);
        assert!(o.status.success(), "{:?}", text(&o));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), stdout, "--{name}");
    }
}

#[test]
fn convert_tells_the_input_by_content_and_writes_the_other_trace() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path(), &["--trace-format", "chrome"]);
    // No extension to go by: the content says Chrome, so Perfetto is written.
    let odd = dir.path().join("trace.data");
    std::fs::rename(dir.path().join("trace.json"), &odd).unwrap();
    let o = brickprof(&["convert", odd.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("(chrome)") && out.contains("(perfetto)"),
        "{out}"
    );
    let pf = dir.path().join("trace.pftrace");
    assert_eq!(std::fs::read(&pf).unwrap()[0], 0x0a, "a Perfetto trace");
}

#[test]
fn a_timeline_the_demo_cannot_run_is_a_clear_error() {
    let o = brickprof(&["demo", "--timeline", "cuda", "--no-save", "--tokens", "1"]);
    assert_clean_error(&o, "brickprof-candle");
}
