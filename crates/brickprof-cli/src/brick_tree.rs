//! `brickprof report --flamegraph OUT.svg --folded OUT.folded --dot OUT.dot`: the brick tree of
//! a saved profile as a flamegraph (the library's folded stacks rendered by `inferno`), as the
//! folded stacks themselves, and as a Graphviz DOT graph (spec/work-accounting.md "Brick
//! tree"). Each file is written whole or not at all ([`OutputFile`]).

use std::path::Path;

use brickprof::report::{folded_stacks, render_dot, render_folded};
use brickprof::{Error, OutputFile, Profile, Result};

/// Which files to write.
pub struct Outputs<'a> {
    pub flamegraph: Option<&'a Path>,
    pub folded: Option<&'a Path>,
    pub dot: Option<&'a Path>,
}

/// Write each requested file, saying so on stderr.
pub fn write(profile: &Profile, label: &str, out: Outputs<'_>) -> Result<()> {
    if let Some(path) = out.flamegraph {
        let svg = flamegraph(profile, label).map_err(|e| Error::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        OutputFile::write_whole(path, &svg)?;
        crate::output::note(&format!("flamegraph written to {}", path.display()));
    }
    if let Some(path) = out.folded {
        OutputFile::write_whole(path, render_folded(profile).as_bytes())?;
        crate::output::note(&format!("folded stacks written to {}", path.display()));
    }
    if let Some(path) = out.dot {
        OutputFile::write_whole(path, render_dot(profile).as_bytes())?;
        crate::output::note(&format!(
            "execution graph written to {} (render: dot -Tsvg {} -o graph.svg)",
            path.display(),
            path.display()
        ));
    }
    Ok(())
}

/// The flamegraph SVG; an error for a profile with no brick time.
fn flamegraph(profile: &Profile, label: &str) -> std::io::Result<Vec<u8>> {
    let lines: Vec<String> = folded_stacks(profile)
        .into_iter()
        .map(|(stack, ns)| format!("{stack} {ns}"))
        .collect();
    if lines.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the profile has no brick time to draw",
        ));
    }
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = format!("brickprof: {label}");
    opts.subtitle = Some("self time: layer -> brick -> nested brick".to_string());
    opts.count_name = "ns".to_string();
    opts.name_type = "Brick:".to_string();
    opts.deterministic = true;
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut svg)?;
    Ok(svg)
}
