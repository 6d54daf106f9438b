//! Every collective on every dtype against a reference each rank computes from all ranks'
//! inputs (`common::value`), plus the errors: local checks, mismatches across ranks, and a
//! rank that never arrives.

use crate::common::{assert_values, ctx, expect_err, fail, input, reference, value};
use kiln_core::{DType, Result, Tensor};
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
    ("send_recv_ring_async", send_recv_ring_async),
    (
        "barrier_and_async_works_complete",
        barrier_and_async_works_complete,
    ),
    (
        "new_group_reduces_over_members_only",
        new_group_reduces_over_members_only,
    ),
    (
        "local_checks_give_pytorchs_errors",
        local_checks_give_pytorchs_errors,
    ),
    (
        "mismatched_shapes_fail_on_every_rank",
        mismatched_shapes_fail_on_every_rank,
    ),
    (
        "a_rank_that_never_arrives_times_out",
        a_rank_that_never_arrives_times_out,
    ),
];

const SHAPE: [usize; 2] = [3, 4];

fn all_reduce_every_op_and_dtype() -> Result<()> {
    let (rank, size) = ctx();
    let n: usize = SHAPE.iter().product();
    for dtype in DType::ALL {
        for (k, op) in [
            ReduceOp::Sum,
            ReduceOp::Avg,
            ReduceOp::Product,
            ReduceOp::Min,
            ReduceOp::Max,
        ]
        .into_iter()
        .enumerate()
        {
            let t = input(rank, &SHAPE, dtype)?;
            if op == ReduceOp::Avg && dtype == DType::Bool {
                let e = dist::all_reduce(&t, op).unwrap_err().to_string();
                if !e.contains("Cannot use ReduceOp.AVG with boolean inputs") {
                    return Err(fail(format!("avg on bool: {e}")));
                }
                continue;
            }
            // Half the cases through the async form.
            if k % 2 == 0 {
                dist::all_reduce(&t, op)?;
            } else {
                dist::all_reduce_async(&t, op)?.wait()?;
            }
            let expect: Vec<f64> = (0..n).map(|i| reference(op, dtype, i, size)).collect();
            assert_values(&format!("all_reduce {op:?} {dtype}"), &t, &expect)?;
        }
    }
    Ok(())
}

fn broadcast_every_dtype() -> Result<()> {
    let (rank, size) = ctx();
    let src = size - 1;
    for dtype in DType::ALL {
        let t = input(rank, &SHAPE, dtype)?;
        dist::broadcast(&t, src)?;
        let expect: Vec<f64> = (0..12).map(|i| value(src, i, dtype)).collect();
        assert_values(&format!("broadcast {dtype}"), &t, &expect)?;
    }
    Ok(())
}

fn reduce_every_dtype() -> Result<()> {
    let (rank, size) = ctx();
    let dst = 1 % size;
    for dtype in DType::ALL {
        for op in [ReduceOp::Sum, ReduceOp::Max] {
            let t = input(rank, &SHAPE, dtype)?;
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
            assert_values(&format!("reduce {op:?} {dtype} (dst {dst})"), &t, &expect)?;
        }
    }
    Ok(())
}

fn all_gather_every_dtype() -> Result<()> {
    let (rank, size) = ctx();
    for dtype in DType::ALL {
        let t = input(rank, &SHAPE, dtype)?;
        let outs: Vec<Tensor> = (0..size)
            .map(|_| Tensor::zeros(&SHAPE[..], dtype))
            .collect::<Result<_>>()?;
        dist::all_gather(&outs, &t)?;
        for (r, o) in outs.iter().enumerate() {
            let expect: Vec<f64> = (0..12).map(|i| value(r, i, dtype)).collect();
            assert_values(&format!("all_gather {dtype}, rank {r}'s part"), o, &expect)?;
        }
    }
    Ok(())
}

fn all_gather_into_tensor_every_dtype() -> Result<()> {
    let (rank, size) = ctx();
    for dtype in DType::ALL {
        let t = input(rank, &SHAPE, dtype)?;
        let out = Tensor::zeros(&[size * 3, 4][..], dtype)?;
        dist::all_gather_into_tensor(&out, &t)?;
        let expect: Vec<f64> = (0..size)
            .flat_map(|r| (0..12).map(move |i| value(r, i, dtype)))
            .collect();
        assert_values(&format!("all_gather_into_tensor {dtype}"), &out, &expect)?;
    }
    Ok(())
}

