//! Hand-written behaviour tests of autograd: graph structure, accumulation, retain_graph,
//! higher-order gradients, `autograd::grad`, in-place checks, grad modes, hooks, broadcasting
//! and dtype reduction of gradients, gradcheck, and the backward of reductions, `cat`,
//! `stack` and `index_select`.
//!
//! Expected gradients are worked out by hand or by finite differences (gradcheck); none is
//! obtained by running the same kernel twice.

mod common;
use common::assert_err_contains;
use kiln::autograd::{
    grad, gradcheck, gradgradcheck, is_grad_enabled, GradOptions, GradcheckOptions,
};
use kiln::{DType, Result, Tensor};
use std::sync::Arc;

fn leaf<const N: usize>(v: [f64; N]) -> Tensor {
    Tensor::from(v).requires_grad_(true).unwrap()
}

fn grad_of(t: &Tensor) -> Vec<f64> {
    t.grad()
        .expect("the leaf has a gradient")
        .to_vec::<f64>()
        .unwrap()
}

#[track_caller]
fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "got {got:?}, want {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-9 + 1e-9 * w.abs(),
            "got {got:?}, want {want:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Leaves, grad_fn and next_functions
// ---------------------------------------------------------------------------------------------

#[test]
fn user_created_tensor_is_a_leaf_without_requires_grad() {
    let x = Tensor::from([1f32, 2.]);
    assert_eq!((x.is_leaf(), x.requires_grad()), (true, false));
}

#[test]
fn requires_grad_marks_a_leaf() {
    let x = leaf([1., 2.]);
    assert_eq!(
        (x.is_leaf(), x.requires_grad(), x.grad_fn().is_none()),
        (true, true, true)
    );
}

#[test]
fn op_output_of_requires_grad_input_is_a_non_leaf() -> Result<()> {
    let x = leaf([1., 2.]);
    let y = x.mul_scalar(2.0)?;
    assert_eq!((y.is_leaf(), y.requires_grad()), (false, true));
    Ok(())
}

#[test]
fn op_output_without_requires_grad_inputs_has_no_history() -> Result<()> {
    let y = Tensor::from([1f64, 2.]).mul_scalar(2.0)?;
    assert_eq!((y.requires_grad(), y.grad_fn().is_none()), (false, true));
    Ok(())
}

#[test]
fn requires_grad_on_integer_tensor_errors() {
    assert_err_contains(
        Tensor::from([1i64, 2]).requires_grad_(true),
        "only Tensors of floating point dtype can require gradients",
    );
}

#[test]
fn mul_grad_fn_is_named_mul_backward0() -> Result<()> {
    let (a, b) = (leaf([1., 2.]), leaf([3., 4.]));
    assert_eq!(a.mul(&b)?.grad_fn().unwrap().name(), "MulBackward0");
    Ok(())
}

#[test]
fn mul_next_functions_are_accumulate_grad_nodes() -> Result<()> {
    let (a, b) = (leaf([1., 2.]), leaf([3., 4.]));
    let f = a.mul(&b)?.grad_fn().unwrap();
    let names: Vec<Option<&str>> = f
        .next_functions()
        .iter()
        .map(|n| n.as_ref().map(|(node, _)| node.name()))
        .collect();
    assert_eq!(names, vec![Some("AccumulateGrad"), Some("AccumulateGrad")]);
    Ok(())
}

#[test]
fn next_function_of_input_without_grad_is_none() -> Result<()> {
    let a = leaf([1., 2.]);
    let b = Tensor::from([3f64, 4.]);
    let f = a.mul(&b)?.grad_fn().unwrap();
    let present: Vec<bool> = f.next_functions().iter().map(|n| n.is_some()).collect();
    assert_eq!(present, vec![true, false]);
    Ok(())
}

#[test]
fn accumulate_grad_node_is_shared_by_uses_of_a_leaf() -> Result<()> {
    let a = leaf([1., 2.]);
    let f = a.mul(&a)?.grad_fn().unwrap();
    let nf = f.next_functions();
    let (n0, n1) = (nf[0].as_ref().unwrap(), nf[1].as_ref().unwrap());
    assert!(Arc::ptr_eq(&n0.0, &n1.0));
    Ok(())
}

#[test]
fn accumulate_grad_node_outlives_each_graph_and_is_reused() -> Result<()> {
    let a = leaf([1., 2.]);
    let first = a.mul_scalar(2.0)?.grad_fn().unwrap().next_functions()[0]
        .clone()
        .unwrap()
        .0;
    // The first graph is gone; the next one still sends its gradient to the same node.
    let second = a.mul_scalar(3.0)?.grad_fn().unwrap().next_functions()[0]
        .clone()
        .unwrap()
        .0;
    assert!(Arc::ptr_eq(&first, &second));
    assert!(first.leaf().unwrap().is_same(&a));
    Ok(())
}

#[test]
fn backward_after_the_leaf_is_dropped_discards_its_gradient() -> Result<()> {
    let (a, b) = (leaf([1., 2.]), leaf([3., 4.]));
    let y = a.mul(&b)?.sum()?;
    let acc = y.grad_fn().unwrap().next_functions()[0].clone().unwrap().0;
    drop(a);
    // The graph holds the accumulator, not the leaf: the leaf is freed, and its gradient
    // has nowhere to go, while `b` still gets its own.
    assert!(acc.leaf().is_none());
    y.backward()?;
    assert_eq!(grad_of(&b), vec![1., 2.]);
    Ok(())
}

#[test]
fn chained_op_next_function_is_the_producing_node() -> Result<()> {
    let a = leaf([1., 2.]);
    let y = a.exp()?.sin()?;
    let nf = y.grad_fn().unwrap().next_functions();
    assert_eq!(nf[0].as_ref().unwrap().0.name(), "ExpBackward0");
    Ok(())
}

#[test]
fn sum_over_dims_grad_fn_is_named_sum_backward1() -> Result<()> {
    let x = Tensor::from([[1f64, 2.], [3., 4.]]).requires_grad_(true)?;
    assert_eq!(x.sum_dim(&[0])?.grad_fn().unwrap().name(), "SumBackward1");
    Ok(())
}

#[test]
fn full_sum_grad_fn_is_named_sum_backward0() -> Result<()> {
    let x = leaf([1., 2.]);
    assert_eq!(x.sum()?.grad_fn().unwrap().name(), "SumBackward0");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Accumulation into .grad
// ---------------------------------------------------------------------------------------------

#[test]
fn backward_of_sum_of_squares_gives_two_x() -> Result<()> {
    let x = leaf([1., -2., 3.]);
    x.mul(&x)?.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![2., -4., 6.]);
    Ok(())
}

#[test]
fn backward_twice_with_retain_graph_accumulates_into_grad() -> Result<()> {
    let x = leaf([1., 2., 3.]);
    let y = x.mul(&x)?.sum()?;
    y.backward_with(None, true, false)?;
    y.backward()?;
    assert_eq!(grad_of(&x), vec![4., 8., 12.]);
    Ok(())
}

#[test]
fn backward_of_two_graphs_accumulates_into_grad() -> Result<()> {
    let x = leaf([1., 2.]);
    x.mul_scalar(3.0)?.sum()?.backward()?;
    x.mul_scalar(5.0)?.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![8., 8.]);
    Ok(())
}

#[test]
fn accumulation_into_an_existing_grad_is_in_place_outside_create_graph() -> Result<()> {
    // PyTorch: `g = x.grad; (3x).sum().backward(); g` sees 2 + 3, and `x.grad is g`.
    let x = leaf([1., 2.]);
    x.mul_scalar(2.0)?.sum()?.backward()?;
    let held = x.grad().expect("grad after backward");
    x.mul_scalar(3.0)?.sum()?.backward()?;
    assert_eq!(held.to_vec::<f64>()?, vec![5., 5.]);
    assert!(x.grad().expect("grad").is_same(&held));
    // Under create_graph the sum is a new, differentiable tensor instead.
    x.mul(&x)?.sum()?.backward_with(None, false, true)?;
    assert_eq!(held.to_vec::<f64>()?, vec![5., 5.]);
    assert_eq!(grad_of(&x), vec![7., 9.]);
    assert!(x.grad().expect("grad").requires_grad());
    Ok(())
}

