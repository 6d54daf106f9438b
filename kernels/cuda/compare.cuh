// Comparisons on compute types: the CUDA twins of kernels/src/cpu/compare.rs.
namespace compare {
template <typename T> __device__ inline bool eq(T a, T b) { return a == b; }
template <typename T> __device__ inline bool ne(T a, T b) { return a != b; }
template <typename T> __device__ inline bool lt(T a, T b) { return a < b; }
template <typename T> __device__ inline bool le(T a, T b) { return a <= b; }
template <typename T> __device__ inline bool gt(T a, T b) { return a > b; }
template <typename T> __device__ inline bool ge(T a, T b) { return a >= b; }
template <typename T> __device__ inline bool isnan(T x) { return x != x; }
// x - x is NaN exactly for NaN and the infinities; integers never get there.
template <typename T> __device__ inline bool isinf(T x) { return x == x && x - x != x - x; }
__device__ inline bool isinf(bool) { return false; }
template <typename T> __device__ inline bool isfinite(T x) { return !isnan(x) && !isinf(x); }
template <typename T> __device__ inline bool logical_not(T x) { return x == (T)0; }
template <typename T> __device__ inline bool logical_and(T a, T b) { return a != (T)0 && b != (T)0; }
template <typename T> __device__ inline bool logical_or(T a, T b) { return a != (T)0 || b != (T)0; }
template <typename T> __device__ inline bool logical_xor(T a, T b) { return (a != (T)0) != (b != (T)0); }
}  // namespace compare
