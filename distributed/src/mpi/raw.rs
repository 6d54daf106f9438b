//! The MPI calls kiln makes, each a thin checked wrapper over rsmpi's `ffi`: the return
//! code becomes a kiln error with MPI's own message. Only the communication thread calls
//! these.

use kiln_core::{DType, Error, Result};
use mpi::ffi;
use std::ffi::{c_int, c_void};

pub(crate) type Comm = ffi::MPI_Comm;
pub(crate) type Datatype = ffi::MPI_Datatype;
pub(crate) type MpiOp = ffi::MPI_Op;
pub(crate) type Request = ffi::MPI_Request;

extern "C" {
    /// `MPI_IN_PLACE` of the installed MPI (src/mpi/shim.c).
    fn kiln_mpi_in_place() -> *mut c_void;
}

/// The installed MPI's `MPI_IN_PLACE`.
pub(crate) fn in_place() -> *mut c_void {
    // SAFETY: a C function without arguments returning a constant address.
    unsafe { kiln_mpi_in_place() }
}

/// `Ok` for `MPI_SUCCESS`, else `op`'s error with MPI's description of `code`.
pub(crate) fn check(op: &str, call: &str, code: c_int) -> Result<()> {
    if code == ffi::MPI_SUCCESS as c_int {
        return Ok(());
    }
    let mut text = vec![0u8; ffi::MPI_MAX_ERROR_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: `text` has room for MPI_MAX_ERROR_STRING characters, as the call requires.
    unsafe { ffi::MPI_Error_string(code, text.as_mut_ptr().cast(), &mut len) };
    text.truncate(len.max(0) as usize);
    Err(Error::distributed(
        op,
        format!("{call} failed: {}", String::from_utf8_lossy(&text)),
    ))
}

/// The MPI datatype that carries `dtype`'s elements. f16 and bf16 travel as 16-bit
/// unsigned integers; their reductions are kiln's own ops (`super::half`).
pub(crate) fn datatype(dtype: DType) -> Datatype {
    // SAFETY: reading rsmpi's extern statics, the predefined handles it sets up for C's
    // macros; they are constants once the library is loaded.
    unsafe {
        match dtype {
            DType::Bool => ffi::RSMPI_C_BOOL,
            DType::U8 => ffi::RSMPI_UINT8_T,
            DType::I8 => ffi::RSMPI_INT8_T,
            DType::I16 => ffi::RSMPI_INT16_T,
            DType::I32 => ffi::RSMPI_INT32_T,
            DType::I64 => ffi::RSMPI_INT64_T,
            DType::F16 | DType::BF16 => ffi::RSMPI_UINT16_T,
            DType::F32 => ffi::RSMPI_FLOAT,
            DType::F64 => ffi::RSMPI_DOUBLE,
        }
    }
}

/// MPI's predefined reductions.
pub(crate) fn system_op(name: &str) -> MpiOp {
    // SAFETY: as in `datatype`: predefined constant handles.
    unsafe {
        match name {
            "sum" => ffi::RSMPI_SUM,
            "prod" => ffi::RSMPI_PROD,
            "min" => ffi::RSMPI_MIN,
            "max" => ffi::RSMPI_MAX,
            "lor" => ffi::RSMPI_LOR,
            _ => ffi::RSMPI_LAND,
        }
    }
}

/// A count as MPI's `int`, or `op`'s error for a buffer MPI cannot address in one call.
pub(crate) fn count(op: &str, n: usize) -> Result<c_int> {
    c_int::try_from(n).map_err(|_| {
        Error::value(
            op,
            format!(
                "{n} elements are more than one MPI call can carry (at most {})",
                c_int::MAX
            ),
        )
    })
}

pub(crate) fn comm_world() -> Comm {
    // SAFETY: reading a predefined constant handle, as in `datatype`.
    unsafe { ffi::RSMPI_COMM_WORLD }
}

pub(crate) fn request_null() -> Request {
    // SAFETY: as above.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}

/// A duplicate of `comm`, whose errors are returned rather than aborting the job.
pub(crate) fn dup(comm: Comm) -> Result<Comm> {
    let mut out = std::mem::MaybeUninit::<Comm>::uninit();
    // SAFETY: `comm` is a live communicator; MPI writes the new handle into `out`.
    check("init_process_group", "MPI_Comm_dup", unsafe {
        ffi::MPI_Comm_dup(comm, out.as_mut_ptr())
    })?;
    // SAFETY: initialised by the successful call above.
    let out = unsafe { out.assume_init() };
    errors_return(out)?;
    Ok(out)
}

/// Makes MPI errors on `comm` return codes (MPI's default aborts every process).
fn errors_return(comm: Comm) -> Result<()> {
    // SAFETY: a live communicator and the predefined handler.
    check("init_process_group", "MPI_Comm_set_errhandler", unsafe {
        ffi::MPI_Comm_set_errhandler(comm, ffi::RSMPI_ERRORS_RETURN)
    })
}

/// `MPI_Comm_split`: the members' new communicator (ranked by `key`), `None` elsewhere.
pub(crate) fn split(comm: Comm, member: bool, key: c_int) -> Result<Option<Comm>> {
    let mut out = std::mem::MaybeUninit::<Comm>::uninit();
    let color = if member {
        0
    } else {
        // SAFETY: reading the predefined MPI_UNDEFINED constant.
        unsafe { ffi::RSMPI_UNDEFINED }
    };
    // SAFETY: a live communicator; MPI writes the new handle (or MPI_COMM_NULL) into `out`.
    check("new_group", "MPI_Comm_split", unsafe {
        ffi::MPI_Comm_split(comm, color, key, out.as_mut_ptr())
    })?;
    // SAFETY: initialised by the successful call above.
    let out = unsafe { out.assume_init() };
    if !member {
        return Ok(None);
    }
    errors_return(out)?;
    Ok(Some(out))
}

/// Frees a communicator made by `dup` or `split`.
pub(crate) fn free(mut comm: Comm) {
    // SAFETY: a communicator this module made and nothing uses any more; failure to free
    // at shutdown leaves nothing to recover, so the code is not checked.
    unsafe { ffi::MPI_Comm_free(&mut comm) };
}

/// `(rank, size)` of `comm`.
pub(crate) fn rank_size(comm: Comm) -> Result<(usize, usize)> {
    let (mut rank, mut size) = (0, 0);
    // SAFETY: a live communicator; the outputs are plain ints.
    unsafe {
        check(
            "init_process_group",
            "MPI_Comm_rank",
            ffi::MPI_Comm_rank(comm, &mut rank),
        )?;
        check(
            "init_process_group",
            "MPI_Comm_size",
            ffi::MPI_Comm_size(comm, &mut size),
        )?;
    }
    Ok((rank as usize, size as usize))
}

/// Starts an all-gather of `send` (`n` i64 each) into `recv` (`n * size`): the caller keeps
/// both buffers alive and unmoved until the request completes (or leaks them).
///
/// # Safety
/// `send` and `recv` must stay valid and untouched until the request has completed.
pub(crate) unsafe fn iallgather_i64(
    op: &str,
    send: *const i64,
    n: c_int,
    recv: *mut i64,
    comm: Comm,
) -> Result<Request> {
    let mut req = request_null();
    // SAFETY: the caller keeps the buffers valid until completion; MPI writes `req`.
    check(op, "MPI_Iallgather", unsafe {
        ffi::MPI_Iallgather(
            send.cast(),
            n,
            ffi::RSMPI_INT64_T,
            recv.cast(),
            n,
            ffi::RSMPI_INT64_T,
            comm,
            &mut req,
        )
    })?;
    Ok(req)
}

/// `MPI_Test`: whether `req` has completed (then it is freed), with its status.
pub(crate) fn test(op: &str, req: &mut Request) -> Result<Option<ffi::MPI_Status>> {
    let mut flag: c_int = 0;
    let mut status = std::mem::MaybeUninit::<ffi::MPI_Status>::zeroed();
    // SAFETY: `req` is a request this module started; the status is written by MPI.
    check(op, "MPI_Test", unsafe {
        ffi::MPI_Test(req, &mut flag, status.as_mut_ptr())
    })?;
    // SAFETY: zero-initialised plain integers, filled in by MPI when complete.
    Ok((flag != 0).then(|| unsafe { status.assume_init() }))
}

/// Cancels a pending receive and completes it.
pub(crate) fn cancel(req: &mut Request) {
    // SAFETY: `req` is a pending request this module started; after MPI_Cancel the standard
    // guarantees MPI_Wait returns (the receive is either cancelled or completed). Errors
    // here leave nothing to recover: the caller reports the timeout.
    unsafe {
        ffi::MPI_Cancel(req);
        ffi::MPI_Wait(req, ffi::RSMPI_STATUS_IGNORE);
    }
}

/// Elements the status says were received.
pub(crate) fn received(status: &ffi::MPI_Status, dt: Datatype) -> usize {
    let mut n: c_int = 0;
    // SAFETY: a status MPI filled in for a completed receive.
    unsafe { ffi::MPI_Get_count(status, dt, &mut n) };
    n.max(0) as usize
}

/// The rank a completed receive came from.
pub(crate) fn source(status: &ffi::MPI_Status) -> usize {
    status.MPI_SOURCE.max(0) as usize
}

/// Starts sending `buf` (bytes) to `dst`.
///
/// # Safety
/// `buf` must stay valid and unmoved until the request completes.
pub(crate) unsafe fn isend(
    op: &str,
    buf: &[u8],
    dst: usize,
    tag: c_int,
    comm: Comm,
) -> Result<Request> {
    let mut req = request_null();
    let n = count(op, buf.len())?;
    // SAFETY: the caller keeps `buf` alive and unmoved until completion.
    check(op, "MPI_Isend", unsafe {
        ffi::MPI_Isend(
            buf.as_ptr().cast(),
            n,
            ffi::RSMPI_UINT8_T,
            dst as c_int,
            tag,
            comm,
            &mut req,
        )
    })?;
    Ok(req)
}

/// Starts receiving into `buf` (bytes) from `src` (`None`: any rank).
///
/// # Safety
/// `buf` must stay valid, unmoved and unread until the request completes.
pub(crate) unsafe fn irecv(
    op: &str,
    buf: &mut [u8],
    src: Option<usize>,
    tag: c_int,
    comm: Comm,
) -> Result<Request> {
    let mut req = request_null();
    let n = count(op, buf.len())?;
    // SAFETY: reading the predefined constant.
    let src = src.map_or(unsafe { ffi::RSMPI_ANY_SOURCE }, |s| s as c_int);
    // SAFETY: the caller keeps `buf` alive, unmoved and unread until completion.
    check(op, "MPI_Irecv", unsafe {
        ffi::MPI_Irecv(
            buf.as_mut_ptr().cast(),
            n,
            ffi::RSMPI_UINT8_T,
            src,
            tag,
            comm,
            &mut req,
        )
    })?;
    Ok(req)
}

/// In-place `MPI_Allreduce` of `n` elements of `dt` at `buf`.
pub(crate) fn allreduce_in_place(
    op: &str,
    buf: &mut [u8],
    n: c_int,
    dt: Datatype,
    red: MpiOp,
    comm: Comm,
) -> Result<()> {
    // SAFETY: `buf` holds `n` elements of `dt` (the caller sized it) and is borrowed
    // mutably for the whole blocking call.
    check(op, "MPI_Allreduce", unsafe {
        ffi::MPI_Allreduce(in_place(), buf.as_mut_ptr().cast(), n, dt, red, comm)
    })
}

/// `MPI_Bcast` of `n` elements of `dt` at `buf` from `root`.
pub(crate) fn bcast(
    op: &str,
    buf: &mut [u8],
    n: c_int,
    dt: Datatype,
    root: usize,
    comm: Comm,
) -> Result<()> {
    // SAFETY: as in `allreduce_in_place`.
    check(op, "MPI_Bcast", unsafe {
        ffi::MPI_Bcast(buf.as_mut_ptr().cast(), n, dt, root as c_int, comm)
    })
}

/// `MPI_Reduce` at `root`, in place there; other ranks only send.
#[allow(clippy::too_many_arguments)] // MPI_Reduce's own arguments, plus the op's name
pub(crate) fn reduce(
    op: &str,
    buf: &mut [u8],
    n: c_int,
    dt: Datatype,
    red: MpiOp,
    root: usize,
    is_root: bool,
    comm: Comm,
) -> Result<()> {
    // SAFETY: `buf` holds `n` elements of `dt`; at the root MPI reads and writes it in
    // place, elsewhere it only reads it (the receive buffer is ignored off the root).
    check(op, "MPI_Reduce", unsafe {
        if is_root {
            ffi::MPI_Reduce(
                in_place(),
                buf.as_mut_ptr().cast(),
                n,
                dt,
                red,
                root as c_int,
                comm,
            )
        } else {
            ffi::MPI_Reduce(
                buf.as_ptr().cast(),
                std::ptr::null_mut(),
                n,
                dt,
                red,
                root as c_int,
                comm,
            )
        }
    })
}

/// `MPI_Allgather`: `n` elements from every rank into `recv`, in rank order.
pub(crate) fn allgather(
    op: &str,
    send: &[u8],
    n: c_int,
    recv: &mut [u8],
    dt: Datatype,
    comm: Comm,
) -> Result<()> {
    // SAFETY: `send` holds `n` elements of `dt` and `recv` `n` per rank, both borrowed for
    // the whole blocking call.
    check(op, "MPI_Allgather", unsafe {
        ffi::MPI_Allgather(
            send.as_ptr().cast(),
            n,
            dt,
            recv.as_mut_ptr().cast(),
            n,
            dt,
            comm,
        )
    })
}

/// `MPI_Reduce_scatter_block`: `recv` gets its rank's block of the reduction of `send`.
pub(crate) fn reduce_scatter_block(
    op: &str,
    send: &[u8],
    recv: &mut [u8],
    n: c_int,
    dt: Datatype,
    red: MpiOp,
    comm: Comm,
) -> Result<()> {
    // SAFETY: `send` holds `n` elements per rank, `recv` `n`, both borrowed for the call.
    check(op, "MPI_Reduce_scatter_block", unsafe {
        ffi::MPI_Reduce_scatter_block(
            send.as_ptr().cast(),
            recv.as_mut_ptr().cast(),
            n,
            dt,
            red,
            comm,
        )
    })
}

/// `MPI_Alltoallv` with counts and displacements in elements of `dt`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn alltoallv(
    op: &str,
    send: &[u8],
    scounts: &[c_int],
    sdispls: &[c_int],
    recv: &mut [u8],
    rcounts: &[c_int],
    rdispls: &[c_int],
    dt: Datatype,
    comm: Comm,
) -> Result<()> {
    // SAFETY: the caller derived counts and displacements from the buffers' sizes (checked
    // against each other across ranks first); all are borrowed for the whole call.
    check(op, "MPI_Alltoallv", unsafe {
        ffi::MPI_Alltoallv(
            send.as_ptr().cast(),
            scounts.as_ptr(),
            sdispls.as_ptr(),
            dt,
            recv.as_mut_ptr().cast(),
            rcounts.as_ptr(),
            rdispls.as_ptr(),
            dt,
            comm,
        )
    })
}

/// `MPI_Allgather` of one int per rank (blocking; every rank is known to be in the call).
pub(crate) fn allgather_ints(
    op: &str,
    send: &[c_int],
    comm: Comm,
    size: usize,
) -> Result<Vec<c_int>> {
    let mut recv = vec![0 as c_int; send.len() * size];
    let n = count(op, send.len())?;
    // SAFETY: `send` holds `n` ints and `recv` `n` per rank.
    check(op, "MPI_Allgather", unsafe {
        ffi::MPI_Allgather(
            send.as_ptr().cast(),
            n,
            ffi::RSMPI_INT32_T,
            recv.as_mut_ptr().cast(),
            n,
            ffi::RSMPI_INT32_T,
            comm,
        )
    })?;
    Ok(recv)
}

/// A user-defined commutative reduction.
pub(crate) fn op_create(f: ffi::MPI_User_function) -> Result<MpiOp> {
    let mut out = std::mem::MaybeUninit::<MpiOp>::uninit();
    // SAFETY: `f` is an `extern "C"` function of MPI's user-function signature that reads
    // and writes only the `len` elements MPI passes it.
    check("init_process_group", "MPI_Op_create", unsafe {
        ffi::MPI_Op_create(f, 1, out.as_mut_ptr())
    })?;
    // SAFETY: initialised by the successful call above.
    Ok(unsafe { out.assume_init() })
}

/// Frees an op made by `op_create`.
pub(crate) fn op_free(mut op: MpiOp) {
    // SAFETY: an op this module made and no collective uses any more.
    unsafe { ffi::MPI_Op_free(&mut op) };
}
