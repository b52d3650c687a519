// normcheck-mutagen: the generated mutation operators over kernel source files.
//   normcheck-mutagen [--catalog DIR] [--summary] FILE...
// prints every mutant (id, original -> mutated), or with --summary the counts per file and
// operator class; --catalog DIR also writes each as a catalog-format DIR/<id>.mutant.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "generator.hpp"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  fs::path catalog;
  bool summary = false;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--catalog" && i + 1 < argc) catalog = argv[++i];
    else if (a == "--summary") summary = true;
    else if (a == "--help" || a == "-h" || (!a.empty() && a[0] == '-')) {
      std::fprintf(a == "--help" || a == "-h" ? stdout : stderr,
                   "usage: normcheck-mutagen [--catalog DIR] [--summary] FILE...\n");
      return a == "--help" || a == "-h" ? 0 : 64;
    } else files.emplace_back(a);
  }
  if (!catalog.empty()) fs::create_directories(catalog);
  std::size_t sites = 0, total = 0;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "normcheck-mutagen: cannot read %s\n", f.c_str());
      return 70;
    }
    std::ostringstream text;
    text << in.rdbuf();
    const auto mutants = nc::mutants::generate(f.filename().string(), text.str());
    std::map<std::string, int> per_class;
    for (const auto& m : mutants) {
      ++per_class[m.op_class];
      if (!summary) std::printf("%s\t`%s` -> `%s`\n", m.id.c_str(), m.original.c_str(), m.mutated.c_str());
      if (!catalog.empty())
        std::ofstream(catalog / (nc::mutants::file_safe_id(m.id) + ".mutant"))
            << nc::mutants::catalog_text(m, f.parent_path().filename().string());
    }
    const std::size_t s = nc::mutants::count_sites(mutants);
    sites += s;
    total += mutants.size();
    if (summary) {
      std::printf("%-24s %4zu sites %5zu mutants:", f.filename().c_str(), s, mutants.size());
      for (const auto& c : nc::mutants::operator_classes()) std::printf(" %s %d", c.c_str(), per_class[c]);
      std::printf("\n");
    }
  }
  if (summary) std::printf("%-24s %4zu sites %5zu mutants\n", "total", sites, total);
  return 0;
}
