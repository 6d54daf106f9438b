// kiln's CUDA prelude: element types, conversions, strided addressing. Every generated
// module starts with this text; NVRTC compiles it without any CUDA header, so a machine
// needs only the NVRTC library (no toolkit) to build kiln's kernels.

// 16-bit floats are stored as raw bits and computed in float, as kiln's CPU kernels do.
struct kiln_f16 { unsigned short bits; };
struct kiln_bf16 { unsigned short bits; };

// Tensor operands: device address (storage offset already applied), sizes and element
// strides. 25 dims is PyTorch's CUDA limit (MAX_DIMS in OffsetCalculator).
#define KILN_MAX_DIMS 25
struct KilnTensor {
  unsigned long long data;
  int ndim;
  long long sizes[KILN_MAX_DIMS];
  long long strides[KILN_MAX_DIMS];
};

// An optional scalar argument (`Scalar?`).
template <typename T> struct kiln_opt { bool has; T value; };
// A string argument, at most 15 bytes plus the terminating zero.
struct KilnStr { char s[16]; };

__device__ inline bool kiln_str_eq(const KilnStr& a, const char* b) {
  int i = 0;
  for (; i < 15 && b[i] != 0; ++i) if (a.s[i] != b[i]) return false;
  return a.s[i] == 0 && b[i] == 0;
}

// The element offset of the i-th element in row-major order.
__device__ inline long long kiln_offset(const KilnTensor& t, long long i) {
  long long off = 0;
  for (int d = t.ndim - 1; d >= 0; --d) {
    long long s = t.sizes[d];
    long long q = i / s;
    off += (i - q * s) * t.strides[d];
    i = q;
  }
  return off;
}

// Grid-stride loop over n elements.
#define KILN_FOR(i, n) \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (long long)gridDim.x * blockDim.x)

// ---- 16-bit float conversions (round to nearest even, NaN stays NaN) ----
__device__ inline float kiln_f16_to_f32(kiln_f16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
}
__device__ inline kiln_f16 kiln_f32_to_f16(float f) {
  kiln_f16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
  return h;
}
__device__ inline float kiln_bf16_to_f32(kiln_bf16 h) {
  return __int_as_float(((unsigned int)h.bits) << 16);
}
__device__ inline kiln_bf16 kiln_f32_to_bf16(float f) {
  unsigned int u = __float_as_uint(f);
  kiln_bf16 h;
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    h.bits = (unsigned short)((u >> 16) | 0x40u);  // quiet NaN
  } else {
    u += 0x7fffu + ((u >> 16) & 1u);
    h.bits = (unsigned short)(u >> 16);
  }
  return h;
}

// ---- widen (storage type -> compute type) and narrow (compute -> storage) ----
template <typename T> struct kiln_compute { typedef T type; };
template <> struct kiln_compute<kiln_f16> { typedef float type; };
template <> struct kiln_compute<kiln_bf16> { typedef float type; };

template <typename T> __device__ inline T kiln_widen(T x) { return x; }
__device__ inline float kiln_widen(kiln_f16 x) { return kiln_f16_to_f32(x); }
__device__ inline float kiln_widen(kiln_bf16 x) { return kiln_bf16_to_f32(x); }

// Converts any compute value to storage type To (bool: nonzero is true, as in PyTorch).
template <typename To> struct kiln_narrow_t {
  template <typename From> __device__ static To go(From x) { return (To)x; }
};
template <> struct kiln_narrow_t<bool> {
  template <typename From> __device__ static bool go(From x) { return x != (From)0; }
};
template <> struct kiln_narrow_t<kiln_f16> {
  template <typename From> __device__ static kiln_f16 go(From x) { return kiln_f32_to_f16((float)x); }
};
template <> struct kiln_narrow_t<kiln_bf16> {
  template <typename From> __device__ static kiln_bf16 go(From x) { return kiln_f32_to_bf16((float)x); }
};
template <typename To, typename From> __device__ inline To kiln_cast(From x) {
  return kiln_narrow_t<To>::go(kiln_widen(x));
}

template <typename T> __device__ inline T kiln_load(const KilnTensor& t, long long i) {
  return ((const T*)t.data)[kiln_offset(t, i)];
}
template <typename T> __device__ inline void kiln_store(const KilnTensor& t, long long i, T v) {
  ((T*)t.data)[kiln_offset(t, i)] = v;
}

// ---- math on compute types (float, double; integers where meaningful) ----
template <typename T> __device__ inline bool kiln_isnan(T x) { return x != x; }
__device__ inline float kiln_exp(float x) { return expf(x); }
__device__ inline double kiln_exp(double x) { return exp(x); }
__device__ inline float kiln_log(float x) { return logf(x); }
__device__ inline double kiln_log(double x) { return log(x); }
__device__ inline float kiln_log1p(float x) { return log1pf(x); }
__device__ inline double kiln_log1p(double x) { return log1p(x); }
__device__ inline float kiln_sqrt(float x) { return sqrtf(x); }
__device__ inline double kiln_sqrt(double x) { return sqrt(x); }
__device__ inline float kiln_sin(float x) { return sinf(x); }
__device__ inline double kiln_sin(double x) { return sin(x); }
__device__ inline float kiln_cos(float x) { return cosf(x); }
__device__ inline double kiln_cos(double x) { return cos(x); }
__device__ inline float kiln_tanh(float x) { return tanhf(x); }
__device__ inline double kiln_tanh(double x) { return tanh(x); }
__device__ inline float kiln_erf(float x) { return erff(x); }
__device__ inline double kiln_erf(double x) { return erf(x); }
__device__ inline float kiln_pow(float a, float b) { return powf(a, b); }
__device__ inline double kiln_pow(double a, double b) { return pow(a, b); }
__device__ inline float kiln_nan(float) { return __int_as_float(0x7fc00000); }
__device__ inline double kiln_nan(double) { return __longlong_as_double(0x7ff8000000000000ll); }
__device__ inline float kiln_inf(float) { return __int_as_float(0x7f800000); }
__device__ inline double kiln_inf(double) { return __longlong_as_double(0x7ff0000000000000ll); }

// Integer power by squaring over the full exponent, wrapping like the CPU kernel; negative
// exponents give 0 except for bases 1 and -1.
template <typename T> __device__ inline T kiln_ipow(T base, T e) {
  if (e < (T)0) {
    long long b = (long long)base;
    if (b == 1) return (T)1;
    if (b == -1) return ((long long)e % 2 == 0) ? (T)1 : base;
    return (T)0;
  }
  unsigned long long u = (unsigned long long)e;
  T acc = (T)1;
  while (u > 0) {
    if (u & 1ull) acc = (T)(acc * base);
    base = (T)(base * base);
    u >>= 1;
  }
  return acc;
}
__device__ inline float kiln_pow_any(float a, float b) { return kiln_pow(a, b); }
__device__ inline double kiln_pow_any(double a, double b) { return kiln_pow(a, b); }
template <typename T> __device__ inline T kiln_pow_any(T a, T b) { return kiln_ipow(a, b); }
