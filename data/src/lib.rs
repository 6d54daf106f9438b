//! kiln's `data` (PyTorch's `torch.utils.data`): datasets, the `DataLoader`, and
//! safetensors checkpoints. Used as `kiln::data`.
//!
//! - [`Dataset`] (map-style, `len` + `get`) and [`IterableDataset`] (a stream);
//!   [`TensorDataset`], [`Subset`], [`random_split`].
//! - [`DataLoader`]: batches, shuffling from a seeded [`kiln::Generator`](kiln_core::Generator), `drop_last`,
//!   a `collate_fn`, and worker threads with a bounded prefetch queue.
//! - [`Sampler`]s, the order of an epoch's indices: [`SequentialSampler`], [`RandomSampler`],
//!   and [`DistributedSampler`] (one process's share of the data), given to a loader with
//!   [`DataLoaderBuilder::sampler`].
//! - [`safetensors`]: `save_file`/`load_file` of a [`kiln_nn::StateDict`], as
//!   `safetensors.torch` does, readable by PyTorch and from files it wrote.

pub mod collate;
pub mod dataloader;
pub mod dataset;
pub mod safetensors;
pub mod sampler;

pub use collate::{default_collate, Collate, CollateFn, DefaultCollate};
pub use dataloader::{DataLoader, DataLoaderBuilder, DataLoaderIter, IterableDataLoader};
pub use dataset::{
    random_split, Dataset, IterableDataset, Lengths, Subset, TensorDataset, Tensors,
};
pub use kiln_core::Result;
pub use sampler::{DistributedSampler, RandomSampler, Sampler, SequentialSampler};
