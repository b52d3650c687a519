#include "generated.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "process.hpp"

namespace nc::mutants {

namespace fs = std::filesystem;
using reports::status;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// keeps the file's timestamp when nothing changed, so ninja does not rebuild it
void write_if_changed(const fs::path& p, const std::string& text) {
  std::error_code ec;
  if (fs::exists(p, ec)) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    if (s.str() == text) return;
  }
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

std::string fixed(double v, int digits = 1) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::optional<json::value> load_json(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  try {
    return json::value::parse(s.str());
  } catch (const std::exception&) {
    return std::nullopt;  // a torn entry is a miss
  }
}

void store_json(const fs::path& p, const json::value& v) {
  fs::create_directories(p.parent_path());
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << v.dump();
  }
  fs::rename(tmp, p);
}

// the error lines of a compile log that name the slot's copy
std::string compile_errors(const std::string& log, const fs::path& root) {
  std::istringstream in(log);
  std::string out;
  int n = 0;
  for (std::string line; std::getline(in, line) && n < 6;)
    if (line.find("error") != std::string::npos && line.find(root.string()) != std::string::npos) {
      out += line.substr(line.find(root.string()) + root.string().size() + 1) + "\n";
      ++n;
    }
  return out.empty() ? log.substr(log.size() > 1500 ? log.size() - 1500 : 0) : out;
}

}  // namespace

generated_config read_generated_config(const fs::path& path) {
  const auto doc = load_json(path);
  if (!doc) throw std::runtime_error("cannot read " + path.string() + " (is the build configured?)");
  generated_config c;
  c.build_dir = (*doc)["build_dir"].as_string();
  c.cmake = (*doc)["cmake"].as_string();
  c.kernels_dir = (*doc)["kernels_dir"].as_string();
  c.cache_dir = (*doc)["cache_dir"].as_string();
  for (const json::value& f : (*doc)["files"].as_array()) c.files.push_back(f.as_string());
  for (const json::value& s : (*doc)["slots"].as_array())
    c.slots.push_back({s["root"].as_string(), s["object"].as_string(), s["plugin"].as_string(), s["target"].as_string()});
  if (c.slots.empty()) throw std::runtime_error(path.string() + ": no build slots");
  return c;
}

std::vector<generated_mutant> select_generated(std::vector<generated_mutant> all, const generated_options& o) {
  std::vector<generated_mutant> kept;
  for (generated_mutant& m : all) {
    const bool file_ok = o.files.empty() || std::any_of(o.files.begin(), o.files.end(), [&](const std::string& f) {
                           return f == m.file || fs::path(f).filename().string() == fs::path(m.file).filename().string();
                         });
    const bool op_ok = o.operators.empty() ||
                       std::find(o.operators.begin(), o.operators.end(), m.op_class) != o.operators.end();
    const bool id_ok = o.ids.empty() || std::find(o.ids.begin(), o.ids.end(), m.id) != o.ids.end();
    if (file_ok && op_ok && id_ok) kept.push_back(std::move(m));
  }
  if (o.limit > 0 && kept.size() > o.limit) {
    std::vector<std::pair<std::uint64_t, std::size_t>> order;
    for (std::size_t i = 0; i < kept.size(); ++i) order.emplace_back(fnv1a(kept[i].id), i);
    std::sort(order.begin(), order.end());
    std::vector<std::size_t> chosen;
    for (std::size_t i = 0; i < o.limit; ++i) chosen.push_back(order[i].second);
    std::sort(chosen.begin(), chosen.end());
    std::vector<generated_mutant> sample;
    for (std::size_t i : chosen) sample.push_back(std::move(kept[i]));
    kept = std::move(sample);
  }
  return kept;
}

bool same_object(const std::string& original, const std::string& mutated) { return original == mutated; }

json::value verdict_to_json(const reports::mutant& m) {
  json::value v = json::object{};
  v.set("status", reports::status_name(m.result));
  v.set("reason", m.reason);
  json::value kills = json::array{};
  for (const reports::kill& k : m.kills) {
    json::value x = json::object{};
    x.set("property", k.property);
    x.set("kind", k.kind);
    x.set("judges_values", k.judges_values);
    x.set("error", k.error);
    x.set("cases", k.cases);
    x.set("seconds", k.seconds);
    x.set("counterexample", k.counterexample);
    x.set("message", k.message);
    kills.push(std::move(x));
  }
  v.set("kills", std::move(kills));
  json::value covered = json::array{};
  for (const std::string& p : m.covered_by) covered.push(p);
  v.set("covered_by", std::move(covered));
  if (m.cases_to_kill) v.set("cases_to_kill", *m.cases_to_kill);
  if (m.seconds_to_kill) v.set("seconds_to_kill", *m.seconds_to_kill);
  v.set("seconds", m.seconds);
  return v;
}

