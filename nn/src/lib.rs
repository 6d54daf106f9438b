//! kiln's `nn` (PyTorch's `torch.nn`): the [`Module`] trait and its derive, containers,
//! layers, losses, initialisation and the functional API. Used as `kiln::nn`.
//!
//! ```
//! use kiln_nn::{Forward, Linear, Module};
//! let fc = Linear::new(4, 2)?;
//! let y = fc.forward(&kiln_core::Tensor::ones(&[3, 4], kiln_core::DType::F32)?)?;
//! assert_eq!(y.shape(), &[3, 2]);
//! assert_eq!(fc.state_dict().keys().collect::<Vec<_>>(), ["weight", "bias"]);
//! # Ok::<(), kiln_core::Error>(())
//! ```
//!
//! Layers carry PyTorch's names, parameter and buffer names (so `state_dict` keys match
//! PyTorch's) and default initialisation. Constructors: `Layer::new(required…)` builds
//! PyTorch's default float32 layer. Layers that allocate parameters take the rest through
//! `with_options`: a few positional arguments for small layers (`Linear`, `Bilinear`,
//! `GroupNorm`, `RMSNorm`, `PReLU`), or an options struct with chainable setters named after
//! PyTorch's keyword arguments where there are many (`ConvOptions`, `ConvTransposeOptions`,
//! `BatchNormOptions`, `EmbeddingOptions`). Parameterless layers (pooling, losses) take
//! setters on the layer itself: `MaxPool2d::new(3).stride(2)`,
//! `CrossEntropyLoss::new().label_smoothing(0.1)`. Layers with one tensor in and out
//! implement [`Forward`]; `Bilinear` and the losses have an inherent two-argument `forward`
//! (three for `MarginRankingLoss`, `CosineEmbeddingLoss`, `TripletMarginLoss`,
//! `GaussianNLLLoss`).

/// Builder-style setters named after PyTorch's keyword arguments: `setters!(margin: f64)`
/// writes `pub fn margin(mut self, margin: f64) -> Self`.
macro_rules! setters {
    ($($name:ident: $ty:ty),+ $(,)?) => {$(
        pub fn $name(mut self, $name: $ty) -> Self {
            self.$name = $name;
            self
        }
    )+};
}

pub(crate) use setters;

pub mod activation;
pub mod attention;
pub mod bilinear;
pub mod container;
pub mod conv;
pub mod dropout;
pub mod embedding;
pub mod functional;
pub mod hooks;
pub mod init;
/// The path `LayerNorm` had before it joined [`normalization`]; kept for existing code.
pub mod layer_norm {
    pub use crate::normalization::LayerNorm;
}
mod batch_norm_sync;
pub mod linear;
pub mod loss;
pub mod module;
pub mod normalization;
pub use batch_norm_sync::BatchNormSync;
pub mod pooling;
pub mod rnn;
pub mod shape;
pub mod state_dict;
pub mod transformer;

pub use activation::{
    GeluApproximate, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid,
    LogSoftmax, Mish, PReLU, ReLU, ReLU6, SiLU, Sigmoid, Softmax, Softmin, Softplus, Softshrink,
    Softsign, Tanh, Tanhshrink, Threshold, CELU, ELU, GELU, GLU, SELU,
};
pub use attention::{AttentionArgs, MultiheadAttention, MultiheadAttentionOptions};
pub use bilinear::Bilinear;
pub use container::{Layer, ModuleDict, ModuleList, Sequential};
pub use conv::{
    Conv, Conv1d, Conv2d, Conv3d, ConvOptions, ConvTranspose, ConvTranspose1d, ConvTranspose2d,
    ConvTransposeOptions, IntoSize, Padding, PaddingMode,
};
pub use dropout::{Dropout, Dropout1d, Dropout2d, Dropout3d};
pub use embedding::{Embedding, EmbeddingOptions};
pub use hooks::{Hooked, Hooks, RemovableHandle};
pub use kiln_core::Result;
pub use kiln_macros::Module;
pub use linear::Linear;
pub use loss::{
    BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, KLDivReduction, L1Loss,
    MSELoss, NLLLoss, Reduction, SmoothL1Loss,
};
pub use loss::{
    CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss, MarginRankingLoss,
    MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, PoissonNLLLoss,
    SoftMarginLoss, TripletMarginLoss,
};
pub use module::{
    BufferField, Forward, Module, ModuleField, StateDictWalk, TensorKind, Visitor, VisitorMut,
};
pub use normalization::{
    BatchNorm, BatchNorm1d, BatchNorm2d, BatchNorm3d, BatchNormOptions, GroupNorm, LayerNorm,
    RMSNorm,
};
pub use pooling::{
    AdaptiveAvgPool, AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool, AdaptiveMaxPool1d,
    AdaptiveMaxPool2d, AvgPool, AvgPool1d, AvgPool2d, MaxPool, MaxPool1d, MaxPool2d,
};
pub use rnn::{GRUCell, LSTMCell, RNNCell, RnnNonlinearity, RnnOptions, GRU, LSTM, RNN};
pub use shape::{Flatten, Identity, Unflatten};
pub use state_dict::{IncompatibleKeys, StateDict};
pub use transformer::{
    generate_square_subsequent_mask, Activation, DecoderArgs, Transformer, TransformerArgs,
    TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
    TransformerLayerOptions,
};
