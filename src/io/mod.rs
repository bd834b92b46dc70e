//! Files, below every layer that saves or loads one: bounded whole-file reads, JSON files whose
//! errors name file, line and column, the one atomic write path, outputs kept apart from
//! inputs, a run's identity and the folder that holds a run's files.

pub(crate) mod file_io;
pub(crate) mod json_file;
pub(crate) mod output_apart;
pub(crate) mod output_file;
pub(crate) mod run_folder;
pub(crate) mod run_id;

pub use output_apart::check_outputs_apart;
pub use output_file::OutputFile;
pub use run_folder::{Committed, RunFolder};
pub use run_id::RunId;
