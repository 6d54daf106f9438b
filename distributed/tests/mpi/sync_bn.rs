//! `SyncBatchNorm`, `convert_sync_batchnorm` and the differentiable collectives. Each rank
//! holds a shard of one global batch (shards of different sizes, an empty one too) and
//! checks what the synchronised layer computed on its shard against plain `BatchNorm`
//! (nn's fused kernel) run on the whole batch, which every rank can build: outputs,
//! running statistics, input gradients and, summed over the ranks, weight and bias
//! gradients. The collectives' gradients are checked against the analytic ones.

use crate::common::fail;
use kiln_core::{no_grad, Result, Tensor};
use kiln_distributed::{self as dist, functional, ReduceOp, SyncBatchNorm};
use kiln_nn::{BatchNorm2d, BatchNormOptions, Forward, Layer, Module, Sequential};

pub const TESTS: &[crate::Test] = &[
    (
        "sync_bn_matches_batch_norm_on_the_whole_batch",
        sync_bn_matches_batch_norm_on_the_whole_batch,
    ),
    (
        "sync_bn_with_an_empty_shard_matches_the_whole_batch",
        sync_bn_with_an_empty_shard_matches_the_whole_batch,
    ),
    (
        "sync_bn_half_and_float_inputs_match_batch_norm",
        sync_bn_half_and_float_inputs_match_batch_norm,
    ),
    (
        "sync_bn_eval_uses_running_stats_without_syncing",
        sync_bn_eval_uses_running_stats_without_syncing,
    ),
    (
        "sync_bn_bad_input_is_an_error_naming_the_op",
        sync_bn_bad_input_is_an_error_naming_the_op,
    ),
    (
        "sync_bn_on_a_group_of_one_is_plain_batch_norm",
        sync_bn_on_a_group_of_one_is_plain_batch_norm,
    ),
    (
        "convert_sync_batchnorm_keeps_tensors_and_syncs",
        convert_sync_batchnorm_keeps_tensors_and_syncs,
    ),
    (
        "from_batch_norm_keeps_tensors_and_state_dict_keys",
        from_batch_norm_keeps_tensors_and_state_dict_keys,
    ),
    (
        "functional_all_reduce_gradient_is_the_sum_of_upstream_grads",
        functional_all_reduce_gradient_is_the_sum_of_upstream_grads,
    ),
    (
        "functional_all_gather_gradient_is_reduce_scattered",
        functional_all_gather_gradient_is_reduce_scattered,
    ),
];

const C: usize = 3;
const HW: [usize; 2] = [2, 3];
const TOL: f64 = 1e-10;

fn ctx() -> (usize, usize) {
    (dist::rank().unwrap(), dist::world_size().unwrap())
}

fn options() -> BatchNormOptions {
    BatchNormOptions::default()
        .dtype(kiln_core::DType::F64)
        .momentum(Some(0.3))
}

/// Element `g` of the global batch: per-channel offsets and scales that differ, so the
/// statistics are not trivial.
fn x_value(g: usize) -> f64 {
    let per_sample = C * HW[0] * HW[1];
    let c = (g % per_sample) / (HW[0] * HW[1]);
    ((g * 7919) % 101) as f64 / 29.0 * (1.0 + c as f64) + 3.0 * c as f64 - 1.0
}

/// The upstream gradient at element `g` of the global batch.
fn dy_value(g: usize) -> f64 {
    ((g as f64) * 0.37).sin() + 0.25
}

/// Rows `start..start + n` of the global batch, as a tensor `[n, C, H, W]`.
fn rows(f: fn(usize) -> f64, start: usize, n: usize) -> Result<Tensor> {
    let per_sample = C * HW[0] * HW[1];
    let v: Vec<f64> = (start * per_sample..(start + n) * per_sample)
        .map(f)
        .collect();
    Tensor::from_vec(v, &[n, C, HW[0], HW[1]])
}

