//! The names most programs use, in one import: `use kiln::prelude::*;`.
//!
//! ```
//! use kiln::prelude::*;
//!
//! manual_seed(0);
//! let x = Tensor::randn([4, 3], DType::F32)?;
//! let y = (&x * 2.0 - 1.0).view([2, -1])?; // (x * 2 - 1).view(2, -1)
//! assert_eq!(y.i(s![.., ..;2])?.shape(), &[2, 3]); // y[:, ::2]
//! let lin = Linear::new(3, 2)?;
//! let _out = lin.forward(&x)?;
//! let _g = no_grad();
//! # Ok::<(), kiln::Error>(())
//! ```
//!
//! It holds the core ([`Tensor`], [`DType`], [`Device`], [`Result`], [`Error`] and its
//! [`ErrorKind`], [`no_grad`],
//! [`enable_grad`], [`manual_seed`], the size-list trait [`IntoDims`], the indexing items
//! [`s!`], [`NewAxis`], [`Ellipsis`], [`TensorIndexer`]) and from `nn` the [`Module`] trait
//! and derive, [`Forward`], [`Linear`] and [`Sequential`].

pub use crate::nn::{Forward, Linear, Module, Sequential};
pub use kiln_core::{
    enable_grad, manual_seed, no_grad, s, DType, Device, Ellipsis, Error, ErrorKind, IntoDims,
    NewAxis, Result, Tensor, TensorIndexer,
};
