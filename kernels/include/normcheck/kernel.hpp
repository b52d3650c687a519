// The C++ face of a kernel plugin: load one, call it, own its memory.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

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

/// A loaded plugin. Copies share the library, which stays loaded while any copy lives.
class kernel {
 public:
  /// Loads the plugin at a path (a shared library exporting normcheck_plugin).
  static kernel load(const std::string& path);

  /// The shipped plugin for a backend ("simt" or "cuda"), found beside the calling
  /// program (its ../lib folder) or in NORMCHECK_PLUGIN_DIR.
  static kernel shipped(const std::string& backend);

  /// The path of the shipped plugin for a backend.
  static std::string shipped_path(const std::string& backend);

  /// True if a device is present for this plugin (always true for host backends).
  bool available() const;

  const std::string& path() const { return path_; }
  std::string name() const { return table_->name; }
  std::string backend() const { return table_->backend; }
  std::uint32_t capabilities() const { return table_->capabilities; }
  bool device_memory() const { return (table_->capabilities & NC_CAP_DEVICE_MEMORY) != 0; }
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
  kernel(std::shared_ptr<void> library, const nc_plugin* table, std::string path)
      : library_(std::move(library)), table_(table), path_(std::move(path)) {}
  void check(nc_status s, const char* what) const;

  std::shared_ptr<void> library_;
  const nc_plugin* table_;
  std::string path_;
};

}  // namespace nc