fn values(t: &Tensor) -> Result<Vec<f64>> {
    t.contiguous()?.to_vec::<f64>()
}

fn assert_close(what: &str, got: &Tensor, expect: &Tensor) -> Result<()> {
    if got.shape() != expect.shape() {
        return Err(fail(format!(
            "{what}: shape {:?}, expected {:?}",
            got.shape(),
            expect.shape()
        )));
    }
    let (g, e) = (values(got)?, values(expect)?);
    for (i, (a, b)) in g.iter().zip(&e).enumerate() {
        if (a - b).abs() > TOL * (1.0 + b.abs()) {
            return Err(fail(format!(
                "{what}: element {i} is {a}, expected {b} (got {g:?}, expected {e:?})"
            )));
        }
    }
    Ok(())
}

/// Non-trivial affine parameters and running statistics, the same on every rank.
fn set_state(m: &impl Module) -> Result<()> {
    let _g = no_grad();
    for (name, t) in m.state_dict() {
        let v: Vec<f64> = (0..C)
            .map(|i| match name.rsplit('.').next() {
                Some("weight") => 0.5 + i as f64,
                Some("bias") => 0.1 * i as f64 - 0.2,
                Some("running_mean") => 0.3 * i as f64,
                Some("running_var") => 1.0 + 0.5 * i as f64,
                _ => f64::NAN,
            })
            .collect();
        if t.is_floating_point() {
            t.copy_(&Tensor::from_vec(v, &[C])?)?;
        }
    }
    Ok(())
}

/// The layer under test (`SyncBatchNorm`, or a model converted by `convert_sync_batchnorm`)
/// and the reference, run `steps` training passes on `shards` (one
/// row count per rank); checks outputs, statistics and gradients after each.
fn check_against_whole_batch(shards: &[usize], sync: &dyn Layer, steps: usize) -> Result<()> {
    let (rank, _) = ctx();
    let total: usize = shards.iter().sum();
    let start: usize = shards[..rank].iter().sum();
    let n = shards[rank];
    let reference = BatchNorm2d::with_options(C, options())?;
    set_state(&reference)?;
    for step in 0..steps {
        // The reference: plain batch norm on the whole batch.
        let x_all = rows(x_value, 0, total)?.requires_grad_(true)?;
        let dy_all = rows(dy_value, 0, total)?;
        let y_all = reference.forward(&x_all)?;
        y_all.mul(&dy_all)?.sum()?.backward()?;

        // This rank's shard through the synchronised layer.
        let x = rows(x_value, start, n)?.requires_grad_(true)?;
        let dy = rows(dy_value, start, n)?;
        let y = sync.forward(&x)?;
        y.mul(&dy)?.sum()?.backward()?;

        let at = |what: &str| format!("step {step}, shards {shards:?}: {what}");
        assert_close(&at("output"), &y, &y_all.narrow(0, start as i64, n as i64)?)?;
        let want_grad = x_all
            .grad()
            .ok_or_else(|| fail("no reference input grad"))?
            .narrow(0, start as i64, n as i64)?;
        match x.grad() {
            Some(g) => assert_close(&at("input grad"), &g, &want_grad)?,
            None if n == 0 => {}
            None => return Err(fail(at("no input grad"))),
        }
        let reference_state = reference.state_dict();
        for (name, t) in sync.state_dict() {
            let want = reference_state
                .get(name.rsplit('.').next().unwrap_or(&name))
                .ok_or_else(|| fail(format!("no reference tensor for {name}")))?;
            if t.is_floating_point() {
                assert_close(&at(&name), &t, want)?;
            } else if t.item::<i64>()? != want.item::<i64>()? {
                return Err(fail(at(&format!("{name} differs"))));
            }
        }
        // Each rank's weight and bias gradients are its share: summed, the whole batch's.
        for (name, p) in sync.named_parameters() {
            let g = p
                .grad()
                .ok_or_else(|| fail(at(&format!("no grad for {name}"))))?
                .contiguous()?;
            let summed = g.clone_tensor()?;
            dist::all_reduce(&summed, ReduceOp::Sum)?;
            let short = name.rsplit('.').next().unwrap_or(&name).to_string();
            let want = reference
                .named_parameters()
                .into_iter()
                .find(|(n, _)| *n == short)
                .and_then(|(_, t)| t.grad())
                .ok_or_else(|| fail(at(&format!("no reference grad for {name}"))))?;
            assert_close(&at(&format!("{name} grad (summed)")), &summed, &want)?;
            p.set_grad(None)?;
        }
        reference.zero_grad();
    }
    Ok(())
}

