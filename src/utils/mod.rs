//! PyTorch's `torch.utils` that belong in the core: activation checkpointing.

pub mod checkpoint;

pub use checkpoint::{checkpoint, checkpoint_one, checkpoint_sequential, CheckpointFn, SegmentFn};
