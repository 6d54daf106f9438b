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
template <typename T> __device__ inline T threshold_backward(T grad, T x, T threshold) { return x <= threshold ? (T)0 : grad; }
__device__ inline float atan2(float a, float b) { return ::atan2f(a, b); }
__device__ inline double atan2(double a, double b) { return ::atan2(a, b); }
__device__ inline float hypot(float a, float b) { return ::hypotf(a, b); }
__device__ inline double hypot(double a, double b) { return ::hypot(a, b); }
template <typename T> __device__ inline T logaddexp(T a, T b) {
  if (a == b && a + a == a && a != (T)0) return a;  // equal infinities
  T hi = (a > b || kiln_isnan(b)) ? a : b;
  T lo = (a > b || kiln_isnan(b)) ? b : a;
  return hi + kiln_log1p(kiln_exp(lo - hi));
}
template <typename T> __device__ inline T fmod(T a, T b) { return b == (T)0 ? (T)0 : (T)(a % b); }
__device__ inline float fmod(float a, float b) { return ::fmodf(a, b); }
__device__ inline double fmod(double a, double b) { return ::fmod(a, b); }
template <typename T> __device__ inline T remainder(T a, T b) {
  T r = fmod(a, b);
  return (r != (T)0 && ((r < (T)0) != (b < (T)0))) ? (T)(r + b) : r;
}
__device__ inline unsigned char remainder(unsigned char a, unsigned char b) { return fmod(a, b); }
__device__ inline float copysign(float a, float b) { return ::copysignf(a, b); }
__device__ inline double copysign(double a, double b) { return ::copysign(a, b); }
template <typename T> __device__ inline T bitwise_and(T a, T b) { return (T)(a & b); }
__device__ inline bool bitwise_and(bool a, bool b) { return a && b; }
template <typename T> __device__ inline T bitwise_or(T a, T b) { return (T)(a | b); }
__device__ inline bool bitwise_or(bool a, bool b) { return a || b; }
template <typename T> __device__ inline T bitwise_xor(T a, T b) { return (T)(a ^ b); }
__device__ inline bool bitwise_xor(bool a, bool b) { return a != b; }
// Shift counts outside 0..bits: 0 for a left shift, the sign fill for a right shift.
template <typename T> __device__ inline T bitwise_left_shift(T a, T b) {
  long long bits = 8 * (long long)sizeof(T), n = (long long)b;
  return (n < 0 || n >= bits) ? (T)0 : (T)(a << n);
}
template <typename T> __device__ inline T bitwise_right_shift(T a, T b) {
  long long bits = 8 * (long long)sizeof(T), n = (long long)b;
  if (n < 0 || n >= bits) return ((T)-1 > (T)0) ? (T)0 : (T)(a >> (bits - 1));
  return (T)(a >> n);
}
}  // namespace binary
