#include "generator.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

namespace nc::mutants {

namespace {

enum class kind { ident, number, punct };

struct token {
  kind k;
  std::size_t offset, length;
  std::string text;
  bool space_before = false, space_after = false;
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The tokens of a C++ source, without comments, string and character literals and preprocessor
// lines (none of them is a site). Whitespace, a comment or a skipped literal counts as space.
std::vector<token> lex(std::string_view s) {
  static const char* puncts[] = {"<<=", ">>=", "->", "::", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",
                                 "||",  "+=",  "-=", "*=", "/=", "%=", "&=", "|=", "^="};
  std::vector<token> out;
  bool line_start = true, space = true;
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    const char c = s[i];
    if (c == '\n') {
      line_start = true;
      space = true;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      ++i;
      continue;
    }
    if (c == '#' && line_start) {  // a preprocessor line, with its continuations
      while (i < n && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < n && s[i + 1] == '\n') ++i;
        ++i;
      }
      space = true;
      continue;
    }
    line_start = false;
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') ++i;
      space = true;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      const std::size_t end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? n : end + 2;
      space = true;
      continue;
    }
    if (c == '"' || c == '\'') {
      // a raw string R"(...)" is not expected in kernel code; an ordinary literal ends at its
      // unescaped quote
      ++i;
      while (i < n && s[i] != c) i += s[i] == '\\' ? 2 : 1;
      ++i;
      space = true;
      continue;
    }
    token t{kind::punct, i, 1, "", space, false};
    if (ident_start(c)) {
      t.k = kind::ident;
      while (i + t.length < n && ident_char(s[i + t.length])) ++t.length;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      t.k = kind::number;
      while (i + t.length < n) {
        const char d = s[i + t.length];
        const char prev = s[i + t.length - 1];
        if (ident_char(d) || d == '.' || d == '\'' || ((d == '+' || d == '-') && (prev == 'e' || prev == 'E')))
          ++t.length;
        else
          break;
      }
    } else {
      for (const char* p : puncts)
        if (s.substr(i, std::char_traits<char>::length(p)) == p) {
          t.length = std::char_traits<char>::length(p);
          break;
        }
    }
    t.text = std::string(s.substr(i, t.length));
    if (!out.empty()) out.back().space_after = space;
    out.push_back(t);
    i += t.length;
    space = false;
  }
  if (!out.empty()) out.back().space_after = true;
  return out;
}

const std::set<std::string>& keywords() {
  static const std::set<std::string> k{
      "return", "break",  "continue", "goto",     "using",    "typedef", "template", "static_assert", "namespace",
      "struct", "class",  "enum",     "case",     "default",  "do",      "throw",    "if",            "for",
      "while",  "switch", "else",     "const",    "constexpr", "auto",   "static",   "inline",        "sizeof",
      "new",    "delete", "operator", "typename", "public",   "private", "volatile", "extern",        "friend"};
  return k;
}

const std::set<std::string>& barriers() {
  static const std::set<std::string> b{"__syncthreads", "__syncwarp",       "__syncthreads_count", "__syncthreads_and",
                                       "__syncthreads_or", "__threadfence", "__threadfence_block", "follow_prior_grid",
                                       "launch_dependents", "sync"};
  return b;
}

// the arithmetic types a functional or static cast may be dropped or narrowed from
const std::map<std::string, std::string>& narrowing() {
  static const std::map<std::string, std::string> m{
      {"std::int64_t", "int"},   {"int64_t", "int"},          {"long", "int"},     {"std::size_t", "unsigned"},
      {"size_t", "unsigned"},    {"std::uint64_t", "unsigned"}, {"double", "float"}, {"std::int32_t", ""},
      {"std::uint32_t", ""},     {"int", ""},                 {"unsigned", ""},    {"float", ""}};
  return m;
}

struct line_index {
  std::vector<std::size_t> starts{0};
  explicit line_index(std::string_view s) {
    for (std::size_t i = 0; i < s.size(); ++i)
      if (s[i] == '\n') starts.push_back(i + 1);
  }
  std::pair<int, int> at(std::size_t offset) const {
    const auto it = std::upper_bound(starts.begin(), starts.end(), offset) - 1;
    return {int(it - starts.begin()) + 1, int(offset - *it) + 1};
  }
};

std::size_t occurrences(std::string_view hay, std::string_view needle) {
  std::size_t count = 0;
  for (std::size_t at = hay.find(needle); at != std::string_view::npos; at = hay.find(needle, at + needle.size()))
    ++count;
  return count;
}

class scanner {
 public:
  scanner(const std::string& file, std::string_view text) : file_(file), text_(text), lines_(text), t_(lex(text)) {}

