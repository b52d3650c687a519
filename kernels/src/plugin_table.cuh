// The function table a shipped-kernel plugin exports. Each backend's plugin source
// defines its memory functions and includes this once; everything else is shared.
#pragma once

#include <array>
#include <string>

#include "rmsnorm_dispatch.cuh"

namespace nc {

namespace {
thread_local std::string last_error_text;
}

void set_last_error(std::string message) { last_error_text = std::move(message); }

// exceptions never cross the C ABI: anything thrown becomes NC_ERR_RUNTIME
template <class F>
nc_status guarded(F&& f) {
  try {
    last_error_text.clear();
    return f();
  } catch (const std::exception& e) {
    set_last_error(e.what());
  } catch (...) {
    set_last_error("unknown exception");
  }
  return NC_ERR_RUNTIME;
}

// the backend's own checks and memory, defined by the plugin source
nc_status backend_check_forward(const nc_forward_args& a);
nc_status backend_check_backward(const nc_backward_args& a);
nc_status backend_alloc(std::size_t bytes, void** ptr);
nc_status backend_free(void* ptr);
nc_status backend_copy(void* dst, const void* src, std::size_t bytes, nc_copy_kind kind);
nc_status backend_synchronize();
// one line naming the device (abi.h nc_plugin.machine; "": the host is the machine)
std::string backend_machine();

}  // namespace nc

