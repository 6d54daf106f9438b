//! `digits` (or `digits_cnn`, `--model cnn`) trained data-parallel on several processes with
//! `DistributedDataParallel` over MPI: each rank takes its share of every global batch of 64
//! through a `DistributedSampler`, gradients are averaged across ranks during backward, and
//! every rank ends with the same model. Rank 0 prints the progress bar, the loss per epoch
//! (averaged over ranks), the test accuracy and the throughput.
//!
//! Run (Open MPI installed):
//! `cargo build --release --features mpi --example digits_ddp`, then
//! `mpirun -np 2 target/release/examples/digits_ddp` (`--model cnn` for the CNN; several
//! hosts: `mpirun -np 8 --hostfile hosts target/release/examples/digits_ddp`).

mod common;

use common::models::{Cnn, Mlp};
use kiln::data::{DataLoader, DistributedSampler, TensorDataset};
use kiln::distributed::{self as dist, Backend, DdpOptions, DistributedDataParallel, ReduceOp};
use kiln::nn::{functional as F, Forward, Module};
use kiln::optim::lr_scheduler::{LRScheduler, OneCycleLR, OneCycleOptions};
use kiln::optim::{Adam, AdamOptions, AdamW, Optimizer};
use kiln::{no_grad, Error, Result, Tensor};
use std::time::Instant;

/// The global batch, split evenly across the ranks.
const GLOBAL_BATCH: usize = 64;

fn main() -> Result<()> {
    dist::init_process_group(Backend::Mpi)?;
    let result = train();
    // Every rank reaches this, even after an error, so MPI finalizes cleanly.
    dist::destroy_process_group()?;
    result
}

fn train() -> Result<()> {
    let (rank, world) = (dist::rank()?, dist::world_size()?);
    let cnn = common::arg_value("--model").as_deref() == Some("cnn");
    if !GLOBAL_BATCH.is_multiple_of(world) {
        return Err(Error::value(
            "digits_ddp",
            format!("the global batch of {GLOBAL_BATCH} does not split evenly over {world} ranks"),
        ));
    }
    let start = Instant::now();
    kiln::manual_seed(0);
    let ((x_train, y_train), (x_test, y_test)) = common::digits_split(kiln::Device::Cpu)?;
    let (n_train, n_test) = (x_train.shape()[0], x_test.shape()[0]);

    // Rank 0's initial weights reach every rank when DDP is built.
    let model: Box<dyn Net> = if cnn {
        Box::new(DistributedDataParallel::new(
            Cnn::new()?,
            DdpOptions::default(),
        )?)
    } else {
        Box::new(DistributedDataParallel::new(
            Mlp::new()?,
            DdpOptions::default(),
        )?)
    };
    let sampler = DistributedSampler::new(n_train, world, rank)?.seed(0);
    let loader = DataLoader::builder(TensorDataset::new((x_train, y_train))?)
        .batch_size(GLOBAL_BATCH / world)
        .sampler(sampler.clone())
        .build()?;
    let epochs = if cnn { 15 } else { 30 };
    if rank == 0 {
        println!(
            "digits_ddp: {} on {world} ranks, {n_train} train / {n_test} test samples, global batch {GLOBAL_BATCH}",
            if cnn { "CNN" } else { "MLP" }
        );
    }

    let mut opt: Box<dyn Optimizer> = if cnn {
        Box::new(AdamW::new(
            model.parameters(),
            AdamOptions {
                lr: 3e-3,
                weight_decay: 0.01,
                ..Default::default()
            },
        )?)
    } else {
        Box::new(Adam::new(
            model.parameters(),
            AdamOptions {
                lr: 1e-3,
                ..Default::default()
            },
        )?)
    };
    let mut sched = if cnn {
        Some(OneCycleLR::new(
            opt.as_mut(),
            OneCycleOptions {
                max_lr: 3e-3,
                total_steps: Some((epochs * loader.len()) as i64),
                ..Default::default()
            },
        )?)
    } else {
        None
    };

    let mut progress = (rank == 0).then(|| common::Progress::new(epochs, loader.len()));
    let mut samples = 0usize;
    let train_start = Instant::now();
    for epoch in 1..=epochs {
        sampler.set_epoch(epoch as u64);
        let (mut total, mut batches) = (0.0, 0);
        for batch in &loader {
            let (x, y) = batch?;
            let loss = F::cross_entropy(&model.forward(&x)?, &y)?;
            opt.zero_grad()?;
            loss.backward()?;
            opt.step()?;
            if let Some(s) = sched.as_mut() {
                s.step(opt.as_mut())?;
            }
            let l = loss.item::<f64>()?;
            total += l;
            batches += 1;
            samples += x.shape()[0] * world;
            if let Some(p) = progress.as_mut() {
                p.batch(epoch, batches, x.shape()[0] * world, l);
            }
        }
        // The epoch's mean loss over every rank's batches.
        let mean = Tensor::from([total / batches as f64]);
        dist::all_reduce(&mean, ReduceOp::Avg)?;
        if let Some(p) = &progress {
            p.println(format!("epoch {epoch:2}  loss {:.4}", mean.item::<f64>()?));
        }
    }
    let train_time = train_start.elapsed().as_secs_f64();
    if let Some(p) = &progress {
        p.finish();
    }

    // Every rank holds the same weights; rank 0 evaluates the module inside DDP (DDP's own
    // forward broadcasts buffers, a collective every rank would have to join).
    if rank == 0 {
        let mut model = model;
        let _guard = no_grad();
        let correct = common::correct(&model.evaluate(&x_test)?, &y_test)?;
        println!(
            "test accuracy {:.2}% ({correct}/{n_test})",
            100.0 * correct as f64 / n_test as f64
        );
        println!(
            "throughput {:.0} samples/s over {world} ranks ({samples} samples in {train_time:.2}s)",
            samples as f64 / train_time
        );
        println!("time {:.2}s", start.elapsed().as_secs_f64());
    }
    Ok(())
}

/// Either DDP-wrapped model, behind one type.
trait Net {
    fn forward(&self, x: &Tensor) -> Result<Tensor>;
    fn parameters(&self) -> Vec<Tensor>;
    /// The wrapped module's output in eval mode, on this rank alone.
    fn evaluate(&mut self, x: &Tensor) -> Result<Tensor>;
}

impl<M: Module + Forward> Net for DistributedDataParallel<M> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Forward::forward(self, x)
    }
    fn parameters(&self) -> Vec<Tensor> {
        Module::parameters(self)
    }
    fn evaluate(&mut self, x: &Tensor) -> Result<Tensor> {
        self.module_mut().eval();
        self.module().forward(x)
    }
}
