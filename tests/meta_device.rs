//! The meta device: a ResNet-50 (torchvision's layout, 25.6M parameters) runs forward on
//! meta tensors without allocating a single CPU buffer, and gives the shapes the CPU gives.
//! The tests read a process-wide allocation counter, so they hold `SERIAL` to run one at a
//! time (and this binary has no other tests).

use kiln::nn::{BatchNorm2d, Conv2d, ConvOptions, Forward, Linear, MaxPool2d, Module};
use kiln::{DType, Device, Result, Tensor};

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// torchvision's `Bottleneck`: 1×1 down, 3×3 (with the stride), 1×1 up ×4, plus shortcut.
#[derive(Module)]
struct Bottleneck {
    conv1: Conv2d,
    bn1: BatchNorm2d,
    conv2: Conv2d,
    bn2: BatchNorm2d,
    conv3: Conv2d,
    bn3: BatchNorm2d,
    down_conv: Option<Conv2d>,
    down_bn: Option<BatchNorm2d>,
}

fn conv(cin: usize, cout: usize, k: usize, stride: usize) -> Result<Conv2d> {
    let options = ConvOptions::default()
        .stride(stride)
        .padding(k / 2)
        .bias(false);
    Conv2d::with_options(cin, cout, k, options)
}

impl Bottleneck {
    fn new(cin: usize, width: usize, stride: usize) -> Result<Self> {
        let cout = width * 4;
        let shortcut = stride != 1 || cin != cout;
        Ok(Bottleneck {
            conv1: conv(cin, width, 1, 1)?,
            bn1: BatchNorm2d::new(width)?,
            conv2: conv(width, width, 3, stride)?,
            bn2: BatchNorm2d::new(width)?,
            conv3: conv(width, cout, 1, 1)?,
            bn3: BatchNorm2d::new(cout)?,
            down_conv: if shortcut {
                Some(conv(cin, cout, 1, stride)?)
            } else {
                None
            },
            down_bn: if shortcut {
                Some(BatchNorm2d::new(cout)?)
            } else {
                None
            },
        })
    }
}

impl Forward for Bottleneck {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let out = self.bn1.forward(&self.conv1.forward(x)?)?.relu()?;
        let out = self.bn2.forward(&self.conv2.forward(&out)?)?.relu()?;
        let out = self.bn3.forward(&self.conv3.forward(&out)?)?;
        let identity = match (&self.down_conv, &self.down_bn) {
            (Some(c), Some(b)) => b.forward(&c.forward(x)?)?,
            _ => x.clone(),
        };
        out.add(&identity)?.relu()
    }
}

#[derive(Module)]
struct ResNet50 {
    conv1: Conv2d,
    bn1: BatchNorm2d,
    maxpool: MaxPool2d,
    blocks: Vec<Bottleneck>,
    fc: Linear,
}

impl ResNet50 {
    fn new(classes: usize) -> Result<Self> {
        let stem = ConvOptions::default().stride(2).padding(3).bias(false);
        let mut blocks = Vec::new();
        let mut cin = 64;
        for (i, (width, n)) in [(64, 3), (128, 4), (256, 6), (512, 3)]
            .into_iter()
            .enumerate()
        {
            for j in 0..n {
                let stride = if i > 0 && j == 0 { 2 } else { 1 };
                blocks.push(Bottleneck::new(cin, width, stride)?);
                cin = width * 4;
            }
        }
        Ok(ResNet50 {
            conv1: Conv2d::with_options(3, 64, 7, stem)?,
            bn1: BatchNorm2d::new(64)?,
            maxpool: MaxPool2d::new(3).stride(2).padding(1),
            blocks,
            fc: Linear::new(2048, classes)?,
        })
    }
}

impl Forward for ResNet50 {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.bn1.forward(&self.conv1.forward(x)?)?.relu()?;
        let mut x = self.maxpool.forward(&x)?;
        for block in &self.blocks {
            x = block.forward(&x)?;
        }
        self.fc.forward(&x.mean_dim(&[2, 3])?)
    }
}

