//! DistributedDataParallel against references computed in one process without DDP: every
//! rank trains its share of a global batch under DDP and, beside it, the same model on the
//! whole batch alone (the data is a function of the row, so every rank can build all of it).
//! f64 models: the two differ only by the order of float sums (1e-15 relative), so 1e-6 is
//! a bound with room, yet far below any error of logic (a missed or doubled gradient).

use crate::common::fail;
use kiln_core::{no_grad, DType, Device, Result, Tensor};
use kiln_distributed::{self as dist, DdpOptions, DistributedDataParallel};
use kiln_nn::{BatchNorm1d, BatchNormOptions, Forward, Linear, Module};
use kiln_optim::{Adam, AdamOptions, Optimizer, SGDOptions, SGD};
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

/// The tests that run on the CPU only (the MPI binary runs `DEVICE_TESTS` too).
pub const TESTS: &[crate::Test] = &[
    (
        "ddp_construction_makes_every_rank_equal_to_rank_0",
        ddp_construction_makes_every_rank_equal_to_rank_0,
    ),
    (
        "ddp_broadcasts_rank_0_buffers_before_forward",
        ddp_broadcasts_rank_0_buffers_before_forward,
    ),
    (
        "ddp_find_unused_parameters_trains_a_model_with_unused_branches",
        ddp_find_unused_parameters_trains_a_model_with_unused_branches,
    ),
    (
        "ddp_unused_parameter_without_detection_fails_the_next_forward",
        ddp_unused_parameter_without_detection_fails_the_next_forward,
    ),
    (
        "ddp_tied_parameters_are_reduced_once",
        ddp_tied_parameters_are_reduced_once,
    ),
    (
        "ddp_all_reduce_starts_before_backward_ends",
        ddp_all_reduce_starts_before_backward_ends,
    ),
    (
        "ddp_into_inner_stops_reducing",
        ddp_into_inner_stops_reducing,
    ),
    (
        "ddp_bad_input_gives_errors_not_panics",
        ddp_bad_input_gives_errors_not_panics,
    ),
];

/// The tests that also run with the DDP model and its batches on a GPU (tests/nccl.rs: DDP
/// over the MPI backend with CUDA tensors); their references stay on the CPU.
pub const DEVICE_TESTS: &[crate::Test] = &[
    (
        "ddp_sgd_momentum_matches_one_process_on_the_whole_batch",
        ddp_sgd_momentum_matches_one_process_on_the_whole_batch,
    ),
    (
        "ddp_adam_matches_one_process_on_the_whole_batch",
        ddp_adam_matches_one_process_on_the_whole_batch,
    ),
    (
        "ddp_no_sync_micro_batches_then_a_synced_one_equal_the_large_batch",
        ddp_no_sync_micro_batches_then_a_synced_one_equal_the_large_batch,
    ),
    (
        "ddp_gradient_as_bucket_view_matches_one_process_with_grads_in_the_bucket",
        ddp_gradient_as_bucket_view_matches_one_process_with_grads_in_the_bucket,
    ),
];

/// Where `DEVICE_TESTS` put the DDP model and its batches: the CPU unless a test binary sets
/// it.
pub static DEVICE: OnceLock<Device> = OnceLock::new();

fn device() -> Device {
    DEVICE.get().copied().unwrap_or(Device::Cpu)
}

/// `m` moved to `device()`.
fn on_device<M: Module>(mut m: M) -> Result<M> {
    m.to_device(device())?;
    Ok(m)
}

/// `batch` on `device()`.
fn device_batch(step: usize, rows: Range<usize>) -> Result<(Tensor, Tensor)> {
    let (x, y) = batch(step, rows)?;
    Ok((x.to_device(device())?, y.to_device(device())?))
}

/// `t`'s values as f64, from any device.
fn values(t: &Tensor) -> Result<Vec<f64>> {
    t.to_device(Device::Cpu)?
        .to_dtype(DType::F64)?
        .to_vec::<f64>()
}