  std::vector<generated_mutant> run() {
    for (std::size_t i = 0; i < t_.size(); ++i) {
      binary_operator(i);
      constant(i);
      index(i);
      cast(i);
      if (t_[i].text == ";") statement(i);
    }
    std::stable_sort(out_.begin(), out_.end(),
                     [](const generated_mutant& a, const generated_mutant& b) { return a.offset < b.offset; });
    return std::move(out_);
  }

 private:
  std::string file_;
  std::string_view text_;
  line_index lines_;
  std::vector<token> t_;
  std::vector<generated_mutant> out_;

  const token* at(std::size_t i) const { return i < t_.size() ? &t_[i] : nullptr; }
  bool is(std::size_t i, std::string_view text) const { return i < t_.size() && t_[i].text == text; }

  void add(const std::string& op_class, const std::string& op, std::size_t offset, std::size_t length,
           const std::string& mutated) {
    generated_mutant m;
    m.file = file_;
    m.op_class = op_class;
    m.op = op;
    std::tie(m.line, m.column) = lines_.at(offset);
    m.offset = offset;
    m.original = std::string(text_.substr(offset, length));
    m.mutated = mutated;
    const std::size_t slash = file_.find_last_of('/');
    m.id = file_.substr(slash == std::string::npos ? 0 : slash + 1) + ":" + std::to_string(m.line) + ":" +
           std::to_string(m.column) + ":" + op;
    // the block: the changed lines, widened a line at a time (before, then after) until unique
    std::size_t begin = text_.rfind('\n', offset == 0 ? 0 : offset - 1);
    begin = begin == std::string_view::npos || offset == 0 ? 0 : begin + 1;
    std::size_t end = text_.find('\n', offset + length);
    if (end == std::string_view::npos) end = text_.size();
    for (bool widen_before = true;; widen_before = !widen_before) {
      if (occurrences(text_, text_.substr(begin, end - begin)) == 1) break;
      if ((widen_before && begin > 0) || end >= text_.size()) {
        const std::size_t prev = begin >= 2 ? text_.rfind('\n', begin - 2) : std::string_view::npos;
        begin = prev == std::string_view::npos ? 0 : prev + 1;
      } else {
        const std::size_t next = text_.find('\n', end + 1);
        end = next == std::string_view::npos ? text_.size() : next;
      }
    }
    m.search_offset = begin;
    m.search = std::string(text_.substr(begin, end - begin));
    m.replace = m.search;
    m.replace.replace(offset - begin, length, mutated);
    out_.push_back(std::move(m));
  }

  // a binary operator: whitespace on both sides
  void binary_operator(std::size_t i) {
    const token& t = t_[i];
    if (t.k != kind::punct || !t.space_before || !t.space_after || i == 0) return;
    static const std::map<std::string, std::vector<std::string>> arithmetic{
        {"+", {"-"}}, {"-", {"+"}}, {"*", {"/"}}, {"/", {"*"}}, {"%", {"*"}},
        {"+=", {"-="}}, {"-=", {"+="}}, {"*=", {"/="}}, {"/=", {"*="}}};
    static const std::map<std::string, std::vector<std::string>> relational{
        {"<", {"<="}}, {"<=", {"<"}}, {">", {">="}}, {">=", {">"}}, {"==", {"!="}}, {"!=", {"=="}}};
    // `template <int RT>` has a space before its `<` and none after; `T * p` in a declaration
    // does not occur in this style
    for (const auto* table : {&arithmetic, &relational}) {
      const auto it = table->find(t.text);
      if (it == table->end()) continue;
      for (const std::string& to : it->second)
        add(table == &arithmetic ? "arithmetic" : "relational",
            std::string(table == &arithmetic ? "arithmetic" : "relational") + "(" + t.text + "," + to + ")", t.offset,
            t.length, to);
    }
  }

  void constant(std::size_t i) {
    const token& t = t_[i];
    if (t.k != kind::number) return;
    std::size_t digits = 0;
    while (digits < t.text.size() && std::isdigit(static_cast<unsigned char>(t.text[digits]))) ++digits;
    const std::string suffix = t.text.substr(digits);
    if (t.text.size() > 1 && t.text[0] == '0' && digits < t.text.size() && (t.text[1] == 'x' || t.text[1] == 'X'))
      return;  // a hex mask or bit pattern: not a count
    if (suffix.empty() || suffix.find_first_not_of("uUlL") == std::string::npos) {
      if (digits > 18) return;
      const long long k = std::stoll(t.text.substr(0, digits));
      std::vector<long long> to;
      if (k == 0) to = {1};
      else if (k == 1) to = {0};
      else to = {k + 1, k - 1};
      for (long long v : to)
        add("constant", "constant(" + t.text + "," + std::to_string(v) + suffix + ")", t.offset, t.length,
            std::to_string(v) + suffix);
      return;
    }
    if (t.text == "0.0f" || t.text == "0.f") add("constant", "constant(" + t.text + ",1.0f)", t.offset, t.length, "1.0f");
    else if (t.text == "1.0f" || t.text == "1.f")
      add("constant", "constant(" + t.text + ",0.0f)", t.offset, t.length, "0.0f");
  }

