// number_format.cc: orjson / Rust-Display number spellings and complex parsing.
#include "codec/number_format.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace tesscpp::internal {
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

// Plain decimal notation of the digits; `integral_suffix` is appended when the
// value has no fractional digits (".0" for orjson, "" for Rust).
void AppendPlain(const Digits& d, const char* integral_suffix, std::string& out) {
  if (d.exponent >= 0) {
    const int int_digits = d.exponent + 1;
    for (int i = 0; i < int_digits; ++i) out += i < d.count ? d.digits[i] : '0';
    if (d.count > int_digits) {
      out += '.';
      out.append(d.digits + int_digits, static_cast<size_t>(d.count - int_digits));
    } else {
      out += integral_suffix;
    }
  } else {
    out += "0.";
    out.append(static_cast<size_t>(-d.exponent - 1), '0');
    out.append(d.digits, static_cast<size_t>(d.count));
  }
}

void AppendRustDouble(double v, std::string& out) {
  if (std::isnan(v)) {
    out += "NaN";
    return;
  }
  if (std::signbit(v)) out += '-';
  if (std::isinf(v)) {
    out += "inf";
    return;
  }
  if (v == 0) {
    out += '0';
    return;
  }
  AppendPlain(ShortestDigits(v), "", out);
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

void AppendJsonDouble(double v, std::string& out) {
  if (std::signbit(v)) out += '-';
  if (v == 0) {
    out += "0.0";
    return;
  }
  const Digits d = ShortestDigits(v);
  if (d.exponent >= -5 && d.exponent <= 15) {
    AppendPlain(d, ".0", out);
    return;
  }
  out += d.digits[0];
  if (d.count > 1) {
    out += '.';
    out.append(d.digits + 1, static_cast<size_t>(d.count - 1));
  }
  out += 'e';
  if (d.exponent > 0) out += '+';
  out += std::to_string(d.exponent);
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

}  // namespace tesscpp::internal