const SEED: u64 = 1234;
const IN: usize = 8;
const OUT: usize = 4;

fn ctx() -> (usize, usize) {
    (dist::rank().unwrap(), dist::world_size().unwrap())
}

/// Rank `rank`'s rows of a global batch of `global` rows.
fn shard(global: usize, rank: usize, size: usize) -> Result<Range<usize>> {
    if !global.is_multiple_of(size) {
        return Err(fail(format!(
            "the global batch {global} does not split over {size} ranks"
        )));
    }
    let per = global / size;
    Ok(rank * per..(rank + 1) * per)
}

/// Inputs and targets of rows `rows` at training step `step`.
fn batch(step: usize, rows: Range<usize>) -> Result<(Tensor, Tensor)> {
    let n = rows.len();
    let x: Vec<f64> = rows
        .clone()
        .flat_map(|i| {
            (0..IN).map(move |j| (0.1 * step as f64 + 0.37 * i as f64 + 1.3 * j as f64).sin())
        })
        .collect();
    let y: Vec<f64> = rows
        .flat_map(|i| {
            (0..OUT).map(move |k| (0.2 * step as f64 + 0.5 * i as f64 + 0.7 * k as f64).cos())
        })
        .collect();
    Ok((
        Tensor::from_vec(x, &[n, IN])?,
        Tensor::from_vec(y, &[n, OUT])?,
    ))
}

/// Sum of squared errors divided by `denom` (the mean when `denom` is the element count).
fn sse_over(out: &Tensor, y: &Tensor, denom: f64) -> Result<Tensor> {
    let d = out.sub(y)?;
    d.mul(&d)?.sum()?.div_scalar(denom)
}

fn mse(out: &Tensor, y: &Tensor) -> Result<Tensor> {
    sse_over(out, y, out.numel() as f64)
}

fn linear(i: usize, o: usize) -> Result<Linear> {
    Linear::with_options(i, o, true, DType::F64)
}

#[derive(Module)]
#[module(crate = kiln_nn)]
struct Mlp {
    fc1: Linear,
    fc2: Linear,
    fc3: Linear,
}

impl Forward for Mlp {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.fc1.forward(x)?.tanh()?;
        let h = self.fc2.forward(&h)?.tanh()?;
        self.fc3.forward(&h)
    }
}

fn mlp(seed: u64) -> Result<Mlp> {
    kiln_core::manual_seed(seed);
    Ok(Mlp {
        fc1: linear(IN, 16)?,
        fc2: linear(16, 16)?,
        fc3: linear(16, OUT)?,
    })
}

/// Every element of `got` within `1e-6 · |want| + 1e-12` of `want`.
fn assert_close(what: &str, got: &[Tensor], want: &[Tensor]) -> Result<()> {
    if got.len() != want.len() {
        return Err(fail(format!(
            "{what}: {} tensors, expected {}",
            got.len(),
            want.len()
        )));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (values(g)?, values(w)?);
        if g.len() != w.len() {
            return Err(fail(format!(
                "{what}[{i}]: {} elements, expected {}",
                g.len(),
                w.len()
            )));
        }
        for (j, (a, b)) in g.iter().zip(&w).enumerate() {
            // Written so that a NaN fails.
            let close = (a - b).abs() <= 1e-6 * b.abs() + 1e-12;
            if !close {
                return Err(fail(format!("{what}[{i}][{j}]: got {a}, expected {b}")));
            }
        }
    }
    Ok(())
}

/// The tensors' values, concatenated as f64.
fn flat(ts: &[Tensor]) -> Result<Vec<f64>> {
    let mut v = Vec::new();
    for t in ts {
        v.extend(values(t)?);
    }
    Ok(v)
}

