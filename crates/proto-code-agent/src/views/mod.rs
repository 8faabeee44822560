//! Projections of engine state onto the seed's messages (and back), shared
//! by the rpc groups.

pub(crate) mod conversation;
pub(crate) mod session;

/// A count as the proto's `uint32`, saturating.
pub(crate) fn u32_of(n: impl TryInto<u32>) -> u32 {
    n.try_into().unwrap_or(u32::MAX)
}
