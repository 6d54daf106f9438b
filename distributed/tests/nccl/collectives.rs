//! Every collective on CUDA tensors of every dtype NCCL has, against a reference each rank
//! computes on the CPU from all ranks' inputs (`common::value`), plus the NCCL backend's own
//! errors (int16, CPU tensors, receive from any rank).

use crate::common::{assert_values, ctx, expect_err, fail, input, reference, value};
use kiln_core::{DType, Device, Result, Tensor};
use kiln_distributed::{self as dist, ReduceOp};
use std::time::{Duration, Instant};

pub const TESTS: &[crate::Test] = &[
    (
        "all_reduce_every_op_and_dtype",
        all_reduce_every_op_and_dtype,
    ),
    ("broadcast_every_dtype", broadcast_every_dtype),
    ("reduce_every_dtype", reduce_every_dtype),
    ("all_gather_every_dtype", all_gather_every_dtype),
    (
        "all_gather_into_tensor_every_dtype",
        all_gather_into_tensor_every_dtype,
    ),
    (
        "reduce_scatter_tensor_every_dtype",
        reduce_scatter_tensor_every_dtype,
    ),
    (
        "all_to_all_single_even_and_uneven",
        all_to_all_single_even_and_uneven,
    ),
    ("send_recv_between_neighbours", send_recv_between_neighbours),
    (
        "barrier_and_async_works_complete",
        barrier_and_async_works_complete,
    ),
    (
        "new_group_reduces_over_members_only",
        new_group_reduces_over_members_only,
    ),
    (
        "results_are_ordered_with_kiln_kernels",
        results_are_ordered_with_kiln_kernels,
    ),
    ("nccl_errors_name_the_problem", nccl_errors_name_the_problem),
];

const SHAPE: [usize; 2] = [3, 4];

/// This rank's GPU, as the engine picks it.
pub fn device() -> Device {
    let local = std::env::var("OMPI_COMM_WORLD_LOCAL_RANK")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(0);
    Device::Cuda(local % kiln_core::cuda::device_count().max(1))
}

/// `t` on this rank's GPU.
pub fn on_gpu(t: &Tensor) -> Result<Tensor> {
    t.to_device(device())
}

/// Zeros on this rank's GPU.
fn gpu_zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
    on_gpu(&Tensor::zeros(shape, dtype)?)
}

/// Rank `rank`'s input, on this rank's GPU.
fn gpu_input(rank: usize, shape: &[usize], dtype: DType) -> Result<Tensor> {
    on_gpu(&input(rank, shape, dtype)?)
}

/// Checks a GPU tensor against `expect`, on the CPU.
fn check(what: &str, t: &Tensor, expect: &[f64]) -> Result<()> {
    if t.device() != device() {
        return Err(fail(format!("{what}: the result is on {}", t.device())));
    }
    assert_values(what, &t.to_device(Device::Cpu)?, expect)
}

/// NCCL's dtypes: every kiln dtype but int16.
fn dtypes() -> impl Iterator<Item = DType> {
    DType::ALL.into_iter().filter(|&d| d != DType::I16)
}

const OPS: [ReduceOp; 5] = [
    ReduceOp::Sum,
    ReduceOp::Avg,
    ReduceOp::Product,
    ReduceOp::Min,
    ReduceOp::Max,
];

fn all_reduce_every_op_and_dtype() -> Result<()> {
    let (rank, size) = ctx();
    let n: usize = SHAPE.iter().product();
    for dtype in dtypes() {
        for (k, op) in OPS.into_iter().enumerate() {
            if op == ReduceOp::Avg && dtype == DType::Bool {
                continue;
            }
            let t = gpu_input(rank, &SHAPE, dtype)?;
            if k % 2 == 0 {
                dist::all_reduce(&t, op)?;
            } else {
                dist::all_reduce_async(&t, op)?.wait()?;
            }
            let expect: Vec<f64> = (0..n).map(|i| reference(op, dtype, i, size)).collect();
            check(&format!("all_reduce {op:?} {dtype}"), &t, &expect)?;
        }
    }
    Ok(())
}

fn broadcast_every_dtype() -> Result<()> {
    let (rank, size) = ctx();
    let src = size - 1;
    for dtype in dtypes() {
        let t = gpu_input(rank, &SHAPE, dtype)?;
        dist::broadcast(&t, src)?;
        let expect: Vec<f64> = (0..12).map(|i| value(src, i, dtype)).collect();
        check(&format!("broadcast {dtype}"), &t, &expect)?;
    }
    Ok(())
}

