//! [`record_checksum`]: a candle tensor into brickprof's checksum log.

use brickprof::checksum::Tensor as Bytes;
use brickprof::{BrickHandle, BrickProfiler, Timeline};
use candle_core::{DType, Result, Tensor};

/// Checksum `output`, the output of `brick` in `layer` (`None`: outside every layer), into
/// `prof`'s checksum log, keyed by (pass, layer, brick, call), and capture it whole when the
/// profiler's capture plan takes it: [`Checksums::record`](brickprof::profiler::Checksums::record)
/// for a candle tensor.
///
/// f32, f16, bf16 and u8 tensors are hashed in their own dtype (recorded with the checksum);
/// any other dtype is hashed as its values converted to f32.
///
/// The tensor is read back to the host (a copy, and a sync on a GPU), outside any brick's
/// time if called after the brick stops: call it only when checksums are wanted. The profiler
/// records nothing when its checksums are off and its capture plan does not take the brick.
pub fn record_checksum<T: Timeline>(
    prof: &mut BrickProfiler<T>,
    layer: Option<usize>,
    brick: impl Into<BrickHandle>,
    output: &Tensor,
) -> Result<()> {
    let flat = output.flatten_all()?;
    match flat.dtype() {
        DType::F32 => prof
            .checksums()
            .record(layer, brick, &flat.to_vec1::<f32>()?),
        DType::F16 => {
            let bits: Vec<u16> = flat
                .to_vec1::<half::f16>()?
                .iter()
                .map(|v| v.to_bits())
                .collect();
            prof.checksums()
                .record_tensor(layer, brick, Bytes::F16(&bits));
        }
        DType::BF16 => {
            let bits: Vec<u16> = flat
                .to_vec1::<half::bf16>()?
                .iter()
                .map(|v| v.to_bits())
                .collect();
            prof.checksums()
                .record_tensor(layer, brick, Bytes::Bf16(&bits));
        }
        DType::U8 => {
            prof.checksums()
                .record_tensor(layer, brick, Bytes::U8(&flat.to_vec1::<u8>()?))
        }
        _ => prof
            .checksums()
            .record(layer, brick, &flat.to_dtype(DType::F32)?.to_vec1::<f32>()?),
    }
    Ok(())
}
