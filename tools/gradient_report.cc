#include "gradient_report.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <string>

namespace tesscpp::cli {
namespace {

// Shortest round-trip spelling: what Python prints for the same double.
std::string Number(double v) {
  std::array<char, 32> buf{};
  auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), r.ptr);
}

std::string Tuple(const std::vector<int64_t>& index) {
  std::string text = "(";
  for (size_t i = 0; i < index.size(); ++i) text += (i > 0 ? ", " : "") + std::to_string(index[i]);
  return text + (index.size() == 1 ? ",)" : ")");
}

std::string RelativeError(double fd, double got) {
  const double scale = std::max(std::fabs(fd), std::fabs(got));
  if (scale == 0) return "0";
  std::array<char, 32> buf{};
  auto r = std::to_chars(buf.data(), buf.data() + buf.size(), std::fabs(fd - got) / scale,
                         std::chars_format::general, 3);
  return std::string(buf.data(), r.ptr);
}

// Columns padded to their widest cell, two spaces apart.
void PrintTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line = " ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += " " + row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 1, ' ');
    }
    out << line << "\n";
  }
}

std::vector<std::string> Row(const GradientCheckFailure& f) {
  std::vector<std::string> row{f.input_path, f.output_path, Tuple(f.index)};
  if (!f.error.empty()) {
    row.insert(row.end(), {"-", "error: " + f.error});
    return row;
  }
  // The output element that misses its tolerance by the most.
  size_t worst = 0;
  double worst_gap = -1;
  for (size_t i = 0; i < f.endpoint.size(); ++i) {
    const double gap = std::fabs(f.finite_difference[i] - f.endpoint[i]);
    if (!(gap <= worst_gap)) {  // NaN counts as the worst
      worst = i;
      worst_gap = gap;
    }
  }
  const int64_t element = f.compared.empty() ? static_cast<int64_t>(worst) : f.compared[worst];
  row.insert(row.end(),
             {std::to_string(element), Number(f.finite_difference[worst]), Number(f.endpoint[worst]),
              RelativeError(f.finite_difference[worst], f.endpoint[worst])});
  return row;
}

}  // namespace

bool PrintGradientReport(const std::vector<EndpointCheck>& results, int64_t max_failures, std::ostream& out) {
  bool all = true;
  for (const EndpointCheck& r : results) {
    if (r.passed()) {
      out << "✅ Gradient check for " << r.endpoint << " passed ✅ (0 failures / " << r.checks << " checks)\n";
      continue;
    }
    all = false;
    const size_t shown = std::min(r.failures.size(), static_cast<size_t>(std::max<int64_t>(max_failures, 0)));
    out << "\n⚠️ Gradient check for " << r.endpoint << " failed ⚠️ (" << r.failures.size()
        << " failures / " << r.checks << " checks)\n";
    if (shown == 0) continue;
    out << "First " << shown << " failures:\n";
    std::vector<std::vector<std::string>> rows{{"input path", "output path", "index", "output element",
                                                "finite difference", r.endpoint, "rel. error"}};
    for (size_t i = 0; i < shown; ++i) rows.push_back(Row(r.failures[i]));
    PrintTable(rows, out);
    out << "\n";
  }
  if (!all) out << "❌ Some gradient checks failed ❌\n";
  return all;
}

}  // namespace tesscpp::cli
