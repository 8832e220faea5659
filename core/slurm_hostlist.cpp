#include "actorflow/core/slurm_hostlist.hpp"

#include <cstdint>

namespace actorflow {

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '.' || c == '-' || c == '_';
}

// A decimal number of at most 9 digits (no sign, no spaces).
bool ParseNumber(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 9) return false;
  int64_t v = 0;
  for (char c : text) {
    if (!IsDigit(c)) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

std::string Padded(int64_t v, size_t width) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

// `text` cut at every comma ("" -> one empty part).
std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t comma; (comma = text.find(',', start)) != std::string::npos; start = comma + 1)
    parts.push_back(text.substr(start, comma - start));
  parts.push_back(text.substr(start));
  return parts;
}

// One bracket's contents ("1-2,5" or "008-010") into its names, appended to `out`.
Status ExpandRanges(const std::string& ranges, const std::string& item, std::vector<std::string>* out) {
  for (const std::string& range : SplitCommas(ranges)) {
    const size_t dash = range.find('-');
    const std::string lo_text = range.substr(0, dash);
    const std::string hi_text = dash == std::string::npos ? lo_text : range.substr(dash + 1);
    int64_t lo = 0, hi = 0;
    if (!ParseNumber(lo_text, &lo) || !ParseNumber(hi_text, &hi))
      return errors::InvalidArgument("'", item, "': range '", range,
                                     "' is not N or N-M with N and M decimal numbers");
    if (lo > hi) return errors::InvalidArgument("'", item, "': range '", range, "' goes down");
    if (hi - lo >= kMaxSlurmHosts || static_cast<int64_t>(out->size()) + (hi - lo) >= kMaxSlurmHosts)
      return errors::InvalidArgument("'", item, "' names more than ", kMaxSlurmHosts, " hosts");
    const size_t width = lo_text.size() > 1 && lo_text[0] == '0' ? lo_text.size() : 0;
    for (int64_t v = lo; v <= hi; ++v) out->push_back(Padded(v, width));
  }
  return Status::OK();
}

// One item ("n[1-2,5]", "m7", "r[1-2]-n[1-2]") into its hosts, appended to `hosts`.
Status ExpandItem(const std::string& item, std::vector<std::string>* hosts) {
  if (item.empty()) return errors::InvalidArgument("an empty item (two commas, or one at an end)");
  std::vector<std::string> names = {""};  // the combinations so far
  size_t i = 0;
  while (i < item.size()) {
    const char c = item[i];
    if (c == ']') return errors::InvalidArgument("'", item, "': ']' without '['");
    if (c != '[') {
      if (!IsHostChar(c))
        return errors::InvalidArgument("'", item, "': '", std::string(1, c), "' is not a host name character");
      for (auto& n : names) n += c;
      ++i;
      continue;
    }
    const size_t close = item.find(']', i + 1);
    if (close == std::string::npos) return errors::InvalidArgument("'", item, "': '[' without ']'");
    const std::string ranges = item.substr(i + 1, close - i - 1);
    if (ranges.find('[') != std::string::npos) return errors::InvalidArgument("'", item, "': nested '['");
    if (ranges.empty()) return errors::InvalidArgument("'", item, "': empty brackets");
    std::vector<std::string> suffixes;
    AF_RETURN_IF_ERROR(ExpandRanges(ranges, item, &suffixes));
    if (names.size() * suffixes.size() > static_cast<size_t>(kMaxSlurmHosts))
      return errors::InvalidArgument("'", item, "' names more than ", kMaxSlurmHosts, " hosts");
    std::vector<std::string> next;
    next.reserve(names.size() * suffixes.size());
    for (const auto& n : names)
      for (const auto& s : suffixes) next.push_back(n + s);
    names = std::move(next);
    i = close + 1;
  }
  if (hosts->size() + names.size() > static_cast<size_t>(kMaxSlurmHosts))
    return errors::InvalidArgument("the list names more than ", kMaxSlurmHosts, " hosts");
  hosts->insert(hosts->end(), names.begin(), names.end());
  return Status::OK();
}

}  // namespace

Status ExpandHostlist(const std::string& hostlist, std::vector<std::string>* hosts) {
  std::vector<std::string> out;
  // Items are separated by the commas outside brackets.
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= hostlist.size(); ++i) {
    const char c = i < hostlist.size() ? hostlist[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (i == hostlist.size() || (c == ',' && depth == 0)) {  // an unbalanced last item fails in ExpandItem
      AF_RETURN_IF_ERROR(ExpandItem(hostlist.substr(start, i - start), &out));
      start = i + 1;
    }
  }
  *hosts = std::move(out);
  return Status::OK();
}

Status ExpandTasksPerNode(const std::string& text, std::vector<int>* counts) {
  std::vector<int> out;
  for (const std::string& part : SplitCommas(text)) {
    // COUNT or COUNT(xREPEAT)
    const size_t paren = part.find('(');
    int64_t count = 0, repeat = 1;
    bool ok = ParseNumber(part.substr(0, paren), &count);
    if (ok && paren != std::string::npos)
      ok = part.size() > paren + 3 && part.compare(paren, 2, "(x") == 0 && part.back() == ')' &&
           ParseNumber(part.substr(paren + 2, part.size() - paren - 3), &repeat);
    if (!ok)
      return errors::InvalidArgument("'", part, "' is not COUNT or COUNT(xREPEAT)");
    if (count < 1 || repeat < 1)
      return errors::InvalidArgument("'", part, "': counts and repeats are positive (a node runs at least one task)");
    if (static_cast<int64_t>(out.size()) + repeat > kMaxSlurmHosts)
      return errors::InvalidArgument("the list gives counts for more than ", kMaxSlurmHosts, " nodes");
    out.insert(out.end(), static_cast<size_t>(repeat), static_cast<int>(count));
  }
  *counts = std::move(out);
  return Status::OK();
}

}  // namespace actorflow