/// Every rank's `flat(ts)`, in rank order (all_gather_into_tensor).
fn gather(ts: &[Tensor]) -> Result<Vec<Vec<f64>>> {
    let (_, size) = ctx();
    let mine = flat(ts)?;
    let n = mine.len();
    let all = Tensor::zeros([n * size], DType::F64)?;
    dist::all_gather_into_tensor(&all, &Tensor::from_vec(mine, &[n])?)?;
    let all = all.to_vec::<f64>()?;
    Ok(all.chunks(n.max(1)).map(|c| c.to_vec()).collect())
}

/// Every rank holds bit-identical `ts`.
fn assert_identical_across_ranks(what: &str, ts: &[Tensor]) -> Result<()> {
    let (rank, _) = ctx();
    let all = gather(ts)?;
    let mine = &all[rank];
    for (r, other) in all.iter().enumerate() {
        let same = other.len() == mine.len()
            && other
                .iter()
                .zip(mine)
                .all(|(a, b)| a.to_bits() == b.to_bits());
        if !same {
            return Err(fail(format!("{what}: rank {r} differs from rank {rank}")));
        }
    }
    Ok(())
}

/// One step of the reference: the whole global batch in this process.
fn reference_step<M: Forward, O: Optimizer>(
    reference: &M,
    opt: &mut O,
    step: usize,
    global: usize,
) -> Result<()> {
    let (x, y) = batch(step, 0..global)?;
    mse(&reference.forward(&x)?, &y)?.backward()?;
    opt.step()?;
    opt.zero_grad()
}

/// The DDP model's parameters equal the reference's and are identical across ranks.
fn assert_trained_alike<M: Module>(ddp: &DistributedDataParallel<M>, reference: &M) -> Result<()> {
    assert_close(
        "parameters",
        &ddp.module().parameters(),
        &reference.parameters(),
    )?;
    assert_identical_across_ranks("parameters", &ddp.parameters())
}

/// 20 steps of DDP (2 or 4 ranks, each a share of a batch of 64) against the same model
/// trained on the whole batch in this process.
fn train_against_reference<O: Optimizer>(
    options: DdpOptions,
    make: impl Fn(Vec<Tensor>) -> Result<O>,
) -> Result<()> {
    let (rank, size) = ctx();
    const GLOBAL: usize = 64;
    // Ranks start apart; construction copies rank 0's (seed SEED) everywhere.
    let ddp = DistributedDataParallel::new(on_device(mlp(SEED + rank as u64)?)?, options)?;
    if let Some(p) = ddp.parameters().iter().find(|p| p.device() != device()) {
        return Err(fail(format!(
            "a DDP parameter is on {}, not {}",
            p.device(),
            device()
        )));
    }
    let reference = mlp(SEED)?;
    let mut opt = make(ddp.parameters())?;
    let mut ref_opt = make(reference.parameters())?;
    let rows = shard(GLOBAL, rank, size)?;
    for step in 0..20 {
        let (x, y) = device_batch(step, rows.clone())?;
        mse(&ddp.forward(&x)?, &y)?.backward()?;
        opt.step()?;
        opt.zero_grad()?;
        reference_step(&reference, &mut ref_opt, step, GLOBAL)?;
    }
    assert_trained_alike(&ddp, &reference)
}

fn ddp_sgd_momentum_matches_one_process_on_the_whole_batch() -> Result<()> {
    // Default buckets (one: the model is far below 1 MiB).
    train_against_reference(DdpOptions::default(), |p| {
        SGD::new(
            p,
            SGDOptions {
                lr: 0.05,
                momentum: 0.9,
                ..Default::default()
            },
        )
    })
}

fn ddp_adam_matches_one_process_on_the_whole_batch() -> Result<()> {
    // 1 KiB buckets: several, launched one after another.
    let options = DdpOptions::default().bucket_cap_mb(1.0 / 1024.0);
    train_against_reference(options, |p| {
        Adam::new(
            p,
            AdamOptions {
                lr: 0.01,
                ..Default::default()
            },
        )
    })
}

#[derive(Module)]
#[module(crate = kiln_nn)]
struct BnNet {
    fc: Linear,
    bn: BatchNorm1d,
    head: Linear,
}

