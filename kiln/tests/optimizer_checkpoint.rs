//! Saving a model and its optimizer mid-training and resuming from the files continues
//! exactly as the uninterrupted run (`kiln::checkpoint`).

use kiln::nn::{Forward, Linear, Module};
use kiln::optim::{Adam, AdamOptions, Optimizer};
use kiln::{DType, Tensor};

fn step(model: &Linear, opt: &mut Adam, x: &Tensor) -> kiln::Result<()> {
    opt.zero_grad()?;
    let y = model.forward(x)?;
    y.mul(&y)?.mean()?.backward()?;
    opt.step()
}

#[test]
fn resumed_training_matches_the_uninterrupted_run() -> kiln::Result<()> {
    kiln::manual_seed(3);
    let dir = std::env::temp_dir().join(format!("kiln-ckpt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let x = Tensor::randn([8, 3], DType::F32)?;
    let opts = AdamOptions {
        lr: 0.05,
        amsgrad: true,
        ..Default::default()
    };
    let model = Linear::new(3, 2)?;
    let mut opt = Adam::new(model.parameters(), opts.clone())?;
    for _ in 0..3 {
        step(&model, &mut opt, &x)?;
    }
    kiln::checkpoint::save(&model.state_dict(), dir.join("model.safetensors"))?;
    kiln::checkpoint::save_optimizer(&opt.state_dict()?, dir.join("adam.safetensors"))?;
    for _ in 0..2 {
        step(&model, &mut opt, &x)?;
    }

    let mut resumed = Linear::new(3, 2)?;
    resumed.load_state_dict(
        &kiln::checkpoint::load(dir.join("model.safetensors"))?,
        true,
    )?;
    let mut opt2 = Adam::new(resumed.parameters(), opts)?;
    opt2.load_state_dict(&kiln::checkpoint::load_optimizer(
        dir.join("adam.safetensors"),
    )?)?;
    for _ in 0..2 {
        step(&resumed, &mut opt2, &x)?;
    }
    for ((k, a), (_, b)) in model.state_dict().iter().zip(resumed.state_dict().iter()) {
        assert_eq!(a.to_vec::<f32>()?, b.to_vec::<f32>()?, "{k}");
    }

    // A truncated optimizer file is an error, not a panic.
    let bytes = std::fs::read(dir.join("adam.safetensors")).unwrap();
    std::fs::write(dir.join("cut.safetensors"), &bytes[..bytes.len() / 2]).unwrap();
    assert!(kiln::checkpoint::load_optimizer(dir.join("cut.safetensors")).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
    Ok(())
}
