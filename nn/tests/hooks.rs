//! Module hooks (`Hooked`): the order PyTorch calls forward pre-hooks, forward hooks, full
//! backward pre-hooks and full backward hooks on a small Sequential, what each sees, what
//! replacing inputs, outputs and gradients does, removal, and an input without grad — all
//! against `data/hooks_ref.txt`, written by `scripts/hooks_reference.py` (PyTorch 2.x).
//! Then: wrapping leaves the state dict unchanged, and the errors.

use kiln_core::{no_grad, DType, Result, Tensor};
use kiln_nn::{Forward, Hooked, Linear, Module, ReLU, RemovableHandle, Sequential};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const REFERENCE: &str = include_str!("data/hooks_ref.txt");

/// The events hooks record, in PyTorch's line format, and the scenario being run.
#[derive(Clone, Default)]
struct Log {
    lines: Arc<Mutex<Vec<String>>>,
    scenario: Arc<Mutex<&'static str>>,
}

impl Log {
    fn push(&self, event: &str, module: &str, items: &[(&str, String)]) {
        let mut line = format!("{} {event} {module}", self.scenario.lock().unwrap());
        for (k, v) in items {
            line.push_str(&format!(" {k}={v}"));
        }
        self.lines.lock().unwrap().push(line);
    }
}

fn filled(shape: &[usize], f: impl Fn(f64) -> f64, offset: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| f((i + offset) as f64) as f32).collect();
    Tensor::from(v).reshape(shape).unwrap()
}

fn sum(t: Option<&Tensor>) -> String {
    match t {
        None => "None".into(),
        Some(t) => {
            let s: f64 = t.to_vec::<f32>().unwrap().iter().map(|&v| v as f64).sum();
            format!("{s:.8e}")
        }
    }
}