impl Forward for BnNet {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.bn.forward(&self.fc.forward(x)?)?.tanh()?;
        self.head.forward(&h)
    }
}

/// A BatchNorm model; its running mean is `fill` (so ranks can start with other buffers).
fn bn_net(seed: u64, fill: f64) -> Result<BnNet> {
    kiln_core::manual_seed(seed);
    let bn = BatchNorm1d::with_options(
        6,
        BatchNormOptions {
            dtype: DType::F64,
            ..Default::default()
        },
    )?;
    if let Some(m) = &bn.running_mean {
        m.fill_(fill)?;
    }
    Ok(BnNet {
        fc: linear(IN, 6)?,
        bn,
        head: linear(6, OUT)?,
    })
}

fn buffers<M: Module>(m: &M) -> Vec<Tensor> {
    m.named_buffers().into_iter().map(|(_, b)| b).collect()
}

fn ddp_construction_makes_every_rank_equal_to_rank_0() -> Result<()> {
    let (rank, _) = ctx();
    let ddp = DistributedDataParallel::new(
        bn_net(SEED + 7 * rank as u64, rank as f64)?,
        DdpOptions::default(),
    )?;
    // Rank 0's model, built here independently.
    let rank0 = bn_net(SEED, 0.0)?;
    let state = ddp.state_dict();
    let want = rank0.state_dict();
    if state.len() != want.len() {
        return Err(fail(format!(
            "{} state entries, expected {}",
            state.len(),
            want.len()
        )));
    }
    for (k, t) in state.iter() {
        let inner = k
            .strip_prefix("module.")
            .ok_or_else(|| fail(format!("state_dict key {k} lacks the `module.` prefix")))?;
        let w = want
            .get(inner)
            .ok_or_else(|| fail(format!("{inner} is not a key of the module's state_dict")))?;
        let (a, b) = (
            flat(std::slice::from_ref(t))?,
            flat(std::slice::from_ref(w))?,
        );
        if a.iter().zip(&b).any(|(x, y)| x.to_bits() != y.to_bits()) || a.len() != b.len() {
            return Err(fail(format!(
                "{k}: {a:?} after construction, rank 0 has {b:?}"
            )));
        }
    }
    let all: Vec<Tensor> = state.iter().map(|(_, t)| t.clone()).collect();
    assert_identical_across_ranks("parameters and buffers", &all)
}

fn ddp_broadcasts_rank_0_buffers_before_forward() -> Result<()> {
    let (rank, size) = ctx();
    for broadcast in [true, false] {
        let mut ddp = DistributedDataParallel::new(
            bn_net(SEED, 0.0)?,
            DdpOptions::default().broadcast_buffers(broadcast),
        )?;
        // A training step on this rank's data: the running statistics now differ by rank.
        let (x, y) = batch(0, shard(16 * size, rank, size)?)?;
        mse(&ddp.forward(&x)?, &y)?.backward()?;
        let local = flat(&buffers(&ddp))?;
        let rank0 = gather(&buffers(&ddp))?.swap_remove(0);
        // In eval mode BatchNorm leaves its statistics alone, so after this forward they
        // are what the broadcast before it left.
        ddp.eval();
        {
            let _g = no_grad();
            ddp.forward(&x)?;
        }
        let now = flat(&buffers(&ddp))?;
        let want = if broadcast { &rank0 } else { &local };
        if now
            .iter()
            .zip(want)
            .any(|(a, b)| a.to_bits() != b.to_bits())
        {
            return Err(fail(format!(
                "broadcast_buffers={broadcast}: buffers {now:?}, expected {want:?}"
            )));
        }
        if !broadcast && rank != 0 && now == rank0 {
            return Err(fail("buffers equal rank 0's without broadcast_buffers"));
        }
    }
    Ok(())
}