#[test]
fn zero_grad_clears_grad() -> Result<()> {
    let x = leaf([1., 2.]);
    x.sum()?.backward()?;
    x.zero_grad();
    assert!(x.grad().is_none());
    Ok(())
}

#[test]
fn set_grad_none_then_backward_starts_fresh() -> Result<()> {
    let x = leaf([1., 2.]);
    x.mul_scalar(3.0)?.sum()?.backward()?;
    x.set_grad(None).unwrap();
    x.mul_scalar(5.0)?.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![5., 5.]);
    Ok(())
}

#[test]
fn set_grad_replaces_grad() -> Result<()> {
    let x = leaf([1., 2.]);
    x.set_grad(Some(Tensor::from([7f64, 8.]))).unwrap();
    assert_eq!(grad_of(&x), vec![7., 8.]);
    Ok(())
}

#[test]
fn leaf_used_twice_gets_summed_gradient() -> Result<()> {
    // d/dx (x·x + 3x) = 2x + 3.
    let x = leaf([1., 2.]);
    x.mul(&x)?.add(&x.mul_scalar(3.0)?)?.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![5., 7.]);
    Ok(())
}

#[test]
fn grad_of_non_leaf_is_not_retained() -> Result<()> {
    let x = leaf([1., 2.]);
    let y = x.mul_scalar(2.0)?;
    y.sum()?.backward()?;
    assert!(y.grad().is_none());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Implicit and explicit output gradients
// ---------------------------------------------------------------------------------------------

#[test]
fn implicit_backward_on_non_scalar_errors() -> Result<()> {
    let x = leaf([1., 2.]);
    assert_err_contains(
        x.mul_scalar(2.0)?.backward(),
        "grad can be implicitly created only for scalar outputs",
    );
    Ok(())
}

#[test]
fn backward_with_explicit_gradient_scales_vjp() -> Result<()> {
    let x = leaf([1., 2.]);
    let y = x.mul_scalar(2.0)?;
    y.backward_with(Some(&Tensor::from([1f64, 10.])), false, false)?;
    assert_eq!(grad_of(&x), vec![2., 20.]);
    Ok(())
}

#[test]
fn backward_with_wrongly_shaped_gradient_errors() -> Result<()> {
    let x = leaf([1., 2.]);
    let y = x.mul_scalar(2.0)?;
    assert_err_contains(
        y.backward_with(Some(&Tensor::from([1f64, 2., 3.])), false, false),
        "Mismatch in shape",
    );
    Ok(())
}

#[test]
fn backward_on_tensor_without_grad_errors() {
    assert_err_contains(
        Tensor::from(1f64).backward(),
        "does not require grad and does not have a grad_fn",
    );
}

// ---------------------------------------------------------------------------------------------
// retain_graph
// ---------------------------------------------------------------------------------------------

#[test]
fn second_backward_without_retain_graph_errors() -> Result<()> {
    let x = leaf([1., 2.]);
    let y = x.mul(&x)?.sum()?;
    y.backward()?;
    assert_err_contains(
        y.backward(),
        "Trying to backward through the graph a second time",
    );
    Ok(())
}

#[test]
fn second_backward_with_retain_graph_works() -> Result<()> {
    let x = leaf([1., 2.]);
    let y = x.exp()?.sum()?;
    y.backward_with(None, true, false)?;
    x.zero_grad();
    y.backward()?;
    assert_close(&grad_of(&x), &[1f64.exp(), 2f64.exp()]);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Higher-order gradients
// ---------------------------------------------------------------------------------------------

#[test]
fn double_backward_of_cube_is_six_x() -> Result<()> {
    let x = leaf([2., -1.5]);
    let y = x.mul(&x)?.mul(&x)?.sum()?;
    let opts = GradOptions {
        create_graph: true,
        ..Default::default()
    };
    let dy = grad(&[y], std::slice::from_ref(&x), &[], opts)?[0]
        .clone()
        .unwrap();
    let d2y = grad(&[dy.sum()?], &[x], &[], GradOptions::default())?[0]
        .clone()
        .unwrap();
    assert_close(&d2y.to_vec::<f64>()?, &[12., -9.]);
    Ok(())
}

#[test]
fn first_grad_with_create_graph_has_history() -> Result<()> {
    let x = leaf([2.]);
    let y = x.mul(&x)?.sum()?;
    let opts = GradOptions {
        create_graph: true,
        ..Default::default()
    };
    let dy = grad(&[y], &[x], &[], opts)?[0].clone().unwrap();
    assert!(dy.requires_grad());
    Ok(())
}

#[test]
fn backward_with_create_graph_gives_differentiable_grad() -> Result<()> {
    // x.grad = 3x² with history; its backward gives 6x.
    let x = leaf([2.]);
    x.mul(&x)?.mul(&x)?.sum()?.backward_with(None, true, true)?;
    let g = x.grad().unwrap();
    let d2 = grad(&[g.sum()?], &[x], &[], GradOptions::default())?[0]
        .clone()
        .unwrap();
    assert_close(&d2.to_vec::<f64>()?, &[12.]);
    Ok(())
}

#[test]
fn gradgradcheck_passes_for_tanh_of_product() -> Result<()> {
    let x = Tensor::from([0.3f64, -0.7, 1.1]).requires_grad_(true)?;
    let y = Tensor::from([0.5f64, 0.2, -0.9]).requires_grad_(true)?;
    gradgradcheck(
        &|t: &[Tensor]| Ok(vec![t[0].mul(&t[1])?.tanh()?.sum()?]),
        &[x, y],
        GradcheckOptions::default(),
    )
}

#[test]
fn gradcheck_passes_for_composite_function() -> Result<()> {
    let x = Tensor::from([[0.3f64, -0.7], [1.1, 0.4]]).requires_grad_(true)?;
    let w = Tensor::from([[0.5f64, 0.2], [-0.9, 1.3]]).requires_grad_(true)?;
    gradcheck(
        &|t: &[Tensor]| Ok(vec![t[0].matmul(&t[1])?.sigmoid()?.mul(&t[0])?]),
        &[x, w],
        GradcheckOptions::default(),
    )
}

// ---------------------------------------------------------------------------------------------
// autograd::grad
// ---------------------------------------------------------------------------------------------

#[test]
fn grad_with_unused_input_errors_without_allow_unused() -> Result<()> {
    let (x, z) = (leaf([1., 2.]), leaf([3.]));
    let y = x.mul(&x)?.sum()?;
    assert_err_contains(
        grad(&[y], &[x, z], &[], GradOptions::default()),
        "appears to not have been used in the graph",
    );
    Ok(())
}

#[test]
fn grad_with_allow_unused_gives_none_for_unused_input() -> Result<()> {
    let (x, z) = (leaf([1., 2.]), leaf([3.]));
    let y = x.mul(&x)?.sum()?;
    let opts = GradOptions {
        allow_unused: true,
        ..Default::default()
    };
    let g = grad(&[y], &[x, z], &[], opts)?;
    assert_eq!(
        (
            g[0].as_ref().map(|t| t.to_vec::<f64>().unwrap()),
            g[1].is_none()
        ),
        (Some(vec![2., 4.]), true)
    );
    Ok(())
}

#[test]
fn grad_does_not_touch_dot_grad() -> Result<()> {
    let x = leaf([1., 2.]);
    let y = x.mul(&x)?.sum()?;
    let _ = grad(&[y], std::slice::from_ref(&x), &[], GradOptions::default())?;
    assert!(x.grad().is_none());
    Ok(())
}

#[test]
fn grad_with_respect_to_intermediate_tensor() -> Result<()> {
    // y = h², h = 3x: dy/dh = 2h = 6x.
    let x = leaf([1., 2.]);
    let h = x.mul_scalar(3.0)?;
    let y = h.mul(&h)?.sum()?;
    let g = grad(&[y], &[h], &[], GradOptions::default())?[0]
        .clone()
        .unwrap();
    assert_eq!(g.to_vec::<f64>()?, vec![6., 12.]);
    Ok(())
}

#[test]
fn grad_with_respect_to_input_without_grad_errors() {
    let x = Tensor::from([1f64]);
    let y = leaf([1.]).sum().unwrap();
    assert_err_contains(
        grad(&[y], &[x], &[], GradOptions::default()),
        "does not require grad",
    );
}

// ---------------------------------------------------------------------------------------------
// In-place modification checks
// ---------------------------------------------------------------------------------------------

#[test]
fn inplace_on_saved_tensor_errors_at_backward() -> Result<()> {
    let w = leaf([1., 2., 3.]);
    let a = Tensor::from([4f64, 5., 6.]);
    let y = w.mul(&a)?; // saves `a` for w's gradient
    a.add_scalar_(1)?;
    let msg = y.sum()?.backward().unwrap_err().to_string();
    assert!(
        msg.contains("modified by an inplace operation")
            && msg.contains("is at version 1; expected version 0"),
        "{msg}"
    );
    Ok(())
}

#[test]
fn inplace_on_saved_output_errors_at_backward() -> Result<()> {
    // exp saves its result; sin_ on that result changes what exp's backward would read.
    let x = leaf([0.5]);
    let e = x.exp()?;
    let out = e.mul_scalar(2.0)?;
    e.sin_()?;
    assert_err_contains(out.sum()?.backward(), "modified by an inplace operation");
    Ok(())
}

#[test]
fn inplace_on_leaf_requiring_grad_errors() {
    let x = leaf([1., 2.]);
    assert_err_contains(
        x.add_scalar_(1),
        "a leaf Variable that requires grad is being used in an in-place operation.",
    );
}

#[test]
fn inplace_on_leaf_requiring_grad_is_allowed_under_no_grad() -> Result<()> {
    let x = leaf([1., 2.]);
    {
        let _g = kiln::no_grad();
        x.add_scalar_(1)?;
    }
    assert_eq!(x.to_vec::<f64>()?, vec![2., 3.]);
    Ok(())
}

#[test]
fn inplace_under_no_grad_keeps_leaf_a_leaf() -> Result<()> {
    let x = leaf([1., 2.]);
    {
        let _g = kiln::no_grad();
        x.mul_scalar_(2)?;
    }
    assert_eq!((x.is_leaf(), x.requires_grad()), (true, true));
    Ok(())
}

#[test]
fn inplace_mul_on_non_leaf_rewrites_history() -> Result<()> {
    // y = 3·(2x): dy/dx = 6.
    let x = leaf([1., 2.]);
    let y = x.mul_scalar(2.0)?;
    y.mul_scalar_(3)?;
    y.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![6., 6.]);
    Ok(())
}

#[test]
fn inplace_on_non_leaf_updates_grad_fn() -> Result<()> {
    let x = leaf([1., 2.]);
    let y = x.mul_scalar(2.0)?;
    y.exp_()?;
    assert_eq!(y.grad_fn().unwrap().name(), "ExpBackward0");
    Ok(())
}

#[test]
fn inplace_exp_on_non_leaf_saves_result_after_modification() -> Result<()> {
    // y = exp(2x): dy/dx = 2·exp(2x).
    let x = leaf([0.5, -1.0]);
    let y = x.mul_scalar(2.0)?;
    y.exp_()?;
    y.sum()?.backward()?;
    assert_close(&grad_of(&x), &[2.0 * 1f64.exp(), 2.0 * (-2f64).exp()]);
    Ok(())
}

#[test]
fn inplace_add_of_grad_tensor_into_plain_tensor_records_history() -> Result<()> {
    // a (no grad) += x (grad): a becomes a non-leaf whose gradient flows to x.
    let x = leaf([1., 2.]);
    let a = Tensor::from([10f64, 20.]);
    a.add_(&x)?;
    a.mul(&a)?.sum()?.backward()?;
    // d/dx (a0 + x)² = 2(a0 + x).
    assert_eq!(grad_of(&x), vec![22., 44.]);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Grad modes, detach
// ---------------------------------------------------------------------------------------------

#[test]
fn no_grad_and_enable_grad_nest_and_restore() {
    let mut seen = vec![is_grad_enabled()];
    {
        let _a = kiln::no_grad();
        seen.push(is_grad_enabled());
        {
            let _b = kiln::enable_grad();
            seen.push(is_grad_enabled());
            {
                let _c = kiln::no_grad();
                seen.push(is_grad_enabled());
            }
            seen.push(is_grad_enabled());
        }
        seen.push(is_grad_enabled());
    }
    seen.push(is_grad_enabled());
    assert_eq!(seen, vec![true, false, true, false, true, false, true]);
}

#[test]
fn ops_under_no_grad_record_no_history() -> Result<()> {
    let x = leaf([1., 2.]);
    let y = {
        let _g = kiln::no_grad();
        x.mul(&x)?
    };
    assert_eq!((y.requires_grad(), y.grad_fn().is_none()), (false, true));
    Ok(())
}

#[test]
fn enable_grad_inside_no_grad_records_history() -> Result<()> {
    let x = leaf([1., 2.]);
    let y = {
        let _g = kiln::no_grad();
        let _e = kiln::enable_grad();
        x.mul(&x)?
    };
    assert!(y.requires_grad());
    Ok(())
}

#[test]
fn grad_mode_is_thread_local() {
    let _g = kiln::no_grad();
    let other = std::thread::spawn(is_grad_enabled).join().unwrap();
    assert_eq!((is_grad_enabled(), other), (false, true));
}

#[test]
fn detach_gives_tensor_without_history() -> Result<()> {
    let x = leaf([1., 2.]);
    let d = x.mul(&x)?.detach();
    assert_eq!((d.requires_grad(), d.is_leaf()), (false, true));
    Ok(())
}

#[test]
fn detach_shares_storage() -> Result<()> {
    let x = leaf([1., 2.]);
    let y = x.mul(&x)?;
    assert!(y.detach().shares_storage_with(&y));
    Ok(())
}

#[test]
fn detach_cuts_the_graph() -> Result<()> {
    // z = x · detach(x²): dz/dx = x² only (no 2x·x term).
    let x = leaf([1., 2., 3.]);
    let z = x.mul(&x.mul(&x)?.detach())?;
    z.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![1., 4., 9.]);
    Ok(())
}

#[test]
fn requires_grad_false_on_non_leaf_errors() -> Result<()> {
    let x = leaf([1., 2.]);
    assert_err_contains(
        x.mul_scalar(2.0)?.requires_grad_(false),
        "you can only change requires_grad flags of leaf variables",
    );
    Ok(())
}

#[test]
fn requires_grad_false_on_leaf_clears_flag() -> Result<()> {
    let x = leaf([1., 2.]).requires_grad_(false)?;
    assert!(!x.requires_grad());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Hooks
// ---------------------------------------------------------------------------------------------

#[test]
fn hook_on_leaf_doubles_its_gradient() -> Result<()> {
    let x = leaf([1., 2.]);
    x.register_hook(|g| g.mul_scalar(2.0).ok())?;
    x.mul_scalar(3.0)?.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![6., 6.]);
    Ok(())
}

#[test]
fn post_accumulate_grad_hook_sees_the_accumulated_grad_once_per_backward() -> Result<()> {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let x = leaf([1., 2.]);
    let s = seen.clone();
    let handle = x.register_post_accumulate_grad_hook(move |p| {
        s.lock()
            .unwrap()
            .push(p.grad().unwrap().to_vec::<f64>().unwrap())
    })?;
    // x is used twice: the hook runs once, after both uses were summed into .grad (2x + 3).
    x.mul(&x)?.add(&x.mul_scalar(3.0)?)?.sum()?.backward()?;
    // A second backward accumulates onto the first.
    x.mul_scalar(10.0)?.sum()?.backward()?;
    assert_eq!(*seen.lock().unwrap(), vec![vec![5., 7.], vec![15., 17.]]);
    handle.remove();
    x.sum()?.backward()?;
    assert_eq!(seen.lock().unwrap().len(), 2, "a removed hook still ran");
    assert_eq!(grad_of(&x), vec![16., 18.]);
    Ok(())
}

#[test]
fn post_accumulate_grad_hook_is_refused_off_leaves_and_without_grad() -> Result<()> {
    let x = leaf([1., 2.]);
    let y = x.mul_scalar(2.0)?;
    let e = y.register_post_accumulate_grad_hook(|_| ()).unwrap_err();
    assert!(
        e.to_string()
            .contains("post accumulate grad hooks cannot be registered on non-leaf tensors"),
        "{e}"
    );
    let e = Tensor::from([1f64])
        .register_post_accumulate_grad_hook(|_| ())
        .unwrap_err();
    assert!(e.to_string().contains("doesn't require gradient"), "{e}");
    Ok(())
}

#[test]
fn hook_on_non_leaf_doubles_gradient_flowing_through_it() -> Result<()> {
    let x = leaf([1., 2.]);
    let y = x.mul_scalar(3.0)?;
    y.register_hook(|g| g.mul_scalar(2.0).ok())?;
    y.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![6., 6.]);
    Ok(())
}