fn sync_bn_matches_batch_norm_on_the_whole_batch() -> Result<()> {
    let (_, size) = ctx();
    let shards: Vec<usize> = (0..size).map(|r| r + 1).collect();
    let layer = SyncBatchNorm::with_options(C, options(), None)?;
    set_state(&layer)?;
    check_against_whole_batch(&shards, &layer, 2)?;
    // momentum=None: the cumulative average over the passes, on every rank alike.
    let cumulative = SyncBatchNorm::with_options(C, options().momentum(None), None)?;
    set_state(&cumulative)?;
    let reference = BatchNorm2d::with_options(C, options().momentum(None))?;
    set_state(&reference)?;
    let (rank, _) = ctx();
    let start: usize = shards[..rank].iter().sum();
    for _ in 0..3 {
        cumulative.forward(&rows(x_value, start, shards[rank])?)?;
        reference.forward(&rows(x_value, 0, shards.iter().sum())?)?;
    }
    let (s, r) = (cumulative.state_dict(), reference.state_dict());
    for key in ["running_mean", "running_var"] {
        let (got, want) = (s.get(key), r.get(key));
        let (Some(got), Some(want)) = (got, want) else {
            return Err(fail(format!("{key} missing")));
        };
        assert_close(&format!("cumulative {key}"), got, want)?;
    }
    Ok(())
}

fn sync_bn_with_an_empty_shard_matches_the_whole_batch() -> Result<()> {
    let (_, size) = ctx();
    // Rank 0 has nothing; the others 2, 3, ...
    let shards: Vec<usize> = (0..size).map(|r| if r == 0 { 0 } else { r + 1 }).collect();
    let layer = SyncBatchNorm::with_options(C, options(), None)?;
    set_state(&layer)?;
    check_against_whole_batch(&shards, &layer, 2)
}

/// Half inputs are normalised in float32 and come back in their dtype, as the fused kernel
/// does; float32 throughout for f32. Loose tolerances: the reference rounds differently.
fn sync_bn_half_and_float_inputs_match_batch_norm() -> Result<()> {
    let (rank, size) = ctx();
    let shards: Vec<usize> = (0..size).map(|r| r + 1).collect();
    let start: usize = shards[..rank].iter().sum();
    let total: usize = shards.iter().sum();
    for (dtype, tol) in [
        (kiln_core::DType::F32, 1e-5),
        (kiln_core::DType::F16, 2e-2),
        (kiln_core::DType::BF16, 5e-2),
    ] {
        let opts = options().dtype(dtype);
        let layer = SyncBatchNorm::with_options(C, opts, None)?;
        let reference = BatchNorm2d::with_options(C, opts)?;
        set_state(&layer)?;
        set_state(&reference)?;
        let x = rows(x_value, start, shards[rank])?
            .to_dtype(dtype)?
            .requires_grad_(true)?;
        let y = layer.forward(&x)?;
        y.to_dtype(kiln_core::DType::F32)?.sum()?.backward()?;
        if x.grad().map(|g| g.dtype()) != Some(dtype) {
            return Err(fail(format!("{dtype} input: no grad of its dtype")));
        }
        let want = reference
            .forward(&rows(x_value, 0, total)?.to_dtype(dtype)?)?
            .narrow(0, start as i64, shards[rank] as i64)?;
        if y.dtype() != dtype {
            return Err(fail(format!("{dtype} input gave a {} output", y.dtype())));
        }
        let pairs = [
            ("output", y, want),
            (
                "running_var",
                layer.running_var.clone().expect("tracked"),
                reference.running_var.clone().expect("tracked"),
            ),
        ];
        for (what, got, want) in pairs {
            let got = values(&got.to_dtype(kiln_core::DType::F64)?)?;
            let want = values(&want.to_dtype(kiln_core::DType::F64)?)?;
            if got
                .iter()
                .zip(&want)
                .any(|(a, b)| (a - b).abs() > tol * (1.0 + b.abs()))
            {
                return Err(fail(format!("{dtype} {what}: {got:?}, expected {want:?}")));
            }
        }
    }
    Ok(())
}

