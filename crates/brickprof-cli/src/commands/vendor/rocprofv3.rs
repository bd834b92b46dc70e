//! rocprofv3: `rocprofv3 --kernel-trace --marker-trace --kernel-rename --output-format csv -d
//! DIR -o brickprof -- CMD ARGS`, which writes `DIR/brickprof_kernel_trace.csv` and
//! `DIR/brickprof_marker_api_trace.csv` beside it (kernels named by their innermost roctx
//! range, and the ranges themselves: spec/imports.md "rocprofv3").

use std::path::{Path, PathBuf};

use brickprof::{Error, Result};

use super::{no_metrics, os_args, Plan, Request, Step, VendorTool};

/// The output file name rocprofv3 is given (`-o`): its files start with it.
const PREFIX: &str = "brickprof";

/// rocprofv3 (ROCm's rocprofiler-sdk).
pub struct Rocprofv3;

impl VendorTool for Rocprofv3 {
    fn name(&self) -> &'static str {
        "rocprofv3"
    }
    fn product(&self) -> &'static str {
        "ROCm rocprofiler-sdk"
    }
    fn install(&self) -> &'static str {
        "install ROCm's rocprofiler-sdk package and put /opt/rocm/bin on PATH (see \
         https://rocm.docs.amd.com/projects/rocprofiler-sdk)"
    }
    fn ranges(&self) -> &'static str {
        "roctx"
    }
    fn plan(&self, request: &Request) -> Result<Plan> {
        no_metrics(self, request)?;
        let mut args = os_args([
            "--kernel-trace",
            "--marker-trace",
            "--kernel-rename",
            "--output-format",
            "csv",
            "-d",
        ]);
        args.push(request.dir.clone().into_os_string());
        args.extend(os_args(["-o", PREFIX, "--"]));
        args.extend(request.command.iter().cloned());
        Ok(Plan {
            steps: vec![Step::program(args)],
            result: request.dir.join(format!("{PREFIX}_kernel_trace.csv")),
        })
    }
    /// The kernel trace the plan named, else the first `*kernel_trace.csv` under the folder
    /// (rocprofv3 versions that put files in `%hostname%/%pid%` folders).
    fn result(&self, plan: &Plan) -> Result<PathBuf> {
        if plan.result.is_file() {
            return Ok(plan.result.clone());
        }
        let dir = plan.result.parent().unwrap_or(Path::new("."));
        let mut found = Vec::new();
        find_traces(dir, 0, &mut found);
        found.sort();
        found.into_iter().next().ok_or_else(|| {
            Error::invalid_value(
                "vendor output",
                dir.display(),
                "rocprofv3 wrote no *kernel_trace.csv in this folder",
            )
        })
    }
}

/// Every `*kernel_trace.csv` under `dir`, three folders deep at most.
fn find_traces(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() && depth < 3 {
            find_traces(&p, depth + 1, found);
        } else if p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with("kernel_trace.csv"))
        {
            found.push(p);
        }
    }
}
