#include "normcheck/kernel.hpp"

#include <dlfcn.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <cstdlib>
#include <filesystem>

#include "normcheck/environment.hpp"
#include "normcheck/variant.hpp"

namespace nc {

namespace {

std::atomic<call_observer> observer{nullptr};

// a call into the plugin, announced to the observer before and after
template <class F>
auto announced(const char* call, F&& f) {
  struct done {
    call_observer o;
    ~done() {
      if (o) o(nullptr);
    }
  } d{observer.load(std::memory_order_relaxed)};
  if (d.o) d.o(call);
  return f();
}

std::string program_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

// a string a plugin returned, read without trusting the pointer: NULL, unreadable memory or
// no terminator within 4 KiB give a description instead of a crash
std::string plugin_string(const char* text, const char* what) {
  if (text == nullptr) return std::string("(NULL ") + what + ")";
  std::string out;
  char chunk[256];
  for (std::size_t done = 0; done < 4096; done += sizeof chunk) {
    iovec local{chunk, sizeof chunk}, remote{const_cast<char*>(text) + done, sizeof chunk};
    ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (got <= 0) {  // the chunk crosses into an unmapped page: read byte by byte
      got = 0;
      for (std::size_t b = 0; b < sizeof chunk; ++b) {
        iovec l{chunk + b, 1}, r{const_cast<char*>(text) + done + b, 1};
        if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != 1) break;
        ++got;
      }
      const std::size_t n = strnlen(chunk, std::size_t(got));
      out.append(chunk, n);
      if (n < std::size_t(got)) return out;
      return out + "(unreadable " + what + " pointer after " + std::to_string(out.size()) + " bytes)";
    }
    const std::size_t n = strnlen(chunk, std::size_t(got));
    out.append(chunk, n);
    if (n < std::size_t(got)) return out;
  }
  return out + "(" + what + " not terminated within 4096 bytes)";
}

std::vector<std::string> path_list(const char* const* names, const std::string& plugin) {
  std::vector<std::string> out;
  if (names == nullptr) return out;
  for (std::size_t i = 0; names[i] != nullptr; ++i) {
    if (i == 64) throw std::runtime_error("kernel plugin '" + plugin + "' lists more than 64 paths (no NULL end?)");
    out.push_back(plugin_string(names[i], "path name"));
  }
  return out;
}

capabilities capabilities_of(const nc_plugin& t, std::uint32_t version, const std::string& plugin) {
  capabilities c;
  const nc_capabilities* d = version >= 2 ? t.caps : nullptr;
  if (d == nullptr) {  // version 1, or a version-2 plugin serving everything its bits say
    const std::uint32_t bits = t.capabilities;
    c.dtype_pairs = NC_PAIR_F32;
    if (bits & NC_CAP_F16) c.dtype_pairs |= NC_PAIR_F16 | (bits & NC_CAP_GAMMA_F32 ? NC_PAIR_F16_GAMMA_F32 : 0);
    if (bits & NC_CAP_BF16) c.dtype_pairs |= NC_PAIR_BF16 | (bits & NC_CAP_GAMMA_F32 ? NC_PAIR_BF16_GAMMA_F32 : 0);
    c.layouts = bits & NC_CAP_STRIDED ? NC_LAYOUTS_ALL : 0;
    return c;
  }
  const auto bad = [&](const std::string& rule) {
    return std::runtime_error("kernel plugin '" + plugin + "' declares capabilities the harness cannot use: " + rule);
  };
  if ((d->dtype_pairs & NC_PAIRS_ALL) == 0 || (d->dtype_pairs & ~NC_PAIRS_ALL) != 0)
    throw bad("'caps->dtype_pairs' must be a non-empty set of NC_PAIR_* bits");
  if ((d->layouts & ~NC_LAYOUTS_ALL) != 0) throw bad("'caps->layouts' holds bits that are no NC_LAYOUT_*");
  const std::uint32_t known = NC_FORWARD_ONLY | NC_NO_R | NC_ROUNDS_NORMALIZED | NC_ROUNDS_GRADIENTS |
                              (version >= 3 ? NC_FLUSHES_SUBNORMALS | NC_QUANTIZES_ROUNDED_Y : 0u);
  if ((d->flags & ~known) != 0) throw bad("'caps->flags' holds unknown bits");
  if ((d->flags & NC_NO_R) && !(d->flags & NC_FORWARD_ONLY))
    throw bad("'caps->flags' NC_NO_R needs NC_FORWARD_ONLY (the backward takes the forward's r)");
  if (d->epsilon_count > 0 && d->epsilons == nullptr) throw bad("'caps->epsilons' is NULL with epsilon_count > 0");
  if (d->epsilon_count > 64) throw bad("'caps->epsilon_count' is more than 64");
  if (d->max_n < 0 || d->max_elements < 0) throw bad("'caps->max_n' and 'caps->max_elements' must be >= 0");
  c.dtype_pairs = d->dtype_pairs;
  c.layouts = d->layouts;
  c.flags = d->flags;
  for (std::uint32_t i = 0; i < d->epsilon_count; ++i) {
    const float e = d->epsilons[i];
    if (!std::isfinite(e) || e < 0) throw bad("'caps->epsilons' holds " + std::to_string(e) + ": must be finite and >= 0");
    c.epsilons.push_back(e);
  }
  c.max_n = d->max_n;
  c.max_elements = d->max_elements;
  if (version < 3) return c;
  if (d->operation_count > 0 && d->operations == nullptr) throw bad("'caps->operations' is NULL with operation_count > 0");
  if (d->operation_count > 64) throw bad("'caps->operation_count' is more than 64");
  if (d->operation_count > 0) c.operations.clear();
  for (std::uint32_t i = 0; i < d->operation_count; ++i) {
    const nc_operation& op = d->operations[i];
    const std::string at = "'caps->operations[" + std::to_string(i) + "]";
    if (!valid_residual(op.residual)) throw bad(at + ".residual' is no NC_RESIDUAL_*");
    if (op.in_place > 1) throw bad(at + ".in_place' must be 0 or 1");
    if (op.in_place && op.residual == NC_RESIDUAL_NONE) throw bad(at + ".in_place' needs a residual add");
    if (!std::isfinite(op.weight_offset)) throw bad(at + ".weight_offset' must be finite");
    if (!valid_rows(op.rows)) throw bad(at + ".rows' is no NC_ROWS_*");
    if (!valid_quant(op.quant)) throw bad(at + ".quant' is no NC_QUANT_*");
    if (quantizes(op)) {
      if (op.rows != NC_ROWS_MATRIX) throw bad(at + ".rows' must be NC_ROWS_MATRIX for a quantized output");
      if (!valid_scale(op.scale)) throw bad(at + ".scale' is no NC_SCALE_*");
      if (!valid_apply(op.apply)) throw bad(at + ".apply' is no NC_APPLY_*");
      if (op.scale == NC_SCALE_PER_GROUP && op.group < 1) throw bad(at + ".group' must be >= 1 for per-group scales");
      if (op.scale != NC_SCALE_STATIC && !(std::isfinite(op.scale_floor) && op.scale_floor >= 0))
        throw bad(at + ".scale_floor' must be finite and >= 0");
    }
    if (!c.serves(op)) c.operations.push_back(op);
  }
  c.declared_operations = c.operations;
  if (d->n_multiple < 0) throw bad("'caps->n_multiple' must be >= 0");
  c.n_multiple = std::max<std::int64_t>(d->n_multiple, 1);
  return c;
}

}  // namespace