fn reduce_every_dtype() -> Result<()> {
    let (rank, size) = ctx();
    let dst = 1 % size;
    for dtype in dtypes() {
        for op in OPS {
            if op == ReduceOp::Avg && dtype == DType::Bool {
                continue;
            }
            let t = gpu_input(rank, &SHAPE, dtype)?;
            dist::reduce(&t, dst, op)?;
            let expect: Vec<f64> = (0..12)
                .map(|i| {
                    if rank == dst {
                        reference(op, dtype, i, size)
                    } else {
                        value(rank, i, dtype)
                    }
                })
                .collect();
            check(&format!("reduce {op:?} {dtype} (dst {dst})"), &t, &expect)?;
        }
    }
    Ok(())
}

fn all_gather_every_dtype() -> Result<()> {
    let (rank, size) = ctx();
    for dtype in dtypes() {
        let t = gpu_input(rank, &SHAPE, dtype)?;
        let outs: Vec<Tensor> = (0..size)
            .map(|_| gpu_zeros(&SHAPE, dtype))
            .collect::<Result<_>>()?;
        dist::all_gather(&outs, &t)?;
        for (r, o) in outs.iter().enumerate() {
            let expect: Vec<f64> = (0..12).map(|i| value(r, i, dtype)).collect();
            check(&format!("all_gather {dtype}, rank {r}'s part"), o, &expect)?;
        }
    }
    Ok(())
}

fn all_gather_into_tensor_every_dtype() -> Result<()> {
    let (rank, size) = ctx();
    for dtype in dtypes() {
        let t = gpu_input(rank, &SHAPE, dtype)?;
        let out = gpu_zeros(&[size * 3, 4], dtype)?;
        dist::all_gather_into_tensor(&out, &t)?;
        let expect: Vec<f64> = (0..size)
            .flat_map(|r| (0..12).map(move |i| value(r, i, dtype)))
            .collect();
        check(&format!("all_gather_into_tensor {dtype}"), &out, &expect)?;
    }
    Ok(())
}

fn reduce_scatter_tensor_every_dtype() -> Result<()> {
    let (rank, size) = ctx();
    for dtype in dtypes() {
        for op in OPS {
            if op == ReduceOp::Avg && dtype == DType::Bool {
                continue;
            }
            let t = gpu_input(rank, &[size * 3], dtype)?;
            let out = gpu_zeros(&[3], dtype)?;
            dist::reduce_scatter_tensor(&out, &t, op)?;
            let expect: Vec<f64> = (0..3)
                .map(|i| reference(op, dtype, rank * 3 + i, size))
                .collect();
            check(
                &format!("reduce_scatter_tensor {op:?} {dtype}"),
                &out,
                &expect,
            )?;
        }
    }
    Ok(())
}

fn all_to_all_single_even_and_uneven() -> Result<()> {
    let (rank, size) = ctx();
    for dtype in dtypes() {
        let t = gpu_input(rank, &[size * 2, 3], dtype)?;
        let out = gpu_zeros(&[size * 2, 3], dtype)?;
        dist::all_to_all_single(&out, &t, None, None)?;
        let expect: Vec<f64> = (0..size)
            .flat_map(|src| (0..6).map(move |k| value(src, rank * 6 + k, dtype)))
            .collect();
        check(&format!("all_to_all_single even {dtype}"), &out, &expect)?;
        // Uneven: rank r sends j + 1 rows (of 2) to rank j, so it receives r + 1 from each.
        let in_splits: Vec<usize> = (0..size).map(|j| j + 1).collect();
        let rows: usize = in_splits.iter().sum();
        let t = gpu_input(rank, &[rows, 2], dtype)?;
        let out_splits = vec![rank + 1; size];
        let out = gpu_zeros(&[size * (rank + 1), 2], dtype)?;
        dist::all_to_all_single(&out, &t, Some(&out_splits), Some(&in_splits))?;
        let start_row: usize = (0..rank).map(|j| j + 1).sum();
        let expect: Vec<f64> = (0..size)
            .flat_map(|src| (0..(rank + 1) * 2).map(move |k| value(src, start_row * 2 + k, dtype)))
            .collect();
        check(&format!("all_to_all_single uneven {dtype}"), &out, &expect)?;
    }
    Ok(())
}

/// Pairs (0, 1), (2, 3), …: the even rank sends first, the odd one receives first (NCCL's
/// sends block the stream until the peer receives). Needs 2 ranks; with 1 it checks nothing.
fn send_recv_between_neighbours() -> Result<()> {
    let (rank, size) = ctx();
    let peer = rank ^ 1;
    if peer >= size {
        println!(
            "  (send/recv: rank {rank} has no partner in a world of {size}; nothing to check)"
        );
        return Ok(());
    }
    for dtype in dtypes() {
        let t = gpu_input(rank, &SHAPE, dtype)?;
        let got = gpu_zeros(&SHAPE, dtype)?;
        let from = if rank % 2 == 0 {
            dist::send(&t, peer)?;
            dist::recv(&got, Some(peer))?
        } else {
            let from = dist::recv(&got, Some(peer))?;
            dist::send(&t, peer)?;
            from
        };
        if from != peer {
            return Err(fail(format!("recv reported rank {from}, expected {peer}")));
        }
        let expect: Vec<f64> = (0..12).map(|i| value(peer, i, dtype)).collect();
        check(&format!("send/recv {dtype}"), &got, &expect)?;
    }
    Ok(())
}

