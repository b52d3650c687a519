// The seed-design plugin's function table, shared by its two backends. A backend's plugin
// source defines SEED_PLUGIN_NAME, SEED_PLUGIN_BACKEND and SEED_PLUGIN_CAPS, its memory
// functions and its pointer rule (the backend_* declarations below), then includes this once.
//
// What it declares (abi.h version 2) is the document's contract: fp32 and fp16 with gamma in
// x's dtype, dense operands, N <= 4096 and M·N <= 4096·4096 (the 64 MiB partial table).
#pragma once

#include <exception>
#include <string>

#include "contract.hpp"
#include "normcheck/abi.h"
#include "seed_rmsnorm.cuh"

namespace seed_design {

namespace {
thread_local std::string last_error_text;
}

inline nc_status fail(nc_status status, std::string message) {
  last_error_text = std::move(message);
  return status;
}

// defined by the backend's plugin source
nc_status backend_check_pointers(const nc_forward_args& a);
nc_status backend_check_pointers(const nc_backward_args& a);
nc_status backend_alloc(std::size_t bytes, void** ptr);
nc_status backend_free(void* ptr);
nc_status backend_copy(void* dst, const void* src, std::size_t bytes, nc_copy_kind kind);
nc_status backend_synchronize();

// one launch on the backend this file is compiled for; a failure becomes NC_ERR_RUNTIME
template <class... P, class... A>
nc_status launch(void (*kernel)(P...), unsigned blocks, unsigned threads, void* stream, const char* what,
                 A... args) {
#if defined(__CUDACC__)
  kernel<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(args...);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    return fail(NC_ERR_RUNTIME, std::string("launch of ") + what + " failed: " + cudaGetErrorString(e));
#else
  (void)stream;
  try {
    simt::launch(kernel, dim3(blocks), dim3(threads), args...);
  } catch (const simt::fault& f) {
    return fail(NC_ERR_RUNTIME, std::string(what) + " faulted: " + f.what());
  }
#endif
  return NC_OK;
}

// dense operands: the element at offset 0 of each row-major operand
template <class T, class A>
T* first_element(const A& operand) {
  return static_cast<T*>(operand.data) + operand.offset;
}

template <class T>
nc_status forward_typed(const nc_forward_args& a) {
  if (a.m == 0) return NC_OK;
  const int n = static_cast<int>(a.n);
  const int block = block_lanes(n);
  return launch(seed_forward<T>, static_cast<unsigned>(a.m), static_cast<unsigned>(block_threads(block)), a.stream,
                "seed_forward", static_cast<const T*>(first_element<T>(a.x)),
                static_cast<const T*>(first_element<T>(a.gamma)), first_element<T>(a.y), first_element<float>(a.r), n,
                block, a.epsilon);
}

template <class T>
nc_status backward_typed(const nc_backward_args& a) {
  const int n = static_cast<int>(a.n);
  const int block = block_lanes(n);
  auto* partial = static_cast<float*>(a.workspace);
  if (a.m > 0) {
    const nc_status s =
        launch(seed_backward<T>, static_cast<unsigned>(a.m), static_cast<unsigned>(block_threads(block)), a.stream,
               "seed_backward", static_cast<const T*>(first_element<T>(a.x)),
               static_cast<const T*>(first_element<T>(a.gamma)), static_cast<const T*>(first_element<T>(a.dy)),
               static_cast<const float*>(first_element<float>(a.r)), first_element<T>(a.dx), partial, n, block);
    if (s != NC_OK) return s;
  }
  // with M = 0 the sum over no rows is still written: dgamma = 0
  const int threads = block_threads(block);
  return launch(seed_dgamma<T>, static_cast<unsigned>((n + threads - 1) / threads), static_cast<unsigned>(threads),
                a.stream, "seed_dgamma", static_cast<const float*>(partial), first_element<T>(a.dgamma),
                static_cast<std::int64_t>(a.m), n);
}

inline nc_status forward(const nc_forward_args& a) {
  if (auto r = check_forward(a)) return fail(r->status, r->message);
  if (const nc_status s = backend_check_pointers(a); s != NC_OK) return s;
  return a.x.dtype == NC_F32 ? forward_typed<float>(a) : forward_typed<__half>(a);
}

inline nc_status backward(const nc_backward_args& a) {
  if (auto r = check_backward(a)) return fail(r->status, r->message);
  if (const nc_status s = backend_check_pointers(a); s != NC_OK) return s;
  return a.x.dtype == NC_F32 ? backward_typed<float>(a) : backward_typed<__half>(a);
}

inline nc_status workspace_size(const nc_backward_args& a, std::size_t* bytes) {
  *bytes = 0;
  if (a.m < 0) return fail(NC_ERR_INVALID_ARGUMENT, "argument 'm' = " + std::to_string(a.m) + ": must be >= 0");
  if (a.n < 1) return fail(NC_ERR_INVALID_ARGUMENT, "argument 'n' = " + std::to_string(a.n) + ": must be >= 1");
  *bytes = partial_table_bytes(a.m, a.n);
  return NC_OK;
}

// no exception crosses the C ABI
template <class F>
nc_status guarded(F&& f) {
  try {
    last_error_text.clear();
    return f();
  } catch (const std::exception& e) {
    return fail(NC_ERR_RUNTIME, e.what());
  } catch (...) {
    return fail(NC_ERR_RUNTIME, "unknown exception");
  }
}

}  // namespace seed_design

