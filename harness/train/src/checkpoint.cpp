// The checkpoint file (format in checkpoint.hpp): written byte by byte in little-endian order, so
// a checkpoint reads the same on any host.
#include "normcheck/train/checkpoint.hpp"

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace nc::train {
namespace {

constexpr char magic[8] = {'N', 'C', 'T', 'R', 'A', 'I', 'N', '\n'};

std::uint64_t fnv1a(const char* data, std::size_t size) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (std::size_t k = 0; k < size; ++k) {
    h ^= static_cast<unsigned char>(data[k]);
    h *= 0x100000001b3ULL;
  }
  return h;
}

void put(std::string& out, std::uint64_t v, int bytes) {
  for (int b = 0; b < bytes; ++b) out.push_back(char((v >> (8 * b)) & 0xff));
}

std::uint32_t dtype_code(oracle::dtype t) {
  switch (t) {
    case oracle::dtype::f16: return 1;
    case oracle::dtype::bf16: return 2;
    default: return 0;
  }
}

// reads fields in order, each checked against the bytes left
class reader {
 public:
  reader(const std::string& bytes, std::size_t end, const std::string& what) : bytes_(bytes), end_(end), what_(what) {}

  std::uint64_t get(int size, const char* field) {
    need(std::size_t(size), field);
    std::uint64_t v = 0;
    for (int b = 0; b < size; ++b) v |= std::uint64_t(static_cast<unsigned char>(bytes_[at_ + b])) << (8 * b);
    at_ += std::size_t(size);
    return v;
  }

  std::string text(std::size_t size, const char* field) {
    need(size, field);
    std::string s = bytes_.substr(at_, size);
    at_ += size;
    return s;
  }

  [[noreturn]] void fail(const std::string& rule) const {
    throw checkpoint_error("checkpoint '" + what_ + "': at byte " + std::to_string(at_) + ": " + rule);
  }
  std::size_t at() const { return at_; }

 private:
  void need(std::size_t size, const char* field) const {
    if (size > end_ - at_)
      fail(std::string("truncated: the ") + field + " needs " + std::to_string(size) + " bytes, " +
           std::to_string(end_ - at_) + " are left");
  }
  const std::string& bytes_;
  std::size_t end_;
  std::size_t at_ = 0;
  const std::string& what_;
};

}  // namespace

std::string checkpoint_bytes(const parameters& w, const checkpoint_info& info) {
  std::string out(magic, sizeof magic);
  put(out, checkpoint_version, 4);
  put(out, std::uint32_t(info.widths.inputs), 4);
  put(out, std::uint32_t(info.widths.hidden), 4);
  put(out, std::uint32_t(info.widths.outputs), 4);
  put(out, dtype_code(info.type), 4);
  const auto tensors = w.tensors();
  put(out, tensors.size(), 4);
  put(out, info.steps, 8);
  put(out, info.seed, 8);
  for (const auto& [name, values] : tensors) {
    put(out, name.size(), 4);
    out.append(name);
    put(out, values->size(), 8);
    for (float v : *values) put(out, std::bit_cast<std::uint32_t>(v), 4);
  }
  put(out, fnv1a(out.data(), out.size()), 8);
  return out;
}

void save_checkpoint(const std::string& path, const parameters& w, const checkpoint_info& info) {
  const std::string bytes = checkpoint_bytes(w, info);
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      throw std::runtime_error("cannot write the checkpoint '" + temporary + "'");
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) throw std::runtime_error("cannot rename '" + temporary + "' to '" + path + "': " + ec.message());
}

