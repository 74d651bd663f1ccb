// wordcount: files in and out (tesseract-core's InputPath and OutputPath). apply
// reads a text file named relative to the input directory, counts its lines
// and words, and writes a summary file into the output directory, which it
// answers relative to that directory. tests/fixtures/python/wordcount is its
// Python twin.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tesscpp/component.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace): an example reads better without prefixes

namespace {

Component MakeWordcount() {
  Component c("wordcount", "0.1.0", "Counts the lines and words of a text file.\n");
  auto text = c.inputs().Add("text", tesscpp::InputPath{}, {.doc = "A text file in the input directory."});
  auto lines = c.outputs().Add("lines", Int{}, {.doc = "Number of lines."});
  auto words = c.outputs().Add("words", Int{}, {.doc = "Number of words."});
  auto summary = c.outputs().Add("summary", tesscpp::OutputPath{}, {.doc = "The counts, as a file."});

  c.Apply(
      [=](const ModelView& in, Record& out) -> Status {
        // InputPath checks that the path exists inside the input directory; a
        // directory (text "" names the input directory itself) has no lines to count.
        if (!std::filesystem::is_regular_file(in[text])) return Status::IoError(in[text], " is not a file");
        std::ifstream file(in[text]);
        if (!file) return Status::IoError("cannot read ", in[text]);
        int64_t n_lines = 0, n_words = 0;
        for (std::string line; std::getline(file, line); ++n_lines) {
          std::istringstream split(line);
          for (std::string word; split >> word;) ++n_words;
        }
        const std::filesystem::path written =
            std::filesystem::path(OutputDirectory()) /
            ("summary_" + std::filesystem::path(in[text]).filename().string());
        std::ofstream(written) << "lines=" << n_lines << " words=" << n_words << "\n";
        out.Set(lines, Value(n_lines));
        out.Set(words, Value(n_words));
        out.Set(summary, Value(written.string()));
        return Status::OK();
      },
      "Counts lines and words, and writes them to a summary file.");
  return c;
}

}  // namespace

TESSCPP_COMPONENT(MakeWordcount)
