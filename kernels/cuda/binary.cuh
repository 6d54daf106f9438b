// Scalar functions of pointwise binary and ternary ops on compute types: the CUDA twins of
// kernels/src/cpu/binary.rs.
namespace binary {
template <typename T> __device__ inline T add(T a, T b, T alpha) { return (T)(a + alpha * b); }
template <typename T> __device__ inline T sub(T a, T b, T alpha) { return (T)(a - alpha * b); }
template <typename T> __device__ inline T mul(T a, T b) { return (T)(a * b); }
__device__ inline bool mul(bool a, bool b) { return a && b; }
template <typename T> __device__ inline T div(T a, T b) { return a / b; }
template <typename T> __device__ inline T pow(T a, T b) { return kiln_pow_any(a, b); }
template <typename T> __device__ inline T pow_scalar(T a, T e) { return kiln_pow_any(a, e); }
template <typename T> __device__ inline T maximum(T a, T b) { return (kiln_isnan(a) || a > b) ? a : b; }
template <typename T> __device__ inline T minimum(T a, T b) { return (kiln_isnan(a) || a < b) ? a : b; }
template <typename T> __device__ inline T clamp(T x, kiln_opt<T> lo, kiln_opt<T> hi) {
  if (kiln_isnan(x)) return x;
  T y = x;
  if (lo.has && y < lo.value) y = lo.value;
  if (hi.has && y > hi.value) y = hi.value;
  return y;
}
template <typename T> __device__ inline T where_cond(bool condition, T a, T b) { return condition ? a : b; }
template <typename T> __device__ inline T masked_fill(T x, bool mask, T value) { return mask ? value : x; }
}  // namespace binary