#[test]
fn hook_returning_none_leaves_gradient_unchanged() -> Result<()> {
    let x = leaf([1., 2.]);
    x.register_hook(|_| None)?;
    x.mul_scalar(3.0)?.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![3., 3.]);
    Ok(())
}

#[test]
fn hook_sees_the_incoming_gradient() -> Result<()> {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let x = leaf([1., 2.]);
    let s = seen.clone();
    x.register_hook(move |g| {
        s.lock().unwrap().extend(g.to_vec::<f64>().unwrap());
        None
    })?;
    x.mul(&Tensor::from([5f64, 7.]))?.sum()?.backward()?;
    assert_eq!(*seen.lock().unwrap(), vec![5., 7.]);
    Ok(())
}

#[test]
fn hook_on_tensor_without_grad_errors() {
    assert_err_contains(
        Tensor::from([1f64]).register_hook(|_| None),
        "cannot register a hook on a tensor that doesn't require gradient",
    );
}

// ---------------------------------------------------------------------------------------------
// Broadcast reduction and dtype of gradients
// ---------------------------------------------------------------------------------------------

#[test]
fn broadcast_input_gradients_are_reduced_to_input_shapes() -> Result<()> {
    let x = Tensor::ones([3, 1], DType::F64)?.requires_grad_(true)?;
    let y = Tensor::ones([4], DType::F64)?.requires_grad_(true)?;
    x.add(&y)?.sum()?.backward()?;
    let (gx, gy) = (x.grad().unwrap(), y.grad().unwrap());
    assert_eq!(
        (
            gx.shape().to_vec(),
            gx.to_vec::<f64>()?,
            gy.shape().to_vec(),
            gy.to_vec::<f64>()?
        ),
        (vec![3, 1], vec![4.; 3], vec![4], vec![3.; 4])
    );
    Ok(())
}

