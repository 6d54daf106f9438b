//! kiln's `data` (PyTorch's `torch.utils.data`): datasets and the `DataLoader`. Used as
//! `kiln::data`.