fn sync_bn_eval_uses_running_stats_without_syncing() -> Result<()> {
    let (rank, size) = ctx();
    let shards: Vec<usize> = (0..size).map(|r| r + 2).collect();
    let start: usize = shards[..rank].iter().sum();
    let total: usize = shards.iter().sum();
    let mut layer = SyncBatchNorm::with_options(C, options(), None)?;
    let mut reference = BatchNorm2d::with_options(C, options())?;
    set_state(&layer)?;
    set_state(&reference)?;
    // One training pass moves the running statistics, then evaluation reads them.
    layer.forward(&rows(x_value, start, shards[rank])?)?;
    reference.forward(&rows(x_value, 0, total)?)?;
    layer.eval();
    reference.eval();
    let before = values(layer.running_mean.as_ref().expect("tracked"))?;
    // Ranks evaluate different numbers of batches: evaluation must not communicate.
    for _ in 0..=rank {
        let x = rows(x_value, start, shards[rank])?.requires_grad_(true)?;
        let y = layer.forward(&x)?;
        let want = reference.forward(&rows(x_value, 0, total)?)?.narrow(
            0,
            start as i64,
            shards[rank] as i64,
        )?;
        assert_close("eval output", &y, &want)?;
    }
    if values(layer.running_mean.as_ref().expect("tracked"))? != before {
        return Err(fail("evaluation changed running_mean"));
    }
    dist::barrier()
}

fn sync_bn_bad_input_is_an_error_naming_the_op() -> Result<()> {
    let (rank, _) = ctx();
    let layer = SyncBatchNorm::with_options(C, options(), None)?;
    let expect_error = |what: &str, r: Result<Tensor>, words: &str| -> Result<()> {
        match r {
            Err(e) if e.to_string().contains("SyncBatchNorm") && e.to_string().contains(words) => {
                Ok(())
            }
            other => Err(fail(format!("{what}: {other:?}"))),
        }
    };
    // Checked on each rank before anything is sent.
    expect_error(
        "1-D input",
        layer.forward(&Tensor::from_vec(vec![1.0f64; C], &[C])?),
        "expected at least 2D input",
    )?;
    expect_error(
        "wrong channels",
        layer.forward(&Tensor::zeros([2, C + 1], kiln_core::DType::F64)?),
        "channels",
    )?;
    // One value per channel over the whole group: every rank learns it from the gather.
    let n = usize::from(rank == 0);
    expect_error(
        "one value per channel",
        layer.forward(&Tensor::zeros([n, C], kiln_core::DType::F64)?),
        "Expected more than 1 value per channel",
    )?;
    let wrong_dtype = SyncBatchNorm::with_options(C, options().dtype(kiln_core::DType::I64), None);
    match wrong_dtype {
        Err(e) if e.to_string().contains("SyncBatchNorm") => Ok(()),
        Err(e) => Err(fail(format!("integer dtype: {e}"))),
        Ok(_) => Err(fail("integer dtype accepted")),
    }
}