#[test]
fn broadcast_mul_gradient_sums_over_broadcast_dims() -> Result<()> {
    // z[i, j] = x[i, 0] · y[j]: dz/dx[i] = Σ_j y[j]; dz/dy[j] = Σ_i x[i].
    let x = Tensor::from([[1f64], [2.], [3.]]).requires_grad_(true)?;
    let y = Tensor::from([10f64, 20., 30., 40.]).requires_grad_(true)?;
    x.mul(&y)?.sum()?.backward()?;
    assert_eq!((grad_of(&x), grad_of(&y)), (vec![100.; 3], vec![6.; 4]));
    Ok(())
}

#[test]
fn promoted_f32_leaf_gets_f32_gradient() -> Result<()> {
    let x = Tensor::from([1f32, 2.]).requires_grad_(true)?;
    let y = Tensor::from([3f64, 4.]).requires_grad_(true)?;
    let z = x.mul(&y)?;
    assert_eq!(z.dtype(), DType::F64);
    z.sum()?.backward()?;
    let g = x.grad().unwrap();
    assert_eq!((g.dtype(), g.to_vec::<f64>()?), (DType::F32, vec![3., 4.]));
    Ok(())
}

#[test]
fn f64_leaf_multiplied_by_f32_gets_f64_gradient() -> Result<()> {
    let x = Tensor::from([1f32, 2.]).requires_grad_(true)?;
    let y = Tensor::from([3f64, 4.]).requires_grad_(true)?;
    x.mul(&y)?.sum()?.backward()?;
    let g = y.grad().unwrap();
    assert_eq!((g.dtype(), g.to_vec::<f64>()?), (DType::F64, vec![1., 2.]));
    Ok(())
}

#[test]
fn gradient_into_an_intermediate_is_reduced_and_cast_to_the_intermediate() -> Result<()> {
    // The gradient flowing into `y` (an output of MulBackward0, not a leaf) is conformed to
    // the metadata recorded for that output: summed over the broadcast dim, cast to f32.
    // Its hook sees it after that, as PyTorch's pre-hooks do. z[i, j] = 2·x[j] · w[i, j]:
    // dz/dy[j] = Σ_i w[i, j], dz/dx[j] = 2 Σ_i w[i, j].
    let x = Tensor::from([1f32, 2., 3.]).requires_grad_(true)?;
    let y = x.mul_scalar(2.0)?;
    let seen = Arc::new(std::sync::Mutex::new(None));
    let s = seen.clone();
    y.register_hook(move |g| {
        *s.lock().unwrap() = Some((g.shape().to_vec(), g.dtype(), g.to_vec::<f64>().unwrap()));
        None
    })?;
    let w = Tensor::from([[1f64, 2., 3.], [10., 20., 30.]]);
    y.mul(&w)?.sum()?.backward()?;
    assert_eq!(
        seen.lock().unwrap().clone(),
        Some((vec![3], DType::F32, vec![11., 22., 33.]))
    );
    let g = x.grad().unwrap();
    assert_eq!(
        (g.dtype(), g.to_vec::<f64>()?),
        (DType::F32, vec![22., 44., 66.])
    );
    Ok(())
}