bool capabilities::serves(nc_dtype x, nc_dtype gamma) const { return (dtype_pairs & pair_of(x, gamma)) != 0; }

bool capabilities::serves(const nc_operation& op) const {
  return std::any_of(operations.begin(), operations.end(), [&](const nc_operation& o) { return same_operation(o, op); });
}

bool capabilities::takes_epsilon(float e) const {
  return epsilons.empty() || std::find(epsilons.begin(), epsilons.end(), e) != epsilons.end();
}

bool capabilities::full() const {
  return dtype_pairs == NC_PAIRS_ALL && layouts == NC_LAYOUTS_ALL && flags == 0 && epsilons.empty() && max_n == 0 &&
         max_elements == 0 && n_multiple == 1 && operations.size() == 1 && serves_plain();
}

std::uint32_t pair_of(nc_dtype x, nc_dtype gamma) {
  if (x == NC_F32) return gamma == NC_F32 ? NC_PAIR_F32 : 0;
  if (x == NC_F16) return gamma == NC_F16 ? NC_PAIR_F16 : gamma == NC_F32 ? NC_PAIR_F16_GAMMA_F32 : 0;
  if (x == NC_BF16) return gamma == NC_BF16 ? NC_PAIR_BF16 : gamma == NC_F32 ? NC_PAIR_BF16_GAMMA_F32 : 0;
  return 0;
}

