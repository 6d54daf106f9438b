//! Regression tests of issue 21 (autograd): reference cycles through in-place ops whose
//! node saves the tensor it rewrites, `logcumsumexp`'s gradient over wide ranges, and the
//! order of ties in `sort` / `topk` / `kthvalue` / `mode` on integers.
//!
//! Reference numbers come from real PyTorch (`tests/data/gen_autograd_regressions.py` wrote
//! `tests/data/autograd_regressions_ref.txt`) or from finite differences (kiln's public
//! `gradcheck`, `gradgradcheck`).

mod common;
use common::assert_err_contains;
use kiln::autograd::{grad, gradcheck, gradgradcheck, GradOptions, GradcheckOptions, Node};
use kiln::{DType, Result, Tensor};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Weak};

// ---------------------------------------------------------------------------------------
// A per-thread count of live heap bytes: every test runs on its own thread, so the count a
// test reads is its own allocations minus its own frees.

struct Counting;

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

fn count(delta: i64) {
    // `try_with`: the thread's locals may be gone while it exits.
    let _ = LIVE.try_with(|c| c.set(c.get() + delta));
}

// SAFETY: every call forwards to the system allocator with the same arguments; the counter is
// a const-initialised thread-local `Cell` that never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64);
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64);
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as i64));
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as i64 - layout.size() as i64);
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live_bytes() -> i64 {
    LIVE.with(Cell::get)
}

/// Heap bytes still live after running `step` `n` times (after a warm-up of the same).
fn growth(n: usize, step: &dyn Fn() -> Result<()>) -> Result<i64> {
    for _ in 0..20 {
        step()?;
    }
    let before = live_bytes();
    for _ in 0..n {
        step()?;
    }
    Ok(live_bytes() - before)
}

// ---------------------------------------------------------------------------------------
// Reference file.

struct Ref {
    shape: Vec<usize>,
    values: Vec<f64>,
}

fn refs() -> HashMap<String, Ref> {
    let text = include_str!("data/autograd_regressions_ref.txt");
    let mut out = HashMap::new();
    for common::RefLine {
        case,
        key,
        shape,
        values,
        ..
    } in common::ref_lines(text)
    {
        let values = values.map(|v| v.parse::<f64>().expect("value")).collect();
        out.insert(format!("{case} {key}"), Ref { shape, values });
    }
    out
}

fn get<'a>(r: &'a HashMap<String, Ref>, case: &str, key: &str) -> &'a Ref {
    r.get(&format!("{case} {key}"))
        .unwrap_or_else(|| panic!("no reference {case} {key}"))
}

fn tensor(r: &Ref, dtype: DType) -> Result<Tensor> {
    Tensor::from_vec(r.values.clone(), &r.shape)?.to_dtype(dtype)
}

/// `got` equals `want` within `rtol`/`atol`, NaN where `want` is NaN, infinities exactly.
#[track_caller]
fn assert_close(what: &str, got: &Tensor, want: &Ref, rtol: f64, atol: f64) -> Result<()> {
    assert_eq!(got.shape(), &want.shape[..], "{what}: shape");
    let g = got.to_dtype(DType::F64)?.to_vec::<f64>()?;
    for (i, (&a, &b)) in g.iter().zip(&want.values).enumerate() {
        let ok = if b.is_nan() {
            a.is_nan()
        } else if b.is_infinite() {
            a == b
        } else {
            (a - b).abs() <= atol + rtol * b.abs()
        };
        assert!(
            ok,
            "{what}: element {i} is {a}, PyTorch gives {b}\n got {g:?}\nwant {:?}",
            want.values
        );
    }
    Ok(())
}

fn leaf(v: &[f64]) -> Result<Tensor> {
    Tensor::from_slice(v, &[v.len()])?.requires_grad_(true)
}

// ---------------------------------------------------------------------------------------
// Item 1: in-place ops on a non-leaf whose node saves the tensor it rewrites.

type InplaceOp = fn(&Tensor) -> Result<Tensor>;