#[test]
fn threads_recording_on_one_leaf_share_its_accumulator() -> Result<()> {
    // The leaf's edge is found without its autograd lock: threads racing to make its
    // accumulator must still all feed the one `.grad`.
    let x = Tensor::from([1f64, 2.]).requires_grad_(true)?;
    let threads: Vec<_> = (0..4)
        .map(|k| {
            let x = x.clone();
            std::thread::spawn(move || -> Result<()> {
                let mut y = x.mul_scalar(1.0)?;
                for _ in 0..50 {
                    y = y.add(&x)?;
                }
                // y = 51 x, times k + 1.
                y.mul_scalar((k + 1) as f64)?.sum()?.backward()
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap()?;
    }
    let accs: Vec<_> = (0..2)
        .map(|_| {
            x.mul_scalar(1.0)
                .unwrap()
                .grad_fn()
                .unwrap()
                .next_functions()[0]
                .clone()
        })
        .collect();
    let (a, b) = (accs[0].clone().unwrap().0, accs[1].clone().unwrap().0);
    assert!(Arc::ptr_eq(&a, &b));
    // Σ_k 51 (k + 1) = 51 · 10.
    assert_eq!(grad_of(&x), vec![510.; 2]);
    Ok(())
}

#[test]
fn to_dtype_backward_casts_gradient_back() -> Result<()> {
    let x = Tensor::from([1f32, 2.]).requires_grad_(true)?;
    x.to_dtype(DType::F64)?.mul_scalar(3.0)?.sum()?.backward()?;
    let g = x.grad().unwrap();
    assert_eq!((g.dtype(), g.to_vec::<f64>()?), (DType::F32, vec![3., 3.]));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// gradcheck
// ---------------------------------------------------------------------------------------------

#[test]
fn gradcheck_fails_for_wrong_gradient_via_detach_trick() -> Result<()> {
    // f(x) = x · detach(x) = x², whose derivative is 2x; autograd sees only x.
    let x = Tensor::from([0.5f64, -1.0, 2.0]).requires_grad_(true)?;
    assert_err_contains(
        gradcheck(
            &|t: &[Tensor]| Ok(vec![t[0].mul(&t[0].detach())?]),
            &[x],
            GradcheckOptions::default(),
        ),
        "Jacobian mismatch",
    );
    Ok(())
}

#[test]
fn gradcheck_rejects_float32_inputs() -> Result<()> {
    let x = Tensor::from([0.5f32]).requires_grad_(true)?;
    assert_err_contains(
        gradcheck(
            &|t: &[Tensor]| Ok(vec![t[0].exp()?]),
            &[x],
            GradcheckOptions::default(),
        ),
        "float64",
    );
    Ok(())
}

#[test]
fn cross_entropy_gradient_matches_finite_differences() -> Result<()> {
    // The digits example's loss: mean over the batch of -log_softmax(logits)[target].
    let logits = Tensor::from([
        [0.2f64, -1.3, 0.7, 2.1],
        [1.5, 0.3, -0.4, -2.2],
        [-0.6, 0.9, 0.1, 0.4],
    ])
    .requires_grad_(true)?;
    let target = Tensor::from([[3i64], [0], [2]]);
    gradcheck(
        &|t: &[Tensor]| {
            let lp = t[0].log_softmax(1)?;
            Ok(vec![lp.gather(1, &target)?.mean()?.neg()?])
        },
        &[logits],
        GradcheckOptions::default(),
    )
}

#[test]
fn cross_entropy_gradient_is_softmax_minus_onehot_over_n() -> Result<()> {
    // d/dlogits of mean_i(-log_softmax(z_i)[t_i]) = (softmax(z_i) - onehot(t_i)) / N.
    let z = [[0.0f64, 0.0], [1.0, -1.0]];
    let logits = Tensor::from(z).requires_grad_(true)?;
    let target = Tensor::from([[1i64], [0]]);
    logits
        .log_softmax(1)?
        .gather(1, &target)?
        .mean()?
        .neg()?
        .backward()?;
    let s1 = 1.0 / (1.0 + (-2f64).exp()); // softmax([1, -1])[0]
    let want = [
        (0.5 - 0.0) / 2.0,
        (0.5 - 1.0) / 2.0,
        (s1 - 1.0) / 2.0,
        (1.0 - s1 - 0.0) / 2.0,
    ];
    assert_close(&grad_of(&logits), &want);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Backward of max, cat, stack, index_select
// ---------------------------------------------------------------------------------------------

#[test]
fn max_dim_backward_routes_gradient_to_argmax() -> Result<()> {
    let x = Tensor::from([[1f64, 5., 2.], [7., 3., 4.]]).requires_grad_(true)?;
    let (values, _indices) = x.max_dim(1)?;
    values.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![0., 1., 0., 1., 0., 0.]);
    Ok(())
}

#[test]
fn max_dim_with_keepdim_backward_routes_gradient_to_argmax() -> Result<()> {
    let x = Tensor::from([[1f64, 5.], [7., 3.]]).requires_grad_(true)?;
    let (values, _) = x.max_dim_with(0, true)?;
    values
        .mul(&Tensor::from([[10f64, 100.]]))?
        .sum()?
        .backward()?;
    assert_eq!(grad_of(&x), vec![0., 100., 10., 0.]);
    Ok(())
}

#[test]
fn max_dim_indices_are_argmax() -> Result<()> {
    let x = Tensor::from([[1f64, 5., 2.], [7., 3., 4.]]);
    let (_, idx) = x.max_dim(1)?;
    assert_eq!(idx.to_vec::<i64>()?, vec![1, 0]);
    Ok(())
}

#[test]
fn max_with_ties_splits_gradient_evenly() -> Result<()> {
    let x = leaf([1., 3., 3.]);
    x.max()?.backward()?;
    assert_eq!(grad_of(&x), vec![0., 0.5, 0.5]);
    Ok(())
}

#[test]
fn cat_backward_splits_gradient() -> Result<()> {
    let a = leaf([1., 2.]);
    let b = leaf([3., 4., 5.]);
    let c = kiln::cat(&[a.clone(), b.clone()])?;
    c.mul(&Tensor::from([1f64, 2., 3., 4., 5.]))?
        .sum()?
        .backward()?;
    assert_eq!((grad_of(&a), grad_of(&b)), (vec![1., 2.], vec![3., 4., 5.]));
    Ok(())
}

#[test]
fn cat_along_dim1_backward_splits_gradient() -> Result<()> {
    let a = Tensor::from([[1f64], [2.]]).requires_grad_(true)?;
    let b = Tensor::from([[3f64, 4.], [5., 6.]]).requires_grad_(true)?;
    let c = kiln::cat_with(&[a.clone(), b.clone()], 1)?;
    c.mul(&Tensor::from([[1f64, 2., 3.], [4., 5., 6.]]))?
        .sum()?
        .backward()?;
    assert_eq!(
        (grad_of(&a), grad_of(&b)),
        (vec![1., 4.], vec![2., 3., 5., 6.])
    );
    Ok(())
}

#[test]
fn stack_backward_splits_gradient() -> Result<()> {
    let a = leaf([1., 2.]);
    let b = leaf([3., 4.]);
    let s = kiln::stack_with(&[a.clone(), b.clone()], 1)?; // [[a0, b0], [a1, b1]]
    s.mul(&Tensor::from([[1f64, 2.], [3., 4.]]))?
        .sum()?
        .backward()?;
    assert_eq!((grad_of(&a), grad_of(&b)), (vec![1., 3.], vec![2., 4.]));
    Ok(())
}

#[test]
fn index_select_backward_accumulates_repeated_indices() -> Result<()> {
    let x = leaf([10., 20., 30.]);
    let idx = Tensor::from([0i64, 2, 0, 0]);
    x.index_select(0, &idx)?.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![3., 0., 1.]);
    Ok(())
}

#[test]
fn index_select_backward_weights_each_pick() -> Result<()> {
    let x = leaf([10., 20., 30.]);
    let idx = Tensor::from([1i64, 1, 2]);
    x.index_select(0, &idx)?
        .mul(&Tensor::from([1f64, 10., 100.]))?
        .sum()?
        .backward()?;
    assert_eq!(grad_of(&x), vec![0., 11., 100.]);
    Ok(())
}

#[test]
fn gather_backward_scatters_gradient() -> Result<()> {
    let x = Tensor::from([[1f64, 2., 3.], [4., 5., 6.]]).requires_grad_(true)?;
    let idx = Tensor::from([[2i64, 2], [0, 1]]);
    x.gather(1, &idx)?.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![0., 0., 2., 1., 1., 0.]);
    Ok(())
}

#[test]
fn view_backward_reshapes_gradient() -> Result<()> {
    let x = Tensor::from([[1f64, 2.], [3., 4.]]).requires_grad_(true)?;
    x.t()?
        .reshape([4])?
        .mul(&Tensor::from([1f64, 2., 3., 4.]))?
        .sum()?
        .backward()?;
    // x.t().reshape(4) = [x00, x10, x01, x11].
    assert_eq!(grad_of(&x), vec![1., 3., 2., 4.]);
    Ok(())
}

#[test]
fn mean_backward_divides_by_count() -> Result<()> {
    let x = leaf([1., 2., 3., 4.]);
    x.mean()?.backward()?;
    assert_eq!(grad_of(&x), vec![0.25; 4]);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// More edge cases
// ---------------------------------------------------------------------------------------------

#[test]
fn grad_after_plain_backward_does_not_require_grad() -> Result<()> {
    let x = leaf([1., 2.]);
    x.mul(&x)?.sum()?.backward()?;
    assert!(!x.grad().unwrap().requires_grad());
    Ok(())
}

#[test]
fn inplace_through_detached_alias_is_caught_at_backward() -> Result<()> {
    // detach() shares the version counter, so modifying the detached alias of a saved
    // tensor is still detected (as in PyTorch).
    let x = leaf([0.5]);
    let y = x.exp()?;
    y.detach().mul_scalar_(2)?;
    assert_err_contains(y.sum()?.backward(), "modified by an inplace operation");
    Ok(())
}

#[test]
fn inplace_add_self_on_non_leaf_doubles_gradient() -> Result<()> {
    // y = 2x; y += y → y = 4x: dy/dx = 4.
    let x = leaf([1., 2.]);
    let y = x.mul_scalar(2.0)?;
    y.add_(&y)?;
    y.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![4., 4.]);
    Ok(())
}

#[test]
fn max_dim_with_ties_routes_gradient_to_returned_index_only() -> Result<()> {
    let x = Tensor::from([[3f64, 3., 1.]]).requires_grad_(true)?;
    let (v, i) = x.max_dim(1)?;
    v.sum()?.backward()?;
    let i = i.item::<i64>()? as usize;
    let mut want = vec![0.; 3];
    want[i] = 1.0;
    assert_eq!(grad_of(&x), want);
    Ok(())
}

#[test]
fn sum_dim_backward_broadcasts_gradient_back() -> Result<()> {
    let x = Tensor::from([[1f64, 2., 3.], [4., 5., 6.]]).requires_grad_(true)?;
    x.sum_dim(&[1])?
        .mul(&Tensor::from([10f64, 100.]))?
        .sum()?
        .backward()?;
    assert_eq!(grad_of(&x), vec![10., 10., 10., 100., 100., 100.]);
    Ok(())
}

#[test]
fn expand_backward_sums_gradient() -> Result<()> {
    let x = Tensor::from([[1f64], [2.], [3.]]).requires_grad_(true)?;
    x.expand([3, 4])?.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![4.; 3]);
    Ok(())
}

#[test]
fn step_slice_backward_scatters_into_strided_positions() -> Result<()> {
    let x = leaf([1., 2., 3., 4., 5., 6.]);
    x.slice_with(0, Some(0), None, 2)?
        .mul(&Tensor::from([1f64, 2., 3.]))?
        .sum()?
        .backward()?;
    assert_eq!(grad_of(&x), vec![1., 0., 2., 0., 3., 0.]);
    Ok(())
}

#[test]
fn select_backward_places_gradient_in_row() -> Result<()> {
    let x = Tensor::from([[1f64, 2.], [3., 4.]]).requires_grad_(true)?;
    x.select(0, 1)?.mul_scalar(5.0)?.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![0., 0., 5., 5.]);
    Ok(())
}

