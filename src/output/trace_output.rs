//! Where a trace writer's bytes go: any [`TraceOutput`] (a [`Write`] that names itself for
//! errors and can be put in place), in memory or an [`OutputFile`] committed only when the
//! trace is whole. Specified in `spec/traces.md` ("Streaming and bounded memory").

use std::io::Write;
use std::path::Path;

use crate::{io::OutputFile, Error, Result};

/// Where a trace writer's bytes go: any [`Write`] that can say its name (for errors) and be
/// put in place when the trace is whole ([`OutputFile`] commits its file).
pub trait TraceOutput: Write {
    /// The file name errors name.
    fn name(&self) -> &Path {
        Path::new("<trace output>")
    }
    /// Everything is written: flush, and put the file in place. A writer calls it only from
    /// its `finish`, never when dropped, so an unfinished trace file never appears.
    fn done(&mut self) -> Result<()> {
        self.flush().map_err(|e| Error::io(self.name(), e))
    }
}

impl TraceOutput for Vec<u8> {}
impl TraceOutput for std::io::Sink {}

impl TraceOutput for OutputFile {
    fn name(&self) -> &Path {
        self.path()
    }
    fn done(&mut self) -> Result<()> {
        self.commit()
    }
}

impl<T: TraceOutput + ?Sized> TraceOutput for &mut T {
    fn name(&self) -> &Path {
        (**self).name()
    }
    fn done(&mut self) -> Result<()> {
        (**self).done()
    }
}

impl<T: TraceOutput + ?Sized> TraceOutput for Box<T> {
    fn name(&self) -> &Path {
        (**self).name()
    }
    fn done(&mut self) -> Result<()> {
        (**self).done()
    }
}
