// replay_main: runs inputs through a fuzz target's LLVMFuzzerTestOneInput once each, without
// libFuzzer, so that any build (gcc, the asan preset) replays the corpora and regressions.
//
//   <target>_replay [--stats] [--expect FILE] PATH...
//
// A PATH is an input file or a folder, whose files are taken recursively in name order; files
// whose names start with '.' or end in .case, .md, .txt, .json or .log are side files and are
// skipped. --stats prints how often each tag (kernel path, rejected rule, ...) was reached;
// --expect FILE fails unless every tag listed in FILE (one per line, '#' comments) was reached.
// A violation aborts, as under libFuzzer. Exit status: 0 when every input passed.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_session.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace fs = std::filesystem;

namespace {

bool side_file(const fs::path& p) {
  const std::string name = p.filename().string(), ext = p.extension().string();
  return name.empty() || name[0] == '.' || ext == ".case" || ext == ".md" || ext == ".txt" || ext == ".json" ||
         ext == ".log";
}

int usage() {
  std::fprintf(stderr, "usage: replay [--stats] [--expect TAGFILE] PATH...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool stats = false;
  std::string expect;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--stats") stats = true;
    else if (arg == "--expect" && i + 1 < argc) expect = argv[++i];
    else if (arg.rfind("--", 0) == 0) return usage();
    else if (fs::is_directory(arg)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::recursive_directory_iterator(arg))
        if (e.is_regular_file() && !side_file(e.path())) found.push_back(e.path());
      std::sort(found.begin(), found.end());
      inputs.insert(inputs.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(arg)) {
      inputs.emplace_back(arg);
    } else {
      std::fprintf(stderr, "replay: no such file or folder: %s\n", arg.c_str());
      return 2;
    }
  }
  if (inputs.empty() && expect.empty()) return usage();
  if (stats || !expect.empty()) nc::fuzz::enable_tags();

  LLVMFuzzerInitialize(&argc, &argv);
  const auto start = std::chrono::steady_clock::now();
  for (const fs::path& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    nc::fuzz::set_current_file(p.string());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("replayed %zu input(s) on %s in %.2f s (%.2f ms each): all passed\n", inputs.size(),
              nc::fuzz::plugin().name().c_str(), seconds, inputs.empty() ? 0.0 : 1e3 * seconds / double(inputs.size()));

  if (stats)
    for (const auto& [name, count] : nc::fuzz::tags()) std::printf("  %8lld  %s\n", (long long)count, name.c_str());
  if (!expect.empty()) {
    std::ifstream list(expect);
    if (!list) {
      std::fprintf(stderr, "replay: cannot read %s\n", expect.c_str());
      return 2;
    }
    int missing = 0, wanted = 0;
    for (std::string line; std::getline(list, line);) {
      line = line.substr(0, line.find('#'));
      while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
      if (line.empty()) continue;
      ++wanted;
      if (!nc::fuzz::tags().count(line)) std::printf("NOT REACHED: %s\n", line.c_str()), ++missing;
    }
    std::printf("%d of %d expected tag(s) reached\n", wanted - missing, wanted);
    if (missing) return 1;
  }
  return 0;
}