#[test]
fn gradcheck_passes_for_batched_broadcast_matmul() -> Result<()> {
    // b's gradient must be summed over the broadcast batch dim.
    let a = Tensor::from_vec((0..12).map(|i| 0.1 * i as f64 - 0.5).collect(), &[2, 2, 3])?
        .requires_grad_(true)?;
    let b = Tensor::from_vec((0..6).map(|i| 0.3 - 0.2 * i as f64).collect(), &[3, 2])?
        .requires_grad_(true)?;
    gradcheck(
        &|t: &[Tensor]| Ok(vec![t[0].matmul(&t[1])?]),
        &[a, b],
        GradcheckOptions::default(),
    )
}

#[test]
fn gradcheck_passes_for_vector_matmuls() -> Result<()> {
    let v = Tensor::from([0.3f64, -0.8]).requires_grad_(true)?;
    let m = Tensor::from([[0.5f64, 0.2], [-0.9, 1.3]]).requires_grad_(true)?;
    gradcheck(
        &|t: &[Tensor]| {
            Ok(vec![
                t[0].matmul(&t[0])?,
                t[1].matmul(&t[0])?,
                t[0].matmul(&t[1])?,
            ])
        },
        &[v, m],
        GradcheckOptions::default(),
    )
}

#[test]
fn gradgradcheck_passes_for_log_softmax() -> Result<()> {
    let x = Tensor::from([[0.3f64, -0.7, 1.1], [0.5, 0.2, -0.9]]).requires_grad_(true)?;
    gradgradcheck(
        &|t: &[Tensor]| Ok(vec![t[0].log_softmax(1)?]),
        &[x],
        GradcheckOptions::default(),
    )
}

#[test]
fn gradgradcheck_passes_for_div_and_pow() -> Result<()> {
    let x = Tensor::from([0.3f64, 0.7, 1.1]).requires_grad_(true)?;
    let y = Tensor::from([1.5f64, -0.4, 2.0]).requires_grad_(true)?;
    gradgradcheck(
        &|t: &[Tensor]| Ok(vec![t[0].div(&t[1])?, t[0].pow(&t[1])?]),
        &[x, y],
        GradcheckOptions::default(),
    )
}

#[test]
fn concurrent_backward_into_shared_leaf_accumulates_every_gradient() -> Result<()> {
    let x = Tensor::from([1f64, 2.]).requires_grad_(true)?;
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| -> Result<()> {
                    for _ in 0..250 {
                        x.mul_scalar(1.0)?.sum()?.backward()?;
                    }
                    Ok(())
                })
            })
            .collect();
        hs.into_iter()
            .try_for_each(|h| h.join().expect("thread panicked"))
    })?;
    assert_eq!(grad_of(&x), vec![1000., 1000.]);
    Ok(())
}

#[test]
fn hook_on_leaf_used_twice_runs_on_summed_gradient_once() -> Result<()> {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let x = leaf([1.]);
    let c = calls.clone();
    x.register_hook(move |_| {
        c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        None
    })?;
    x.mul_scalar(2.0)?
        .add(&x.mul_scalar(3.0)?)?
        .sum()?
        .backward()?;
    assert_eq!(
        (calls.load(std::sync::atomic::Ordering::SeqCst), grad_of(&x)),
        (1, vec![5.])
    );
    Ok(())
}

#[test]
fn grad_outputs_count_mismatch_errors() -> Result<()> {
    let x = leaf([1.]);
    let y = x.mul_scalar(2.0)?;
    assert!(grad(&[y], &[x], &[None, None], GradOptions::default()).is_err());
    Ok(())
}

#[test]
fn grad_wrt_leaf_applies_leaf_hook() -> Result<()> {
    let x = leaf([1., 2.]);
    x.register_hook(|g| g.mul_scalar(2.0).ok())?;
    let y = x.mul_scalar(3.0)?.sum()?;
    let g = grad(&[y], &[x], &[], GradOptions::default())?[0]
        .clone()
        .unwrap();
    assert_eq!(g.to_vec::<f64>()?, vec![6., 6.]);
    Ok(())
}

#[test]
fn grad_wrt_non_leaf_applies_its_hook() -> Result<()> {
    let x = leaf([1., 2.]);
    let h = x.mul_scalar(3.0)?;
    h.register_hook(|g| g.mul_scalar(2.0).ok())?;
    let y = h.mul_scalar(5.0)?.sum()?;
    let g = grad(&[y], &[h], &[], GradOptions::default())?[0]
        .clone()
        .unwrap();
    assert_eq!(g.to_vec::<f64>()?, vec![10., 10.]);
    Ok(())
}

#[test]
fn grad_wrt_intermediate_does_not_touch_leaf_grad() -> Result<()> {
    let x = leaf([1., 2.]);
    let h = x.mul_scalar(3.0)?;
    let y = h.mul(&h)?.sum()?;
    let _ = grad(&[y], &[h], &[], GradOptions::default())?;
    assert!(x.grad().is_none());
    Ok(())
}

#[test]
fn max_dim_indices_do_not_require_grad() -> Result<()> {
    let x = Tensor::from([[1f64, 5.]]).requires_grad_(true)?;
    let (v, i) = x.max_dim(1)?;
    assert_eq!((v.requires_grad(), i.requires_grad()), (true, false));
    Ok(())
}

#[test]
fn backward_from_two_roots_sums_their_gradients() -> Result<()> {
    let x = leaf([1., 2.]);
    let y1 = x.mul_scalar(2.0)?.sum()?;
    let y2 = x.mul(&x)?.sum()?;
    kiln::autograd::engine::backward(&[y1, y2], &[None, None], false, false)?;
    assert_eq!(grad_of(&x), vec![4., 6.]);
    Ok(())
}

#[test]

fn inplace_on_view_of_non_leaf_updates_base_gradient() -> Result<()> {
    // y = 2x; y[0:1] *= 3 → y = [6x0, 2x1]: dy/dx = [6, 2].
    let x = leaf([1., 2.]);
    let y = x.mul_scalar(2.0)?;
    y.narrow(0, 0, 1)?.mul_scalar_(3)?;
    y.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![6., 2.]);
    Ok(())
}

#[test]
fn inplace_on_view_sends_gradient_to_the_ops_other_input() -> Result<()> {
    // y = 2x; y[1:3] += w·y[1:3]-free term: y[1:3].add_(w) → d(sum y)/dw = 1, d/dx = 2.
    let x = leaf([1., 2., 3.]);
    let w = Tensor::from([10f64, 20.]).requires_grad_(true)?;
    let y = x.mul_scalar(2.0)?;
    y.narrow(0, 1, 2)?.mul_(&w)?;
    assert_eq!(y.to_vec::<f64>()?, vec![2., 40., 120.]);
    y.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![2., 20., 40.]);
    assert_eq!(grad_of(&w), vec![4., 6.]);
    Ok(())
}

