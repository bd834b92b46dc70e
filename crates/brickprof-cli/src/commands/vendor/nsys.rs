//! Nsight Systems: `nsys profile --trace cuda,nvtx --cuda-graph-trace node` (graph kernels one
//! record a node), then `nsys export --type sqlite` of the report.

use brickprof::Result;

use super::{no_metrics, os_args, Plan, Request, Step, VendorTool};

/// Nsight Systems.
pub struct Nsys;

impl VendorTool for Nsys {
    fn name(&self) -> &'static str {
        "nsys"
    }
    fn product(&self) -> &'static str {
        "Nsight Systems"
    }
    fn install(&self) -> &'static str {
        "install it with the CUDA toolkit (its bin folder) or from \
         https://developer.nvidia.com/nsight-systems, and put its folder on PATH"
    }
    fn ranges(&self) -> &'static str {
        "nvtx"
    }
    fn plan(&self, request: &Request) -> Result<Plan> {
        no_metrics(self, request)?;
        let report = request.dir.join("brickprof");
        let rep = request.dir.join("brickprof.nsys-rep");
        let result = request.dir.join("brickprof.sqlite");
        let mut profile = os_args([
            "profile",
            "--trace",
            "cuda,nvtx",
            "--cuda-graph-trace",
            "node",
            "--force-overwrite",
            "true",
            "-o",
        ]);
        profile.push(report.into_os_string());
        profile.extend(request.command.iter().cloned());
        let mut export = os_args([
            "export",
            "--type",
            "sqlite",
            "--force-overwrite",
            "true",
            "-o",
        ]);
        export.push(result.clone().into_os_string());
        export.push(rep.into_os_string());
        Ok(Plan {
            steps: vec![
                Step::program(profile),
                Step {
                    args: export,
                    stdout: None,
                    runs_program: false,
                },
            ],
            result,
        })
    }
}