extern "C" {

static nc_status nc_table_forward(const nc_forward_args* a) {
  return nc::guarded([&] {
    const nc_status s = nc::backend_check_forward(*a);
    return s != NC_OK ? s : nc::forward(*a);
  });
}

static nc_status nc_table_backward(const nc_backward_args* a) {
  return nc::guarded([&] {
    const nc_status s = nc::backend_check_backward(*a);
    return s != NC_OK ? s : nc::backward(*a);
  });
}

static nc_status nc_table_workspace_size(const nc_backward_args* a, size_t* bytes) {
  return nc::guarded([&] { return nc::workspace_size(*a, bytes); });
}

static nc_status nc_table_alloc(size_t bytes, void** ptr) {
  return nc::guarded([&] { return nc::backend_alloc(bytes, ptr); });
}
static nc_status nc_table_free(void* ptr) {
  return nc::guarded([&] { return nc::backend_free(ptr); });
}
static nc_status nc_table_copy(void* dst, const void* src, size_t bytes, nc_copy_kind kind) {
  return nc::guarded([&] { return nc::backend_copy(dst, src, bytes, kind); });
}
static nc_status nc_table_synchronize(void) {
  return nc::guarded([&] { return nc::backend_synchronize(); });
}
static const char* nc_table_last_error(void) { return nc::last_error_text.c_str(); }
static const char* nc_table_forward_path(const nc_forward_args* a) {
  return nc::path_name(nc::forward_path(*a));
}
static const char* nc_table_backward_path(const nc_backward_args* a) {
  return nc::path_name(nc::backward_path(*a));
}
static const char* nc_table_machine(void) {
  static const std::string line = nc::backend_machine();
  return line.c_str();
}

// every path name forward_path and backward_path return (rmsnorm_dispatch.cuh's path enum, in
// order, NULL-terminated), so the property suite's path minimums apply to the shipped kernels
static const char* const* nc_table_paths() {
  static const auto names = [] {
    std::array<const char*, std::size_t(nc::path::strided_block) + 2> list{};
    for (std::size_t p = 0; p <= std::size_t(nc::path::strided_block); ++p) list[p] = nc::path_name(nc::path(p));
    return list;
  }();
  return names.data();
}

// the operations the shipped kernels serve (abi.h "Variants"): the plain operator and Gemma's
// offset, each alone and after a residual add in either rounding contract, in place or not, on
// 2-D rows; on per-head rows, four of them; on 4-D views, two; seventeen quantized outputs
static const nc_operation nc_table_operations[] = {
    {NC_RESIDUAL_NONE, 0, 0.0f},    {NC_RESIDUAL_NONE, 0, 1.0f},
    {NC_RESIDUAL_ROUNDED, 0, 0.0f}, {NC_RESIDUAL_ROUNDED, 1, 0.0f},
    {NC_RESIDUAL_FP32, 0, 0.0f},    {NC_RESIDUAL_FP32, 1, 0.0f},
    {NC_RESIDUAL_ROUNDED, 0, 1.0f}, {NC_RESIDUAL_ROUNDED, 1, 1.0f},
    {NC_RESIDUAL_FP32, 0, 1.0f},    {NC_RESIDUAL_FP32, 1, 1.0f},
    // per-head rows: QK-norm (plain, and Gemma 3's offset), and two residual adds on them
    // (3-D views), then the plain one and a Gemma add into a separate output on 4-D views
    {NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_HEADS},    {NC_RESIDUAL_NONE, 0, 1.0f, NC_ROWS_HEADS},
    {NC_RESIDUAL_ROUNDED, 0, 0.0f, NC_ROWS_HEADS}, {NC_RESIDUAL_FP32, 1, 1.0f, NC_ROWS_HEADS},
    {NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_BATCHES},  {NC_RESIDUAL_FP32, 0, 1.0f, NC_ROWS_BATCHES},
    // quantized outputs (rmsnorm_quantize.cuh): each format with a static scale, per-token and
    // per-group scales (the floors of vLLM's fp8 per-token quantization and of group fp8), both
    // ways of applying a scale, alone and after a residual add, and one with Gemma's offset
    {NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_MATRIX, NC_QUANT_FP8_E4M3, NC_SCALE_STATIC, NC_APPLY_RECIPROCAL},
    {NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_MATRIX, NC_QUANT_FP8_E4M3, NC_SCALE_STATIC, NC_APPLY_DIVIDE},
    {NC_RESIDUAL_NONE, 0, 1.0f, NC_ROWS_MATRIX, NC_QUANT_FP8_E4M3, NC_SCALE_STATIC, NC_APPLY_RECIPROCAL},
    {NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_MATRIX, NC_QUANT_FP8_E5M2, NC_SCALE_STATIC, NC_APPLY_RECIPROCAL},
    {NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_MATRIX, NC_QUANT_INT8, NC_SCALE_STATIC, NC_APPLY_RECIPROCAL},
    {NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_MATRIX, NC_QUANT_FP8_E4M3, NC_SCALE_PER_TOKEN, NC_APPLY_RECIPROCAL, 0,
     1.0f / (448.0f * 512.0f)},
    {NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_MATRIX, NC_QUANT_FP8_E5M2, NC_SCALE_PER_TOKEN, NC_APPLY_DIVIDE, 0, 0.0f},
    {NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_MATRIX, NC_QUANT_INT8, NC_SCALE_PER_TOKEN, NC_APPLY_DIVIDE, 0, 0.0f},
    {NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_MATRIX, NC_QUANT_FP8_E4M3, NC_SCALE_PER_GROUP, NC_APPLY_DIVIDE, 128,
     1e-10f / 448.0f},
    {NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_MATRIX, NC_QUANT_FP8_E4M3, NC_SCALE_PER_GROUP, NC_APPLY_RECIPROCAL, 64, 0.0f},
    {NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_MATRIX, NC_QUANT_INT8, NC_SCALE_PER_GROUP, NC_APPLY_RECIPROCAL, 128, 0.0f},
    {NC_RESIDUAL_ROUNDED, 1, 0.0f, NC_ROWS_MATRIX, NC_QUANT_FP8_E4M3, NC_SCALE_STATIC, NC_APPLY_RECIPROCAL},
    {NC_RESIDUAL_FP32, 0, 0.0f, NC_ROWS_MATRIX, NC_QUANT_INT8, NC_SCALE_STATIC, NC_APPLY_DIVIDE},
    {NC_RESIDUAL_FP32, 0, 0.0f, NC_ROWS_MATRIX, NC_QUANT_FP8_E4M3, NC_SCALE_PER_TOKEN, NC_APPLY_RECIPROCAL, 0,
     1.0f / (448.0f * 512.0f)},
    {NC_RESIDUAL_ROUNDED, 1, 0.0f, NC_ROWS_MATRIX, NC_QUANT_INT8, NC_SCALE_PER_TOKEN, NC_APPLY_DIVIDE, 0, 0.0f},
    {NC_RESIDUAL_ROUNDED, 0, 0.0f, NC_ROWS_MATRIX, NC_QUANT_FP8_E4M3, NC_SCALE_PER_GROUP, NC_APPLY_DIVIDE, 128,
     1e-10f / 448.0f},
    {NC_RESIDUAL_ROUNDED, 1, 0.0f, NC_ROWS_MATRIX, NC_QUANT_INT8, NC_SCALE_PER_GROUP, NC_APPLY_RECIPROCAL, 64, 0.0f},
};

// everything the contract allows, and every operation above
static const nc_capabilities nc_table_caps = {
    NC_PAIRS_ALL, NC_LAYOUTS_ALL, 0, 0, nullptr, 0, 0,
    sizeof nc_table_operations / sizeof nc_table_operations[0], nc_table_operations, 0};

__attribute__((visibility("default"))) const nc_plugin* normcheck_plugin(uint32_t abi_version) {
  // version 1 reads the NC_CAP_* bits: everything the version-1 contract allows
  static const nc_plugin table = {
      NORMCHECK_ABI_VERSION, NC_PLUGIN_NAME, NC_PLUGIN_BACKEND,
      NC_CAP_F16 | NC_CAP_BF16 | NC_CAP_GAMMA_F32 | NC_CAP_STRIDED | NC_PLUGIN_EXTRA_CAPS,
      nc_table_forward, nc_table_backward, nc_table_workspace_size,
      nc_table_alloc, nc_table_free, nc_table_copy, nc_table_synchronize,
      nc_table_last_error, nc_table_forward_path, nc_table_backward_path,
      &nc_table_caps, nc_table_paths(), nc_table_paths(), nc_table_machine};
  static const nc_plugin version_1 = [] {
    nc_plugin t = table;
    t.abi_version = 1;
    return t;
  }();
  return abi_version == NORMCHECK_ABI_VERSION ? &table : abi_version == 1 ? &version_1 : nullptr;
}

}  // extern "C"
