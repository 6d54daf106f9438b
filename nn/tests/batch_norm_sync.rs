//! The `BatchNormSync` slot of `BatchNorm`: a training pass that uses batch statistics
//! defers to it (after counting the pass), evaluation never does, and module walks reach the
//! slot in every batch norm of a tree (`VisitorMut::batch_norm_sync`), which is how
//! `kiln_distributed::convert_sync_batchnorm` makes a model's layers synchronise.

use kiln_core::{DType, Result, Tensor};
use kiln_nn::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Records each call's momentum and answers plain batch norm's result, plus 100.
#[derive(Default)]
struct Recorder {
    momenta: Mutex<Vec<f64>>,
}

impl BatchNormSync for Recorder {
    fn batch_norm(
        &self,
        input: &Tensor,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        running_mean: Option<&Tensor>,
        running_var: Option<&Tensor>,
        momentum: f64,
        eps: f64,
    ) -> Result<Tensor> {
        self.momenta.lock().unwrap().push(momentum);
        kiln_core::batch_norm(
            input,
            weight,
            bias,
            running_mean,
            running_var,
            true,
            momentum,
            eps,
            true,
        )?
        .add_scalar(100.0)
    }
}

fn input() -> Tensor {
    Tensor::from_vec((0..12).map(|i| i as f64 * 0.5).collect::<Vec<_>>(), &[3, 4]).unwrap()
}

#[test]
fn training_defers_to_the_sync_and_eval_does_not() {
    let opts = BatchNormOptions::default().dtype(DType::F64).momentum(None);
    let mut bn = BatchNorm1d::with_options(4, opts).unwrap();
    let plain = BatchNorm1d::with_options(4, opts).unwrap();
    let recorder = Arc::new(Recorder::default());
    bn.sync = Some(recorder.clone());

    for _ in 0..2 {
        let y = bn.forward(&input()).unwrap();
        let want = plain.forward(&input()).unwrap().add_scalar(100.0).unwrap();
        assert_eq!(y.to_vec::<f64>().unwrap(), want.to_vec::<f64>().unwrap());
    }
    // Counted before the call: momentum=None gives 1/1, then 1/2.
    assert_eq!(*recorder.momenta.lock().unwrap(), vec![1.0, 0.5]);
    assert_eq!(
        bn.num_batches_tracked
            .as_ref()
            .unwrap()
            .item::<i64>()
            .unwrap(),
        2
    );

    bn.eval();
    let y = bn.forward(&input()).unwrap();
    assert!(y.to_vec::<f64>().unwrap().iter().all(|v| v.abs() < 50.0));
    assert_eq!(recorder.momenta.lock().unwrap().len(), 2);
}

#[test]
fn module_walks_reach_every_batch_norms_sync_slot() {
    struct Count(Arc<AtomicUsize>);
    impl VisitorMut for Count {
        fn tensor(&mut self, _: &str, _: TensorKind, _: &mut Tensor) -> Result<()> {
            Ok(())
        }
        fn batch_norm_sync(&mut self, slot: &mut Option<Arc<dyn BatchNormSync>>) {
            self.0.fetch_add(1, Ordering::Relaxed);
            *slot = Some(Arc::new(Recorder::default()));
        }
    }
    let mut model = Sequential::new()
        .add(BatchNorm1d::new(2).unwrap())
        .add(Linear::new(2, 2).unwrap())
        .add(Sequential::new().add(BatchNorm2d::new(2).unwrap()));
    let weights_before = model.parameters();
    let seen = Arc::new(AtomicUsize::new(0));
    model.visit_mut(&mut Count(seen.clone())).unwrap();
    assert_eq!(seen.load(Ordering::Relaxed), 2);
    // The slot is all that changed: the same tensors, under the same names.
    let after = model.parameters();
    assert_eq!(weights_before.len(), after.len());
    assert!(weights_before.iter().zip(&after).all(|(a, b)| a.is_same(b)));
}
