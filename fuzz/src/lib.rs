//! kiln's fuzz harness: every op of `native_functions.yaml` (generated table [`OPS`]) plus the
//! hand-written entry points outside it ([`EXTRA`]), each fed arguments decoded from a byte
//! string by [`Args`]. A call may return `Ok` or `Err`; a panic is a bug.
//!
//! Shared by the stable runner (`src/main.rs`) and the libfuzzer target (`fuzz_targets/ops.rs`).

pub mod args;

pub use args::{Args, Phase};
use kiln_core::{DType, Tensor};

/// One fuzzable entry point.
pub type FuzzFn = fn(&mut Args) -> kiln_core::Result<()>;

/// The stable runner's allocator refuses any single allocation over this (1 GiB), turning a
/// call that would exhaust memory into a reported abort; see the README.
pub const MAX_BYTES: usize = 1 << 30;

#[allow(non_snake_case)] // schema argument names: linalg_solve(A, B)
mod generated {
    use super::{Args, FuzzFn};
    include!(concat!(env!("OUT_DIR"), "/fuzz_ops.rs"));
}
pub use generated::OPS;

/// Every entry point: the YAML ops, then [`EXTRA`].
pub fn entries() -> Vec<(&'static str, FuzzFn)> {
    OPS.iter().chain(EXTRA).copied().collect()
}

/// Entry points that are not in `native_functions.yaml`: constructors, random tensors,
/// element access and autograd.
pub static EXTRA: &[(&str, FuzzFn)] = &[
    ("Tensor::zeros", |a| sized(a, |s, d| Tensor::zeros(s, d))),
    ("Tensor::ones", |a| sized(a, |s, d| Tensor::ones(s, d))),
    ("Tensor::empty", |a| sized(a, |s, d| Tensor::empty(s, d))),
    ("Tensor::rand", |a| sized(a, |s, d| Tensor::rand(s, d))),
    ("Tensor::randn", |a| sized(a, |s, d| Tensor::randn(s, d))),
    ("Tensor::full", full),
    ("Tensor::randint", randint),
    ("Tensor::arange", arange),
    ("Tensor::linspace", linspace),
    ("Tensor::eye", eye),
    ("Tensor::randperm", randperm),
    ("Tensor::from_vec", from_vec),
    ("Tensor::scalar_tensor", scalar_tensor),
    ("Tensor::reshape", reshape),
    ("Tensor::to_dtype", to_dtype),
    ("Tensor::item/to_vec", item),
    ("Tensor::backward", backward),
];

/// The constructors are only called for tensors up to this size: filling a legal 1 GiB
/// tensor element by element takes seconds, which the runner would report as a hang.
const MAX_MADE: usize = 64 << 20;

/// True when `numel` elements of `dtype` (as kiln would count them, without overflow checks)
/// fit in [`MAX_MADE`]. Wrapped counts are let through on purpose: a shape whose element count
/// overflows must be an `Err`, and a small wrapped count is exactly the bug to find.
fn fits(numel: usize, dtype: DType) -> bool {
    numel
        .checked_mul(dtype.size_in_bytes())
        .is_some_and(|b| b <= MAX_MADE)
}

fn wrapped_numel(shape: &[usize]) -> usize {
    shape.iter().fold(1usize, |n, &d| n.wrapping_mul(d))
}

/// Draws a shape and dtype and calls the constructor `f`, unless the tensor would be larger
/// than [`MAX_MADE`]. Draw the constructor's other arguments before calling this.
fn sized(
    a: &mut Args,
    f: impl FnOnce(&[usize], DType) -> kiln_core::Result<Tensor>,
) -> kiln_core::Result<()> {
    let shape = a.sizes("shape");
    let dtype = a.dtype("dtype");
    if !fits(wrapped_numel(&shape), dtype) {
        a.skip();
        return Ok(());
    }
    a.call();
    let t = f(&shape, dtype)?;
    a.finish(&[&t]);
    Ok(())
}

fn full(a: &mut Args) -> kiln_core::Result<()> {
    let value = a.scalar("value");
    sized(a, |shape, dtype| Tensor::full(shape, value, dtype))
}

fn randint(a: &mut Args) -> kiln_core::Result<()> {
    let low = a.int("low");
    let high = a.int("high");
    sized(a, |shape, dtype| Tensor::randint(low, high, shape, dtype))
}