fn ddp_no_sync_micro_batches_then_a_synced_one_equal_the_large_batch() -> Result<()> {
    let (rank, size) = ctx();
    const GLOBAL: usize = 96;
    let ddp = DistributedDataParallel::new(
        on_device(mlp(SEED)?)?,
        DdpOptions::default().bucket_cap_mb(1.0 / 1024.0),
    )?;
    let rows = shard(GLOBAL, rank, size)?;
    let per_rank = rows.len();
    let micro = per_rank / 3;
    let part = |k: usize| rows.start + k * micro..rows.start + (k + 1) * micro;
    // Each micro-batch's loss is its share of this rank's mean.
    let denom = (per_rank * OUT) as f64;
    {
        let _no_sync = ddp.no_sync();
        for k in 0..2 {
            let (x, y) = device_batch(0, part(k))?;
            sse_over(&ddp.forward(&x)?, &y, denom)?.backward()?;
            if ddp.buckets_launched() != 0 {
                return Err(fail("a bucket was all-reduced under no_sync"));
            }
        }
    }
    if size > 1 {
        // Local sums of different data: not synchronised yet.
        let grads: Vec<Tensor> = ddp.parameters().iter().filter_map(|p| p.grad()).collect();
        if assert_identical_across_ranks("grads", &grads).is_ok() {
            return Err(fail("gradients were synchronised under no_sync"));
        }
    }
    let (x, y) = device_batch(0, part(2))?;
    sse_over(&ddp.forward(&x)?, &y, denom)?.backward()?;
    let grads: Vec<Tensor> = ddp
        .parameters()
        .iter()
        .map(|p| p.grad().ok_or_else(|| fail("a parameter has no grad")))
        .collect::<Result<_>>()?;
    let reference = mlp(SEED)?;
    let (x, y) = batch(0, 0..GLOBAL)?;
    mse(&reference.forward(&x)?, &y)?.backward()?;
    let want: Vec<Tensor> = reference
        .parameters()
        .iter()
        .filter_map(|p| p.grad())
        .collect();
    assert_close("grads", &grads, &want)?;
    assert_identical_across_ranks("grads", &grads)
}

fn sgd_momentum(params: Vec<Tensor>, lr: f64, momentum: f64) -> Result<SGD> {
    SGD::new(
        params,
        SGDOptions {
            lr,
            momentum,
            ..Default::default()
        },
    )
}

/// `gradient_as_bucket_view`: 20 SGD-momentum steps against one process on the whole batch,
/// every third step in two micro-batches (the first under `no_sync`), `.grad`s set to
/// `None` after even steps and zeroed in place after odd ones. Every `.grad` must be a view
/// of the one bucket, and a `.grad` zeroed in place must stay the same tensor through the
/// next backward (accumulated into, not replaced).
fn ddp_gradient_as_bucket_view_matches_one_process_with_grads_in_the_bucket() -> Result<()> {
    let (rank, size) = ctx();
    const GLOBAL: usize = 64;
    let options = DdpOptions::default().gradient_as_bucket_view(true);
    let ddp = DistributedDataParallel::new(on_device(mlp(SEED + rank as u64)?)?, options)?;
    let reference = mlp(SEED)?;
    let sgd = |p| sgd_momentum(p, 0.05, 0.9);
    let mut opt = sgd(ddp.parameters())?;
    let mut ref_opt = sgd(reference.parameters())?;
    let rows = shard(GLOBAL, rank, size)?;
    let half = rows.len() / 2;
    let denom = (rows.len() * OUT) as f64;
    let mut held: Option<Tensor> = None;
    for step in 0..20 {
        if step % 3 == 1 {
            {
                let _no_sync = ddp.no_sync();
                let (x, y) = device_batch(step, rows.start..rows.start + half)?;
                sse_over(&ddp.forward(&x)?, &y, denom)?.backward()?;
            }
            let (x, y) = device_batch(step, rows.start + half..rows.end)?;
            sse_over(&ddp.forward(&x)?, &y, denom)?.backward()?;
        } else {
            let (x, y) = device_batch(step, rows.clone())?;
            mse(&ddp.forward(&x)?, &y)?.backward()?;
        }
        let grads: Vec<Tensor> = ddp
            .parameters()
            .iter()
            .map(|p| p.grad().ok_or_else(|| fail("a parameter has no grad")))
            .collect::<Result<_>>()?;
        if !grads.iter().all(|g| g.shares_storage_with(&grads[0])) {
            return Err(fail(format!(
                "step {step}: the .grads are not views of one bucket"
            )));
        }
        if let Some(h) = held.take() {
            if !h.is_same(&grads[0]) {
                return Err(fail(format!(
                    "step {step}: a .grad zeroed in place was replaced by backward"
                )));
            }
        }
        opt.step()?;
        if step % 2 == 0 {
            opt.zero_grad()?;
        } else {
            opt.zero_grad_with(false)?;
            held = Some(grads[0].clone());
        }
        reference_step(&reference, &mut ref_opt, step, GLOBAL)?;
    }
    assert_trained_alike(&ddp, &reference)
}