  // a subscript: `[` right after a name, `]` or `)`, not an array's declared size (the name
  // follows a type: a name, `>`, `*` or `&`; or the bracket holds only constants)
  void index(std::size_t i) {
    const token& t = t_[i];
    if (t.text != "[" || i == 0 || t.space_before) return;
    const token& prev = t_[i - 1];
    if (!(prev.k == kind::ident || prev.text == "]" || prev.text == ")")) return;
    if (prev.k == kind::ident && keywords().count(prev.text)) return;
    // the name and the `[...]` before it (a[i][j]): what precedes the name
    std::size_t name = i - 1;
    while (t_[name].text == "]") {
      int depth = 0;
      std::size_t j = name;
      for (;; --j) {
        if (t_[j].text == "]") ++depth;
        else if (t_[j].text == "[" && --depth == 0) break;
        if (j == 0) return;
      }
      if (j == 0) return;
      name = j - 1;
    }
    if (name > 0) {
      const token& before = t_[name - 1];
      if ((before.k == kind::ident && !keywords().count(before.text)) || before.text == ">" ||
          ((before.text == "*" || before.text == "&") && !before.space_before) || before.text == "const" ||
          before.text == "__shared__")
        return;
    }
    // the matching `]`
    int depth = 0;
    std::size_t close = i;
    bool constant_only = true;
    for (; close < t_.size(); ++close) {
      const std::string& x = t_[close].text;
      if (x == "[") ++depth;
      else if (x == "]" && --depth == 0) break;
      else if (t_[close].k == kind::ident && !(std::all_of(x.begin(), x.end(), [](char c) {
                 return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                        c == '_';
               }) || x == "warp_size"))
        constant_only = false;
    }
    if (close >= t_.size() || close == i + 1 || constant_only) return;
    if (t_[i + 1].text == "&" || t_[i + 1].text == "=" || t_[i + 1].text == "[") return;  // a lambda, an attribute
    const std::size_t end = t_[close].offset;  // insert before the `]`
    add("index", "index(+1)", end, 0, " + 1");
    add("index", "index(-1)", end, 0, " - 1");
  }

  // static_cast<T>(e) and T(e) of an arithmetic type
  void cast(std::size_t i) {
    const token& t = t_[i];
    if (t.k != kind::ident) return;
    if (t.text == "static_cast" && is(i + 1, "<")) {
      std::size_t close = i + 2;
      std::string type;
      for (; close < t_.size() && t_[close].text != ">"; ++close) type += t_[close].text;
      if (!is(close + 1, "(")) return;
      const auto it = narrowing().find(type);
      if (it == narrowing().end()) return;  // a pointer, a stream handle: not an arithmetic cast
      const std::size_t length = t_[close].offset + 1 - t.offset;
      add("cast", "cast(drop " + type + ")", t.offset, length, "");
      if (!it->second.empty())
        add("cast", "cast(" + type + "," + it->second + ")", t.offset, length, "static_cast<" + it->second + ">");
      return;
    }
    // T(e): a (qualified) type name directly followed by `(`, not preceded by `::`, `.`, a name
    std::size_t last = i;
    std::string type = t.text;
    if (t.text == "std" && is(i + 1, "::") && at(i + 2) && t_[i + 2].k == kind::ident) {
      last = i + 2;
      type = "std::" + t_[i + 2].text;
    }
    if (!is(last + 1, "(") || t_[last + 1].space_before) return;
    if (i > 0 && (t_[i - 1].text == "::" || t_[i - 1].text == "." || t_[i - 1].text == "->" ||
                  (t_[i - 1].k == kind::ident && !keywords().count(t_[i - 1].text))))
      return;
    const auto it = narrowing().find(type);
    if (it == narrowing().end()) return;
    const std::size_t length = t_[last].offset + t_[last].length - t.offset;
    add("cast", "cast(drop " + type + ")", t.offset, length, "");
    if (!it->second.empty()) add("cast", "cast(" + type + "," + it->second + ")", t.offset, length, it->second);
  }

  // the index of the `(` that matches the `)` at close
  std::size_t open_of(std::size_t close) const {
    int depth = 0;
    for (std::size_t j = close;; --j) {
      if (t_[j].text == ")") ++depth;
      else if (t_[j].text == "(" && --depth == 0) return j;
      if (j == 0) return std::string::npos;
    }
  }