void verdict_from_json(const json::value& v, reports::mutant& m) {
  const std::string s = v["status"].as_string();
  bool found = false;
  for (status x : {status::killed, status::survived, status::timeout, status::runtime_error, status::compile_error,
                   status::no_coverage, status::ignored})
    if (s == reports::status_name(x)) {
      m.result = x;
      found = true;
    }
  if (!found) throw std::runtime_error("cached verdict: unknown status '" + s + "'");
  m.reason = v.get_string("reason");
  m.kills.clear();
  for (const json::value& k : v["kills"].as_array())
    m.kills.push_back({k.get_string("property"), k.get_string("kind"), k.get_bool("error"), long(k.get_number("cases")),
                       k.get_number("seconds"), k.get_string("counterexample"), k.get_string("message"),
                       k.get_bool("judges_values")});
  m.covered_by.clear();
  for (const json::value& p : v["covered_by"].as_array()) m.covered_by.push_back(p.as_string());
  m.cases_to_kill.reset();
  m.seconds_to_kill.reset();
  if (v.find("cases_to_kill")) m.cases_to_kill = long(v["cases_to_kill"].as_number());
  if (v.find("seconds_to_kill")) m.seconds_to_kill = v["seconds_to_kill"].as_number();
  m.seconds = v.get_number("seconds");
}

generated_campaign::generated_campaign(generated_config config, generated_options options, fs::path out)
    : cfg_(std::move(config)), o_(std::move(options)), out_(std::move(out)) {}

manifest generated_campaign::select() {
  // every file of kernels/src is an input of every mutant (one translation unit)
  std::vector<fs::path> names;
  for (const auto& e : fs::directory_iterator(cfg_.kernels_dir / "src"))
    if (e.is_regular_file()) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  std::uint64_t tree = fnv1a("kernels/src");
  for (const fs::path& n : names) {
    const std::string text = read_text(cfg_.kernels_dir / "src" / n);
    sources_["src/" + n.string()] = text;
    tree = fnv1a(n.string() + '\0' + text + '\0', tree);
  }
  tree_hash_ = hex_hash(tree);

  std::vector<generated_mutant> all;
  for (const std::string& f : cfg_.files) {
    const auto src = sources_.find(f);
    if (src == sources_.end()) throw std::runtime_error("the generated scope names " + f + ", which is not in kernels/src");
    std::vector<generated_mutant> of_file = generate(fs::path(f).filename().string(), src->second);
    for (generated_mutant& m : of_file) m.file = f;
    figures_.sites_in_scope += count_sites(of_file);
    figures_.mutants_in_scope += of_file.size();
    all.insert(all.end(), of_file.begin(), of_file.end());
  }
  for (const std::string& f : o_.files)
    if (std::none_of(cfg_.files.begin(), cfg_.files.end(), [&](const std::string& s) {
          return s == f || fs::path(s).filename().string() == fs::path(f).filename().string();
        }))
      throw std::invalid_argument("--only-file " + f + ": not a file in the generated scope");
  for (const std::string& op : o_.operators)
    if (std::find(operator_classes().begin(), operator_classes().end(), op) == operator_classes().end())
      throw std::invalid_argument("--operators " + op + ": not an operator class");
  selected_ = select_generated(std::move(all), o_);
  figures_.sites = count_sites(selected_);
  figures_.mutants = selected_.size();

  manifest m;
  m.backends = {"simt"};
  for (const generated_mutant& g : selected_) {
    ++figures_.per_class[g.op_class];
    mutant_spec s;
    s.id = g.id;
    s.bug_class = "generated " + g.op_class;
    s.summary = "`" + g.original + "` -> `" + g.mutated + "`";
    s.mirrors = "a generated operator";
    s.expected_killer = "any property";
    s.file = "kernels/" + g.file;
    s.catalog = "generated: " + file_safe_id(g.id) + ".mutant";
    s.hunks.push_back({g.search_offset, g.search, g.replace});
    m.sources["kernels/" + g.file] = sources_.at(g.file);
    m.mutants.push_back(std::move(s));
  }
  return m;
}

