//! One NCCL communicator: made from a unique id shared over MPI (`ncclCommInitRank`) or
//! split from another (`ncclCommSplit`), torn down with `ncclCommDestroy`, or with
//! `ncclCommAbort` after a collective timed out. Every call here runs on the NCCL engine's
//! thread with the communicator's device context current.

use super::library::{self, check};
use cudarc::nccl::sys;
use kiln_core::{Error, Result};
use std::ffi::c_int;

/// Bytes of `ncclUniqueId`.
pub(crate) const ID_BYTES: usize = 128;

/// `NCCL_SPLIT_NOCOLOR`: the color of a rank that joins no communicator of a split.
const SPLIT_NOCOLOR: c_int = -1;

/// A communicator this process owns.
pub(crate) struct Communicator {
    raw: sys::ncclComm_t,
}

// SAFETY: an NCCL communicator may be used from any thread as long as calls on it are not
// concurrent; kiln's NCCL engine thread is the only one that ever touches it.
unsafe impl Send for Communicator {}

/// A new unique id (`ncclGetUniqueId`), for rank 0 to share with the others.
pub(crate) fn unique_id() -> Result<[u8; ID_BYTES]> {
    let mut id = sys::ncclUniqueId {
        internal: [0; ID_BYTES],
    };
    // SAFETY: `id` is a valid ncclUniqueId for NCCL to fill.
    let r = unsafe { sys::ncclGetUniqueId(&mut id) };
    check("ncclGetUniqueId", r, None)?;
    Ok(id.internal.map(|c| c as u8))
}

/// Whether `ncclCommSplit` (NCCL 2.18) is there to make sub-communicators.
pub(crate) fn can_split() -> bool {
    library::has_symbol("ncclCommSplit")
}

impl Communicator {
    /// This process's member of the `size`-rank communicator `id` names, as `rank`
    /// (`ncclCommInitRank`, on the current device). Blocks until every rank has joined.
    pub(crate) fn init(size: usize, id: &[u8; ID_BYTES], rank: usize) -> Result<Communicator> {
        let id = sys::ncclUniqueId {
            internal: id.map(|b| b as std::ffi::c_char),
        };
        let (size, rank) = (
            int("ncclCommInitRank", size)?,
            int("ncclCommInitRank", rank)?,
        );
        let mut raw: sys::ncclComm_t = std::ptr::null_mut();
        // SAFETY: `raw` is a valid place for NCCL to write the new communicator's handle;
        // the id is passed by value.
        let r = unsafe { sys::ncclCommInitRank(&mut raw, size, id, rank) };
        check("ncclCommInitRank", r, None)?;
        Ok(Communicator { raw })
    }

    /// The communicator of the ranks that pass `Some(key)` (ordered by key), out of this
    /// one; every rank of this one calls it (`ncclCommSplit`); `None` for `key == None`.
    pub(crate) fn split(&self, key: Option<usize>) -> Result<Option<Communicator>> {
        let (color, key) = match key {
            Some(k) => (0, int("ncclCommSplit", k)?),
            None => (SPLIT_NOCOLOR, 0),
        };
        let mut raw: sys::ncclComm_t = std::ptr::null_mut();
        // SAFETY: `self.raw` is live; `raw` is a valid place for the new handle (left null
        // for a rank without a color); a null config inherits this communicator's.
        let r = unsafe { sys::ncclCommSplit(self.raw, color, key, &mut raw, std::ptr::null_mut()) };
        check("ncclCommSplit", r, Some(self.raw))?;
        Ok((!raw.is_null()).then_some(Communicator { raw }))
    }

    pub(crate) fn raw(&self) -> sys::ncclComm_t {
        self.raw
    }

    /// An error NCCL found while running this communicator's work (a peer that failed, a
    /// network error), as an error; Ok while there is none.
    pub(crate) fn async_error(&self) -> Result<()> {
        let mut e = sys::ncclResult_t::ncclSuccess;
        // SAFETY: `self.raw` is live; `e` is a valid place for the result.
        let r = unsafe { sys::ncclCommGetAsyncError(self.raw, &mut e) };
        check("ncclCommGetAsyncError", r, Some(self.raw))?;
        check("ncclCommGetAsyncError", e, Some(self.raw))
    }

    /// Stops this communicator's work in flight and frees it (`ncclCommAbort`): what a
    /// timed-out collective leaves behind.
    pub(crate) fn abort(self) {
        // SAFETY: `self.raw` is live and consumed here, never used again.
        let _ = unsafe { sys::ncclCommAbort(self.raw) };
    }

    /// Frees this communicator once its work is done (`ncclCommDestroy`).
    pub(crate) fn destroy(self) -> Result<()> {
        // SAFETY: `self.raw` is live and consumed here, never used again.
        let r = unsafe { sys::ncclCommDestroy(self.raw) };
        check("ncclCommDestroy", r, None)
    }
}

/// `n` as NCCL's int, or an error naming `call`.
fn int(call: &str, n: usize) -> Result<c_int> {
    c_int::try_from(n).map_err(|_| Error::value(call, format!("{n} does not fit NCCL's int")))
}
