//! Recording kernel checksums from the profiler, keyed by (pass, layer, brick, call)
//! (spec/checksums.md "Recording").

use super::BrickProfiler;
use crate::checksum::{ChecksumLog, HalfFormat, KernelKey};
use crate::timeline::Timeline;
use crate::BrickHandle;

impl<T: Timeline> BrickProfiler<T> {
    /// Record the FNV-1a checksum and summary of `output`, the output of `brick` in `layer`
    /// (`None`: outside any layer), keyed by (pass, layer, brick, call index within the pass).
    /// A no-op when checksums are off. Not a hot-path call: it reads the whole tensor.
    ///
    /// ```
    /// use brickprof::{BrickId, BrickProfiler, ProfilerConfig};
    /// let mut prof = BrickProfiler::new(ProfilerConfig { checksums: true, ..Default::default() })?;
    /// prof.record_checksum(Some(0), BrickId::RmsNorm, &[1.0, 2.0]);
    /// prof.record_checksum(Some(0), BrickId::RmsNorm, &[3.0]);
    /// let log = prof.checksums();
    /// assert_eq!(log.entries[1].key.call, 1);
    /// # Ok::<(), brickprof::Error>(())
    /// ```
    pub fn record_checksum(
        &mut self,
        layer: Option<usize>,
        brick: impl Into<BrickHandle>,
        output: &[f32],
    ) {
        if let Some(key) = self.checksum_key(layer, brick.into()) {
            self.checksum_log.record_f32(key, output);
        }
    }

    /// [`Self::record_checksum`] for f16/bf16 outputs given as raw bits.
    pub fn record_checksum_half(
        &mut self,
        layer: Option<usize>,
        brick: impl Into<BrickHandle>,
        output: &[u16],
        format: HalfFormat,
    ) {
        if let Some(key) = self.checksum_key(layer, brick.into()) {
            self.checksum_log.record_half(key, output, format);
        }
    }

    fn checksum_key(&mut self, layer: Option<usize>, brick: BrickHandle) -> Option<KernelKey> {
        if !self.checksums_on {
            return None;
        }
        let Some(name) = self.registry.name(brick) else {
            self.counters.dropped = self.counters.dropped.saturating_add(1);
            return None;
        };
        let row = match layer {
            Some(l) if l < self.layers => l,
            Some(_) => self.layers + 1,
            None => self.layers,
        };
        let Some(calls) = self.cells.checksum_calls.get_mut(brick.slot(), row) else {
            self.counters.dropped = self.counters.dropped.saturating_add(1);
            return None;
        };
        let call = *calls;
        *calls = calls.saturating_add(1);
        Some(KernelKey {
            pass: self.pass_index,
            layer: layer.map(|l| u32::try_from(l).unwrap_or(u32::MAX)),
            brick: name.to_string(),
            call,
        })
    }

    /// Turn checksum recording on or off.
    pub fn set_checksums(&mut self, on: bool) {
        self.checksums_on = on;
    }

    /// The checksums recorded so far, in recording order.
    pub fn checksums(&self) -> &ChecksumLog {
        &self.checksum_log
    }

    /// Take the checksums recorded so far, leaving an empty log.
    pub fn take_checksums(&mut self) -> ChecksumLog {
        std::mem::take(&mut self.checksum_log)
    }
}
