//! Helpers that backward formulas in derivatives.yaml call, one file per operator family, all
//! re-exported here for the generated code's `use crate::ops::backward::*`. They are built from
//! public, differentiable ops, so a backward pass run under `create_graph` is itself recorded
//! and double backward works.

mod activation;
mod attention;
mod convolution;
mod indexing;
mod linalg;
mod losses;
mod normalization;
mod pointwise;
mod pooling;
mod reducing;
mod shaping;

pub(crate) use activation::*;
pub(crate) use attention::*;
pub(crate) use convolution::*;
pub(crate) use indexing::*;
pub(crate) use linalg::*;
pub(crate) use losses::*;
pub(crate) use normalization::*;
pub(crate) use pointwise::*;
pub(crate) use pooling::*;
pub(crate) use reducing::*;
pub(crate) use shaping::*;

// Helpers that live beside their forward ops.
pub(crate) use crate::ops::embedding::{
    embedding_bag_backward, embedding_bag_per_sample_weights_backward,
};
pub(crate) use crate::ops::indexing::{
    index_backward, index_put_self_backward, index_put_values_backward,
};
pub(crate) use crate::ops::reducing::{extreme_backward, norm_backward};
