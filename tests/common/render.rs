//! Each profile output as text, through the library's one entry point (`output::output(NAME)`,
//! `Output::write`): what `brickprof report --NAME` writes.

use brickprof::output::{output, HtmlOptions, ReportOptions, Snapshot, TableOptions};
use brickprof::Profile;

/// The output `name` of `profile` under `opts`, as text.
pub fn render(name: &str, profile: &Profile, opts: &ReportOptions<'_>) -> String {
    let mut out = Vec::new();
    output(name)
        .expect("a library output")
        .write(&Snapshot::Profile(profile, opts), &mut out)
        .expect("written");
    String::from_utf8(out).expect("text")
}

fn with_table(opts: &TableOptions) -> ReportOptions<'static> {
    ReportOptions {
        table: opts.clone(),
        ..ReportOptions::default()
    }
}

pub fn render_json(profile: &Profile, opts: &TableOptions) -> String {
    render("json", profile, &with_table(opts))
}

pub fn render_csv(profile: &Profile, opts: &TableOptions) -> String {
    render("csv", profile, &with_table(opts))
}

pub fn render_html(profile: &Profile, opts: &HtmlOptions<'_>) -> String {
    let opts = ReportOptions {
        table: TableOptions::default(),
        html: *opts,
    };
    render("html", profile, &opts)
}

pub fn render_folded(profile: &Profile) -> String {
    render("folded", profile, &ReportOptions::default())
}

pub fn render_dot(profile: &Profile) -> String {
    render("dot", profile, &ReportOptions::default())
}
