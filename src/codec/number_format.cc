// number_format.cc: orjson / Rust-Display number spellings and complex parsing.
#include "codec/number_format.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace tesscpp::codec {
namespace {

// The shortest round-trip digits of |v| and its decimal exponent: |v| = d.ddd x 10^exp.
struct Digits {
  char digits[32];
  int count;
  int exponent;
};

Digits ShortestDigits(double v) {
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), std::fabs(v), std::chars_format::scientific);
  // buf is "d[.ddd]e[+-]xx"
  Digits d{};
  const char* p = buf;
  d.digits[d.count++] = *p++;
  if (*p == '.') {
    ++p;
    while (*p != 'e') d.digits[d.count++] = *p++;
  }
  ++p;  // 'e'
  std::from_chars(*p == '+' ? p + 1 : p, result.ptr, d.exponent);
  return d;
}

// Plain decimal notation of the digits at `out`; `integral_suffix` is appended
// when the value has no fractional digits (".0" for orjson, "" for Rust).
// Returns the end of what was written.
char* WritePlain(const Digits& d, const char* integral_suffix, char* out) {
  if (d.exponent >= 0) {
    const int int_digits = d.exponent + 1;
    for (int i = 0; i < int_digits; ++i) *out++ = i < d.count ? d.digits[i] : '0';
    if (d.count > int_digits) {
      *out++ = '.';
      for (int i = int_digits; i < d.count; ++i) *out++ = d.digits[i];
    } else {
      while (*integral_suffix != 0) *out++ = *integral_suffix++;
    }
  } else {
    *out++ = '0';
    *out++ = '.';
    for (int i = 0; i < -d.exponent - 1; ++i) *out++ = '0';
    for (int i = 0; i < d.count; ++i) *out++ = d.digits[i];
  }
  return out;
}

// "d[.ddd]e<sign><exponent>", the exponent signed and of at least
// `exponent_digits` digits ("1e+16", "1e-7" for 1; "1e-07" for 2), at `out`
// (kMaxJsonDoubleChars bytes). Returns the end of what was written.
char* WriteScientific(const Digits& d, int exponent_digits, char* out) {
  *out++ = d.digits[0];
  if (d.count > 1) {
    *out++ = '.';
    std::memcpy(out, d.digits + 1, static_cast<size_t>(d.count - 1));
    out += d.count - 1;
  }
  *out++ = 'e';
  *out++ = d.exponent < 0 ? '-' : '+';
  const int magnitude = d.exponent < 0 ? -d.exponent : d.exponent;
  if (exponent_digits > 1 && magnitude < 10) *out++ = '0';
  return std::to_chars(out, out + 8, magnitude).ptr;
}

// Appends what `v` starts with: its sign, or the whole of a NaN, an infinity
// or a zero in the given spellings; returns whether `v` is written.
bool AppendSignOrSpecial(double v, const char* nan, const char* zero, std::string& out) {
  if (std::isnan(v)) {
    out += nan;
    return true;
  }
  if (std::signbit(v)) out += '-';
  if (std::isinf(v)) {
    out += "inf";
    return true;
  }
  if (v == 0) {
    out += zero;
    return true;
  }
  return false;
}

void AppendRustDouble(double v, std::string& out) {
  if (AppendSignOrSpecial(v, "NaN", "0", out)) return;
  // Rust never uses an exponent: 5e-324 takes 327 characters.
  std::string plain(400, '\0');
  plain.resize(static_cast<size_t>(WritePlain(ShortestDigits(v), "", plain.data()) - plain.data()));
  out += plain;
}

bool ParseReal(std::string_view text, double* out) {
  if (text.empty()) return false;
  std::string_view body = text;
  bool negative = false;
  if (body.front() == '+' || body.front() == '-') {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  auto lower_is = [&](const char* word) {
    if (body.size() != std::strlen(word)) return false;
    for (size_t i = 0; i < body.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(body[i])) != word[i]) return false;
    }
    return true;
  };
  double value;
  if (lower_is("nan")) {
    value = std::nan("");
  } else if (lower_is("inf") || lower_is("infinity")) {
    value = INFINITY;
  } else {
    if (body.empty() || body.front() == '+' || body.front() == '-') return false;
    auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
    if (ec != std::errc() || end != body.data() + body.size()) return false;
  }
  *out = negative ? -value : value;
  return true;
}

}  // namespace

size_t FormatJsonDouble(double v, char* out) {
  char* p = out;
  if (std::signbit(v)) *p++ = '-';
  if (v == 0) {
    *p++ = '0';
    *p++ = '.';
    *p++ = '0';
    return static_cast<size_t>(p - out);
  }
  const Digits d = ShortestDigits(v);
  if (d.exponent >= -5 && d.exponent <= 15) return static_cast<size_t>(WritePlain(d, ".0", p) - out);
  return static_cast<size_t>(WriteScientific(d, 1, p) - out);
}

void AppendPythonFloat(double v, std::string& out) {
  if (AppendSignOrSpecial(v, "nan", "0.0", out)) return;
  const Digits d = ShortestDigits(v);
  char buf[kMaxJsonDoubleChars];
  const char* end =
      d.exponent >= -4 && d.exponent < 16 ? WritePlain(d, ".0", buf) : WriteScientific(d, 2, buf);
  out.append(buf, static_cast<size_t>(end - buf));
}

void AppendPydanticComplex(std::complex<double> v, std::string& out) {
  // Python's complex repr drops a zero real part ("1j", and "0j" for -0+0j); the
  // imaginary part always carries its sign when a real part precedes it.
  if (v.real() != 0 || std::isnan(v.real())) {
    AppendRustDouble(v.real(), out);
    if (!std::signbit(v.imag()) || std::isnan(v.imag())) out += '+';
  }
  AppendRustDouble(v.imag(), out);
  out += 'j';
}

bool ParseComplex(std::string_view text, std::complex<double>* out) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  if (text.size() >= 2 && text.front() == '(' && text.back() == ')') text = text.substr(1, text.size() - 2);
  if (text.empty()) return false;
  double real = 0, imag = 0;
  if (text.back() != 'j' && text.back() != 'J') {
    if (!ParseReal(text, &real)) return false;
    *out = {real, 0};
    return true;
  }
  text.remove_suffix(1);
  // Split at the last sign that is not the first character and not an exponent's.
  size_t split = std::string_view::npos;
  for (size_t i = text.size(); i-- > 1;) {
    if ((text[i] == '+' || text[i] == '-') && text[i - 1] != 'e' && text[i - 1] != 'E') {
      split = i;
      break;
    }
  }
  if (split == std::string_view::npos) {
    if (text.empty() || text == "+" || text == "-") {
      imag = text == "-" ? -1.0 : 1.0;  // "j", "+j", "-j"
    } else if (!ParseReal(text, &imag)) {
      return false;
    }
    *out = {0, imag};
    return true;
  }
  const std::string_view imag_text = text.substr(split);
  if (!ParseReal(text.substr(0, split), &real)) return false;
  if (imag_text == "+" || imag_text == "-") {
    imag = imag_text == "-" ? -1.0 : 1.0;
  } else if (!ParseReal(imag_text, &imag)) {
    return false;
  }
  *out = {real, imag};
  return true;
}

}  // namespace tesscpp::codec