/// In-place ops given their own target as an operand, and ops that save their result.
fn inplace_ops() -> Vec<(&'static str, InplaceOp)> {
    vec![
        ("mul_(y)", |y| y.mul_(y)),
        ("div_(y)", |y| y.div_(y)),
        ("pow_(y)", |y| y.pow_(y)),
        ("atan2_(y)", |y| y.atan2_(y)),
        ("hypot_(y)", |y| y.hypot_(y)),
        ("copysign_(y)", |y| y.copysign_(y)),
        ("fmod_(y)", |y| y.fmod_(y)),
        ("remainder_(y)", |y| y.remainder_(y)),
        ("add_(y)", |y| y.add_(y)),
        ("sub_(y)", |y| y.sub_(y)),
        ("index_add_(y)", |y| {
            let i = Tensor::from_slice(&[0i64, 1, 2, 3], &[4])?;
            y.index_add_(0, &i, y)
        }),
        ("index_put_(y)", |y| {
            let i = Tensor::from_slice(&[3i64, 2, 1, 0], &[4])?;
            y.index_put_(&[Some(&i)], y)
        }),
        ("scatter_(y)", |y| {
            let i = Tensor::from_slice(&[3i64, 2, 1, 0], &[4])?;
            y.scatter_(0, &i, y)
        }),
        ("scatter_add_(y)", |y| {
            let i = Tensor::from_slice(&[3i64, 2, 1, 0], &[4])?;
            y.scatter_add_(0, &i, y)
        }),
        ("exp_", |y| y.exp_()),
        ("sigmoid_", |y| y.sigmoid_()),
        ("tanh_", |y| y.tanh_()),
        ("sqrt_", |y| y.sqrt_()),
        ("rsqrt_", |y| y.rsqrt_()),
        ("reciprocal_", |y| y.reciprocal_()),
        ("expm1_", |y| y.expm1_()),
        ("relu_", |y| y.relu_()),
        ("pow_scalar_(3)", |y| y.pow_scalar_(3)),
    ]
}

/// Weak handles to the nodes of `y = x * 2; <op>(y)`, with `y` rewritten through a view
/// when `through_view`.
fn record(op: InplaceOp, through_view: bool) -> Result<Vec<Weak<dyn Node>>> {
    let x = leaf(&[0.3, 0.7, 1.2, 0.05])?;
    let y = x.mul_scalar(2)?;
    let first = Arc::downgrade(&y.grad_fn().expect("y has a grad_fn"));
    if through_view {
        let v = y.narrow(0, 0, 4)?;
        op(&v)?;
        let mut nodes = vec![first, Arc::downgrade(&y.grad_fn().expect("rewritten base"))];
        nodes.push(Arc::downgrade(&v.grad_fn().expect("rewritten view")));
        Ok(nodes)
    } else {
        op(&y)?;
        Ok(vec![
            first,
            Arc::downgrade(&y.grad_fn().expect("rewritten y")),
        ])
    }
}

#[test]
fn inplace_on_non_leaf_frees_its_nodes_when_dropped() -> Result<()> {
    let mut leaked = Vec::new();
    for (name, op) in inplace_ops() {
        for through_view in [false, true] {
            let nodes = record(op, through_view)?;
            // Everything `record` made is gone: nothing may keep its nodes alive.
            let alive: Vec<String> = nodes
                .iter()
                .filter_map(|w| w.upgrade().map(|n| n.name().to_string()))
                .collect();
            if !alive.is_empty() {
                leaked.push(format!(
                    "{name} (through a view: {through_view}): {alive:?}"
                ));
            }
        }
    }
    assert!(
        leaked.is_empty(),
        "nodes kept alive after the graph was dropped:\n{}",
        leaked.join("\n")
    );
    Ok(())
}

#[test]
fn inplace_self_operand_memory_does_not_grow() -> Result<()> {
    let x = Tensor::from_slice(&[0.5f32; 64], &[64])?.requires_grad_(true)?;
    for (name, op) in [
        ("mul_(y)", (|y: &Tensor| y.mul_(y)) as InplaceOp),
        ("exp_", |y| y.exp_()),
    ] {
        for through_view in [false, true] {
            let grew = growth(500, &|| {
                let y = x.mul_scalar(2)?;
                if through_view {
                    op(&y.narrow(0, 0, 64)?)?;
                } else {
                    op(&y)?;
                }
                Ok(())
            })?;
            // A leaked node with its saved tensor is hundreds of bytes a step.
            assert!(
                grew < 4096,
                "{name} (through a view: {through_view}): {grew} bytes still live after 500 steps"
            );
        }
    }
    Ok(())
}

/// `y = x * 2; y.mul_(y)` reads `y` before overwriting it: like PyTorch, backward must refuse
/// (the saved operand was modified by the very op), and the other self-operand ops alike.
#[test]
fn inplace_self_operand_backward_reports_the_modification() -> Result<()> {
    for (name, op) in inplace_ops().into_iter().take(4) {
        for through_view in [false, true] {
            let x = leaf(&[0.3, 0.7, 1.2, 0.05])?;
            let y = x.mul_scalar(2)?;
            if through_view {
                op(&y.narrow(0, 0, 4)?)?;
            } else {
                op(&y)?;
            }
            let r = y.sum()?.backward();
            assert!(r.is_err(), "{name}: backward succeeded");
            assert_err_contains(r, "modified by an inplace operation");
        }
    }
    Ok(())
}