#[test]
fn inplace_on_view_of_leaf_requiring_grad_errors() -> Result<()> {
    let x = leaf([1., 2.]);
    let err = x.narrow(0, 0, 1)?.mul_scalar_(3).unwrap_err();
    assert!(
        err.to_string().contains(
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        ),
        "{err}"
    );
    Ok(())
}

#[test]
fn inplace_on_strided_view_passes_gradcheck() -> Result<()> {
    let x = Tensor::from([0.3f64, -0.7, 1.1, 0.4]).requires_grad_(true)?;
    let w = Tensor::from([1.5f64, -0.5]).requires_grad_(true)?;
    let f = |t: &[Tensor]| -> Result<Vec<Tensor>> {
        let y = t[0].mul_scalar(1.0)?;
        y.slice_with(0, Some(0), None, 2)?.mul_(&t[1])?;
        Ok(vec![y.exp()?])
    };
    gradcheck(&f, &[x, w], GradcheckOptions::default())
}

// ---------------------------------------------------------------------------------------------
// scatter_reduce and mode
// ---------------------------------------------------------------------------------------------

/// `self` [3, 4] and `src` [rows, 4]: pairwise distinct, non-zero values (no ties for
/// amax/amin anywhere), and an index [5, 4] into dim 0 with repeats.
fn scatter_reduce_inputs(rows: usize) -> Result<(Tensor, Tensor, Tensor)> {
    let n = 12 + rows * 4;
    let v: Vec<f64> = (0..n)
        .map(|k| ((k * 13) % n) as f64 * 0.1 + 0.05 - 0.05 * n as f64)
        .collect();
    let x = Tensor::from_vec(v[..12].to_vec(), &[3, 4])?.requires_grad_(true)?;
    let src = Tensor::from_vec(v[12..].to_vec(), &[rows, 4])?.requires_grad_(true)?;
    let idx: Vec<i64> = (0..20).map(|k| (k * 7 + k / 4) % 3).collect();
    Ok((x, Tensor::from_vec(idx, &[5, 4])?, src))
}

#[test]
fn scatter_reduce_gradients_pass_gradcheck_for_every_reduction() -> Result<()> {
    let (x, index, src) = scatter_reduce_inputs(5)?;
    for reduce in ["sum", "prod", "mean", "amax", "amin"] {
        for include_self in [true, false] {
            let f = |t: &[Tensor]| -> Result<Vec<Tensor>> {
                Ok(vec![t[0].scatter_reduce_with(
                    0,
                    &index,
                    &t[1],
                    reduce,
                    include_self,
                )?])
            };
            let inputs = [x.clone(), src.clone()];
            let opts = GradcheckOptions::default();
            gradcheck(&f, &inputs, opts).map_err(|e| {
                kiln::Error::new(
                    e.kind(),
                    reduce,
                    format!("include_self={include_self}: {e}"),
                )
            })?;
            gradgradcheck(&f, &inputs, opts).map_err(|e| {
                kiln::Error::new(
                    e.kind(),
                    reduce,
                    format!("include_self={include_self}: {e}"),
                )
            })?;
        }
    }
    Ok(())
}

#[test]
fn scatter_reduce_src_larger_than_index_gets_zero_gradient_outside_it() -> Result<()> {
    // src [6, 4] with an index [5, 4]: the last row of src is never read.
    let (x, index, src) = scatter_reduce_inputs(6)?;
    for reduce in ["sum", "prod", "mean", "amax"] {
        let f = |t: &[Tensor]| -> Result<Vec<Tensor>> {
            Ok(vec![t[0].scatter_reduce(0, &index, &t[1], reduce)?])
        };
        gradcheck(&f, &[x.clone(), src.clone()], GradcheckOptions::default())?;
    }
    let y = x.scatter_reduce(0, &index, &src, "prod")?;
    y.sum()?.backward()?;
    let g = src.grad().expect("src gets a gradient");
    assert_eq!(g.shape(), &[6, 4]);
    assert_eq!(g.narrow(0, 5, 1)?.to_vec::<f64>()?, vec![0.0; 4]);
    Ok(())
}

#[test]
fn scatter_reduce_prod_gradient_with_several_zeros_in_one_slot() -> Result<()> {
    // Position 0 receives two zeros of src: every factor's gradient there is 0 except
    // self's, which is the product of the rest (0 too). Position 1 receives one zero: its
    // gradient is the product of the others.
    let x = Tensor::from([2f64, 3.]).requires_grad_(true)?;
    let src = Tensor::from([0f64, 0., 5., 0., 7.]).requires_grad_(true)?;
    let index = Tensor::from([0i64, 0, 0, 1, 1]);
    let y = x.scatter_reduce(0, &index, &src, "prod")?;
    assert_eq!(y.to_vec::<f64>()?, vec![0.0, 0.0]);
    assert_eq!(
        y.grad_fn().expect("recorded").name(),
        "ScatterReduceBackward0"
    );
    y.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![0.0, 0.0]);
    assert_eq!(grad_of(&src), vec![0.0, 0.0, 0.0, 21.0, 0.0]);
    Ok(())
}

#[test]
fn scatter_reduce_prod_double_backward_through_two_zeros_is_an_error() -> Result<()> {
    // The first gradient is right (above); its derivative would miss the two zeros' mixed
    // term, so, as in PyTorch, a second backward through it fails rather than return it.
    let x = Tensor::from([2f64, 3.]).requires_grad_(true)?;
    let src = Tensor::from([0f64, 0., 5., 0., 7.]).requires_grad_(true)?;
    let index = Tensor::from([0i64, 0, 0, 1, 1]);
    let y = x.scatter_reduce(0, &index, &src, "prod")?.sum()?;
    let opts = GradOptions {
        create_graph: true,
        ..Default::default()
    };
    let g = grad(&[y], std::slice::from_ref(&src), &[], opts)?;
    let g = g[0].clone().expect("src's gradient");
    assert_eq!(g.to_vec::<f64>()?, vec![0.0, 0.0, 0.0, 21.0, 0.0]);
    assert_err_contains(
        g.sum()?.backward(),
        "scatter_reduce(): Double backward is unsupported for src when >1 zeros in src are scattered to the same position in self",
    );
    // One zero per slot: double backward works (gradgradcheck'd in the OpInfo samples).
    let one = Tensor::from([0f64, 4., 5., 6., 7.]).requires_grad_(true)?;
    let y = x.scatter_reduce(0, &index, &one, "prod")?.sum()?;
    let g = grad(&[y], std::slice::from_ref(&one), &[], opts)?[0]
        .clone()
        .expect("gradient");
    g.sum()?.backward()?;
    Ok(())
}

#[test]
fn scatter_with_reduce_argument_is_not_differentiable() -> Result<()> {
    // PyTorch has no derivative for scatter(..., reduce=): its result takes no gradient.
    let x = leaf([1., 2., 3.]);
    let index = Tensor::from([0i64, 0, 2]);
    let src = Tensor::from([2f64, 3., 4.]);
    let y = x.scatter_src_reduce(0, &index, &src, "multiply")?;
    assert_eq!(y.to_vec::<f64>()?, vec![6.0, 2.0, 12.0]);
    assert!(!y.requires_grad());
    let z = x.scatter_value_reduce(0, &index, 2.0, "add")?;
    assert_eq!(z.to_vec::<f64>()?, vec![5.0, 2.0, 5.0]);
    assert!(!z.requires_grad());
    Ok(())
}

#[test]
fn mode_values_gradient_goes_to_the_returned_index() -> Result<()> {
    // The mode 2 occurs at 1 and 3; the index is its last occurrence, as PyTorch's CPU
    // kernel returns, and the gradient goes there alone.
    let x = Tensor::from([[5f64, 2., 7., 2.], [1., 1., 4., 4.]]).requires_grad_(true)?;
    let (values, indices) = x.mode()?;
    assert_eq!(values.to_vec::<f64>()?, vec![2.0, 1.0]);
    assert_eq!(indices.to_vec::<i64>()?, vec![3, 1]);
    assert_eq!(values.grad_fn().expect("recorded").name(), "ModeBackward0");
    values.mul(&Tensor::from([10f64, 20.]))?.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![0., 0., 0., 10., 0., 20., 0., 0.]);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Advanced indexing: gradients through `Tensor?[]` index lists
