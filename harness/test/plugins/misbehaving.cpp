// Misbehaving kernel plugins for the isolation tests: a plain, correct host RMSNorm (every dtype
// pair and layout, the shipped contract checks of kernels/api/contract.cpp, so a rejection names
// its argument in quotes) with exactly one fault, chosen at compile time by NC_FAULT. Each
// variant is built as its own plugin (harness/test/plugins/CMakeLists.txt); the fault fires on
// every forward call the contract accepts, so each property that calls the forward meets it.
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "normcheck/abi.h"
#include "normcheck/contract.hpp"

#define NC_FAULT_NONE 0
#define NC_FAULT_SEGFAULT 1          // writes through a null pointer
#define NC_FAULT_FAR_READ 2          // reads x 2^40 elements past its first element
#define NC_FAULT_ABORT 3             // abort()
#define NC_FAULT_EXIT_0 4            // exit(0)
#define NC_FAULT_EXIT_3 5            // exit(3)
#define NC_FAULT_HANG 6              // never returns
#define NC_FAULT_WRITES_NOTHING 7    // returns NC_OK without writing y or r
#define NC_FAULT_GUARD_BAND 8        // writes the element before y's first
#define NC_FAULT_WRITES_X 9          // flips a bit of x's first element
#define NC_FAULT_NULL_LAST_ERROR 10  // fails NC_ERR_RUNTIME, last_error() returns NULL
#define NC_FAULT_NULL_NAME 11        // name is NULL (and the forward fails, so a message shows the name)
#define NC_FAULT_ALLOC_NULL 12       // alloc returns NC_OK with a NULL pointer
#define NC_FAULT_UNSUPPORTED_DECLARED 13  // answers NC_ERR_UNSUPPORTED to a bf16 forward, which it declares

#ifndef NC_FAULT
#define NC_FAULT NC_FAULT_NONE
#endif

namespace {

thread_local std::string last_error_text;

float load(const void* data, nc_dtype t, std::int64_t index) {
  if (t == NC_F32) return static_cast<const float*>(data)[index];
  const std::uint16_t bits = static_cast<const std::uint16_t*>(data)[index];
  if (t == NC_BF16) {
    const std::uint32_t wide = std::uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &wide, 4);
    return f;
  }
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return float(h);
}

void store(void* data, nc_dtype t, std::int64_t index, float v) {
  if (t == NC_F32) {
    static_cast<float*>(data)[index] = v;
    return;
  }
  std::uint16_t bits;
  if (t == NC_BF16) {
    std::uint32_t wide;
    std::memcpy(&wide, &v, 4);
    if (std::isnan(v)) bits = std::uint16_t((wide >> 16) | 0x40);  // stays a NaN
    else bits = std::uint16_t((wide + 0x7fff + ((wide >> 16) & 1)) >> 16);  // to nearest even
  } else {
    const _Float16 h = _Float16(v);  // GCC rounds to nearest even
    std::memcpy(&bits, &h, 2);
  }
  static_cast<std::uint16_t*>(data)[index] = bits;
}

std::int64_t at(const nc_matrix& m, std::int64_t i, std::int64_t j) { return m.offset + i * m.row_stride + j * m.col_stride; }
std::int64_t at(const nc_vector& v, std::int64_t k) { return v.offset + k * v.stride; }

[[maybe_unused]] nc_status fail(nc_status s, const char* message) {
  last_error_text = message;
  return s;
}

void fault_in_forward(const nc_forward_args& a) {
#if NC_FAULT == NC_FAULT_SEGFAULT
  // a volatile store through an address the compiler cannot see: a real fault, not a trap
  volatile std::uintptr_t address = 8;
  *reinterpret_cast<volatile int*>(address) = 1;
#elif NC_FAULT == NC_FAULT_FAR_READ
  const volatile char* far = static_cast<const char*>(a.x.data) + (std::int64_t(1) << 40) * 4;
  (void)*far;
#elif NC_FAULT == NC_FAULT_ABORT
  std::abort();
#elif NC_FAULT == NC_FAULT_EXIT_0
  std::exit(0);
#elif NC_FAULT == NC_FAULT_EXIT_3
  std::exit(3);
#elif NC_FAULT == NC_FAULT_HANG
  for (;;) pause();
#endif
  (void)a;
}

