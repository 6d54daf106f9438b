//! `Error::kind()`: each kind of failure reports the `ErrorKind` of the exception PyTorch
//! raises for the same input, and its message (the `Display` output) is unchanged.

use kiln::data::safetensors::load_file;
use kiln::{Device, ErrorKind, Result, Tensor};

#[test]
fn a_broadcast_failure_is_a_shape_error() {
    let a = Tensor::from([[1f32, 2., 3.], [4., 5., 6.]]);
    let b = Tensor::from([[1f32, 2., 3., 4.], [5., 6., 7., 8.]]);
    let e = a.add(&b).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Shape);
    assert_eq!(
        e.to_string(),
        "add: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"
    );
}

#[test]
fn an_index_out_of_range_is_an_index_error() {
    let x = Tensor::from([1f32, 2., 3.]);
    let e = x.select(0, 5).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Index);
    assert_eq!(
        e.to_string(),
        "select: select(): index 5 out of range for tensor of size [3] at dimension 0"
    );
    let e = x.index_select(0, &Tensor::from([0i64, 5])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Index);
    assert_eq!(e.to_string(), "index_select: index out of range in self");
    let e = x.sum_dim(&[1]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Index);
    assert_eq!(
        e.to_string(),
        "sum: Dimension out of range (expected to be in range of [-1, 0], but got 1)"
    );
}

#[test]
fn an_unsupported_dtype_is_a_dtype_error() {
    // PyTorch raises RuntimeError `"addmm_impl_cpu_" not implemented for 'Bool'` from dtype
    // dispatch; kiln's kind for it is DType.
    let m = Tensor::from([[true, false], [false, true]]);
    let e = m.mm(&m).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DType);
    assert!(e.to_string().ends_with("not implemented for 'Bool'"), "{e}");
}

#[test]
fn an_unavailable_device_is_a_device_error() {
    // Without CUDA in this build or on this machine; with a GPU, device 64 still fails.
    let e = Tensor::from([1f32, 2.])
        .to_device(Device::Cuda(64))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Device);
    assert!(e.to_string().contains("cuda:64"), "{e}");
}

#[test]
fn a_second_backward_is_an_autograd_error() -> Result<()> {
    let x = Tensor::from([1f64, 2.]).requires_grad_(true)?;
    let y = x.mul(&x)?.sum()?;
    y.backward()?;
    let e = y.backward().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Autograd);
    assert!(
        e.to_string()
            .starts_with("Trying to backward through the graph a second time"),
        "{e}"
    );
    Ok(())
}

#[test]
fn a_missing_file_is_an_io_error() {
    let path = std::env::temp_dir().join("kiln-error-kinds-does-not-exist.safetensors");
    let e = load_file(&path).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(
        e.to_string()
            .starts_with(&format!("load_file: {}: ", path.display())),
        "{e}"
    );
}

#[test]
fn a_bad_argument_value_is_a_value_error() {
    let x = Tensor::from([1f32, 2., 3.]);
    let e = x.chunk(0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Value);
    assert_eq!(
        e.to_string(),
        "chunk: chunk expects `chunks` to be greater than 0, got: 0"
    );
}

/// `linalg_solve` is a composite over several kernels, so it checks A and B share a device
/// itself, before anything reads their values (found with A on meta and B on the CPU).
#[test]
fn linalg_solve_on_two_devices_is_a_device_error() {
    let a = Tensor::from([[2f32, 0.], [0., 4.]]);
    let b = Tensor::from([[1f32], [2.]]);
    let e = kiln::linalg_solve(&a.to_device(Device::Meta).unwrap(), &b).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Device);
    assert_eq!(
        e.to_string(),
        "linalg_solve: Expected all tensors to be on the same device, but found at least two devices, meta and cpu!"
    );
    // Same device: the solution, checked by hand (x = [1/2, 1/2]).
    let x = kiln::linalg_solve(&a, &b).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![0.5, 0.5]);
}