// ---------------------------------------------------------------------------------------------

#[test]
fn index_gradient_sums_into_the_picked_positions() -> Result<()> {
    let x = leaf([1., 2., 3., 4.]);
    let i = Tensor::from(vec![3i64, 0, 3]);
    let y = x.index(&[Some(&i)])?;
    assert_eq!(y.grad_fn().unwrap().name(), "IndexBackward0");
    y.mul(&Tensor::from([10., 20., 30.]))?.sum()?.backward()?;
    // Position 3 is read twice: 10 + 30.
    assert_close(&grad_of(&x), &[20., 0., 0., 40.]);
    Ok(())
}

#[test]
fn inplace_index_put_on_a_non_leaf_records_both_inputs() -> Result<()> {
    let x = leaf([1., 2., 3., 4.]);
    let v = leaf([7., 8.]);
    let y = x.mul_scalar(1.0)?;
    let i = Tensor::from(vec![1i64, 2]);
    y.index_put_(&[Some(&i)], &v)?;
    assert_eq!(y.grad_fn().unwrap().name(), "IndexPutBackward0");
    assert_close(&y.to_vec::<f64>()?, &[1., 7., 8., 4.]);
    y.mul(&Tensor::from([1., 2., 3., 4.]))?.sum()?.backward()?;
    // The overwritten positions pass no gradient to x; v gets the upstream there.
    assert_close(&grad_of(&x), &[1., 0., 0., 4.]);
    assert_close(&grad_of(&v), &[2., 3.]);
    Ok(())
}

/// `copy_`, `fill_`, `uniform_`: in-place writes follow the autograd rules of the generated
/// in-place ops, and a copy's gradient flows to `src` only.
#[test]
fn copy_and_fill_are_recorded_like_inplace_ops() {
    use kiln::{no_grad, DType, Tensor};
    let leaf = Tensor::zeros([3], DType::F64)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let err = leaf
        .copy_(&Tensor::ones([3], DType::F64).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "copy_: a leaf Variable that requires grad is being used in an in-place operation."
        ),
        "{err}"
    );
    let err = leaf.fill_(1.0).unwrap_err().to_string();
    assert!(err.starts_with("fill_: a leaf Variable"), "{err}");
    {
        let _g = no_grad();
        leaf.fill_(2.5).unwrap();
    }
    assert_eq!(leaf.to_vec::<f64>().unwrap(), [2.5; 3]);

    // y = 3x, then y ← src (broadcast, cast): dL/dx = 0, dL/dsrc = sum over the broadcast.
    let x = Tensor::from([1f64, 2., 3.]).requires_grad_(true).unwrap();
    let src = Tensor::from([7f32]).requires_grad_(true).unwrap();
    let y = x.mul_scalar(3.0).unwrap();
    y.copy_(&src).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), [7.0; 3]);
    y.mul(&Tensor::from([1f64, 2., 3.]))
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), [0.0; 3]);
    assert_eq!(src.grad().unwrap().to_vec::<f32>().unwrap(), [6.0]);

    // Writing a constant over a view: the overwritten slots get no gradient.
    let x = Tensor::from([1f64, 2., 3., 4.])
        .requires_grad_(true)
        .unwrap();
    let y = x.mul_scalar(1.0).unwrap();
    y.narrow(0, 1, 2).unwrap().zero_().unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), [1., 0., 0., 4.]);
    y.sum().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), [1., 0., 0., 1.]);

    // Shapes and devices are checked.
    let err = Tensor::zeros([2, 3], DType::F32)
        .unwrap()
        .copy_(&Tensor::zeros([4], DType::F32).unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("copy_:"), "{err}");
    let err = Tensor::zeros([2], DType::I64)
        .unwrap()
        .uniform_(0.0, 1.0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("uniform_"), "{err}");
    let t = Tensor::zeros([1000], DType::F32).unwrap();
    t.uniform_(-2.0, 3.0).unwrap();
    let v = t.to_vec::<f32>().unwrap();
    assert!(v.iter().all(|&a| (-2.0..3.0).contains(&a)));
    let mean = v.iter().map(|&a| a as f64).sum::<f64>() / 1000.0;
    assert!((mean - 0.5).abs() < 0.2, "{mean}");
}

// ---------------------------------------------------------------------------------------
// The gradient layout contract: a dense leaf's `.grad` has the leaf's strides.
// ---------------------------------------------------------------------------------------

#[test]
fn grad_of_leaf_used_transposed_has_the_leaf_strides() -> Result<()> {
    // w is [2, 3] contiguous; y = x @ w.t() gives w a gradient computed as a transposed view.
    let w = Tensor::from_vec((0..6).map(|i| i as f64 * 0.5).collect(), &[2, 3])?
        .requires_grad_(true)?;
    let x = Tensor::from_vec(vec![1.0f64, -2.0, 3.0, 0.5, 1.5, -1.0], &[2, 3])?;
    x.matmul(&w.t()?)?.sum()?.backward()?;
    let g = w.grad().unwrap();
    assert_eq!(g.strides(), w.strides());
    // d(sum(x w^T))/dw[j, k] = sum_i x[i, k]
    let want = [1.5, -0.5, 2.0, 1.5, -0.5, 2.0];
    assert_close(&g.to_vec::<f64>()?, &want);

    // A leaf that is itself a transposed layout keeps that layout.
    let base = Tensor::from_vec((0..6).map(|i| i as f64).collect(), &[3, 2])?;
    let wt = base.t()?.detach().requires_grad_(true)?;
    assert_eq!(wt.strides(), &[1, 2]);
    wt.mul_scalar(2.0)?.sum()?.backward()?;
    let g = wt.grad().unwrap();
    assert_eq!(g.strides(), &[1, 2]);
    assert_close(&g.to_vec::<f64>()?, &[2.0; 6]);

    // sum's backward hands out an expanded gradient (stride 0): the leaf gets a dense one.
    let v = leaf([1.0, 2.0, 3.0]);
    v.sum()?.backward()?;
    assert_eq!(v.grad().unwrap().strides(), &[1]);
    Ok(())
}

#[test]
fn layout_contract_keeps_create_graph_differentiable() -> Result<()> {
    // f = sum((x w^T)^2) with create_graph: w.grad = 2 (x w^T)^T x, computed through a
    // transposed view, must still be differentiable and obey the contract.
    let w = Tensor::from_vec(vec![0.5f64, -1.0, 2.0, 1.0], &[2, 2])?.requires_grad_(true)?;
    let x = Tensor::from_vec(vec![1.0f64, 2.0, -1.0, 3.0], &[2, 2])?;
    let y = x.matmul(&w.t()?)?;
    y.mul(&y)?.sum()?.backward_with(None, true, true)?;
    let g = w.grad().unwrap();
    assert_eq!(g.strides(), w.strides());
    assert!(g.requires_grad());
    // Reference: g[j,k] = 2 sum_i y[i,j] x[i,k], y[i,j] = sum_k x[i,k] w[j,k].
    let (xv, wv) = ([1.0, 2.0, -1.0, 3.0], [0.5, -1.0, 2.0, 1.0]);
    let yv = |i: usize, j: usize| xv[i * 2] * wv[j * 2] + xv[i * 2 + 1] * wv[j * 2 + 1];
    let mut want = [0.0; 4];
    for j in 0..2 {
        for k in 0..2 {
            want[j * 2 + k] = (0..2).map(|i| 2.0 * yv(i, j) * xv[i * 2 + k]).sum();
        }
    }
    assert_close(&g.to_vec::<f64>()?, &want);
    // Second order: d(sum(w.grad))/dw[j,k] = 2 sum_i x[i,k] * sum_m x[i,m].
    let gg = grad(
        &[g.sum()?],
        std::slice::from_ref(&w),
        &[],
        GradOptions::default(),
    )?;
    let gg = gg[0].as_ref().unwrap().to_vec::<f64>()?;
    let mut want2 = [0.0; 4];
    for j in 0..2 {
        for k in 0..2 {
            want2[j * 2 + k] = (0..2)
                .map(|i| 2.0 * xv[i * 2 + k] * (xv[i * 2] + xv[i * 2 + 1]))
                .sum();
        }
    }
    assert_close(&gg, &want2);
    Ok(())
}