fn shape(t: &Tensor) -> String {
    t.shape()
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

fn linear(i: usize, o: usize, offset: usize) -> Hooked<Linear> {
    let l = Linear::new(i, o).unwrap();
    {
        let _g = no_grad();
        l.weight
            .copy_(&filled(&[o, i], |k| 0.5 * (k + 1.0).sin(), offset))
            .unwrap();
        l.bias
            .as_ref()
            .unwrap()
            .copy_(&filled(&[o], |k| 0.5 * (k + 1.0).cos(), offset))
            .unwrap();
    }
    Hooked::new(l)
}

fn forward_pre<M>(
    log: &Log,
    name: &'static str,
    scale: Option<f64>,
) -> impl Fn(&M, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static {
    let log = log.clone();
    move |_, x| {
        log.push(
            "forward_pre",
            name,
            &[("input_shape", shape(x)), ("input_sum", sum(Some(x)))],
        );
        scale.map(|s| x.mul_scalar(s)).transpose()
    }
}

fn forward<M>(
    log: &Log,
    name: &'static str,
    add: Option<f64>,
) -> impl Fn(&M, &Tensor, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static {
    let log = log.clone();
    move |_, x, y| {
        log.push(
            "forward",
            name,
            &[
                ("input_sum", sum(Some(x))),
                ("output_shape", shape(y)),
                ("output_sum", sum(Some(y))),
            ],
        );
        add.map(|a| y.add_scalar(a)).transpose()
    }
}

type Grads = Vec<Option<Tensor>>;

fn scaled(grads: &[Option<Tensor>], s: f64) -> Result<Grads> {
    grads
        .iter()
        .map(|g| g.as_ref().map(|g| g.mul_scalar(s)).transpose())
        .collect()
}

fn backward_pre(
    log: &Log,
    name: &'static str,
    scale: Option<f64>,
) -> impl Fn(&[Option<Tensor>]) -> Result<Option<Grads>> + Send + Sync + 'static {
    let log = log.clone();
    move |go| {
        log.push(
            "backward_pre",
            name,
            &[
                ("n", go.len().to_string()),
                ("grad_output_sum", sum(go[0].as_ref())),
            ],
        );
        scale.map(|s| scaled(go, s)).transpose()
    }
}

// The hook's own signature, spelled out as `register_full_backward_hook` takes it.
#[allow(clippy::type_complexity)]
fn backward(
    log: &Log,
    name: &'static str,
    scale: Option<f64>,
) -> impl Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Grads>> + Send + Sync + 'static
{
    let log = log.clone();
    move |gi, go| {
        log.push(
            "backward",
            name,
            &[
                ("n", gi.len().to_string()),
                ("grad_input_sum", sum(gi[0].as_ref())),
                ("grad_output_sum", sum(go[0].as_ref())),
            ],
        );
        scale.map(|s| scaled(gi, s)).transpose()
    }
}

/// `a` and `b` are the same line: the same words, numbers equal to 1e-5 relative.
fn same_line(a: &str, b: &str) -> bool {
    let (wa, wb): (Vec<&str>, Vec<&str>) = (a.split(' ').collect(), b.split(' ').collect());
    wa.len() == wb.len()
        && wa.iter().zip(&wb).all(|(x, y)| {
            let (vx, vy) = (x.split_once('='), y.split_once('='));
            match (vx, vy) {
                (Some((kx, nx)), Some((ky, ny))) if kx == ky => {
                    match (nx.parse::<f64>(), ny.parse::<f64>()) {
                        (Ok(p), Ok(q)) => (p - q).abs() <= 1e-5 * p.abs().max(q.abs()).max(1.0),
                        _ => nx == ny,
                    }
                }
                _ => x == y,
            }
        })
}

#[test]
fn hooks_run_in_pytorchs_order_with_pytorchs_arguments() -> Result<()> {
    let log = Log::default();
    let l0 = linear(4, 3, 0);
    let relu = Hooked::new(ReLU);
    let l2 = linear(3, 2, 20);
    let mut handles: HashMap<&str, RemovableHandle> = HashMap::new();
    handles.insert(
        "0.forward_pre",
        l0.register_forward_pre_hook(forward_pre(&log, "0", Some(2.0))),
    );
    handles.insert(
        "0.forward",
        l0.register_forward_hook(forward(&log, "0", None)),
    );
    handles.insert(
        "0.backward_pre",
        l0.register_full_backward_pre_hook(backward_pre(&log, "0", None)),
    );
    handles.insert(
        "0.backward",
        l0.register_full_backward_hook(backward(&log, "0", None)),
    );
    handles.insert(
        "1.forward",
        relu.register_forward_hook(forward(&log, "1", Some(1.0))),
    );
    handles.insert(
        "1.backward",
        relu.register_full_backward_hook(backward(&log, "1", None)),
    );
    handles.insert(
        "2.forward_pre",
        l2.register_forward_pre_hook(forward_pre(&log, "2", None)),
    );
    handles.insert(
        "2.backward_pre",
        l2.register_full_backward_pre_hook(backward_pre(&log, "2", Some(2.0))),
    );
    handles.insert(
        "2.backward",
        l2.register_full_backward_hook(backward(&log, "2", Some(0.5))),
    );
    let model = Hooked::new(Sequential::new().add(l0).add(relu).add(l2));
    handles.insert(
        "top.forward_pre",
        model.register_forward_pre_hook(forward_pre(&log, "top", None)),
    );
    handles.insert(
        "top.forward",
        model.register_forward_hook(forward(&log, "top", None)),
    );
    handles.insert(
        "top.backward",
        model.register_full_backward_hook(backward(&log, "top", None)),
    );

    let run = |requires_grad: bool| -> Result<()> {
        model.zero_grad();
        let x = filled(&[2, 4], |i| (0.7 * i).sin(), 0).requires_grad_(requires_grad)?;
        let out = model.forward(&x)?;
        log.push(
            "output",
            "top",
            &[("shape", shape(&out)), ("sum", sum(Some(&out)))],
        );
        out.pow_scalar(2)?.sum()?.backward()?;
        for (name, p) in model.named_parameters() {
            log.push("grad", &name, &[("sum", sum(p.grad().as_ref()))]);
        }
        log.push("grad", "x", &[("sum", sum(x.grad().as_ref()))]);
        Ok(())
    };
    *log.scenario.lock().unwrap() = "A";
    run(true)?;
    *log.scenario.lock().unwrap() = "B";
    for key in ["1.forward", "2.backward_pre", "2.backward"] {
        handles[key].remove();
    }
    run(true)?;
    *log.scenario.lock().unwrap() = "C";
    run(false)?;

    let got = log.lines.lock().unwrap().clone();
    let expected: Vec<&str> = REFERENCE.lines().filter(|l| !l.is_empty()).collect();
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert!(same_line(g, e), "line {i}:\n  kiln:    {g}\n  PyTorch: {e}");
    }
    assert_eq!(got.len(), expected.len(), "kiln logged {got:#?}");
    Ok(())
}

#[test]
fn wrapping_keeps_parameter_names_and_the_state_dict() -> Result<()> {
    let plain = Sequential::new().add(Linear::new(3, 2)?).add(ReLU);
    let plain_keys: Vec<String> = plain.state_dict().keys().map(String::from).collect();
    let hooked = Hooked::new(
        Sequential::new()
            .add(Hooked::new(Linear::new(3, 2)?))
            .add(Hooked::new(ReLU)),
    );
    let keys: Vec<String> = hooked.state_dict().keys().map(String::from).collect();
    assert_eq!(keys, plain_keys);
    assert_eq!(keys, ["0.weight", "0.bias"]);
    let mut hooked = hooked;
    hooked.load_state_dict(&plain.state_dict(), true)?;
    Ok(())
}

#[test]
fn hooks_added_through_a_handle_after_the_move_run() -> Result<()> {
    let fc = Hooked::new(Linear::new(2, 2)?);
    let hooks = fc.hooks();
    let seq = Sequential::new().add(fc);
    let calls = Arc::new(Mutex::new(0));
    let c = calls.clone();
    let h = hooks.register_forward_pre_hook(move |_, _| {
        *c.lock().unwrap() += 1;
        Ok(None)
    });
    let x = Tensor::ones([1, 2], DType::F32)?;
    seq.forward(&x)?;
    h.remove();
    h.remove(); // twice: a no-op
    seq.forward(&x)?;
    assert_eq!(*calls.lock().unwrap(), 1);
    Ok(())
}

#[test]
fn backward_hooks_do_not_run_without_grad_mode() -> Result<()> {
    let fc = Hooked::new(Linear::new(2, 2)?);
    let calls = Arc::new(Mutex::new(0));
    let c = calls.clone();
    fc.register_full_backward_hook(move |_, _| {
        *c.lock().unwrap() += 1;
        Ok(None)
    });
    let x = Tensor::ones([1, 2], DType::F32)?.requires_grad_(true)?;
    let y = {
        let _g = no_grad();
        fc.forward(&x)?
    };
    assert!(!y.requires_grad());
    let y = fc.forward(&x)?;
    assert_eq!(y.grad_fn().unwrap().name(), "BackwardHookFunctionBackward");
    y.sum()?.backward()?;
    assert_eq!(*calls.lock().unwrap(), 1);
    Ok(())
}

#[test]
fn hook_errors() -> Result<()> {
    let fc = Hooked::new(Linear::new(2, 2)?);
    let x = Tensor::ones([1, 2], DType::F32)?.requires_grad_(true)?;

    // A hook's own error, in forward.
    let h = fc.register_forward_pre_hook(|_, _| Err(kiln_core::Error::value("my_hook", "no")));
    assert!(fc
        .forward(&x)
        .unwrap_err()
        .to_string()
        .contains("my_hook: no"));
    h.remove();

    // Returning the wrong number of gradients.
    let h = fc.register_full_backward_hook(|gi, _| Ok(Some(vec![gi[0].clone(), None])));
    let e = fc.forward(&x)?.sum()?.backward().unwrap_err().to_string();
    assert!(
        e.contains("backward_hook: Backward hook returned an invalid number of grad_input, got 2, but expected 1"),
        "{e}"
    );
    h.remove();
    let h = fc.register_full_backward_pre_hook(|_| Ok(Some(vec![])));
    let e = fc.forward(&x)?.sum()?.backward().unwrap_err().to_string();
    assert!(
        e.contains(
            "Backward pre hook returned an invalid number of grad_output, got 0, but expected 1"
        ),
        "{e}"
    );
    h.remove();

    // Replacing grad_input of an input that does not require grad.
    let h = fc.register_full_backward_hook(|_, go| Ok(Some(vec![go[0].clone()])));
    let e = fc
        .forward(&Tensor::ones([1, 2], DType::F32)?)?
        .sum()?
        .backward()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no input requires gradient should always return None"),
        "{e}"
    );
    h.remove();
    Ok(())
}