/// Gradients and double-backward gradients through in-place ops that save their own result,
/// against PyTorch.
#[test]
fn inplace_saving_result_gradients_match_pytorch() -> Result<()> {
    let r = refs();
    let ops: [(&str, InplaceOp); 8] = [
        ("exp_", |y| y.exp_()),
        ("sigmoid_", |y| y.sigmoid_()),
        ("tanh_", |y| y.tanh_()),
        ("sqrt_", |y| y.sqrt_()),
        ("reciprocal_", |y| y.reciprocal_()),
        ("rsqrt_", |y| y.rsqrt_()),
        ("expm1_", |y| y.expm1_()),
        ("relu_", |y| y.relu_()),
    ];
    for (name, op) in ops {
        let case = format!("inplace_out.{name}");
        let x0 = tensor(get(&r, &case, "x"), DType::F64)?;
        let x = x0.detach().requires_grad_(true)?;
        let y = x.mul_scalar(2)?;
        op(&y)?;
        assert_close(&format!("{name} y"), &y, get(&r, &case, "y"), 1e-12, 1e-12)?;
        y.sum()?.backward()?;
        assert_close(
            &format!("{name} grad"),
            &x.grad().expect("grad"),
            get(&r, &case, "grad"),
            1e-10,
            1e-12,
        )?;

        // (relu's first derivative is piecewise constant: kiln records no graph for it.)
        if name == "relu_" {
            continue;
        }
        let x = x0.detach().requires_grad_(true)?;
        let y = x.mul_scalar(2)?;
        op(&y)?;
        let g = grad(
            &[y.sum()?],
            std::slice::from_ref(&x),
            &[],
            GradOptions {
                create_graph: true,
                ..Default::default()
            },
        )?[0]
            .clone()
            .expect("dy/dx");
        g.mul(&g)?.sum()?.backward()?;
        assert_close(
            &format!("{name} gradgrad"),
            &x.grad().expect("grad"),
            get(&r, &case, "gradgrad"),
            1e-10,
            1e-12,
        )?;

        // And by finite differences, through a view as well.
        for through_view in [false, true] {
            let f = |xs: &[Tensor]| -> Result<Vec<Tensor>> {
                let y = xs[0].mul_scalar(2)?;
                if through_view {
                    op(&y.narrow(0, 1, 3)?)?;
                } else {
                    op(&y)?;
                }
                Ok(vec![y])
            };
            let xs = [x0.detach().requires_grad_(true)?];
            gradcheck(&f, &xs, GradcheckOptions::default())?;
            gradgradcheck(&f, &xs, GradcheckOptions::default())?;
        }
    }
    let case = "inplace_out.pow3";
    let x = tensor(get(&r, case, "x"), DType::F64)?.requires_grad_(true)?;
    let y = x.mul_scalar(2)?;
    y.pow_scalar_(3)?;
    y.sum()?.backward()?;
    assert_close(
        "pow_(3) grad",
        &x.grad().expect("grad"),
        get(&r, case, "grad"),
        1e-12,
        1e-12,
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Item 2: logcumsumexp's gradient over wide ranges, -inf entries and zero cotangents.

fn lcse_case(r: &HashMap<String, Ref>, case: &str, dims: &[i64], dtype: DType) -> Result<()> {
    let (rtol, atol) = if dtype == DType::F64 {
        (1e-10, 1e-12)
    } else {
        (1e-4, 1e-5)
    };
    let x = tensor(get(r, case, "x"), dtype)?;
    let g = tensor(get(r, case, "g"), dtype)?;
    for &d in dims {
        let xl = x.detach().requires_grad_(true)?;
        let out = xl.logcumsumexp(d)?;
        assert_close(
            &format!("{case} forward dim {d}"),
            &out,
            get(r, case, &format!("out{d}")),
            rtol,
            atol,
        )?;
        out.backward_with(Some(&g), false, false)?;
        let gx = xl.grad().expect("grad");
        assert_eq!(gx.dtype(), dtype);
        assert_close(
            &format!("{case} grad dim {d}"),
            &gx,
            get(r, case, &format!("grad{d}")),
            rtol,
            atol,
        )?;
    }
    Ok(())
}

#[test]
fn logcumsumexp_grad_wide_range_matches_pytorch() -> Result<()> {
    let r = refs();
    lcse_case(&r, "lcse.wide", &[0, 1, 2], DType::F64)?;
    lcse_case(&r, "lcse.pos", &[0, 1], DType::F64)?;
    lcse_case(&r, "lcse.neg", &[0, 1], DType::F64)?;
    lcse_case(&r, "lcse.f32", &[0, 1], DType::F32)
}

/// With -inf entries: zero gradient where a later partial sum is finite, NaN (PyTorch's
/// answer: `exp(-inf - -inf)`) only where every element up to that one is -inf.
#[test]
fn logcumsumexp_grad_neg_inf_entries_matches_pytorch() -> Result<()> {
    lcse_case(&refs(), "lcse.neginf", &[0, 1, 2], DType::F64)
}

#[test]
fn logcumsumexp_forward_pos_inf_matches_pytorch() -> Result<()> {
    let r = refs();
    for case in ["lcse_inf", "lcse_inf2"] {
        let x = tensor(get(&r, case, "x"), DType::F64)?;
        assert_close(case, &x.logcumsumexp(0)?, get(&r, case, "out0"), 0.0, 0.0)?;
    }
    Ok(())
}

/// Finite differences over inputs spanning -1000..1000 (the [5, 5, 5] case of the issue),
/// along each dim, and double backward.
#[test]
fn logcumsumexp_gradcheck_wide_range() -> Result<()> {
    let r = refs();
    let x = tensor(get(&r, "lcse.wide", "x"), DType::F64)?;
    for d in [0i64, 1, 2, -1] {
        let f = move |xs: &[Tensor]| -> Result<Vec<Tensor>> { Ok(vec![xs[0].logcumsumexp(d)?]) };
        gradcheck(
            &f,
            &[x.detach().requires_grad_(true)?],
            GradcheckOptions::default(),
        )?;
        gradgradcheck(
            &f,
            &[x.detach().requires_grad_(true)?],
            GradcheckOptions::default(),
        )?;
    }
    // A narrower range, where every term of the gradient matters.
    let x = Tensor::from_vec(
        (0..24)
            .map(|i| ((i * 7 % 24) as f64 - 12.0) * 0.4)
            .collect::<Vec<_>>(),
        &[4, 6],
    )?;
    for d in [0i64, 1] {
        let f = move |xs: &[Tensor]| -> Result<Vec<Tensor>> { Ok(vec![xs[0].logcumsumexp(d)?]) };
        gradcheck(
            &f,
            &[x.detach().requires_grad_(true)?],
            GradcheckOptions::default(),
        )?;
        gradgradcheck(
            &f,
            &[x.detach().requires_grad_(true)?],
            GradcheckOptions::default(),
        )?;
    }
    // 0-d input, and an empty one.
    let f = |xs: &[Tensor]| -> Result<Vec<Tensor>> { Ok(vec![xs[0].logcumsumexp(0)?]) };
    gradcheck(
        &f,
        &[Tensor::scalar_tensor(-700.0, DType::F64)?.requires_grad_(true)?],
        GradcheckOptions::default(),
    )?;
    let e = Tensor::zeros([0, 3], DType::F64)?.requires_grad_(true)?;
    let out = e.logcumsumexp(0)?;
    out.sum()?.backward()?;
    assert_eq!(e.grad().expect("grad").shape(), &[0, 3]);
    Ok(())
}

/// Double backward stays finite where the cotangent has exact zeros (the log of its
/// magnitude must not put 0 * inf into the second derivative).
#[test]
fn logcumsumexp_double_backward_with_zero_cotangent_is_finite() -> Result<()> {
    let x = leaf(&[-500.0, 1.0, 300.0, -2.0, 0.5])?;
    let out = x.logcumsumexp(0)?;
    let g = Tensor::from_slice(&[0.0, 1.5, 0.0, -2.0, 0.0], &[5])?.requires_grad_(true)?;
    let gx = grad(
        &[out],
        std::slice::from_ref(&x),
        &[Some(g.clone())],
        GradOptions {
            create_graph: true,
            ..Default::default()
        },
    )?[0]
        .clone()
        .expect("dx");
    let second = grad(
        &[gx.sum()?],
        &[x.clone(), g.clone()],
        &[],
        GradOptions {
            allow_unused: true,
            ..Default::default()
        },
    )?;
    for t in second.into_iter().flatten() {
        let v = t.to_vec::<f64>()?;
        assert!(v.iter().all(|a| a.is_finite()), "second derivative {v:?}");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Item 3: ties on integer inputs. kiln is stable in all four: equal values keep their index
// order (sort / topk, ascending or descending), kthvalue returns the index the stable sort
// puts at position k-1, and mode returns the last occurrence. PyTorch agrees on sort (its CPU
// sort is stable) and mode (last occurrence); its topk and kthvalue order ties as its
// partial sort leaves them, so for those only the values, and that each index points at its
// value, are compared with PyTorch.

#[test]
fn ties_on_integers_are_stable() -> Result<()> {
    let r = refs();
    let x = tensor(get(&r, "ties", "x"), DType::I64)?;
    let rows = x.to_vec::<i64>()?;
    let at = |row: usize, i: i64| rows[row * 8 + i as usize];
    let check_eq = |what: &str, got: &Tensor, key: &str| -> Result<()> {
        let want: Vec<i64> = get(&r, "ties", key)
            .values
            .iter()
            .map(|&v| v as i64)
            .collect();
        assert_eq!(got.to_vec::<i64>()?, want, "{what} vs PyTorch");
        Ok(())
    };
    // sort: PyTorch's numbers exactly, both directions.
    let (v, i) = x.sort_with(1, false)?;
    check_eq("sort values", &v, "sort.values")?;
    check_eq("sort indices", &i, "sorts.indices")?;
    let (v, i) = x.sort_with(1, true)?;
    check_eq("sort descending values", &v, "sortd.values")?;
    check_eq("sort descending indices", &i, "sortsd.indices")?;
    let stable_asc = i64s(&x.sort_with(1, false)?.1)?;
    let stable_desc = i64s(&x.sort_with(1, true)?.1)?;
    // topk: PyTorch's values; indices are the stable order's first k.
    for (largest, key, stable) in [(true, "topk", &stable_desc), (false, "topks", &stable_asc)] {
        let (v, i) = x.topk_with(3, 1, largest, true)?;
        check_eq("topk values", &v, &format!("{key}.values"))?;
        let i = i64s(&i)?;
        for row in 0..2 {
            assert_eq!(
                &i[row * 3..row * 3 + 3],
                &stable[row * 8..row * 8 + 3],
                "topk(largest={largest}) row {row}"
            );
        }
    }
    // kthvalue: PyTorch's value; the index the stable ascending sort puts at k-1.
    for k in [1i64, 2, 4, 6] {
        let (v, i) = x.kthvalue_with(k, 1, false)?;
        check_eq("kthvalue values", &v, &format!("kthvalue{k}.values"))?;
        let i = i64s(&i)?;
        let v = i64s(&v)?;
        for row in 0..2 {
            assert_eq!(at(row, i[row]), v[row]);
            assert_eq!(
                i[row],
                stable_asc[row * 8 + k as usize - 1],
                "kthvalue k={k} row {row}"
            );
        }
    }
    // mode: PyTorch's value and index (the last occurrence).
    let (v, i) = x.mode_with(1, false)?;
    check_eq("mode values", &v, "mode.values")?;
    check_eq("mode indices", &i, "mode.indices")?;
    Ok(())
}

fn i64s(t: &Tensor) -> Result<Vec<i64>> {
    t.to_vec::<i64>()
}

/// `relu`'s backward is PyTorch's `threshold_backward`: the gradient is zeroed where the
/// output is `<= 0` (an infinite gradient there gives 0, not `inf * 0 = NaN`) and passes
/// where the output is NaN. PyTorch 2.15: `relu([-1, 0, 2, nan])` with gradient
/// `[inf, inf, 3, 5]` gives `[0, 0, 3, 5]`.
#[test]
fn relu_backward_masks_like_threshold_backward() -> Result<()> {
    for dtype in [DType::F32, DType::BF16] {
        let x = Tensor::from_vec(vec![-1.0f32, 0.0, 2.0, f32::NAN], &[4])?
            .to_dtype(dtype)?
            .requires_grad_(true)?;
        let g = Tensor::from_vec(vec![f32::INFINITY, f32::INFINITY, 3.0, 5.0], &[4])?
            .to_dtype(dtype)?;
        x.relu()?.backward_with(Some(&g), false, false)?;
        let got = x
            .grad()
            .expect("grad")
            .to_dtype(DType::F32)?
            .to_vec::<f32>()?;
        assert_eq!(got, vec![0.0, 0.0, 3.0, 5.0], "{dtype:?}");
    }
    Ok(())
}