  // the statement that ends at the `;` at semi: deleted when it is an assignment or a call
  void statement(std::size_t semi) {
    // not a `;` of a for header: count the parentheses open before it
    int depth = 0;
    std::size_t start = semi;
    while (start > 0) {
      const token& p = t_[start - 1];
      if (depth == 0) {
        if (p.text == ";" || p.text == "{" || p.text == "}" || p.text == "else") break;
        if (p.text == ")") {  // the header of an if / for / while: the statement is its body
          const std::size_t open = open_of(start - 1);
          if (open != std::string::npos && open > 0) {
            const std::string& kw = t_[open - 1].text;
            if (kw == "if" || kw == "for" || kw == "while" || kw == "constexpr") break;
          }
        }
      }
      if (p.text == ")") ++depth;
      else if (p.text == "(") {
        if (depth == 0) return;  // inside a for (...;...;...)
        --depth;
      }
      --start;
    }
    if (start >= semi) return;
    const token& first = t_[start];
    std::size_t k = start;
    if (first.text == "++" || first.text == "--") {
      k = semi;  // ++i;
    } else {
      if (first.k != kind::ident || keywords().count(first.text)) return;
      // a macro's expansion (an all-caps name) is not one statement
      if (std::none_of(first.text.begin(), first.text.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); }))
        return;
      while (is(k + 1, "::") && at(k + 2) && t_[k + 2].k == kind::ident) k += 2;  // a qualified name
      if (is(k + 1, "<") && !t_[k + 1].space_before) {  // f<T>(...) is a call, T<U> x a declaration
        int angle = 0;
        std::size_t j = k + 1;
        for (; j < semi; ++j) {
          if (t_[j].text == "<") ++angle;
          else if (t_[j].text == ">" && --angle == 0) break;
          else if (t_[j].text == ">>" && (angle -= 2) <= 0) break;
        }
        if (!is(j + 1, "(")) return;
        k = j;
      }
      static const std::set<std::string> follows{"(",  ".",  "->", "[",  "=",  "+=", "-=", "*=",  "/=",
                                                 "%=", "|=", "&=", "^=", "++", "--", "<<=", ">>="};
      if (!at(k + 1) || !follows.count(t_[k + 1].text)) return;  // `T x`, `T* x`, `T& x`: a declaration
      // a declaration that begins with a call is not expected; `x = ...` and `f(...)` are statements
    }
    const std::string callee = t_[k].text;
    const bool call = is(k + 1, "(");
    const bool barrier = call && barriers().count(callee) > 0 && is(semi - 1, ")") && open_of(semi - 1) == k + 1;
    const std::size_t offset = first.offset;
    const std::size_t length = t_[semi].offset + 1 - offset;
    add(barrier ? "barrier" : "statement", barrier ? "delete-barrier(" + callee + ")" : "delete-statement", offset,
        length, "{}");
  }
};

}  // namespace

const std::vector<std::string>& operator_classes() {
  static const std::vector<std::string> c{"arithmetic", "relational", "constant", "index",
                                          "statement",  "barrier",    "cast"};
  return c;
}

std::vector<generated_mutant> generate(const std::string& file, std::string_view text) {
  return scanner(file, text).run();
}

std::string apply(const generated_mutant& m, std::string_view text) {
  std::string out(text);
  out.replace(m.search_offset, m.search.size(), m.replace);
  return out;
}

std::string catalog_text(const generated_mutant& m, const std::string& dir) {
  std::string s = "id: " + file_safe_id(m.id) + "\n";
  s += "bug_class: generated " + m.op_class + "\n";
  s += "summary: " + m.id + ": `" + m.original + "` -> `" + m.mutated + "`\n";
  s += "mirrors: no public issue found (a generated operator)\n";
  s += "expected_killer: any property\n";
  s += "file: " + (dir.empty() ? "" : dir + "/") + m.file + "\n";
  s += "--- search\n" + m.search + "\n+++ replace\n" + m.replace + "\n";
  return s;
}

std::size_t count_sites(const std::vector<generated_mutant>& mutants) {
  std::set<std::tuple<std::string, int, int>> sites;
  for (const generated_mutant& m : mutants) sites.insert({m.file, m.line, m.column});
  return sites.size();
}

std::uint64_t fnv1a(std::string_view data, std::uint64_t h) {
  for (const unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex_hash(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string file_safe_id(const std::string& id) {
  std::string s;
  for (const char c : id) s += ident_char(c) || c == '.' || c == '-' ? c : '_';
  return s + "-" + hex_hash(fnv1a(id)).substr(0, 8);
}

}  // namespace nc::mutants
