//! Files, below every layer that saves or loads one: bounded whole-file reads, JSON files whose
//! errors name file, line and column, the one atomic write path, outputs kept apart from
//! inputs, a run's identity and the folder that holds a run's files.

pub mod file_io;
pub mod json_file;
pub mod output_apart;
pub mod output_file;
pub mod run_folder;
pub mod run_id;