parameters parse_checkpoint(const std::string& bytes, const shape& expected, const std::string& what,
                            checkpoint_info* info_out) {
  // the hash first: a flipped byte anywhere is "corrupted" rather than whatever field it hit
  const std::size_t header = sizeof magic + 4;
  if (bytes.size() < header + 8) {
    reader r(bytes, bytes.size(), what);
    r.text(std::min(bytes.size(), sizeof magic), "magic");
    r.fail("truncated: " + std::to_string(bytes.size()) + " bytes cannot hold a checkpoint's header and hash");
  }
  {
    reader r(bytes, bytes.size(), what);
    if (r.text(sizeof magic, "magic") != std::string(magic, sizeof magic))
      throw checkpoint_error("checkpoint '" + what + "': at byte 0: not a normcheck train checkpoint (the magic is not \"NCTRAIN\\n\")");
    const std::uint64_t version = r.get(4, "format version");
    if (version != checkpoint_version)
      throw checkpoint_error("checkpoint '" + what + "': at byte 8: format version " + std::to_string(version) +
                             " is not one this normcheck reads (it reads version " + std::to_string(checkpoint_version) + ")");
  }
  const std::size_t body = bytes.size() - 8;
  reader r(bytes, body, what);
  r.text(header, "magic and version");

  checkpoint_info info;
  info.widths.inputs = int(r.get(4, "inputs"));
  info.widths.hidden = int(r.get(4, "hidden"));
  info.widths.outputs = int(r.get(4, "outputs"));
  const std::uint64_t code = r.get(4, "dtype");
  const std::uint64_t count = r.get(4, "tensor count");
  info.steps = r.get(8, "steps");
  info.seed = r.get(8, "seed");

  // the size the header promises; a shorter file is truncated, whatever its hash says
  parameters w = parameters::zeros(expected);
  std::size_t promised = 48 + 8;
  for (const auto& [name, values] : w.tensors()) promised += 4 + name.size() + 8 + 4 * values->size();
  const bool shape_matches = info.widths.inputs == expected.inputs && info.widths.hidden == expected.hidden &&
                             info.widths.outputs == expected.outputs;
  if (shape_matches && bytes.size() < promised)
    r.fail("truncated: the file has " + std::to_string(bytes.size()) + " bytes, a checkpoint of this shape has " +
           std::to_string(promised));

  const std::uint64_t stored = [&] {
    std::uint64_t v = 0;
    for (int b = 0; b < 8; ++b) v |= std::uint64_t(static_cast<unsigned char>(bytes[body + b])) << (8 * b);
    return v;
  }();
  if (stored != fnv1a(bytes.data(), body))
    throw checkpoint_error("checkpoint '" + what + "': at byte " + std::to_string(body) +
                           ": corrupted: the FNV-1a hash of the bytes before it does not match the one stored");

  if (!shape_matches)
    r.fail("the network is " + std::to_string(info.widths.inputs) + "→" + std::to_string(info.widths.hidden) + "→" +
           std::to_string(info.widths.outputs) + ", this run's is " + std::to_string(expected.inputs) + "→" +
           std::to_string(expected.hidden) + "→" + std::to_string(expected.outputs));
  if (code > 2) r.fail("dtype code " + std::to_string(code) + " is not 0 (fp32), 1 (fp16) or 2 (bf16)");
  info.type = code == 0 ? oracle::dtype::f32 : code == 1 ? oracle::dtype::f16 : oracle::dtype::bf16;
  auto tensors = w.tensors();
  if (count != tensors.size())
    r.fail("tensor count " + std::to_string(count) + ", the network has " + std::to_string(tensors.size()));
  for (auto& [name, values] : tensors) {
    const std::uint64_t length = r.get(4, "tensor name length");
    if (length > 64) r.fail("a tensor name of " + std::to_string(length) + " bytes (at most 64)");
    const std::string got = r.text(std::size_t(length), "tensor name");
    if (got != name) r.fail("tensor '" + got + "' where '" + std::string(name) + "' belongs");
    const std::uint64_t elements = r.get(8, "element count");
    if (elements != values->size())
      r.fail("tensor '" + got + "' has " + std::to_string(elements) + " elements, the network's has " +
             std::to_string(values->size()));
    for (float& v : *values) v = std::bit_cast<float>(std::uint32_t(r.get(4, "weights")));
  }
  if (r.at() != body) r.fail(std::to_string(body - r.at()) + " bytes after the last tensor, before the hash");
  if (info_out != nullptr) *info_out = info;
  return w;
}

parameters load_checkpoint(const std::string& path, const shape& expected, checkpoint_info* info) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw checkpoint_error("checkpoint '" + path + "': cannot be opened");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_checkpoint(text.str(), expected, path, info);
}

}  // namespace nc::train