extern "C" {

static nc_status seed_table_forward(const nc_forward_args* a) {
  return seed_design::guarded([&] { return seed_design::forward(*a); });
}
static nc_status seed_table_backward(const nc_backward_args* a) {
  return seed_design::guarded([&] { return seed_design::backward(*a); });
}
static nc_status seed_table_workspace_size(const nc_backward_args* a, size_t* bytes) {
  return seed_design::guarded([&] { return seed_design::workspace_size(*a, bytes); });
}
static nc_status seed_table_alloc(size_t bytes, void** ptr) {
  return seed_design::guarded([&] { return seed_design::backend_alloc(bytes, ptr); });
}
static nc_status seed_table_free(void* ptr) {
  return seed_design::guarded([&] { return seed_design::backend_free(ptr); });
}
static nc_status seed_table_copy(void* dst, const void* src, size_t bytes, nc_copy_kind kind) {
  return seed_design::guarded([&] { return seed_design::backend_copy(dst, src, bytes, kind); });
}
static nc_status seed_table_synchronize(void) {
  return seed_design::guarded([&] { return seed_design::backend_synchronize(); });
}
static const char* seed_table_last_error(void) { return seed_design::last_error_text.c_str(); }

__attribute__((visibility("default"))) const nc_plugin* normcheck_plugin(uint32_t abi_version) {
  static const nc_capabilities caps = {
      NC_PAIR_F32 | NC_PAIR_F16,  // gamma in x's dtype
      0,                          // dense operands only
      0,                          // forward and backward, r written
      0, nullptr,                 // any epsilon
      seed_design::max_n, seed_design::max_elements};
  static const nc_plugin table = {
      NORMCHECK_ABI_VERSION, SEED_PLUGIN_NAME, SEED_PLUGIN_BACKEND, SEED_PLUGIN_CAPS,
      seed_table_forward, seed_table_backward, seed_table_workspace_size,
      seed_table_alloc, seed_table_free, seed_table_copy, seed_table_synchronize,
      seed_table_last_error,
      nullptr, nullptr,  // one code path: nothing to tag
      &caps, nullptr, nullptr};
  // version 1 cannot say N <= 4096 or dense only: a version-1 harness would draw calls this
  // kernel rejects, so only version 2 is served
  return abi_version == NORMCHECK_ABI_VERSION ? &table : nullptr;
}

}  // extern "C"
