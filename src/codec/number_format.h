// number_format.h: the number spellings the reference stack produces (internal).
//
// Matching them makes our json-encoded arrays byte-identical to tesseract-core's:
//  - orjson (JSON numbers): shortest round-trip digits; plain decimal for decimal
//    exponents -5..15 ("0.00001", "1000000000000000.0"), otherwise scientific with
//    a bare exponent ("1e-7", "1e+16"); integral values keep ".0".
//  - Python's repr of a float (what tesseract-runtime writes into run logs):
//    shortest digits; plain decimal for decimal exponents -4..15 ("0.0001",
//    "1e-05"), otherwise scientific with a signed exponent of two digits or
//    more ("1e+16"); integral values keep ".0"; "nan", "inf", "-inf".
//  - Rust's f64 Display (pydantic's spelling of complex parts, "1+2j"): shortest
//    digits, never an exponent, no ".0" on integral values, "NaN", "inf".
#pragma once

#include <complex>
#include <string>

namespace tesscpp::codec {

/// \brief Room FormatJsonDouble needs.
inline constexpr size_t kMaxJsonDoubleChars = 32;

/// \brief Writes a finite double the way orjson writes it into `out` (at least
/// kMaxJsonDoubleChars bytes) and returns the length.
size_t FormatJsonDouble(double v, char* out);

/// \brief Appends a finite double the way orjson writes it.
inline void AppendJsonDouble(double v, std::string& out) {
  char buf[kMaxJsonDoubleChars];
  out.append(buf, FormatJsonDouble(v, buf));
}

/// \brief Appends repr(v) as Python writes it (any double).
void AppendPythonFloat(double v, std::string& out);

/// \brief Appends a complex number the way pydantic serialises Python complex
/// values in JSON mode ("1+2j", "-1j", "0j", "NaN+1j").
void AppendPydanticComplex(std::complex<double> v, std::string& out);

/// \brief Parses the complex spellings NumPy accepts from strings: Python's
/// complex() grammar ("1+2j", "(1-2j)", "3j", "2.5", "nan+infj"). False on
/// anything else.
bool ParseComplex(std::string_view text, std::complex<double>* out);

}  // namespace tesscpp::codec