fn arange(a: &mut Args) -> kiln_core::Result<()> {
    let (start, end, step) = (a.scalar("start"), a.scalar("end"), a.scalar("step"));
    let dtype = a.dtype("dtype");
    // kiln's own length formula; NaN and negative lengths are kiln's to reject.
    let st = step.to_f64();
    let n = ((end.to_f64() - start.to_f64()) / st).ceil();
    let too_big = n == f64::INFINITY || (n.is_finite() && n > 0.0 && !fits(n as usize, dtype));
    if st != 0.0 && too_big {
        a.skip();
        return Ok(());
    }
    a.call();
    let t = Tensor::arange(start, end, step, dtype)?;
    a.finish(&[&t]);
    Ok(())
}

fn linspace(a: &mut Args) -> kiln_core::Result<()> {
    let (start, end) = (a.float("start"), a.float("end"));
    let steps = a.size("steps");
    let dtype = a.dtype("dtype");
    // linspace builds an f64 vector first.
    if !fits(steps, DType::F64) {
        a.skip();
        return Ok(());
    }
    a.call();
    let t = Tensor::linspace(start, end, steps, dtype)?;
    a.finish(&[&t]);
    Ok(())
}

fn eye(a: &mut Args) -> kiln_core::Result<()> {
    let n = a.size("n");
    let m = if a.bool("has_m") {
        Some(a.size("m"))
    } else {
        None
    };
    let dtype = a.dtype("dtype");
    if !fits(n.wrapping_mul(m.unwrap_or(n)), dtype) {
        a.skip();
        return Ok(());
    }
    a.call();
    let t = Tensor::eye(n, m, dtype)?;
    a.finish(&[&t]);
    Ok(())
}

fn randperm(a: &mut Args) -> kiln_core::Result<()> {
    let n = a.size("n");
    if !fits(n, DType::I64) {
        a.skip();
        return Ok(());
    }
    a.call();
    let t = Tensor::randperm(n)?;
    a.finish(&[&t]);
    Ok(())
}

fn from_vec(a: &mut Args) -> kiln_core::Result<()> {
    let len = a.below(9);
    let shape = a.sizes("shape");
    a.log.push(format!("data = vec![1f32; {len}]"));
    a.call();
    let t = Tensor::from_vec(vec![1f32; len], &shape)?;
    a.finish(&[&t]);
    Ok(())
}

fn scalar_tensor(a: &mut Args) -> kiln_core::Result<()> {
    let value = a.scalar("value");
    let dtype = a.dtype("dtype");
    a.call();
    let t = Tensor::scalar_tensor(value, dtype)?;
    a.finish(&[&t]);
    Ok(())
}

fn reshape(a: &mut Args) -> kiln_core::Result<()> {
    let t = a.tensor("self");
    let shape = a.int_list("shape");
    a.call();
    let r = t.reshape(&shape)?;
    a.finish(&[&r]);
    Ok(())
}

fn to_dtype(a: &mut Args) -> kiln_core::Result<()> {
    let t = a.tensor("self");
    let d1 = a.dtype("dtype");
    let d2 = a.dtype("then");
    a.call();
    let r = t.to_dtype(d1)?.to_dtype(d2)?;
    a.finish(&[&r]);
    Ok(())
}

fn item(a: &mut Args) -> kiln_core::Result<()> {
    let t = a.tensor("self");
    let which = a.below(4);
    a.log.push(format!(
        "read = {}",
        [
            "item::<f32>",
            "item::<i64>",
            "to_vec::<f64>",
            "to_vec::<bool>"
        ][which]
    ));
    a.call();
    match which {
        0 => t.item::<f32>().map(drop),
        1 => t.item::<i64>().map(drop),
        2 => t.to_vec::<f64>().map(drop),
        _ => t.to_vec::<bool>().map(drop),
    }
}

/// `backward` on results that may be non-scalar, integral, already freed or never recorded.
fn backward(a: &mut Args) -> kiln_core::Result<()> {
    let t = a.tensor("self");
    let u = a.tensor("other");
    let scalar = a.bool("reduce_first");
    let twice = a.bool("backward_twice");
    let retain = a.bool("retain_graph");
    let gradient = if a.bool("explicit_gradient") {
        Some(a.tensor("gradient"))
    } else {
        None
    };
    a.call();
    let y = t.mul(&u)?;
    let y = if scalar { y.sum()? } else { y };
    y.backward_with(gradient.as_ref(), retain, false)?;
    if twice {
        y.backward()?;
    }
    Ok(())
}
