//! kiln's `optim` (PyTorch's `torch.optim`): optimizers, learning-rate schedulers and
//! gradient clipping. Used as `kiln::optim`.
