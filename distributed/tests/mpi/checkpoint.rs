//! Checkpoints under DDP: rank 0 saves the model and the optimizer, every rank loads them,
//! and training resumes bit for bit where an uninterrupted run goes.

use crate::common::fail;
use kiln::checkpoint;
use kiln_core::{DType, Result, Tensor};
use kiln_distributed::{self as dist, DdpOptions, DistributedDataParallel};
use kiln_nn::{functional as F, Forward, Linear, Module, ReLU, Sequential};
use kiln_optim::{Adam, AdamOptions, Optimizer};

pub const TESTS: &[crate::Test] = &[(
    "checkpoint_saved_by_rank_0_resumes_bit_identically",
    checkpoint_saved_by_rank_0_resumes_bit_identically,
)];

fn model() -> Result<DistributedDataParallel<Sequential>> {
    // Different weights on every rank: DDP starts them all from rank 0's.
    kiln_core::manual_seed(100 + dist::rank()? as u64);
    let net = Sequential::new()
        .add(Linear::new(6, 16)?)
        .add(ReLU)
        .add(Linear::new(16, 3)?);
    DistributedDataParallel::new(net, DdpOptions::default())
}

fn adam(m: &DistributedDataParallel<Sequential>) -> Result<Adam> {
    Adam::new(
        m.parameters(),
        AdamOptions {
            lr: 1e-2,
            ..Default::default()
        },
    )
}

/// This rank's batch of step `step`.
fn batch(step: usize) -> Result<(Tensor, Tensor)> {
    let rank = dist::rank()?;
    kiln_core::manual_seed((1000 * step + rank) as u64);
    let x = Tensor::randn(&[8, 6][..], DType::F32)?;
    let y = Tensor::randint(0, 3, &[8][..], DType::I64)?;
    Ok((x, y))
}

fn train(
    m: &DistributedDataParallel<Sequential>,
    opt: &mut Adam,
    steps: std::ops::Range<usize>,
) -> Result<()> {
    for step in steps {
        let (x, y) = batch(step)?;
        let loss = F::cross_entropy(&m.forward(&x)?, &y)?;
        opt.zero_grad()?;
        loss.backward()?;
        opt.step()?;
    }
    Ok(())
}

fn bits(m: &DistributedDataParallel<Sequential>) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for p in m.parameters() {
        out.extend(p.to_vec::<f32>()?.into_iter().map(f32::to_bits));
    }
    Ok(out)
}

/// A path rank 0 chooses, sent to every rank.
fn shared_dir() -> Result<std::path::PathBuf> {
    let mine = std::env::temp_dir()
        .join(format!("kiln-ddp-checkpoint-{}", std::process::id()))
        .to_string_lossy()
        .into_owned()
        .into_bytes();
    let mut buf = mine.clone();
    buf.resize(256, 0);
    let t = Tensor::from_vec(buf, &[256])?;
    dist::broadcast(&t, 0)?;
    let bytes: Vec<u8> = t
        .to_vec::<u8>()?
        .into_iter()
        .take_while(|&b| b != 0)
        .collect();
    Ok(String::from_utf8_lossy(&bytes).into_owned().into())
}

fn checkpoint_saved_by_rank_0_resumes_bit_identically() -> Result<()> {
    // Uninterrupted: 10 steps.
    let full = model()?;
    let mut opt = adam(&full)?;
    train(&full, &mut opt, 0..10)?;
    let expect = bits(&full)?;

    // Interrupted after 5: rank 0 saves, every rank loads into a fresh model and optimizer.
    let first = model()?;
    let mut opt1 = adam(&first)?;
    train(&first, &mut opt1, 0..5)?;
    let dir = shared_dir()?;
    let (model_path, opt_path) = (dir.join("model.safetensors"), dir.join("adam.safetensors"));
    if dist::rank()? == 0 {
        std::fs::create_dir_all(&dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
        checkpoint::save(&first.state_dict(), &model_path)?;
        checkpoint::save_optimizer(&opt1.state_dict()?, &opt_path)?;
    }
    dist::barrier()?;
    let mut resumed = model()?;
    resumed.load_state_dict(&checkpoint::load(&model_path)?, true)?;
    let mut opt2 = adam(&resumed)?;
    opt2.load_state_dict(&checkpoint::load_optimizer(&opt_path)?)?;
    train(&resumed, &mut opt2, 5..10)?;
    dist::barrier()?;
    if dist::rank()? == 0 {
        let _ = std::fs::remove_dir_all(&dir);
    }
    if bits(&resumed)? != expect {
        return Err(fail(
            "the resumed run's parameters differ from the uninterrupted run's",
        ));
    }
    Ok(())
}