#[test]
fn resnet50_forward_on_meta_allocates_nothing_and_gives_the_cpu_shapes() -> Result<()> {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut model = ResNet50::new(1000)?;
    assert_eq!(model.num_parameters(), 25_557_032); // torchvision's resnet50
                                                    // The CPU's answer on a small input, for the shapes (and the autograd record).
    let small = Tensor::randn([1, 3, 64, 64], DType::F32)?.requires_grad_(true)?;
    let cpu_out = model.forward(&small)?;

    model.to_device(Device::Meta)?;
    assert!(model
        .parameters()
        .iter()
        .all(|p| p.device() == Device::Meta));
    let x = Tensor::empty_on([64, 3, 224, 224], DType::F32, Device::Meta)?;
    let small_meta = small.to_device(Device::Meta)?;

    let before = kiln::cpu::allocation_count();
    let out = model.forward(&x)?;
    let out_small = model.forward(&small_meta)?;
    let loss = out.sum()?;
    assert_eq!(
        kiln::cpu::allocation_count(),
        before,
        "a forward pass on meta allocated CPU memory"
    );

    assert_eq!(out.shape(), &[64, 1000]);
    assert_eq!(out.device(), Device::Meta);
    assert_eq!(out.dtype(), DType::F32);
    assert_eq!(out_small.shape(), cpu_out.shape());
    assert_eq!(out_small.strides(), cpu_out.strides());
    // Autograd records on meta as on the CPU.
    assert_eq!(
        out.grad_fn().map(|f| f.name().to_string()),
        cpu_out.grad_fn().map(|f| f.name().to_string())
    );
    assert!(loss.grad_fn().is_some());
    // Reading a meta tensor's values is PyTorch's error, not a panic.
    let err = out.to_vec::<f32>().unwrap_err();
    assert!(
        err.to_string()
            .contains("Cannot copy out of meta tensor; no data!"),
        "{err}"
    );
    let err = loss.item::<f32>().unwrap_err();
    assert!(
        err.to_string().contains("cannot be called on meta tensors"),
        "{err}"
    );

    // Materialise: new CPU memory of the right shapes, ready for a checkpoint.
    model.to_empty(Device::Cpu)?;
    assert!(model.parameters().iter().all(|p| p.device() == Device::Cpu));
    assert_eq!(model.num_parameters(), 25_557_032);
    Ok(())
}

/// Factories take a device: on meta `arange_on` runs arange's checks and gives its shape,
/// allocating nothing; its errors are the CPU's.
#[test]
fn arange_on_meta_has_the_cpu_shape_and_errors() -> Result<()> {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = kiln::cpu::allocation_count();
    let m = Tensor::arange_on(0, 10, 3, DType::I64, Device::Meta)?;
    assert_eq!(kiln::cpu::allocation_count(), before);
    assert_eq!(
        (m.shape(), m.dtype(), m.device()),
        (&[4][..], DType::I64, Device::Meta)
    );
    // 0, 3, 6, 9: four values, as PyTorch's ceil((end - start) / step).
    assert_eq!(
        Tensor::arange(0, 10, 3, DType::I64)?.to_vec::<i64>()?,
        vec![0, 3, 6, 9]
    );
    let cpu = Tensor::arange(0, 1, 0, DType::F32).unwrap_err();
    let meta = Tensor::arange_on(0, 1, 0, DType::F32, Device::Meta).unwrap_err();
    assert_eq!(meta.to_string(), cpu.to_string());
    assert_eq!(meta.kind(), kiln::ErrorKind::Value);
    Ok(())
}

/// `copy_` takes a source on another device (as PyTorch's): into a meta tensor from the CPU
/// it checks the broadcast and allocates nothing; out of a meta tensor there is no data.
#[test]
fn copy_into_meta_from_the_cpu_and_not_back() -> Result<()> {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let m = Tensor::empty_on([2, 3], DType::F64, Device::Meta)?;
    let row = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
    let before = kiln::cpu::allocation_count();
    m.copy_(&row)?;
    assert_eq!(kiln::cpu::allocation_count(), before);
    assert_eq!((m.shape(), m.device()), (&[2, 3][..], Device::Meta));
    let e = m
        .copy_(&Tensor::zeros([4], DType::F32)?)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("copy_") && e.contains("must match the size"),
        "{e}"
    );
    let cpu = Tensor::zeros([2, 3], DType::F64)?;
    let e = cpu.copy_(&m).unwrap_err().to_string();
    assert!(
        e.contains("copy_") && e.contains("Cannot copy out of meta tensor"),
        "{e}"
    );
    Ok(())
}