fn barrier_and_async_works_complete() -> Result<()> {
    let (rank, size) = ctx();
    let t0 = Instant::now();
    if rank == 0 {
        std::thread::sleep(Duration::from_millis(300));
    }
    dist::barrier()?;
    if t0.elapsed() < Duration::from_millis(250) {
        return Err(fail(format!(
            "left the barrier after {:?}, before rank 0 arrived",
            t0.elapsed()
        )));
    }
    let ts: Vec<Tensor> = (0..5)
        .map(|k| on_gpu(&Tensor::from([(rank + k) as f32])))
        .collect::<Result<_>>()?;
    let works: Vec<_> = ts
        .iter()
        .map(|t| dist::all_reduce_async(t, ReduceOp::Sum))
        .collect::<Result<_>>()?;
    for w in works.into_iter().rev() {
        w.wait()?;
    }
    for (k, t) in ts.iter().enumerate() {
        let expect = (0..size).map(|r| (r + k) as f64).sum::<f64>();
        check("async all_reduce", t, &[expect])?;
    }
    Ok(())
}

fn new_group_reduces_over_members_only() -> Result<()> {
    let (rank, size) = ctx();
    // The odd ranks in reverse order; in a world of 1, rank 0 alone.
    let mut members: Vec<usize> = (0..size).rev().filter(|r| r % 2 == 1).collect();
    if members.is_empty() {
        members.push(0);
    }
    let g = dist::new_group(&members)?;
    match (&g, members.contains(&rank)) {
        (Some(g), true) => {
            let t = on_gpu(&Tensor::from([rank as f64]))?;
            g.all_reduce(&t, ReduceOp::Sum)?;
            check(
                "group all_reduce",
                &t,
                &[members.iter().sum::<usize>() as f64],
            )?;
            let b = on_gpu(&Tensor::from([rank as f64]))?;
            g.broadcast(&b, 0)?;
            check("group broadcast", &b, &[members[0] as f64])?;
        }
        (None, false) => {}
        _ => {
            return Err(fail(format!(
                "rank {rank}: membership of {members:?} reported wrongly"
            )))
        }
    }
    // The world still works after the split.
    let t = on_gpu(&Tensor::from([1.0f32]))?;
    dist::all_reduce(&t, ReduceOp::Sum)?;
    check("world all_reduce after new_group", &t, &[size as f64])
}

/// A collective's input made by a kiln kernel just before it, and its output read by one
/// just after: both on kiln's stream, so NCCL sees the new values and the reader NCCL's.
fn results_are_ordered_with_kiln_kernels() -> Result<()> {
    let (rank, size) = ctx();
    let n = 1 << 20;
    let base = on_gpu(&Tensor::from_vec(vec![rank as f32 + 1.0; n], &[n])?)?;
    let t = base.mul_scalar(2.0)?;
    dist::all_reduce(&t, ReduceOp::Sum)?;
    let after = t.mul_scalar(0.5)?;
    let want = (1..=size).map(|r| r as f64).sum::<f64>();
    let cpu = after.to_device(Device::Cpu)?.to_vec::<f32>()?;
    if cpu.iter().any(|&x| x as f64 != want) {
        return Err(fail(format!(
            "expected every element {want}, got e.g. {}",
            cpu[n - 1]
        )));
    }
    Ok(())
}

fn nccl_errors_name_the_problem() -> Result<()> {
    let (rank, _) = ctx();
    let short = gpu_input(rank, &SHAPE, DType::I16)?;
    expect_err(
        "all_reduce on int16",
        dist::all_reduce(&short, ReduceOp::Sum),
        "not supported for NCCL",
    )?;
    let cpu = input(rank, &SHAPE, DType::F32)?;
    expect_err(
        "all_reduce on a CPU tensor",
        dist::all_reduce(&cpu, ReduceOp::Sum),
        "Tensors must be CUDA and dense",
    )?;
    let got = gpu_zeros(&SHAPE, DType::F32)?;
    expect_err(
        "recv from any rank",
        dist::recv(&got, None).map(|_| ()),
        "recvAnysource",
    )?;
    // The group still works after errors caught before NCCL ran.
    let t = on_gpu(&Tensor::from([1i32]))?;
    dist::all_reduce(&t, ReduceOp::Max)?;
    check("all_reduce after errors", &t, &[1.0])
}