#[derive(Module)]
#[module(crate = kiln_nn)]
struct Branchy {
    trunk: Linear,
    head: Linear,
    /// Used by rank 0 only.
    side: Linear,
    /// Used by no rank.
    dead: Linear,
}

impl Branchy {
    fn new(seed: u64) -> Result<Self> {
        kiln_core::manual_seed(seed);
        Ok(Branchy {
            trunk: linear(IN, 16)?,
            head: linear(16, OUT)?,
            side: linear(16, OUT)?,
            dead: linear(16, OUT)?,
        })
    }

    fn forward_on(&self, x: &Tensor, side: bool) -> Result<Tensor> {
        let h = self.trunk.forward(x)?.tanh()?;
        let out = self.head.forward(&h)?;
        if side {
            out.add(&self.side.forward(&h)?)
        } else {
            Ok(out)
        }
    }
}

fn ddp_find_unused_parameters_trains_a_model_with_unused_branches() -> Result<()> {
    let (rank, size) = ctx();
    const GLOBAL: usize = 32;
    let ddp = DistributedDataParallel::new(
        Branchy::new(SEED + rank as u64)?,
        DdpOptions::default()
            .find_unused_parameters(true)
            .bucket_cap_mb(1.0 / 1024.0),
    )?;
    let reference = Branchy::new(SEED)?;
    let sgd = |p| sgd_momentum(p, 0.1, 0.5);
    let mut opt = sgd(ddp.parameters())?;
    let mut ref_opt = sgd(reference.parameters())?;
    for step in 0..3 {
        let (x, y) = batch(step, shard(GLOBAL, rank, size)?)?;
        let out = ddp.forward_with(|m| m.forward_on(&x, rank == 0))?;
        mse(&out, &y)?.backward()?;
        // The reference: the mean over ranks of each rank's loss, rank 0 through `side`.
        let mut total: Option<Tensor> = None;
        for r in 0..size {
            let (x, y) = batch(step, shard(GLOBAL, r, size)?)?;
            let l = mse(&reference.forward_on(&x, r == 0)?, &y)?.div_scalar(size as f64)?;
            total = Some(match total {
                Some(t) => t.add(&l)?,
                None => l,
            });
        }
        total.expect("at least one rank").backward()?;
        let m = ddp.module();
        if m.dead.weight.grad().is_some() || m.dead.bias.as_ref().and_then(|b| b.grad()).is_some() {
            return Err(fail("a parameter no rank used got a gradient"));
        }
        if m.side.weight.grad().is_none() {
            return Err(fail("`side` (used by rank 0) has no averaged gradient"));
        }
        let grads: Vec<Tensor> = ddp.parameters().iter().filter_map(|p| p.grad()).collect();
        let want: Vec<Tensor> = reference
            .parameters()
            .iter()
            .filter_map(|p| p.grad())
            .collect();
        assert_close("grads", &grads, &want)?;
        opt.step()?;
        opt.zero_grad()?;
        ref_opt.step()?;
        ref_opt.zero_grad()?;
    }
    assert_trained_alike(&ddp, &reference)
}