const char* pair_name(std::uint32_t bit) {
  switch (bit) {
    case NC_PAIR_F32: return "fp32";
    case NC_PAIR_F16: return "fp16";
    case NC_PAIR_BF16: return "bf16";
    case NC_PAIR_F16_GAMMA_F32: return "fp16+fp32 gamma";
    case NC_PAIR_BF16_GAMMA_F32: return "bf16+fp32 gamma";
    default: return "?";
  }
}

const char* layout_name(std::uint32_t bit) {
  switch (bit) {
    case NC_LAYOUT_PADDED_ROWS: return "padded rows";
    case NC_LAYOUT_OFFSETS: return "aligned offsets";
    case NC_LAYOUT_MISALIGNED: return "misaligned rows";
    case NC_LAYOUT_COLUMN_STRIDED: return "column strides";
    default: return "?";
  }
}

namespace {
std::string epsilon_text(float e) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", double(e));
  return text;
}
}  // namespace

std::string capabilities::describe() const {
  if (full()) return "everything the contract allows";
  std::string out = "dtypes";
  const char* sep = " ";
  for (std::uint32_t b = 1; b <= NC_PAIR_BF16_GAMMA_F32; b <<= 1)
    if (dtype_pairs & b) out += sep + std::string(pair_name(b)), sep = ", ";
  out += "; layouts dense";
  for (std::uint32_t b = 1; b <= NC_LAYOUT_COLUMN_STRIDED; b <<= 1)
    if (layouts & b) out += ", " + std::string(layout_name(b));
  if (!backward()) out += "; forward only";
  if (!writes_r()) out += "; no r";
  if (rounds_normalized()) out += "; x*r rounded to x's dtype before gamma";
  if (rounds_gradients()) out += "; dy*gamma and dgamma's terms rounded to x's dtype";
  if (flushes_subnormals()) out += "; fp32 subnormals flushed to zero";
  if (quantizes_rounded_y()) out += "; quantizes y rounded to x's dtype";
  if (!epsilons.empty()) {
    out += "; epsilon";
    sep = " ";
    for (float e : epsilons) out += sep + epsilon_text(e), sep = ", ";
  }
  if (max_n > 0) out += "; N <= " + std::to_string(max_n);
  if (max_elements > 0) out += "; M*N <= " + std::to_string(max_elements);
  if (n_multiple > 1) out += "; N a multiple of " + std::to_string(n_multiple);
  if (!(operations.size() == 1 && serves_plain())) {
    out += "; operations";
    sep = " ";
    for (const nc_operation& op : operations) out += sep + describe_operation(op), sep = ", ";
  }
  return out;
}

std::vector<std::string> capabilities::not_served() const {
  std::vector<std::string> out;
  for (std::uint32_t b = 1; b <= NC_PAIR_BF16_GAMMA_F32; b <<= 1)
    if (!(dtype_pairs & b)) out.push_back(std::string("dtype pair ") + pair_name(b));
  for (std::uint32_t b = 1; b <= NC_LAYOUT_COLUMN_STRIDED; b <<= 1)
    if (!(layouts & b)) out.push_back(std::string("layout ") + layout_name(b));
  if (!backward()) out.push_back("the backward (dx, dgamma)");
  if (!writes_r()) out.push_back("r (the forward writes none)");
  if (!epsilons.empty()) {
    std::string e = "epsilon other than";
    const char* sep = " ";
    for (float v : epsilons) e += sep + epsilon_text(v), sep = ", ";
    out.push_back(e);
  }
  if (max_n > 0) out.push_back("N > " + std::to_string(max_n));
  if (max_elements > 0) out.push_back("M*N > " + std::to_string(max_elements));
  if (n_multiple > 1) out.push_back("N not a multiple of " + std::to_string(n_multiple));
  if (!serves_plain()) out.push_back("the plain operation (rmsnorm)");
  return out;
}

