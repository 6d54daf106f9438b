// Scalar functions of pointwise unary ops on compute types: the CUDA twins of
// kernels/src/cpu/unary.rs. The generated kernel for an op with `CUDA: unary::<name>` calls
// `unary::<name>` once per element.
namespace unary {
template <typename T> __device__ inline T neg(T x) { return (T)(-x); }
template <typename T> __device__ inline T abs(T x) { return x < (T)0 ? (T)(-x) : x; }
template <typename T> __device__ inline T exp(T x) { return kiln_exp(x); }
template <typename T> __device__ inline T log(T x) { return kiln_log(x); }
template <typename T> __device__ inline T log1p(T x) { return kiln_log1p(x); }
template <typename T> __device__ inline T sqrt(T x) { return kiln_sqrt(x); }
template <typename T> __device__ inline T rsqrt(T x) { return (T)1 / kiln_sqrt(x); }
template <typename T> __device__ inline T sin(T x) { return kiln_sin(x); }
template <typename T> __device__ inline T cos(T x) { return kiln_cos(x); }
template <typename T> __device__ inline T tanh(T x) { return kiln_tanh(x); }
template <typename T> __device__ inline T sigmoid(T x) { return (T)1 / ((T)1 + kiln_exp(-x)); }
template <typename T> __device__ inline T relu(T x) { return x < (T)0 ? (T)0 : x; }
template <typename T> __device__ inline T gelu(T x, const KilnStr& approximate) {
  if (kiln_str_eq(approximate, "tanh")) {
    const T k = (T)0.7978845608028654;  // sqrt(2/pi)
    T inner = k * (x + (T)0.044715 * x * x * x);
    return (T)0.5 * x * ((T)1 + kiln_tanh(inner));
  }
  return (T)0.5 * x * ((T)1 + kiln_erf(x * (T)0.7071067811865476));
}
template <typename T> __device__ inline T silu(T x) { return x * sigmoid(x); }
template <typename T> __device__ inline T erf(T x) { return kiln_erf(x); }
template <typename T> __device__ inline T sign(T x) {
  return x > (T)0 ? (T)1 : (x < (T)0 ? (T)(-1) : x);
}
__device__ inline bool sign(bool x) { return x; }
__device__ inline bool abs(bool x) { return x; }
}  // namespace unary
