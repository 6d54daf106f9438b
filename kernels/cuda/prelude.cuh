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

// ---- atomics for every dtype ----
// Native atomicAdd covers float, double, int and long long; every other (dtype, operation)
// pair is a compare-and-swap loop on the element (4 and 8 bytes) or on the aligned 32-bit
// word holding it (1 and 2 bytes: bool, u8, i8, i16, f16, bf16), leaving the word's other
// bytes as they are. Values combine in the compute type (float for f16/bf16) and are rounded
// back to the storage type, as the CPU kernels do per step. The loops compare raw bits, so
// a NaN never makes them spin.

// The raw bits of a value as another type of the same size.
template <typename To, typename From> __device__ inline To kiln_bitcast(From x) {
  union { From f; To t; } u;
  u.f = x;
  return u.t;
}

// The operations: `f(current, value)` in compute type A. Max and min propagate NaN from
// either side, like the CPU kernels.
struct kiln_op_add { template <typename A> __device__ static A f(A a, A b) { return (A)(a + b); } };
struct kiln_op_mul { template <typename A> __device__ static A f(A a, A b) { return (A)(a * b); } };
struct kiln_op_max {
  template <typename A> __device__ static A f(A a, A b) { return (kiln_isnan(a) || !(kiln_isnan(b) || b > a)) ? a : b; }
};
struct kiln_op_min {
  template <typename A> __device__ static A f(A a, A b) { return (kiln_isnan(a) || !(kiln_isnan(b) || b < a)) ? a : b; }
};

// `cur` combined with `v` by Op, rounded to T.
template <typename Op, typename T> __device__ inline T kiln_apply(T cur, T v) {
  return kiln_narrow_t<T>::go(Op::f(kiln_widen(cur), kiln_widen(v)));
}

// The unsigned integer types of 1, 2, 4 and 8 bytes.
template <int N> struct kiln_uint;
template <> struct kiln_uint<1> { typedef unsigned char type; };
template <> struct kiln_uint<2> { typedef unsigned short type; };
template <> struct kiln_uint<4> { typedef unsigned int type; };
template <> struct kiln_uint<8> { typedef unsigned long long type; };

template <typename T, int N = sizeof(T)> struct kiln_cas {
  // 1- and 2-byte types: CAS on the aligned 32-bit word that holds the element. kiln's
  // CUDA blocks start 256-byte aligned and span whole 512-byte units (src/backends/cuda/alloc.rs),
  // so that word always lies inside the element's block.
  template <typename Op> __device__ static void apply(T* p, T v) {
    typedef typename kiln_uint<N>::type U;
    unsigned long long addr = (unsigned long long)p;
    unsigned int* w = (unsigned int*)(addr & ~3ull);
    unsigned int shift = (unsigned int)(addr & 3ull) * 8u;
    unsigned int mask = (unsigned int)(U)~(U)0 << shift;
    unsigned int old = *w, assumed;
    do {
      assumed = old;
      T cur = kiln_bitcast<T>((U)((assumed & mask) >> shift));
      unsigned int bits = (unsigned int)kiln_bitcast<U>(kiln_apply<Op>(cur, v));
      old = atomicCAS(w, assumed, (assumed & ~mask) | ((bits << shift) & mask));
    } while (old != assumed);
  }
};
template <typename T> struct kiln_cas<T, 4> {
  template <typename Op> __device__ static void apply(T* p, T v) {
    unsigned int* w = (unsigned int*)p;
    unsigned int old = *w, assumed;
    do {
      assumed = old;
      old = atomicCAS(w, assumed, kiln_bitcast<unsigned int>(kiln_apply<Op>(kiln_bitcast<T>(assumed), v)));
    } while (old != assumed);
  }
};
template <typename T> struct kiln_cas<T, 8> {
  template <typename Op> __device__ static void apply(T* p, T v) {
    unsigned long long* w = (unsigned long long*)p;
    unsigned long long old = *w, assumed;
    do {
      assumed = old;
      old = atomicCAS(w, assumed, kiln_bitcast<unsigned long long>(kiln_apply<Op>(kiln_bitcast<T>(assumed), v)));
    } while (old != assumed);
  }
};

template <typename T> __device__ inline void kiln_atomic_add(T* p, T v) { kiln_cas<T>::template apply<kiln_op_add>(p, v); }
__device__ inline void kiln_atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ inline void kiln_atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ inline void kiln_atomic_add(int* p, int v) { atomicAdd(p, v); }
__device__ inline void kiln_atomic_add(long long* p, long long v) {
  atomicAdd((unsigned long long*)p, (unsigned long long)v);  // two's complement wraps alike
}
template <typename T> __device__ inline void kiln_atomic_mul(T* p, T v) { kiln_cas<T>::template apply<kiln_op_mul>(p, v); }
template <typename T> __device__ inline void kiln_atomic_max(T* p, T v) { kiln_cas<T>::template apply<kiln_op_max>(p, v); }
template <typename T> __device__ inline void kiln_atomic_min(T* p, T v) { kiln_cas<T>::template apply<kiln_op_min>(p, v); }
