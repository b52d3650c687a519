// The C++ face of a kernel plugin: load one, call it, own its memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "normcheck/abi.h"

namespace nc {

/// A call the plugin rejected under the contract (NC_ERR_INVALID_ARGUMENT): nothing
/// was written. what() is the plugin's message naming the argument and the rule.
class contract_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Any other failure of a plugin call: the status and the plugin's message.
class kernel_error : public std::runtime_error {
 public:
  kernel_error(nc_status status, const std::string& message) : std::runtime_error(message), status(status) {}
  nc_status status;
};

/// What a plugin serves (abi.h's nc_capabilities), whatever ABI version it speaks: a
/// version-1 plugin's NC_CAP_* bits, translated. The harness draws every case inside it.
struct capabilities {
  std::uint32_t dtype_pairs = NC_PAIRS_ALL;  ///< NC_PAIR_* bits
  std::uint32_t layouts = NC_LAYOUTS_ALL;    ///< NC_LAYOUT_* bits
  std::uint32_t flags = 0;                   ///< NC_FORWARD_ONLY, NC_NO_R, NC_ROUNDS_*
  std::vector<float> epsilons;               ///< empty: any finite epsilon >= 0
  std::int64_t max_n = 0;                    ///< 0: no limit
  std::int64_t max_elements = 0;             ///< M·N; 0: no limit
  /// the operations it serves (abi.h "Variants"), never empty: a version-1 or -2 plugin, and a
  /// version-3 one that lists none, serves the plain operation only
  std::vector<nc_operation> operations = {nc_operation{}};
  /// what the kernel declares, whatever a campaign narrowed operations to (--variant): the
  /// operations a variant's cases may be compared with
  std::vector<nc_operation> declared_operations = {nc_operation{}};
  std::int64_t n_multiple = 1;               ///< N must be a multiple of this

  bool serves(nc_dtype x, nc_dtype gamma) const;
  bool serves(const nc_operation& op) const;
  bool serves_plain() const { return serves(nc_operation{}); }
  bool takes_n(std::int64_t n) const { return n % n_multiple == 0; }
  bool serves_layouts(std::uint32_t layout_bits) const { return (layouts & layout_bits) == layout_bits; }
  bool backward() const { return (flags & NC_FORWARD_ONLY) == 0; }
  bool writes_r() const { return (flags & NC_NO_R) == 0; }
  /// x̂ = x·r rounded to x's dtype before the γ multiply: the y bound carries that rounding
  bool rounds_normalized() const { return (flags & NC_ROUNDS_NORMALIZED) != 0; }
  /// u = dy·γ and dgamma's terms dy·x̂ rounded to x's dtype: the dx and dgamma bounds carry it
  bool rounds_gradients() const { return (flags & NC_ROUNDS_GRADIENTS) != 0; }
  /// fp32 subnormals read and made as zero (flush-to-zero builds): the judge flushes the inputs
  /// and admits flushed intermediates and results
  bool flushes_subnormals() const { return (flags & NC_FLUSHES_SUBNORMALS) != 0; }
  /// a quantized output quantizes y rounded to x's dtype: the codes' bound carries that rounding
  bool quantizes_rounded_y() const { return (flags & NC_QUANTIZES_ROUNDED_Y) != 0; }
  bool any_epsilon() const { return epsilons.empty(); }
  bool takes_epsilon(float e) const;
  /// everything the contract allows
  bool full() const;
  /// one line: "dtypes fp16, bf16; layouts dense, padded rows; forward only; no r; epsilon 1e-05; N <= 4096"
  std::string describe() const;
  /// what the contract allows and this declaration leaves out, one entry each ("dtype pair fp32",
  /// "layout column strided", "the backward", "r", "epsilon other than 1e-05", "N > 4096")
  std::vector<std::string> not_served() const;
};

/// the name of an NC_PAIR_* bit ("fp32", "fp16+fp32 gamma", ...) and of an NC_LAYOUT_* bit
const char* pair_name(std::uint32_t pair_bit);
const char* layout_name(std::uint32_t layout_bit);
/// the NC_PAIR_* bit of an (x, gamma) dtype pair; 0 for a pair outside the contract
std::uint32_t pair_of(nc_dtype x, nc_dtype gamma);

/// Told of every call into a plugin: its name ("forward", "backward", "workspace_size",
/// "synchronize", "alloc", "free", "copy", "forward_path", "backward_path", "last_error")
/// before the call, and nullptr once it returned. The isolated worker's watchdog times each
/// call with it and names the one in flight when a plugin hangs, crashes or exits.
using call_observer = void (*)(const char* call);
/// sets the process's observer (nullptr: none); returns the previous one
call_observer set_call_observer(call_observer observer);

/// A loaded plugin. Copies share the library, which stays loaded while any copy lives.
class kernel {
 public:
  /// Loads the plugin at a path (a shared library exporting normcheck_plugin), or a Python
  /// kernel: `python:MODULE[:FUNCTION]` or `FILE.py[:FUNCTION]`, run by the bridge plugin
  /// libnormcheck_python.so found as shipped_path("python") finds it (kernels/python/README.md).
  static kernel load(const std::string& path);