fn reduce_scatter_tensor_every_dtype() -> Result<()> {
    let (rank, size) = ctx();
    for dtype in DType::ALL {
        for op in [ReduceOp::Sum, ReduceOp::Min] {
            let t = input(rank, &[size * 3], dtype)?;
            let out = Tensor::zeros(&[3][..], dtype)?;
            dist::reduce_scatter_tensor(&out, &t, op)?;
            let expect: Vec<f64> = (0..3)
                .map(|i| reference(op, dtype, rank * 3 + i, size))
                .collect();
            assert_values(
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
    for dtype in DType::ALL {
        // Even: 2 rows of 3 per rank pair.
        let t = input(rank, &[size * 2, 3], dtype)?;
        let out = Tensor::zeros(&[size * 2, 3][..], dtype)?;
        dist::all_to_all_single(&out, &t, None, None)?;
        let expect: Vec<f64> = (0..size)
            .flat_map(|src| (0..6).map(move |k| value(src, rank * 6 + k, dtype)))
            .collect();
        assert_values(&format!("all_to_all_single even {dtype}"), &out, &expect)?;
        // Uneven: rank r sends j + 1 rows (of 2) to rank j, so it receives r + 1 from each.
        let in_splits: Vec<usize> = (0..size).map(|j| j + 1).collect();
        let rows: usize = in_splits.iter().sum();
        let t = input(rank, &[rows, 2], dtype)?;
        let out_splits = vec![rank + 1; size];
        let out = Tensor::zeros(&[size * (rank + 1), 2][..], dtype)?;
        dist::all_to_all_single(&out, &t, Some(&out_splits), Some(&in_splits))?;
        // Rank `src`'s block for this rank starts after its blocks for ranks < rank.
        let start_row: usize = (0..rank).map(|j| j + 1).sum();
        let expect: Vec<f64> = (0..size)
            .flat_map(|src| (0..(rank + 1) * 2).map(move |k| value(src, start_row * 2 + k, dtype)))
            .collect();
        assert_values(&format!("all_to_all_single uneven {dtype}"), &out, &expect)?;
    }
    Ok(())
}

fn send_recv_ring_async() -> Result<()> {
    let (rank, size) = ctx();
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    for dtype in DType::ALL {
        let t = input(rank, &SHAPE, dtype)?;
        let got = Tensor::zeros(&SHAPE[..], dtype)?;
        // Both posted before either is waited on: neither blocks the other.
        let (rwork, source) = dist::irecv(&got, None, 7)?;
        let swork = dist::isend(&t, next, 7)?;
        swork.wait()?;
        rwork.wait()?;
        let from = source.load(std::sync::atomic::Ordering::Acquire);
        if from != prev {
            return Err(fail(format!(
                "recv from any rank reported {from}, expected {prev}"
            )));
        }
        let expect: Vec<f64> = (0..12).map(|i| value(prev, i, dtype)).collect();
        assert_values(&format!("ring {dtype}"), &got, &expect)?;
    }
    // The blocking forms, rank 0 to every other rank.
    let t = Tensor::from([rank as i64 * 10]);
    if rank == 0 {
        for dst in 1..size {
            dist::send(&Tensor::from([dst as i64 * 10]), dst)?;
        }
    } else {
        let src = dist::recv(&t, Some(0))?;
        if src != 0 || t.item::<i64>()? != rank as i64 * 10 {
            return Err(fail(format!(
                "recv from 0 gave {} from {src}",
                t.item::<i64>()?
            )));
        }
    }
    Ok(())
}

fn barrier_and_async_works_complete() -> Result<()> {
    let (rank, size) = ctx();
    // Rank 0 arrives late: nobody may leave the barrier before it.
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
    // Several async collectives in flight, waited in reverse order.
    let ts: Vec<Tensor> = (0..5).map(|k| Tensor::from([(rank + k) as f32])).collect();
    let works: Vec<_> = ts
        .iter()
        .map(|t| dist::all_reduce_async(t, ReduceOp::Sum))
        .collect::<Result<_>>()?;
    for w in works.into_iter().rev() {
        w.wait()?;
    }
    for (k, t) in ts.iter().enumerate() {
        let expect = (0..size).map(|r| (r + k) as f64).sum::<f64>();
        assert_values("async all_reduce", t, &[expect])?;
    }
    Ok(())
}

fn new_group_reduces_over_members_only() -> Result<()> {
    let (rank, size) = ctx();
    // The odd ranks, in reverse order (their group ranks follow the list).
    let members: Vec<usize> = (0..size).rev().filter(|r| r % 2 == 1).collect();
    let g = dist::new_group(&members)?;
    match (&g, members.contains(&rank)) {
        (Some(g), true) => {
            if g.rank() != members.iter().position(|&m| m == rank).unwrap()
                || g.size() != members.len()
            {
                return Err(fail(format!("group rank {} size {}", g.rank(), g.size())));
            }
            let t = Tensor::from([rank as f64]);
            g.all_reduce(&t, ReduceOp::Sum)?;
            assert_values(
                "group all_reduce",
                &t,
                &[members.iter().sum::<usize>() as f64],
            )?;
            // Group ranks, not world ranks, name the root.
            let b = Tensor::from([rank as f64]);
            g.broadcast(&b, 0)?;
            assert_values("group broadcast", &b, &[members[0] as f64])?;
        }
        (None, false) => {}
        _ => {
            return Err(fail(format!(
                "rank {rank}: membership of {members:?} reported wrongly"
            )))
        }
    }
    Ok(())
}

fn local_checks_give_pytorchs_errors() -> Result<()> {
    let (_, size) = ctx();
    let t = Tensor::zeros(&[3, 4][..], DType::F32)?.t()?;
    expect_err(
        "non-contiguous",
        dist::all_reduce(&t, ReduceOp::Sum),
        "Tensors must be contiguous",
    )?;
    let x = Tensor::zeros(&[4][..], DType::F32)?;
    expect_err("bad root", dist::broadcast(&x, size), "Invalid source rank")?;
    let out = Tensor::zeros(&[4 * size + 1][..], DType::F32)?;
    expect_err(
        "gather size",
        dist::all_gather_into_tensor(&out, &x),
        "output tensor size must be equal to world_size times input tensor size",
    )?;
    let out = Tensor::zeros(&[4 * size][..], DType::F64)?;
    expect_err(
        "gather dtype",
        dist::all_gather_into_tensor(&out, &x),
        "same type",
    )?;
    expect_err(
        "uneven all_to_all",
        dist::all_to_all_single(
            &Tensor::zeros(&[size + 1][..], DType::F32)?,
            &Tensor::zeros(&[size + 1][..], DType::F32)?,
            None,
            None,
        ),
        "does not divide equally",
    )?;
    expect_err(
        "send to self",
        dist::send(&x, dist::rank()?),
        "should not be the same",
    )?;
    Ok(())
}

fn mismatched_shapes_fail_on_every_rank() -> Result<()> {
    let (rank, size) = ctx();
    let n = if rank == size - 1 { 5 } else { 4 };
    let t = Tensor::zeros(&[n][..], DType::F32)?;
    expect_err(
        "shape mismatch",
        dist::all_reduce(&t, ReduceOp::Sum),
        "Detected mismatch between collectives on ranks",
    )?;
    let t = Tensor::zeros(&[4][..], if rank == 0 { DType::F32 } else { DType::F64 })?;
    if size > 1 {
        expect_err(
            "dtype mismatch",
            dist::all_reduce(&t, ReduceOp::Sum),
            "Tensor dtypes",
        )?;
    }
    // Nothing was sent: the group still works.
    let ok = Tensor::from([1i32]);
    dist::all_reduce(&ok, ReduceOp::Sum)?;
    assert_values("after a mismatch", &ok, &[size as f64])
}

fn a_rank_that_never_arrives_times_out() -> Result<()> {
    let (rank, size) = ctx();
    let all: Vec<usize> = (0..size).collect();
    let g = dist::new_group_with_timeout(&all, Duration::from_secs(2))?
        .expect("every rank is a member");
    let t = Tensor::from([1f32]);
    // The last rank fails before its collective (its work "returns an error") and skips it.
    let skip = || -> Result<()> { Err(fail("this rank gave up before all_reduce")) };
    if rank == size - 1 {
        let _ = skip();
    } else {
        let t0 = Instant::now();
        expect_err(
            "timeout",
            g.all_reduce(&t, ReduceOp::Sum),
            "Watchdog caught collective operation timeout",
        )?;
        if t0.elapsed() > Duration::from_secs(10) {
            return Err(fail(format!("the timeout took {:?}", t0.elapsed())));
        }
        // The group is unusable afterwards, and says so at once.
        expect_err(
            "after timeout",
            g.all_reduce(&t, ReduceOp::Sum),
            "timed out",
        )?;
    }
    // The world group is untouched.
    dist::barrier()
}