int generated_campaign::cmake_build(const std::vector<std::string>& targets, const fs::path& log) const {
  std::vector<std::string> argv{cfg_.cmake.string(), "--build", cfg_.build_dir.string(), "-j",
                                std::to_string(cfg_.slots.size()), "--target"};
  argv.insert(argv.end(), targets.begin(), targets.end());
  argv.insert(argv.end(), {"--", "-k", "0"});  // a slot that fails to compile does not stop the others
  child c(argv, {}, {}, log, 3600);
  return c.wait().exit_code;
}

void generated_campaign::build(const std::string& suite_key) {
  const auto t0 = std::chrono::steady_clock::now();
  suite_key_ = suite_key;
  const fs::path logs = out_ / "build";
  fs::create_directories(logs);
  const fs::path store = cfg_.cache_dir / "plugins";
  fs::create_directories(store);

  // the slots hold kernels/src as it is now (a run cut short may have left a mutant there)
  auto restore = [&](const generated_config::slot& s) {
    for (const auto& [name, text] : sources_) write_if_changed(s.root / name, text);
  };
  for (const auto& s : cfg_.slots) restore(s);
  std::vector<std::string> targets;
  for (const auto& s : cfg_.slots) targets.push_back(s.target);
  std::printf("generated: building the original in %zu slot(s)\n", cfg_.slots.size());
  std::fflush(stdout);
  if (cmake_build(targets, logs / "original.log") != 0)
    throw std::runtime_error("the original kernel source does not build in the generated slots: " +
                             tail_of(logs / "original.log"));
  std::vector<std::string> originals;
  for (const auto& s : cfg_.slots) originals.push_back(read_text(s.object));
  object_hash_ = hex_hash(fnv1a(originals.front()));
  baseline_plugin_ = store / ("original-" + object_hash_ + ".so");
  fs::copy_file(cfg_.slots.front().plugin, baseline_plugin_, fs::copy_options::overwrite_existing);

  // the caches: a build entry says equivalent, compile error or built (with the object's hash);
  // a built mutant's verdict is keyed by its object, so a kernel edit that leaves its code as it
  // was (a comment, code of the other backend) keeps its verdict once it is compiled again
  auto verdict = [&](const generated_mutant& g) {
    if (!o_.cache) return false;
    const auto v = load_json(cfg_.cache_dir / "verdict" / (verdict_key(g.id) + ".json"));
    if (!v) return false;
    reports::mutant d;
    verdict_from_json(*v, d);
    prejudged_[g.id] = d;
    ++figures_.verdicts_cached;
    return true;
  };
  auto prejudge = [&](const generated_mutant& g, status st, const std::string& reason) {
    reports::mutant d;
    d.result = st;
    d.reason = reason;
    prejudged_[g.id] = d;
    ++(st == status::ignored ? figures_.equivalent : figures_.compile_errors);
  };
  std::vector<const generated_mutant*> to_build;
  for (const generated_mutant& g : selected_) {
    const std::string key = hex_hash(fnv1a(tree_hash_ + '\0' + object_hash_ + '\0' + g.id + '\0' + g.file + '\0' +
                                           std::to_string(g.search_offset) + '\0' + g.search + '\0' + g.replace));
    build_key_[g.id] = key;
    const auto b = o_.cache ? load_json(cfg_.cache_dir / "build" / (key + ".json")) : std::nullopt;
    const std::string st = b ? b->get_string("status") : "";
    if (st == "equivalent" || st == "compile_error") {
      prejudge(g, st == "equivalent" ? status::ignored : status::compile_error, b->get_string("reason"));
      ++figures_.build_cached;
      continue;
    }
    if (st == "built") {
      object_of_[g.id] = b->get_string("object");
      if (verdict(g)) {
        ++figures_.build_cached;
        continue;
      }
      const fs::path so = store / (key + ".so");
      if (fs::exists(so)) {
        plugins_[g.id] = so;
        ++figures_.build_cached;
        continue;
      }
    }
    to_build.push_back(&g);
  }

  std::printf("generated: %zu mutants to compile (%zu from the build cache, %zu verdicts cached)\n", to_build.size(),
              figures_.build_cached, figures_.verdicts_cached);
  std::fflush(stdout);
  const std::size_t width = cfg_.slots.size();
  for (std::size_t at = 0; at < to_build.size(); at += width) {
    const std::size_t count = std::min(width, to_build.size() - at);
    std::vector<std::string> objects;
    for (std::size_t k = 0; k < count; ++k) {
      const generated_mutant& g = *to_build[at + k];
      const auto& s = cfg_.slots[k];
      write_if_changed(s.root / g.file, mutants::apply(g, sources_.at(g.file)));
      std::error_code ec;
      fs::remove(s.object, ec);
      objects.push_back(fs::relative(s.object, cfg_.build_dir).string());
    }
    const fs::path log = logs / "batch.log";
    cmake_build(objects, log);
    const std::string log_text = read_text(log);
    std::vector<std::string> link;
    std::vector<std::size_t> linked;
    for (std::size_t k = 0; k < count; ++k) {
      const generated_mutant& g = *to_build[at + k];
      const auto& s = cfg_.slots[k];
      const fs::path entry_path = cfg_.cache_dir / "build" / (build_key_[g.id] + ".json");
      json::value entry = json::object{};
      ++figures_.compiled;
      if (!fs::exists(s.object)) {
        prejudge(g, status::compile_error, "the mutated source does not compile:\n" + compile_errors(log_text, s.root));
        entry.set("status", "compile_error");
      } else if (const std::string object = read_text(s.object); same_object(originals[k], object)) {
        prejudge(g, status::ignored,
                 "equivalent: the mutated translation unit compiles to the same object code as the original "
                 "(identical bytes); never run");
        entry.set("status", "equivalent");
      } else {
        object_of_[g.id] = hex_hash(fnv1a(object));
        entry.set("status", "built");
        entry.set("object", object_of_[g.id]);
        store_json(entry_path, entry);
        if (!verdict(g)) {
          link.push_back(s.target);
          linked.push_back(k);
        }
        continue;
      }
      entry.set("reason", prejudged_[g.id].reason);
      store_json(entry_path, entry);
    }
    if (!link.empty()) cmake_build(link, logs / "link.log");
    for (std::size_t k : linked) {
      const generated_mutant& g = *to_build[at + k];
      const auto& s = cfg_.slots[k];
      if (fs::exists(s.plugin) && fs::last_write_time(s.plugin) >= fs::last_write_time(s.object)) {
        const fs::path so = store / (build_key_[g.id] + ".so");
        fs::copy_file(s.plugin, so, fs::copy_options::overwrite_existing);
        plugins_[g.id] = so;
      } else {
        prejudge(g, status::compile_error, "the mutant's object did not link:\n" + tail_of(logs / "link.log"));
        json::value entry = json::object{};
        entry.set("status", "compile_error");
        entry.set("reason", prejudged_[g.id].reason);
        store_json(cfg_.cache_dir / "build" / (build_key_[g.id] + ".json"), entry);
      }
    }
    for (std::size_t k = 0; k < count; ++k) {
      const generated_mutant& g = *to_build[at + k];
      write_if_changed(cfg_.slots[k].root / g.file, sources_.at(g.file));
    }
    std::printf("generated: compiled %zu of %zu (%zu equivalent, %zu compile errors so far)\n",
                std::min(at + count, to_build.size()), to_build.size(), figures_.equivalent, figures_.compile_errors);
    std::fflush(stdout);
  }
  for (const auto& s : cfg_.slots) restore(s);
  figures_.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

fs::path generated_campaign::plugin(const std::string& id) const {
  const auto it = plugins_.find(id);
  return it == plugins_.end() ? fs::path() : it->second;
}

const reports::mutant* generated_campaign::prejudged(const std::string& id) const {
  const auto it = prejudged_.find(id);
  return it == prejudged_.end() ? nullptr : &it->second;
}

std::string generated_campaign::verdict_key(const std::string& id) const {
  return hex_hash(fnv1a(object_of_.at(id) + '\0' + object_hash_ + '\0' + suite_key_));
}

std::optional<json::value> generated_campaign::cached_baseline() const {
  if (!o_.cache) return std::nullopt;
  return load_json(cfg_.cache_dir / "baseline" / (hex_hash(fnv1a(object_hash_ + tree_hash_ + suite_key_)) + ".json"));
}

void generated_campaign::store_baseline(const json::value& v) const {
  store_json(cfg_.cache_dir / "baseline" / (hex_hash(fnv1a(object_hash_ + tree_hash_ + suite_key_)) + ".json"), v);
}

void generated_campaign::store_verdict(const reports::mutant& m) const {
  if (m.result == status::ignored && m.reason.rfind("not run", 0) == 0) return;  // a budget's Ignored is no verdict
  store_json(cfg_.cache_dir / "verdict" / (verdict_key(m.id) + ".json"), verdict_to_json(m));
}

std::string generated_campaign::summary(const reports::campaign& c, double wall_seconds) const {
  const reports::score s = reports::compute_score(c);
  std::ostringstream md;
  md << "# normcheck generated mutants: " << c.backend << "\n\n";
  md << "Scope: ";
  for (std::size_t i = 0; i < cfg_.files.size(); ++i) md << (i ? ", " : "") << "`kernels/" << cfg_.files[i] << "`";
  md << " (" << figures_.sites_in_scope << " sites, " << figures_.mutants_in_scope << " mutants).\n\n";
  md << "Selection: ";
  if (o_.files.empty() && o_.operators.empty() && o_.limit == 0) md << "every mutant in scope";
  else {
    if (!o_.files.empty()) {
      md << "files";
      for (const auto& f : o_.files) md << " `" << f << "`";
      md << "; ";
    }
    if (!o_.operators.empty()) {
      md << "operators";
      for (const auto& f : o_.operators) md << " " << f;
      md << "; ";
    }
    if (o_.limit > 0) md << "the " << o_.limit << " of lowest FNV-1a hash of their id (`--limit " << o_.limit << "`)";
  }
  md << ": " << figures_.sites << " sites, " << figures_.mutants << " mutants (";
  bool first = true;
  for (const auto& [k, n] : figures_.per_class) {
    md << (first ? "" : ", ") << k << " " << n;
    first = false;
  }
  md << ").\n\n";
  md << "| figure | value |\n|---|---|\n";
  md << "| mutants | " << figures_.mutants << " |\n";
  md << "| equivalent (identical object code, never run) | " << figures_.equivalent << " |\n";
  md << "| compile errors | " << s.compile_error << " |\n";
  md << "| killed | " << s.killed << " |\n";
  md << "| survived | " << s.survived << " |\n";
  md << "| timeout | " << s.timeout << " |\n";
  md << "| runtime error | " << s.runtime_error << " |\n";
  md << "| not run (budget) | " << (s.ignored - int(figures_.equivalent)) << " |\n";
  md << "| score (killed + timeout) / (killed + timeout + survived) | "
     << (s.value() ? fixed(*s.value()) + "%" : "n/a") << " |\n";
  md << "| wall time | " << fixed(wall_seconds) << " s (build " << fixed(figures_.build_seconds) << " s) |\n";
  md << "| compiled this run | " << figures_.compiled << " |\n";
  md << "| from the build cache / verdict cache | " << figures_.build_cached << " / " << figures_.verdicts_cached
     << (figures_.baseline_cached ? " (baseline cached)" : "") << " |\n\n";
  md << "Seed " << c.seed << ", " << (c.cases > 0 ? std::to_string(c.cases) : std::string("default"))
     << " cases a property" << (c.first_kill ? ", each suite stopped at its first kill" : "") << ".\n\n";
  md << "## Survivors\n\n";
  int n = 0;
  for (const reports::mutant& m : c.mutants)
    if (m.result == status::survived) {
      const auto g = std::find_if(selected_.begin(), selected_.end(), [&](const generated_mutant& x) { return x.id == m.id; });
      std::string line;
      if (g != selected_.end()) {  // the site's whole line
        const std::string& src = sources_.at(g->file);
        const std::size_t b = g->offset == 0 ? std::string::npos : src.rfind('\n', g->offset - 1);
        line = src.substr(b == std::string::npos ? 0 : b + 1);
        line = line.substr(0, line.find('\n'));
        line = line.substr(std::min(line.size(), line.find_first_not_of(' ')));
      }
      md << "- `" << m.id << "`: `" << (g == selected_.end() ? "" : g->original) << "` -> `"
         << (g == selected_.end() ? "" : g->mutated) << "` in `" << line << "`\n";
      ++n;
    }
  if (n == 0) md << "none\n";
  return md.str();
}

}  // namespace nc::mutants
