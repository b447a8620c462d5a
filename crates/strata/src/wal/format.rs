//! Constants of the log format and the fragment checksum.

/// Logs are written in blocks of this size; a fragment never crosses a block boundary.
pub const BLOCK_SIZE: usize = 32 * 1024;
/// checksum (4) + length (2) + type (1).
pub const HEADER_SIZE: usize = 7;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FragmentType {
    Full = 1,
    First = 2,
    Middle = 3,
    Last = 4,
}

impl FragmentType {
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            1 => Some(Self::Full),
            2 => Some(Self::First),
            3 => Some(Self::Middle),
            4 => Some(Self::Last),
            _ => None,
        }
    }
}

/// CRC32C over the type byte and the payload, masked so that a CRC of data containing CRCs is
/// not itself a likely CRC (as LevelDB does).
pub fn fragment_crc(ty: u8, payload: &[u8]) -> u32 {
    let c = crc32c::crc32c_append(crc32c::crc32c(&[ty]), payload);
    mask(c)
}

pub fn mask(c: u32) -> u32 {
    c.rotate_right(15).wrapping_add(0xa282_ead8)
}