fn ddp_unused_parameter_without_detection_fails_the_next_forward() -> Result<()> {
    let (rank, size) = ctx();
    let ddp = DistributedDataParallel::new(Branchy::new(SEED)?, DdpOptions::default())?;
    let (x, y) = batch(0, shard(16 * size, rank, size)?)?;
    mse(&ddp.forward_with(|m| m.forward_on(&x, true))?, &y)?.backward()?;
    let err = match ddp.forward_with(|m| m.forward_on(&x, true)) {
        Ok(_) => return Err(fail("the forward after an unfinished reduction succeeded")),
        Err(e) => e.to_string(),
    };
    let expected = "Expected to have finished reduction in the prior iteration before starting a new one. This error indicates that your module has parameters that were not used in producing loss. You can enable unused parameter detection by passing the keyword argument `find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs participate in calculating loss.";
    if !err.contains(expected) || !err.contains("dead.weight, dead.bias") {
        return Err(fail(format!("unexpected error: {err}")));
    }
    Ok(())
}

#[derive(Module)]
#[module(crate = kiln_nn)]
struct Tied {
    a: Linear,
    /// Its weight is `a`'s.
    b: Linear,
    out: Linear,
}

impl Tied {
    fn new(seed: u64) -> Result<Self> {
        kiln_core::manual_seed(seed);
        let a = linear(IN, IN)?;
        let mut b = linear(IN, IN)?;
        b.weight = a.weight.clone();
        Ok(Tied {
            a,
            b,
            out: linear(IN, OUT)?,
        })
    }
}

impl Forward for Tied {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.a.forward(x)?.tanh()?;
        let h = self.b.forward(&h)?.tanh()?;
        self.out.forward(&h)
    }
}

fn ddp_tied_parameters_are_reduced_once() -> Result<()> {
    let (rank, size) = ctx();
    const GLOBAL: usize = 32;
    let ddp = DistributedDataParallel::new(
        Tied::new(SEED + rank as u64)?,
        DdpOptions::default().bucket_cap_mb(1.0 / 1024.0),
    )?;
    let names: Vec<String> = ddp.buckets().into_iter().flatten().collect();
    let expected = ["a.weight", "a.bias", "b.bias", "out.weight", "out.bias"];
    if names.len() != expected.len() || !expected.iter().all(|e| names.iter().any(|n| n == e)) {
        return Err(fail(format!(
            "buckets hold {names:?}, expected {expected:?} once each"
        )));
    }
    let reference = Tied::new(SEED)?;
    let sgd = |p| {
        SGD::new(
            p,
            SGDOptions {
                lr: 0.1,
                ..Default::default()
            },
        )
    };
    let mut opt = sgd(ddp.parameters())?;
    let mut ref_opt = sgd(reference.parameters())?;
    for step in 0..5 {
        let (x, y) = batch(step, shard(GLOBAL, rank, size)?)?;
        mse(&ddp.forward(&x)?, &y)?.backward()?;
        opt.step()?;
        opt.zero_grad()?;
        reference_step(&reference, &mut ref_opt, step, GLOBAL)?;
    }
    let m = ddp.module();
    if !m.a.weight.is_same(&m.b.weight) {
        return Err(fail("the tied weight was untied"));
    }
    assert_close("parameters", &m.parameters(), &reference.parameters())?;
    assert_identical_across_ranks("parameters", &ddp.parameters())
}