fn sync_bn_on_a_group_of_one_is_plain_batch_norm() -> Result<()> {
    let (rank, size) = ctx();
    let mut mine = None;
    for r in 0..size {
        if let Some(g) = dist::new_group(&[r])? {
            mine = Some(g);
        }
    }
    let group = mine.ok_or_else(|| fail("no group of one for this rank"))?;
    let layer = SyncBatchNorm::with_options(C, options(), Some(group))?;
    let reference = BatchNorm2d::with_options(C, options())?;
    set_state(&layer)?;
    set_state(&reference)?;
    let x = rows(x_value, rank, rank + 2)?;
    assert_close("output", &layer.forward(&x)?, &reference.forward(&x)?)?;
    assert_close(
        "running_var",
        layer.running_var.as_ref().expect("tracked"),
        reference.running_var.as_ref().expect("tracked"),
    )
}

fn convert_sync_batchnorm_keeps_tensors_and_syncs() -> Result<()> {
    let (_, size) = ctx();
    let mut model = Sequential::new().add(BatchNorm2d::with_options(C, options())?);
    set_state(&model)?;
    let before = model.state_dict();
    let converted = dist::convert_sync_batchnorm(&mut model, None)?;
    if converted != 1 {
        return Err(fail(format!("converted {converted} layers, expected 1")));
    }
    let after = model.state_dict();
    let keys = |s: &kiln_nn::StateDict| s.keys().map(String::from).collect::<Vec<_>>();
    if keys(&before) != keys(&after) {
        return Err(fail(format!(
            "state_dict keys changed: {:?} -> {:?}",
            keys(&before),
            keys(&after)
        )));
    }
    for (k, t) in before.iter() {
        let now = after.get(k).ok_or_else(|| fail(format!("{k} gone")))?;
        if !now.is_same(t) {
            return Err(fail(format!("{k} is a different tensor after conversion")));
        }
    }
    // Every batch norm in a tree is converted, whatever its dimension.
    let mut two = Sequential::new()
        .add(kiln_nn::BatchNorm1d::new(2)?)
        .add(Sequential::new().add(kiln_nn::BatchNorm3d::new(2)?));
    let converted = dist::convert_sync_batchnorm(&mut two, None)?;
    if converted != 2 {
        return Err(fail(format!("converted {converted} of 2 nested layers")));
    }
    // The converted model's training statistics are the whole group's.
    let shards: Vec<usize> = (0..size).map(|r| 2 * r + 1).collect();
    check_against_whole_batch(&shards, &model, 2)
}

fn from_batch_norm_keeps_tensors_and_state_dict_keys() -> Result<()> {
    let bn = BatchNorm2d::with_options(C, options())?;
    set_state(&bn)?;
    let before = bn.state_dict();
    let layer = SyncBatchNorm::from_batch_norm(bn, None);
    let after = layer.state_dict();
    let keys = |s: &kiln_nn::StateDict| s.keys().map(String::from).collect::<Vec<_>>();
    if keys(&before) != keys(&after) {
        return Err(fail(format!(
            "keys {:?} -> {:?}",
            keys(&before),
            keys(&after)
        )));
    }
    for (k, t) in before.iter() {
        if !after.get(k).is_some_and(|u| u.is_same(t)) {
            return Err(fail(format!("{k} is a different tensor")));
        }
    }
    // A checkpoint of either loads into the other.
    let mut plain = BatchNorm2d::with_options(C, options())?;
    plain.load_state_dict(&after, true)?;
    assert_close(
        "loaded running_var",
        plain.running_var.as_ref().expect("tracked"),
        layer.running_var.as_ref().expect("tracked"),
    )?;
    let mut fresh = SyncBatchNorm::with_options(C, options(), None)?;
    fresh.load_state_dict(&plain.state_dict(), true)?;
    assert_close(
        "loaded weight",
        fresh.weight.as_ref().expect("affine"),
        layer.weight.as_ref().expect("affine"),
    )
}

