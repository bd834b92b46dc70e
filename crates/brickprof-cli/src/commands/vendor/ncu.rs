//! Nsight Compute: `ncu --nvtx --csv --page raw --metrics SET CMD ARGS > DIR/ncu_raw.csv`.
//! ncu prints its CSV on standard output, after its `==PROF==` lines and the program's own
//! output (the importer skips every line before the header).

use brickprof::{Error, Result};

use super::{os_args, Plan, Request, Step, VendorTool};

/// The duration every set starts with: the importer needs it.
const DURATION: &str = "gpu__time_duration.sum";
const DRAM: [&str; 2] = ["dram__bytes_read.sum", "dram__bytes_write.sum"];
const FLOPS: [&str; 3] = [
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
];
const THROUGHPUT: [&str; 2] = [
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
];

/// The named metric sets, `--metrics NAME`.
pub const METRIC_SETS: [&str; 4] = ["default", "time", "memory", "full"];

/// The metrics of a named set, or of a comma-separated list (the duration added when absent).
pub fn metrics(set: &str) -> Result<Vec<&str>> {
    let mut m = vec![DURATION];
    match set {
        "time" => {}
        "memory" => m.extend(DRAM),
        "default" => m.extend(DRAM.iter().chain(&FLOPS)),
        "full" => m.extend(DRAM.iter().chain(&FLOPS).chain(&THROUGHPUT)),
        list if list.contains("__") => {
            m.extend(
                list.split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty() && *n != DURATION),
            );
        }
        other => {
            return Err(Error::invalid_value(
                "--metrics",
                other,
                format!(
                    "a metric set ({}) or a comma-separated list of ncu metric names",
                    METRIC_SETS.join(", ")
                ),
            ))
        }
    }
    Ok(m)
}

/// Nsight Compute.
pub struct Ncu;

impl VendorTool for Ncu {
    fn name(&self) -> &'static str {
        "ncu"
    }
    fn product(&self) -> &'static str {
        "Nsight Compute"
    }
    fn install(&self) -> &'static str {
        "install it with the CUDA toolkit (its bin folder) or from \
         https://developer.nvidia.com/nsight-compute, and put its folder on PATH"
    }
    fn ranges(&self) -> &'static str {
        "nvtx"
    }
    fn plan(&self, request: &Request) -> Result<Plan> {
        let metrics = metrics(request.metrics.as_deref().unwrap_or("default"))?.join(",");
        let result = request.dir.join("ncu_raw.csv");
        let mut args = os_args(["--nvtx", "--csv", "--page", "raw", "--metrics", &metrics]);
        args.extend(request.command.iter().cloned());
        Ok(Plan {
            steps: vec![Step {
                stdout: Some(result.clone()),
                ..Step::program(args)
            }],
            result,
        })
    }
}
