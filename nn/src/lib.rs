//! kiln's `nn` (PyTorch's `torch.nn`): the [`Module`] trait and its derive, containers,
//! layers, losses, initialisation and the functional API. Used as `kiln::nn`.
//!
//! ```
//! use kiln_nn::{Forward, Linear, Module};
//! let fc = Linear::new(4, 2)?;
//! let y = fc.forward(&kiln::Tensor::ones(&[3, 4], kiln::DType::F32)?)?;
//! assert_eq!(y.shape(), &[3, 2]);
//! assert_eq!(fc.state_dict().keys().collect::<Vec<_>>(), ["weight", "bias"]);
//! # Ok::<(), kiln::Error>(())
//! ```

pub mod attention;
pub mod container;
pub mod dropout;
pub mod init;
pub mod layer_norm;
pub mod linear;
pub mod module;
pub mod rnn;
pub mod state_dict;
pub mod transformer;

pub use attention::{AttentionArgs, MultiheadAttention, MultiheadAttentionOptions};
pub use container::{Layer, ModuleDict, ModuleList, Sequential};
pub use dropout::{Dropout, Dropout1d, Dropout2d, Dropout3d};
pub use kiln::Result;
pub use kiln_macros::Module;
pub use layer_norm::LayerNorm;
pub use linear::Linear;
pub use module::{BufferField, Forward, Module, ModuleField, TensorKind, Visitor, VisitorMut};
pub use rnn::{GRUCell, LSTMCell, RNNCell, RnnNonlinearity, RnnOptions, GRU, LSTM, RNN};
pub use state_dict::{IncompatibleKeys, StateDict};
pub use transformer::{
    generate_square_subsequent_mask, Activation, DecoderArgs, Transformer, TransformerArgs,
    TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
    TransformerLayerOptions,
};