/// Rank `r`'s value at `i` for the collective tests.
fn rank_value(r: usize, i: usize) -> f64 {
    (r * 5 + i) as f64 * 0.5 - 1.0
}

fn functional_all_reduce_gradient_is_the_sum_of_upstream_grads() -> Result<()> {
    let (rank, size) = ctx();
    const N: usize = 4;
    let upstream = |r: usize, i: usize| (r * 3 + i * 2) as f64 - 4.0;
    for (op, scale) in [(ReduceOp::Sum, 1.0), (ReduceOp::Avg, 1.0 / size as f64)] {
        let x = Tensor::from_vec((0..N).map(|i| rank_value(rank, i)).collect(), &[N])?
            .requires_grad_(true)?;
        let y = functional::all_reduce(&x, op, None)?;
        let want_y: Vec<f64> = (0..N)
            .map(|i| (0..size).map(|r| rank_value(r, i)).sum::<f64>() * scale)
            .collect();
        assert_close(
            &format!("{op:?} forward"),
            &y,
            &Tensor::from_vec(want_y, &[N])?,
        )?;
        // Out of place: the input is untouched.
        let want_x: Vec<f64> = (0..N).map(|i| rank_value(rank, i)).collect();
        assert_close(
            &format!("{op:?} input"),
            &x,
            &Tensor::from_vec(want_x, &[N])?,
        )?;
        let dy = Tensor::from_vec((0..N).map(|i| upstream(rank, i)).collect(), &[N])?;
        y.mul(&dy)?.sum()?.backward()?;
        // d(sum over ranks of dy_r · y) / dx = scale · sum over ranks of dy_r.
        let want: Vec<f64> = (0..N)
            .map(|i| (0..size).map(|r| upstream(r, i)).sum::<f64>() * scale)
            .collect();
        let g = x.grad().ok_or_else(|| fail("no grad"))?;
        assert_close(&format!("{op:?} grad"), &g, &Tensor::from_vec(want, &[N])?)?;
    }
    // Reductions without a gradient refuse inputs that need one, on every rank alike.
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    match functional::all_reduce(&x, ReduceOp::Max, None) {
        Err(e) if e.to_string().contains("all_reduce") => {}
        other => return Err(fail(format!("MAX with grad: {other:?}"))),
    }
    let y = functional::all_reduce(&x.detach(), ReduceOp::Max, None)?;
    assert_close("MAX forward", &y, &x.detach())
}

fn functional_all_gather_gradient_is_reduce_scattered() -> Result<()> {
    let (rank, size) = ctx();
    const N: usize = 3;
    // Rank r's upstream gradient for block s, element i.
    let upstream = |r: usize, s: usize, i: usize| (r * 11 + s * 3 + i) as f64 * 0.25 - 2.0;
    let x = Tensor::from_vec((0..N).map(|i| rank_value(rank, i)).collect(), &[N])?
        .requires_grad_(true)?;
    let y = functional::all_gather(&x, None)?;
    let want_y: Vec<f64> = (0..size)
        .flat_map(|s| (0..N).map(move |i| rank_value(s, i)))
        .collect();
    assert_close("forward", &y, &Tensor::from_vec(want_y, &[size, N])?)?;
    let dy: Vec<f64> = (0..size)
        .flat_map(|s| (0..N).map(move |i| upstream(rank, s, i)))
        .collect();
    y.mul(&Tensor::from_vec(dy, &[size, N])?)?
        .sum()?
        .backward()?;
    // Block `rank` of every rank's upstream gradient, summed.
    let want: Vec<f64> = (0..N)
        .map(|i| (0..size).map(|r| upstream(r, rank, i)).sum())
        .collect();
    let g = x.grad().ok_or_else(|| fail("no grad"))?;
    assert_close("grad", &g, &Tensor::from_vec(want, &[N])?)
}