kernel::kernel(std::shared_ptr<void> library, const nc_plugin* table, std::string path, std::uint32_t version)
    : library_(std::move(library)), table_(table), path_(std::move(path)), version_(version) {
  name_ = plugin_string(table->name, "name");
  backend_ = plugin_string(table->backend, "backend");
  caps_ = capabilities_of(*table, version, path_);
  if (version >= 2) {
    forward_paths_ = path_list(table->forward_paths, path_);
    backward_paths_ = path_list(table->backward_paths, path_);
  }
}

bool kernel::is_python_spec(const std::string& spec) {
  const auto ends_with = [&](const std::string& tail) {
    return spec.size() >= tail.size() && spec.compare(spec.size() - tail.size(), tail.size(), tail) == 0;
  };
  return spec.rfind("python:", 0) == 0 || ends_with(".py") || spec.find(".py:") != std::string::npos;
}

kernel kernel::load(const std::string& path) {
  // a Python kernel (kernels/python/README.md) runs behind the bridge plugin, which takes the
  // spec through its own entry point: one table per spec, and path() stays the spec, so case
  // files and reproduce lines name the Python kernel
  const bool python = is_python_spec(path);
  const std::string library_path = python ? shipped_path("python") : path;
  void* handle = dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    throw std::runtime_error("cannot load kernel plugin '" + library_path + "'" +
                             (python ? " (the Python bridge, for '" + path + "')" : "") + ": " + dlerror());
  std::shared_ptr<void> library(handle, [](void* h) { dlclose(h); });
  std::uint32_t version = NORMCHECK_ABI_VERSION;
  const nc_plugin* table = nullptr;
  if (python) {
    using python_entry = const nc_plugin* (*)(std::uint32_t, const char*, const char**);
    auto entry = reinterpret_cast<python_entry>(dlsym(handle, "normcheck_python_plugin"));
    if (entry == nullptr)
      throw std::runtime_error("'" + library_path + "' does not export normcheck_python_plugin");
    const char* error = nullptr;
    table = entry(version, path.c_str(), &error);
    if (table == nullptr)
      throw std::runtime_error("cannot load the Python kernel '" + path + "': " +
                               plugin_string(error, "bridge error"));
  }
  auto entry = reinterpret_cast<nc_plugin_entry>(dlsym(handle, "normcheck_plugin"));
  if (entry == nullptr)
    throw std::runtime_error("kernel plugin '" + path + "' does not export normcheck_plugin");
  if (table == nullptr) table = entry(version);
  if (table == nullptr && !python) table = entry(version = 2);
  if (table == nullptr) table = entry(version = 1);
  if (table == nullptr)
    throw std::runtime_error("kernel plugin '" + path + "' serves none of normcheck ABI versions 3, 2 and 1");
  if (table->abi_version != version)
    throw std::runtime_error("kernel plugin '" + path + "' answered the request for ABI version " +
                             std::to_string(version) + " with a table of version " +
                             std::to_string(table->abi_version));
  kernel k(std::move(library), table, path, version);
  std::string missing;
  const auto need = [&](bool present, const char* field) {
    if (!present) missing += (missing.empty() ? "" : ", ") + std::string(field);
  };
  need(table->forward, "forward");
  if (k.caps_.backward()) need(table->backward, "backward"), need(table->workspace_size, "workspace_size");
  need(table->alloc, "alloc"), need(table->free, "free"), need(table->copy, "copy");
  need(table->synchronize, "synchronize"), need(table->last_error, "last_error");
  if (!missing.empty())
    throw std::runtime_error("kernel plugin '" + path + "' has NULL entries in its function table: " + missing +
                             (k.caps_.backward() ? "" : " (a forward-only plugin may leave backward and workspace_size NULL)"));
  return k;
}

