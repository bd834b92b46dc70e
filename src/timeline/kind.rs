//! [`TimelineKind`]: which timeline a profile was measured on. Open: a user's own timeline
//! (Vulkan, Metal, a vendor runtime) names itself by parsing its name (`"vulkan".parse()`)
//! instead of pretending to be a built-in one. Saved as a plain lowercase string, so files written before
//! the kind was open (`"cpu"`, `"sim"`, `"hip"`) load unchanged.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Error, Result};

/// Which kind of timeline produced a measurement. A timeline of your own names its kind by
/// parsing its name (see [`TimelineName`] for what a name may hold); a built-in name (any case)
/// gives the built-in kind.
///
/// ```
/// use brickprof::timeline::TimelineKind;
/// let vulkan: TimelineKind = "vulkan".parse()?;
/// assert_eq!(vulkan.name(), "vulkan");
/// assert_eq!("OpenCL".parse::<TimelineKind>()?, TimelineKind::OpenCl);
/// assert!("no spaces".parse::<TimelineKind>().is_err());
/// # Ok::<(), brickprof::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimelineKind {
    /// The host clock.
    Cpu,
    /// The simulated device stream.
    Sim,
    /// HIP events on a ROCm stream.
    Hip,
    /// OpenCL markers on a profiling command queue.
    OpenCl,
    /// CUDA events on a CUDA stream.
    Cuda,
    /// A timeline brickprof does not ship, under its own name.
    Other(TimelineName),
}

impl TimelineKind {
    const BUILT_IN: [TimelineKind; 5] = [
        TimelineKind::Cpu,
        TimelineKind::Sim,
        TimelineKind::Hip,
        TimelineKind::OpenCl,
        TimelineKind::Cuda,
    ];

    /// A kind for a timeline named `name` (its `FromStr`, for the crate's own named kinds).
    pub(crate) fn custom(name: &str) -> Result<Self> {
        name.parse()
    }

    /// The timelines brickprof ships: cpu, sim, hip, opencl, cuda (what a CLI offers).
    pub fn built_in() -> &'static [TimelineKind] {
        &Self::BUILT_IN
    }

    /// The kind's name: "cpu", "sim", "hip", "opencl", "cuda", or a custom name.
    pub fn name(&self) -> &str {
        match self {
            TimelineKind::Cpu => "cpu",
            TimelineKind::Sim => "sim",
            TimelineKind::Hip => "hip",
            TimelineKind::OpenCl => "opencl",
            TimelineKind::Cuda => "cuda",
            TimelineKind::Other(n) => n.as_str(),
        }
    }
}

impl fmt::Display for TimelineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TimelineKind {
    type Err = Error;

    /// A built-in name (any case), or a valid custom name (kept lowercase).
    fn from_str(s: &str) -> Result<Self> {
        let name = TimelineName::new(s)?;
        Ok(Self::BUILT_IN
            .into_iter()
            .find(|k| k.name() == name.as_str())
            .unwrap_or(TimelineKind::Other(name)))
    }
}

impl Serialize for TimelineKind {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for TimelineKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The name of a custom timeline: 1 to 23 characters of ASCII letters,
/// digits, `-`, `_` or `.`, stored lowercase. Stored inline, so [`TimelineKind`] stays `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimelineName {
    len: u8,
    bytes: [u8; TimelineName::MAX_LEN],
}

impl TimelineName {
    /// Longest name accepted.
    pub(crate) const MAX_LEN: usize = 23;

    /// Validate `name` (see the type's docs); stored lowercase.
    pub(crate) fn new(name: &str) -> Result<Self> {
        let ok = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.');
        if name.is_empty() || name.len() > Self::MAX_LEN || !name.bytes().all(ok) {
            return Err(Error::invalid_value(
                "timeline name",
                name,
                format!(
                    "use 1 to {} ASCII letters, digits, '-', '_' or '.'",
                    Self::MAX_LEN
                ),
            ));
        }
        let mut bytes = [0u8; Self::MAX_LEN];
        for (b, c) in bytes.iter_mut().zip(name.bytes()) {
            *b = c.to_ascii_lowercase();
        }
        Ok(TimelineName {
            len: name.len() as u8,
            bytes,
        })
    }

    /// The name.
    pub(crate) fn as_str(&self) -> &str {
        // Only ASCII bytes are ever stored (checked in `new`), so this cannot fail.
        std::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("?")
    }
}

impl fmt::Debug for TimelineName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// spec/profile-format.md "The profile file" (`meta.timeline`): old names load, custom names
    /// round-trip.
    #[test]
    fn saved_as_a_string_old_names_load_custom_names_round_trip() {
        for (json, kind) in [
            ("\"cpu\"", TimelineKind::Cpu),
            ("\"sim\"", TimelineKind::Sim),
            ("\"hip\"", TimelineKind::Hip),
            ("\"opencl\"", TimelineKind::OpenCl),
            ("\"cuda\"", TimelineKind::Cuda),
        ] {
            assert_eq!(serde_json::from_str::<TimelineKind>(json).unwrap(), kind);
            assert_eq!(serde_json::to_string(&kind).unwrap(), json);
        }
        let vk = TimelineKind::custom("Vulkan-1.3").unwrap();
        assert_eq!(vk.to_string(), "vulkan-1.3");
        let back: TimelineKind =
            serde_json::from_str(&serde_json::to_string(&vk).unwrap()).unwrap();
        assert_eq!(back, vk);
        assert!(serde_json::from_str::<TimelineKind>("\"\"").is_err());
        assert!(serde_json::from_str::<TimelineKind>("\"a/b\"").is_err());
        let long = "x".repeat(TimelineName::MAX_LEN + 1);
        assert!(TimelineKind::custom(&long).is_err());
        assert!(TimelineKind::custom(&long[1..]).is_ok());
    }
}
