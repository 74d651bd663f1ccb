// test_files.h: reading test data files in unit tests.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tesscpp::testing {

/// \brief Path of a file under tests/data/.
inline std::string DataPath(const std::string& relative) {
  return std::string(TESS_SOURCE_DIR) + "/tests/data/" + relative;
}

/// \brief Whole file as bytes; empty if it cannot be read (tests then fail on content).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline std::vector<uint8_t> FromHex(const std::string& hex) {
  std::vector<uint8_t> out;
  if (hex == "-") return out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

}  // namespace tesscpp::testing