std::string kernel::shipped_path(const std::string& backend) {
  const std::string base = environment_value("NORMCHECK_PLUGIN_DIR").value_or(program_dir() + "/../lib");
  return base + "/libnormcheck_" + backend + ".so";
}

kernel kernel::shipped(const std::string& backend) { return load(shipped_path(backend)); }

call_observer set_call_observer(call_observer o) { return observer.exchange(o); }

bool kernel::lists_forward_path(const std::string& name) const {
  return std::find(forward_paths_.begin(), forward_paths_.end(), name) != forward_paths_.end();
}
bool kernel::lists_backward_path(const std::string& name) const {
  return std::find(backward_paths_.begin(), backward_paths_.end(), name) != backward_paths_.end();
}

bool kernel::available() const {
  return announced("synchronize", [&] { return table_->synchronize(); }) == NC_OK;
}

void kernel::check(nc_status s, const char* what) const {
  if (s == NC_OK) return;
  const char* text = announced("last_error", [&] { return table_->last_error(); });
  const std::string message = name_ + " " + what + ": " + plugin_string(text, "last_error() text");
  if (s == NC_ERR_INVALID_ARGUMENT) throw contract_error(message);
  throw kernel_error(s, message);
}

void kernel::forward(const nc_forward_args& a) const {
  check(announced("forward", [&] { return table_->forward(&a); }), "forward");
}
void kernel::backward(const nc_backward_args& a) const {
  if (table_->backward == nullptr) throw kernel_error(NC_ERR_UNSUPPORTED, name_ + " declares no backward");
  check(announced("backward", [&] { return table_->backward(&a); }), "backward");
}

std::size_t kernel::workspace_size(const nc_backward_args& a) const {
  std::size_t bytes = 0;
  if (table_->workspace_size == nullptr) throw kernel_error(NC_ERR_UNSUPPORTED, name_ + " declares no backward");
  check(announced("workspace_size", [&] { return table_->workspace_size(&a, &bytes); }), "workspace_size");
  return bytes;
}

std::string kernel::machine() const {
  if (version_ < 3 || !table_->machine) return "";
  const char* line = announced("machine", [&] { return table_->machine(); });
  return line == nullptr ? "" : plugin_string(line, "machine line");
}

std::string kernel::forward_path(const nc_forward_args& a) const {
  if (!table_->forward_path) return "";
  return plugin_string(announced("forward_path", [&] { return table_->forward_path(&a); }), "path name");
}
std::string kernel::backward_path(const nc_backward_args& a) const {
  if (!table_->backward_path) return "";
  return plugin_string(announced("backward_path", [&] { return table_->backward_path(&a); }), "path name");
}

void* kernel::alloc(std::size_t bytes) const {
  void* p = nullptr;
  check(announced("alloc", [&] { return table_->alloc(bytes, &p); }), "alloc");
  if (p == nullptr && bytes > 0)
    throw kernel_error(NC_ERR_RUNTIME, name_ + " alloc: returned NC_OK with a NULL pointer for " +
                                           std::to_string(bytes) + " bytes");
  return p;
}
void kernel::free(void* p) const { check(announced("free", [&] { return table_->free(p); }), "free"); }
void kernel::release(void* p) const noexcept { (void)announced("free", [&] { return table_->free(p); }); }
void kernel::upload(void* d, const void* h, std::size_t n) const {
  check(announced("copy", [&] { return table_->copy(d, h, n, NC_HOST_TO_DEVICE); }), "upload");
}
void kernel::download(void* h, const void* d, std::size_t n) const {
  check(announced("copy", [&] { return table_->copy(h, d, n, NC_DEVICE_TO_HOST); }), "download");
}
void kernel::copy_on_device(void* d, const void* s, std::size_t n) const {
  check(announced("copy", [&] { return table_->copy(d, s, n, NC_DEVICE_TO_DEVICE); }), "copy");
}
void kernel::synchronize() const {
  check(announced("synchronize", [&] { return table_->synchronize(); }), "synchronize");
}

}  // namespace nc
