//===- prelude.h - fixed-width types and qualifiers for device code -------===//
//
// Device code is compiled by NVRTC with no standard library on its include
// path, so the few definitions we need live here. The same header compiles as
// host C++ so that parameter structs are shared byte for byte.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_PRELUDE_H
#define ATTNC_DEVICE_PRELUDE_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define ATTNC_DEVICE __device__ __forceinline__
#define ATTNC_IS_DEVICE 1
#else
#define ATTNC_DEVICE inline
#define ATTNC_IS_DEVICE 0
#endif

#if ATTNC_IS_DEVICE
// Names the C++ emitter prints for EmitC's integer types.
typedef decltype(sizeof(0)) size_t;
typedef decltype((int *)0 - (int *)0) ptrdiff_t;
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
// Names the C++ emitter prints for non-finite f32 constants (a region's
// `where(mask, score, -inf)`): math.h's, which NVRTC does not have.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#endif

namespace attnc {
typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

// Storage types: 16-bit floats are moved as bits and converted in registers.
struct bf16 {
  u16 bits;
};
struct f16 {
  u16 bits;
};
// fp8 storage of KV caches, widened to f16 on load (widen.h).
struct f8e4m3 {
  u8 bits;
};
struct f8e5m2 {
  u8 bits;
};

// The online softmax works in base 2 (math.h); the host folds log2(e)
// into the launch's score factors (params.h) with the device's constant.
constexpr float kLog2E = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

static_assert(sizeof(i64) == 8 && sizeof(u32) == 4 && sizeof(u16) == 2,
              "attnc's fixed-width types have the wrong size");
} // namespace attnc

#endif // ATTNC_DEVICE_PRELUDE_H
