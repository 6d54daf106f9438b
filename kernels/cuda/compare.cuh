// Comparisons on compute types: the CUDA twins of kernels/src/cpu/compare.rs.
namespace compare {
template <typename T> __device__ inline bool eq(T a, T b) { return a == b; }
template <typename T> __device__ inline bool ne(T a, T b) { return a != b; }
template <typename T> __device__ inline bool lt(T a, T b) { return a < b; }
template <typename T> __device__ inline bool le(T a, T b) { return a <= b; }
template <typename T> __device__ inline bool gt(T a, T b) { return a > b; }
template <typename T> __device__ inline bool ge(T a, T b) { return a >= b; }
}  // namespace compare
