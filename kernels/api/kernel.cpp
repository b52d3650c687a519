#include "normcheck/kernel.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace nc {

namespace {

std::string program_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

}  // namespace

kernel kernel::load(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw std::runtime_error("cannot load kernel plugin '" + path + "': " + dlerror());
  std::shared_ptr<void> library(handle, [](void* h) { dlclose(h); });
  auto entry = reinterpret_cast<nc_plugin_entry>(dlsym(handle, "normcheck_plugin"));
  if (entry == nullptr)
    throw std::runtime_error("kernel plugin '" + path + "' does not export normcheck_plugin");
  const nc_plugin* table = entry(NORMCHECK_ABI_VERSION);
  if (table == nullptr || table->abi_version != NORMCHECK_ABI_VERSION)
    throw std::runtime_error("kernel plugin '" + path + "' does not serve normcheck ABI version " +
                             std::to_string(NORMCHECK_ABI_VERSION));
  if (!table->forward || !table->backward || !table->workspace_size || !table->alloc || !table->free ||
      !table->copy || !table->synchronize || !table->last_error)
    throw std::runtime_error("kernel plugin '" + path + "' has a null entry in its function table");
  return kernel(std::move(library), table, path);
}

std::string kernel::shipped_path(const std::string& backend) {
  const char* dir = std::getenv("NORMCHECK_PLUGIN_DIR");
  const std::string base = dir && *dir ? std::string(dir) : program_dir() + "/../lib";
  return base + "/libnormcheck_" + backend + ".so";
}

kernel kernel::shipped(const std::string& backend) { return load(shipped_path(backend)); }

bool kernel::available() const { return table_->synchronize() == NC_OK; }

void kernel::check(nc_status s, const char* what) const {
  if (s == NC_OK) return;
  const std::string message = std::string(table_->name) + " " + what + ": " + table_->last_error();
  if (s == NC_ERR_INVALID_ARGUMENT) throw contract_error(message);
  throw kernel_error(s, message);
}

void kernel::forward(const nc_forward_args& a) const { check(table_->forward(&a), "forward"); }
void kernel::backward(const nc_backward_args& a) const { check(table_->backward(&a), "backward"); }

std::size_t kernel::workspace_size(const nc_backward_args& a) const {
  std::size_t bytes = 0;
  check(table_->workspace_size(&a, &bytes), "workspace_size");
  return bytes;
}

std::string kernel::forward_path(const nc_forward_args& a) const {
  return table_->forward_path ? table_->forward_path(&a) : "";
}
std::string kernel::backward_path(const nc_backward_args& a) const {
  return table_->backward_path ? table_->backward_path(&a) : "";
}

void* kernel::alloc(std::size_t bytes) const {
  void* p = nullptr;
  check(table_->alloc(bytes, &p), "alloc");
  return p;
}
void kernel::free(void* p) const { check(table_->free(p), "free"); }
void kernel::release(void* p) const noexcept { (void)table_->free(p); }
void kernel::upload(void* d, const void* h, std::size_t n) const { check(table_->copy(d, h, n, NC_HOST_TO_DEVICE), "upload"); }
void kernel::download(void* h, const void* d, std::size_t n) const { check(table_->copy(h, d, n, NC_DEVICE_TO_HOST), "download"); }
void kernel::copy_on_device(void* d, const void* s, std::size_t n) const {
  check(table_->copy(d, s, n, NC_DEVICE_TO_DEVICE), "copy");
}
void kernel::synchronize() const { check(table_->synchronize(), "synchronize"); }

}  // namespace nc
