#include "codec/number_format.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tesscpp::codec {
namespace {

std::string Json(double v) {
  std::string s;
  AppendJsonDouble(v, s);
  return s;
}

std::string Complex(double re, double im) {
  std::string s;
  AppendPydanticComplex({re, im}, s);
  return s;
}

// Spellings printed by orjson 3.13 for the same values.
TEST(NumberFormat, JsonDoublesLikeOrjson) {
  const std::pair<double, const char*> cases[] = {
      {0.0, "0.0"},
      {-0.0, "-0.0"},
      {1.0, "1.0"},
      {100.0, "100.0"},
      {1e15, "1000000000000000.0"},
      {1e16, "1e+16"},
      {1e17, "1e+17"},
      {1.5e-7, "1.5e-7"},
      {0.1, "0.1"},
      {1e-5, "0.00001"},
      {1e-4, "0.0001"},
      {1.2345678901234568e17, "1.2345678901234568e+17"},
      {1e21, "1e+21"},
      {1e-7, "1e-7"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {0.20000000298023224, "0.20000000298023224"},
      {12345.678, "12345.678"},
      {2.5e-5, "0.000025"},
      {1e-6, "1e-6"},
      {9.99e15, "9990000000000000.0"},
      {1.5e16, "1.5e+16"},
      {999999999999999.9, "999999999999999.9"},
      {1.2345e-5, "0.000012345"},
      {-123456.0, "-123456.0"},
  };
  for (const auto& [value, text] : cases) EXPECT_EQ(Json(value), text) << text;
}

// repr() of the same values in CPython 3.11.
TEST(NumberFormat, FloatsLikePythonRepr) {
  const std::pair<double, const char*> cases[] = {
      {0.0, "0.0"},
      {-0.0, "-0.0"},
      {1.0, "1.0"},
      {100.0, "100.0"},
      {1000000000000000.0, "1000000000000000.0"},
      {1e+16, "1e+16"},
      {1.5e-07, "1.5e-07"},
      {0.1, "0.1"},
      {1e-05, "1e-05"},
      {0.0001, "0.0001"},
      {1.2345678901234568e+17, "1.2345678901234568e+17"},
      {5e-324, "5e-324"},
      {1.7976931348623157e+308, "1.7976931348623157e+308"},
      {12345.678, "12345.678"},
      {2.5e-05, "2.5e-05"},
      {9990000000000000.0, "9990000000000000.0"},
      {1e+100, "1e+100"},
      {-1e-100, "-1e-100"},
      {123456789.125, "123456789.125"},
      {0.001, "0.001"},
      {NAN, "nan"},
      {INFINITY, "inf"},
      {-INFINITY, "-inf"},
  };
  for (const auto& [value, text] : cases) {
    std::string s;
    AppendPythonFloat(value, s);
    EXPECT_EQ(s, text) << text;
  }
}

// Spellings pydantic 2 gives Python complex values in JSON mode.
TEST(NumberFormat, ComplexLikePydantic) {
  EXPECT_EQ(Complex(1, 2), "1+2j");
  EXPECT_EQ(Complex(3.5, -1), "3.5-1j");
  EXPECT_EQ(Complex(2, 0), "2+0j");
  EXPECT_EQ(Complex(-0.0, 0), "0j");
  EXPECT_EQ(Complex(0, -0.0), "-0j");
  EXPECT_EQ(Complex(0, 1), "1j");
  EXPECT_EQ(Complex(0, -1), "-1j");
  EXPECT_EQ(Complex(NAN, 1), "NaN+1j");
  EXPECT_EQ(Complex(INFINITY, -INFINITY), "inf-infj");
  EXPECT_EQ(Complex(1e20, 1e-7), "100000000000000000000+0.0000001j");
  EXPECT_EQ(Complex(0.10000000149011612, 0.20000000298023224), "0.10000000149011612+0.20000000298023224j");
  EXPECT_EQ(Complex(12345678901234568.0, 1), "12345678901234568+1j");
}

TEST(NumberFormat, ParsesComplexStrings) {
  std::complex<double> c;
  ASSERT_TRUE(ParseComplex("1+2j", &c));
  EXPECT_EQ(c, std::complex<double>(1, 2));
  ASSERT_TRUE(ParseComplex("(3.5-1j)", &c));
  EXPECT_EQ(c, std::complex<double>(3.5, -1));
  ASSERT_TRUE(ParseComplex("-1j", &c));
  EXPECT_EQ(c, std::complex<double>(0, -1));
  ASSERT_TRUE(ParseComplex("1e+20+1e-07j", &c));
  EXPECT_EQ(c, std::complex<double>(1e20, 1e-7));
  ASSERT_TRUE(ParseComplex("2.5", &c));
  EXPECT_EQ(c, std::complex<double>(2.5, 0));
  ASSERT_TRUE(ParseComplex("NaN-infj", &c));
  EXPECT_TRUE(std::isnan(c.real()));
  EXPECT_EQ(c.imag(), -INFINITY);
  ASSERT_TRUE(ParseComplex("j", &c));
  EXPECT_EQ(c, std::complex<double>(0, 1));
  for (const char* bad : {"", "abc", "1+2", "1+2jj", "1++2j", "()", "1 + 2j", "0x10"}) {
    EXPECT_FALSE(ParseComplex(bad, &c)) << bad;
  }
}

TEST(NumberFormat, ComplexSpellingRoundTrips) {
  for (double re : {0.0, -0.0, 1.5, -3.25, 1e300, 5e-324, 0.1}) {
    for (double im : {0.0, -0.0, 2.0, -7.5, 1e-300}) {
      std::complex<double> c;
      ASSERT_TRUE(ParseComplex(Complex(re, im), &c)) << Complex(re, im);
      EXPECT_EQ(c.real(), re == 0 ? 0.0 : re);
      EXPECT_EQ(c.imag(), im);
    }
  }
}

}  // namespace
}  // namespace tesscpp::codec