fn ddp_all_reduce_starts_before_backward_ends() -> Result<()> {
    let (rank, size) = ctx();
    // 100-byte buckets: every parameter alone, six buckets, fc3's launched first.
    let ddp = Arc::new(DistributedDataParallel::new(
        mlp(SEED)?,
        DdpOptions::default().bucket_cap_mb(100.0 / (1024.0 * 1024.0)),
    )?);
    let buckets = ddp.buckets().len();
    if buckets != 6 {
        return Err(fail(format!(
            "{buckets} buckets, expected one per parameter"
        )));
    }
    let (x, y) = batch(0, shard(16 * size, rank, size)?)?;
    // Seen when backward reaches fc1's output, before fc1's own gradients exist: how many
    // buckets were launched, and whether fc1's weight still waits for its gradient.
    let seen: Arc<Mutex<Option<(usize, bool)>>> = Arc::new(Mutex::new(None));
    let (d, s) = (ddp.clone(), seen.clone());
    let out = ddp.forward_with(|m| {
        let h1 = m.fc1.forward(&x)?;
        let w = m.fc1.weight.clone();
        h1.register_hook(move |_| {
            *s.lock().unwrap() = Some((d.buckets_launched(), w.grad().is_none()));
            None
        })?;
        let h = m.fc2.forward(&h1.tanh()?)?.tanh()?;
        m.fc3.forward(&h)
    })?;
    mse(&out, &y)?.backward()?;
    drop(out);
    let (launched, fc1_pending) = seen
        .lock()
        .unwrap()
        .ok_or_else(|| fail("the hook on fc1's output never ran"))?;
    if !(launched >= 1 && launched < buckets && fc1_pending) {
        return Err(fail(format!(
            "when backward reached fc1: {launched} of {buckets} buckets launched, fc1's gradient pending: {fc1_pending}"
        )));
    }
    if ddp.buckets_launched() != buckets {
        return Err(fail("not every bucket was launched by the end of backward"));
    }
    if rank == 0 {
        println!(
            "  overlap: {launched} of {buckets} all-reduces launched before backward reached fc1"
        );
    }
    Ok(())
}

fn ddp_into_inner_stops_reducing() -> Result<()> {
    let (rank, size) = ctx();
    let ddp = DistributedDataParallel::new(mlp(SEED)?, DdpOptions::default())?;
    let model = ddp.into_inner();
    let (x, y) = batch(0, shard(16 * size, rank, size)?)?;
    mse(&model.forward(&x)?, &y)?.backward()?;
    // Each rank's own gradient, as without DDP.
    let reference = mlp(SEED)?;
    mse(&reference.forward(&x)?, &y)?.backward()?;
    let grads: Vec<Tensor> = model.parameters().iter().filter_map(|p| p.grad()).collect();
    let want: Vec<Tensor> = reference
        .parameters()
        .iter()
        .filter_map(|p| p.grad())
        .collect();
    assert_close("grads", &grads, &want)
}

fn ddp_bad_input_gives_errors_not_panics() -> Result<()> {
    let expect_err = |what: &str, r: Result<()>, needle: &str| -> Result<()> {
        match r {
            Ok(()) => Err(fail(format!("{what}: no error"))),
            Err(e) if e.to_string().contains(needle) => Ok(()),
            Err(e) => Err(fail(format!("{what}: unexpected error {e}"))),
        }
    };
    let frozen = linear(IN, OUT)?;
    frozen.weight.requires_grad_(false)?;
    if let Some(b) = &frozen.bias {
        b.requires_grad_(false)?;
    }
    expect_err(
        "a module without trainable parameters",
        DistributedDataParallel::new(frozen, DdpOptions::default()).map(|_| ()),
        "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient.",
    )?;
    expect_err(
        "bucket_cap_mb 0",
        DistributedDataParallel::new(mlp(SEED)?, DdpOptions::default().bucket_cap_mb(0.0))
            .map(|_| ()),
        "bucket_cap_mb must be a positive number",
    )?;
    // A parameter replaced after wrapping: the next forward refuses to train it.
    let mut ddp = DistributedDataParallel::new(mlp(SEED)?, DdpOptions::default())?;
    ddp.module_mut().fc1.weight = Tensor::zeros([16, IN], DType::F64)?.requires_grad_(true)?;
    let (x, _) = batch(0, 0..4)?;
    expect_err(
        "a replaced parameter",
        ddp.forward(&x).map(|_| ()),
        "parameters were replaced after DistributedDataParallel was built",
    )
}
