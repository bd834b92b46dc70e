//! Where a trace writer's bytes go: any [`TraceOutput`] (a [`Write`] that names itself for
//! errors and can be closed), in memory or a [`StreamFile`] written to a temporary file and
//! renamed into place. Specified in `spec/traces.md` ("Streaming and bounded memory").

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Where a trace writer's bytes go: any [`Write`] that can say its name (for errors) and be
/// closed ([`StreamFile`] renames its file into place).
pub trait TraceOutput: Write {
    /// The file name errors name.
    fn name(&self) -> &Path {
        Path::new("<trace output>")
    }
    /// Everything is written: flush, and put the file in place.
    fn done(&mut self) -> Result<()> {
        self.flush().map_err(|e| Error::io(self.name(), e))
    }
}

impl TraceOutput for Vec<u8> {}
impl TraceOutput for std::io::Sink {}

impl TraceOutput for StreamFile {
    fn name(&self) -> &Path {
        &self.path
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

/// A file written as a stream into a temporary file next to it (a name no other writer shares)
/// and renamed into place when dropped (or [`StreamFile::commit`]ted), so a reader never sees
/// half a file under the final name, and two writers of one path never share a temporary file.
#[derive(Debug)]
pub struct StreamFile {
    path: PathBuf,
    tmp: PathBuf,
    out: Option<BufWriter<File>>,
}

impl StreamFile {
    /// Create `path`'s temporary file (and its parent directories).
    pub fn create(path: &Path) -> Result<StreamFile> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(d) => d,
            None => Path::new("."),
        };
        let name = path
            .file_name()
            .map_or_else(|| "trace".into(), |n| n.to_string_lossy());
        let (tmp, file) = crate::file_io::create_temp(dir, &name)?;
        Ok(StreamFile {
            path: path.to_path_buf(),
            tmp,
            out: Some(BufWriter::with_capacity(1 << 16, file)),
        })
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flush and rename into place.
    pub fn commit(&mut self) -> Result<()> {
        let Some(out) = self.out.take() else {
            return Ok(());
        };
        let file = out
            .into_inner()
            .map_err(|e| Error::io(&self.tmp, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(&self.tmp, e))?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| Error::io(&self.path, e))
    }
}

impl Write for StreamFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.out.as_mut() {
            Some(o) => o.write(buf),
            None => Err(std::io::Error::other("file already committed")),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.as_mut().map_or(Ok(()), Write::flush)
    }
}

impl Drop for StreamFile {
    fn drop(&mut self) {
        let _ = self.commit();
    }
}