nc_status forward(const nc_forward_args* args) {
  const nc_forward_args& a = *args;
  if (auto v = nc::check_forward(a)) return fail(NC_ERR_INVALID_ARGUMENT, v->message.c_str());
  fault_in_forward(a);
#if NC_FAULT == NC_FAULT_WRITES_NOTHING
  return NC_OK;
#elif NC_FAULT == NC_FAULT_NULL_LAST_ERROR
  return NC_ERR_RUNTIME;
#elif NC_FAULT == NC_FAULT_NULL_NAME
  return fail(NC_ERR_RUNTIME, "the forward fails on purpose (a plugin named NULL)");
#elif NC_FAULT == NC_FAULT_UNSUPPORTED_DECLARED
  if (a.x.dtype == NC_BF16) return fail(NC_ERR_UNSUPPORTED, "bf16 is not served here (though declared)");
#endif
  for (std::int64_t i = 0; i < a.m; ++i) {
    float ss = 0;
    for (std::int64_t j = 0; j < a.n; ++j) {
      const float v = load(a.x.data, a.x.dtype, at(a.x, i, j));
      ss = std::fma(v, v, ss);
    }
    const float r = 1.0f / std::sqrt(ss / float(a.n) + a.epsilon);
    for (std::int64_t j = 0; j < a.n; ++j)
      store(a.y.data, a.y.dtype, at(a.y, i, j),
            load(a.x.data, a.x.dtype, at(a.x, i, j)) * r * load(a.gamma.data, a.gamma.dtype, at(a.gamma, j)));
    if (a.r.data != nullptr) store(a.r.data, NC_F32, at(a.r, i), r);
  }
#if NC_FAULT == NC_FAULT_GUARD_BAND
  if (a.m > 0) store(a.y.data, a.y.dtype, a.y.offset - 1, 0.0f);
#elif NC_FAULT == NC_FAULT_WRITES_X
  if (a.m > 0) {
    char* first = static_cast<char*>(a.x.data) + a.x.offset * std::int64_t(nc::dtype_size(a.x.dtype));
    first[0] ^= 1;
  }
#endif
  return NC_OK;
}

nc_status workspace_size(const nc_backward_args*, size_t* bytes) {
  *bytes = 0;
  return NC_OK;
}

// the shipped kernels' order: dx = r*u - (x*r) * (mean(u*x) * r^2), dgamma a sum of dy*x*r
nc_status backward(const nc_backward_args* args) {
  const nc_backward_args& a = *args;
  if (auto v = nc::check_backward(a, 0)) return fail(NC_ERR_INVALID_ARGUMENT, v->message.c_str());
  for (std::int64_t j = 0; j < a.n; ++j) {
    float sum = 0;
    for (std::int64_t i = 0; i < a.m; ++i)
      sum += load(a.dy.data, a.dy.dtype, at(a.dy, i, j)) * load(a.x.data, a.x.dtype, at(a.x, i, j)) *
             load(a.r.data, NC_F32, at(a.r, i));
    store(a.dgamma.data, a.dgamma.dtype, at(a.dgamma, j), sum);
  }
  for (std::int64_t i = 0; i < a.m; ++i) {
    const float r = load(a.r.data, NC_F32, at(a.r, i));
    float s = 0;
    for (std::int64_t j = 0; j < a.n; ++j)
      s = std::fma(load(a.dy.data, a.dy.dtype, at(a.dy, i, j)) * load(a.gamma.data, a.gamma.dtype, at(a.gamma, j)),
                   load(a.x.data, a.x.dtype, at(a.x, i, j)), s);
    const float c = s / float(a.n) * r * r;
    for (std::int64_t j = 0; j < a.n; ++j) {
      const float x = load(a.x.data, a.x.dtype, at(a.x, i, j));
      const float u = load(a.dy.data, a.dy.dtype, at(a.dy, i, j)) * load(a.gamma.data, a.gamma.dtype, at(a.gamma, j));
      store(a.dx.data, a.dx.dtype, at(a.dx, i, j), r * u - (x * r) * c);
    }
  }
  return NC_OK;
}

nc_status alloc(size_t bytes, void** ptr) {
#if NC_FAULT == NC_FAULT_ALLOC_NULL
  *ptr = nullptr;
  (void)bytes;
  return NC_OK;
#else
  *ptr = bytes == 0 ? nullptr : std::malloc(bytes);
  return bytes != 0 && *ptr == nullptr ? fail(NC_ERR_RUNTIME, "malloc failed") : NC_OK;
#endif
}

nc_status release(void* ptr) {
  std::free(ptr);
  return NC_OK;
}

nc_status copy(void* dst, const void* src, size_t bytes, nc_copy_kind) {
  if (bytes > 0) std::memmove(dst, src, bytes);
  return NC_OK;
}

nc_status synchronize() { return NC_OK; }

const char* last_error() {
#if NC_FAULT == NC_FAULT_NULL_LAST_ERROR
  return nullptr;
#else
  return last_error_text.c_str();
#endif
}

#ifndef NC_PLUGIN_NAME
#define NC_PLUGIN_NAME "misbehaving"
#endif

const nc_plugin table = {
    NORMCHECK_ABI_VERSION,
#if NC_FAULT == NC_FAULT_NULL_NAME
    nullptr,
#else
    NC_PLUGIN_NAME,
#endif
    "host",
    NC_CAP_F16 | NC_CAP_BF16 | NC_CAP_GAMMA_F32 | NC_CAP_STRIDED,
    forward,
    backward,
    workspace_size,
    alloc,
    release,
    copy,
    synchronize,
    last_error,
    nullptr,
    nullptr,
    nullptr,  // caps: everything the contract allows
    nullptr,
    nullptr,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const nc_plugin* normcheck_plugin(uint32_t abi_version) {
  return abi_version == NORMCHECK_ABI_VERSION ? &table : nullptr;
}