  /// True for a kernel spec that names a Python kernel (python:..., *.py, *.py:FUNCTION).
  static bool is_python_spec(const std::string& spec);

  /// The shipped plugin for a backend ("simt" or "cuda"), found beside the calling
  /// program (its ../lib folder) or in NORMCHECK_PLUGIN_DIR.
  static kernel shipped(const std::string& backend);

  /// The path of the shipped plugin for a backend.
  static std::string shipped_path(const std::string& backend);

  /// True if a device is present for this plugin (always true for host backends).
  bool available() const;
  /// the plugin's line naming its device (abi.h nc_plugin.machine; "" when it gives none). A
  /// CUDA plugin makes its context to answer: ask in a worker (harness machine_line)
  std::string machine() const;

  const std::string& path() const { return path_; }
  /// the plugin's name and backend strings, as loaded (a NULL one reads "(unnamed)")
  const std::string& name() const { return name_; }
  const std::string& backend() const { return backend_; }
  /// the ABI version the plugin serves (1, 2 or 3)
  std::uint32_t abi_version() const { return version_; }
  const nc::capabilities& capabilities() const { return caps_; }
  bool device_memory() const { return (table_->capabilities & NC_CAP_DEVICE_MEMORY) != 0; }
  /// the path names the plugin lists (abi.h forward_paths / backward_paths; empty: none)
  const std::vector<std::string>& forward_paths() const { return forward_paths_; }
  const std::vector<std::string>& backward_paths() const { return backward_paths_; }
  /// whether the plugin lists this path name
  bool lists_forward_path(const std::string& name) const;
  bool lists_backward_path(const std::string& name) const;
  const nc_plugin& table() const { return *table_; }

  /// The calls; they throw contract_error or kernel_error.
  void forward(const nc_forward_args& args) const;
  void backward(const nc_backward_args& args) const;
  std::size_t workspace_size(const nc_backward_args& args) const;
  /// The code path a call would take ("" if the plugin does not say).
  std::string forward_path(const nc_forward_args& args) const;
  std::string backward_path(const nc_backward_args& args) const;

  /// Plugin memory.
  void* alloc(std::size_t bytes) const;
  void free(void* p) const;
  /// free for destructors: never throws. After a device fault (a CUDA context a kernel
  /// poisoned) every free fails; the memory goes with the process, and the fault itself
  /// was already reported by the call that met it
  void release(void* p) const noexcept;
  void upload(void* device, const void* host, std::size_t bytes) const;
  void download(void* host, const void* device, std::size_t bytes) const;
  void copy_on_device(void* dst, const void* src, std::size_t bytes) const;
  void synchronize() const;

 private:
  kernel(std::shared_ptr<void> library, const nc_plugin* table, std::string path, std::uint32_t version);
  void check(nc_status s, const char* what) const;

  std::shared_ptr<void> library_;
  const nc_plugin* table_;
  std::string path_;
  std::uint32_t version_;
  std::string name_, backend_;
  nc::capabilities caps_;
  std::vector<std::string> forward_paths_, backward_paths_;
};

}  // namespace nc
