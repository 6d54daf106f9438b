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
// Float-only functions (f16/bf16 compute in float): one overload per compute type, calling
// the global CUDA math function (qualified, since these names shadow it in this namespace).
__device__ inline float exp2(float x) { return ::exp2f(x); }
__device__ inline double exp2(double x) { return ::exp2(x); }
__device__ inline float expm1(float x) { return ::expm1f(x); }
__device__ inline double expm1(double x) { return ::expm1(x); }
__device__ inline float log2(float x) { return ::log2f(x); }
__device__ inline double log2(double x) { return ::log2(x); }
__device__ inline float log10(float x) { return ::log10f(x); }
__device__ inline double log10(double x) { return ::log10(x); }
__device__ inline float tan(float x) { return ::tanf(x); }
__device__ inline double tan(double x) { return ::tan(x); }
__device__ inline float asin(float x) { return ::asinf(x); }
__device__ inline double asin(double x) { return ::asin(x); }
__device__ inline float acos(float x) { return ::acosf(x); }
__device__ inline double acos(double x) { return ::acos(x); }
__device__ inline float atan(float x) { return ::atanf(x); }
__device__ inline double atan(double x) { return ::atan(x); }
__device__ inline float sinh(float x) { return ::sinhf(x); }
__device__ inline double sinh(double x) { return ::sinh(x); }
__device__ inline float cosh(float x) { return ::coshf(x); }
__device__ inline double cosh(double x) { return ::cosh(x); }
__device__ inline float asinh(float x) { return ::asinhf(x); }
__device__ inline double asinh(double x) { return ::asinh(x); }
__device__ inline float acosh(float x) { return ::acoshf(x); }
__device__ inline double acosh(double x) { return ::acosh(x); }
__device__ inline float atanh(float x) { return ::atanhf(x); }
__device__ inline double atanh(double x) { return ::atanh(x); }
__device__ inline float erfc(float x) { return ::erfcf(x); }
__device__ inline double erfc(double x) { return ::erfc(x); }
__device__ inline float trunc_f(float x) { return ::truncf(x); }
__device__ inline double trunc_f(double x) { return ::trunc(x); }
template <typename T> __device__ inline T reciprocal(T x) { return (T)1 / x; }
template <typename T> __device__ inline T frac(T x) { return x - trunc_f(x); }
// Rounding: the identity on integers.
template <typename T> __device__ inline T floor(T x) { return x; }
template <typename T> __device__ inline T ceil(T x) { return x; }
template <typename T> __device__ inline T trunc(T x) { return x; }
template <typename T> __device__ inline T round(T x) { return x; }
__device__ inline float floor(float x) { return ::floorf(x); }
__device__ inline double floor(double x) { return ::floor(x); }
__device__ inline float ceil(float x) { return ::ceilf(x); }
__device__ inline double ceil(double x) { return ::ceil(x); }
__device__ inline float trunc(float x) { return ::truncf(x); }
__device__ inline double trunc(double x) { return ::trunc(x); }
__device__ inline float round(float x) { return ::rintf(x); }  // halves to even
__device__ inline double round(double x) { return ::rint(x); }
template <typename T> __device__ inline T square(T x) { return (T)(x * x); }
template <typename T> __device__ inline T leaky_relu(T x, T negative_slope) { return x > (T)0 ? x : x * negative_slope; }
template <typename T> __device__ inline T hardtanh(T x, T min_val, T max_val) {
  return x <= min_val ? min_val : (x >= max_val ? max_val : x);
}
template <typename T> __device__ inline T elu(T x, T alpha, T scale, T input_scale) {
  return (x > (T)0 || x != x) ? x * scale : expm1(x * input_scale) * alpha * scale;
}
template <typename T> __device__ inline T softplus(T x, T beta, T threshold) {
  T z = x * beta;
  return z > threshold ? x : kiln_log1p(kiln_exp(z)) / beta;
}
template <typename T> __device__ inline T hardsigmoid(T x) {
  T y = x + (T)3;
  y = y < (T)0 ? (T)0 : y;
  y = y > (T)6 ? (T)6 : y;
  return y / (T)6;
}
template <typename T> __device__ inline T hardswish(T x) { return x * hardsigmoid(x); }
template <typename T> __device__ inline T mish(T x) { return x * kiln_tanh(kiln_log1p(kiln_exp(x))); }
__device__ inline float erfinv(float x) { return ::erfinvf(x); }
__device__ inline double erfinv(double x) { return ::erfinv(x); }
template <typename T> __device__ inline T bitwise_not(T x) { return (T)(~x); }
__device__ inline bool bitwise_not(bool x) { return !x; }
}  // namespace unary
