//! `brickprof report --flamegraph OUT.svg` (or `--format flamegraph`): the brick tree of a
//! saved profile as a flamegraph, the library's folded stacks rendered by `inferno`
//! (spec/work-accounting.md "Brick tree"). It is one more [`Output`], listed beside the
//! library's by [`crate::cli_outputs`], so it gets its flags the same way and is written whole
//! or not at all ([`brickprof::io::OutputFile`]).

use std::path::Path;

use brickprof::output::{folded_stacks, xml_safe, Output, Snapshot, TraceOutput};
use brickprof::{Error, Result};

/// The flamegraph SVG: stacks layer -> brick -> nested brick, weighted by self time.
#[derive(Debug, Clone, Copy)]
pub struct Flamegraph;

impl Output for Flamegraph {
    fn name(&self) -> &'static str {
        "flamegraph"
    }
    fn extension(&self) -> &'static str {
        "svg"
    }
    fn recognise(&self, _path: &Path, head: &[u8]) -> bool {
        head.starts_with(b"<?xml") && head.windows(4).any(|w| w == b"<svg")
    }
    fn write(&self, s: &Snapshot<'_>, out: &mut dyn TraceOutput) -> Result<()> {
        let Snapshot::Profile(profile, opts) = s else {
            return Err(Error::invalid_value(
                "output",
                self.name(),
                "the flamegraph is made from a profile",
            ));
        };
        let path = out.name().to_path_buf();
        let io = |source| Error::Io { path, source };
        let written = flamegraph(profile, opts.html.label).and_then(|svg| out.write_all(&svg));
        written.map_err(io)
    }
}

/// The flamegraph SVG; an error for a profile with no brick time. `inferno` escapes the XML
/// specials; the characters XML 1.0 cannot hold (a brick name's U+FFFF) are replaced here.
fn flamegraph(profile: &brickprof::Profile, label: &str) -> std::io::Result<Vec<u8>> {
    let lines: Vec<String> = folded_stacks(profile)
        .into_iter()
        .map(|(stack, ns)| format!("{} {ns}", xml_safe(&stack)))
        .collect();
    if lines.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the profile has no brick time to draw",
        ));
    }
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = format!("brickprof: {}", xml_safe(label));
    opts.subtitle = Some("self time: layer -> brick -> nested brick".to_string());
    opts.count_name = "ns".to_string();
    opts.name_type = "Brick:".to_string();
    opts.deterministic = true;
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut svg)?;
    Ok(svg)
}
