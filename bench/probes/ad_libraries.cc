// ad_libraries.cc: the automatic-differentiation libraries our registries
// offer (Debian 12: ADOL-C 2.7.2, Trilinos Sacado 13.2), timed on one explicit
// step of the 1-D viscous Burgers equation (loops and an upwind branch), next
// to the hand-written derivatives, and tried from 8 threads at once. A probe
// for docs/autodiff.md, built and run by hand:
//   g++ -O2 -std=c++20 -DTRILINOS_NO_CONFIG_H -I/usr/include/trilinos bench/probes/ad_libraries.cc \
//     -ladolc -ltrilinos_sacado -lpthread -o /tmp/ad && /tmp/ad
#include <adolc/adolc.h>
#include <Sacado_No_Kokkos.hpp>
#include <Sacado_trad.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kDt = 1e-4, kDx = 1e-2, kNu = 0.05;

// The kernel, generic over the scalar: what a component author writes once.
template <typename T>
void BurgersStep(const T* u, int n, T* out) {
  for (int i = 0; i < n; ++i) {
    const T& left = u[(i + n - 1) % n];
    const T& centre = u[i];
    const T& right = u[(i + 1) % n];
    T advection = centre > 0 ? centre * (centre - left) / kDx : centre * (right - centre) / kDx;
    T diffusion = kNu * (right - 2.0 * centre + left) / (kDx * kDx);
    out[i] = centre - kDt * advection + kDt * diffusion;
  }
}

// Hand-written derivatives of the same step: d out[i] / d u[j] for j = i-1, i, i+1.
void Partials(const double* u, int n, int i, double d[3]) {
  const double l = u[(i + n - 1) % n], c = u[i], r = u[(i + 1) % n];
  const double k = kNu / (kDx * kDx);
  if (c > 0) {
    d[0] = kDt * c / kDx + kDt * k;
    d[1] = 1 - kDt * (2 * c - l) / kDx - 2 * kDt * k;
    d[2] = kDt * k;
  } else {
    d[0] = kDt * k;
    d[1] = 1 - kDt * (r - 2 * c) / kDx - 2 * kDt * k;
    d[2] = -kDt * c / kDx + kDt * k;
  }
}

void HandJvp(const double* u, const double* v, int n, double* jv) {
  for (int i = 0; i < n; ++i) {
    double d[3];
    Partials(u, n, i, d);
    jv[i] = d[0] * v[(i + n - 1) % n] + d[1] * v[i] + d[2] * v[(i + 1) % n];
  }
}

void HandVjp(const double* u, const double* w, int n, double* wj) {
  std::fill(wj, wj + n, 0.0);
  for (int i = 0; i < n; ++i) {
    double d[3];
    Partials(u, n, i, d);
    wj[(i + n - 1) % n] += w[i] * d[0];
    wj[i] += w[i] * d[1];
    wj[(i + 1) % n] += w[i] * d[2];
  }
}

void SacadoJvp(const double* u, const double* v, int n, double* jv) {
  using Fad = Sacado::Fad::SFad<double, 1>;
  std::vector<Fad> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = Fad(1, 0, u[i]);
    x[i].fastAccessDx(0) = v[i];
  }
  BurgersStep(x.data(), n, y.data());
  for (int i = 0; i < n; ++i) jv[i] = y[i].dx(0);
}

void SacadoVjp(const double* u, const double* w, int n, double* wj) {
  using Rad = Sacado::Rad::ADvar<double>;
  std::vector<Rad> x(u, u + n), y(n);
  BurgersStep(x.data(), n, y.data());
  Rad s = 0.0;
  for (int i = 0; i < n; ++i) s += w[i] * y[i];
  Rad::Gradcomp();
  for (int i = 0; i < n; ++i) wj[i] = x[i].adj();
}

// ADOL-C: record the step on tape `tag` once per call, then one forward or
// reverse sweep (zos/fos drivers).
void AdolcTape(short tag, const double* u, int n, std::vector<double>& y) {
  std::vector<adouble> x(n), out(n);
  trace_on(tag);
  for (int i = 0; i < n; ++i) x[i] <<= u[i];
  BurgersStep(x.data(), n, out.data());
  y.resize(n);
  for (int i = 0; i < n; ++i) out[i] >>= y[i];
  trace_off();
}

void AdolcJvp(short tag, const double* u, const double* v, int n, double* jv) {
  std::vector<double> y;
  AdolcTape(tag, u, n, y);
  fos_forward(tag, n, n, 0, const_cast<double*>(u), const_cast<double*>(v), y.data(), jv);
}

void AdolcVjp(short tag, const double* u, const double* w, int n, double* wj) {
  std::vector<double> y;
  AdolcTape(tag, u, n, y);
  zos_forward(tag, n, n, 1, const_cast<double*>(u), y.data());
  fos_reverse(tag, n, n, const_cast<double*>(w), wj);
}

// The tape kept from an earlier call: valid while the branches go the same
// way (zos_forward says otherwise with a negative return code).
void AdolcVjpReusingTape(short tag, const double* u, const double* w, int n, double* wj) {
  std::vector<double> y(n);
  if (zos_forward(tag, n, n, 1, const_cast<double*>(u), y.data()) < 0) {
    AdolcTape(tag, u, n, y);
    zos_forward(tag, n, n, 1, const_cast<double*>(u), y.data());
  }
  fos_reverse(tag, n, n, const_cast<double*>(w), wj);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Seconds(const std::function<void()>& f, double budget = 0.3) {
  std::vector<double> samples;
  const auto start = Clock::now();
  while (samples.size() < 5 ||
         (Clock::now() - start < std::chrono::duration<double>(budget) && samples.size() < 1000)) {
    const auto t0 = Clock::now();
    f();
    samples.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return Median(samples);
}

double MaxDiff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

}  // namespace

// With an argument, only the named unsafe concurrency case runs ("rad",
// "adolc-unlocked"): each may crash the process, so each gets its own.
int main(int argc, char** argv) {
  const std::string only = argc > 1 ? argv[1] : "";
  for (int n : {1000, 100000}) {
    if (!only.empty()) break;
    std::mt19937_64 rng(7);
    std::normal_distribution<double> normal;
    std::vector<double> u(n), v(n), w(n), out(n), ref_jv(n), ref_wj(n), jv(n), wj(n);
    for (int i = 0; i < n; ++i) u[i] = normal(rng), v[i] = normal(rng), w[i] = normal(rng);
    HandJvp(u.data(), v.data(), n, ref_jv.data());
    HandVjp(u.data(), w.data(), n, ref_wj.data());
    const double apply = Seconds([&] { BurgersStep(u.data(), n, out.data()); });
    std::printf("n=%d apply (double) %.1f us\n", n, apply * 1e6);
    auto row = [&](const char* name, const std::function<void()>& f, const std::vector<double>& got,
                   const std::vector<double>& want) {
      const double s = Seconds(f);
      f();
      std::printf("  %-28s %10.1f us  %6.1fx apply  max |diff| vs hand-written %.1e\n", name, s * 1e6,
                  s / apply, MaxDiff(got, want));
    };
    row(
        "hand-written JVP", [&] { HandJvp(u.data(), v.data(), n, jv.data()); }, jv, ref_jv);
    row(
        "hand-written VJP", [&] { HandVjp(u.data(), w.data(), n, wj.data()); }, wj, ref_wj);
    row(
        "Sacado SFad<1> JVP", [&] { SacadoJvp(u.data(), v.data(), n, jv.data()); }, jv, ref_jv);
    row(
        "Sacado Rad VJP", [&] { SacadoVjp(u.data(), w.data(), n, wj.data()); }, wj, ref_wj);
    row(
        "ADOL-C tape + fos_forward JVP", [&] { AdolcJvp(1, u.data(), v.data(), n, jv.data()); }, jv, ref_jv);
    row(
        "ADOL-C tape + fos_reverse VJP", [&] { AdolcVjp(1, u.data(), w.data(), n, wj.data()); }, wj, ref_wj);
    row(
        "ADOL-C reused tape, VJP", [&] { AdolcVjpReusingTape(1, u.data(), w.data(), n, wj.data()); }, wj,
        ref_wj);
  }
  // Concurrency: 8 threads, each computing VJPs of its own inputs 20 times.
  const int n = 2000;
  auto concurrent = [&](const char* name,
                        const std::function<void(int, const double*, const double*, double*)>& vjp) {
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        std::vector<double> u(n), w(n), got(n), want(n);
        for (int i = 0; i < n; ++i) u[i] = std::sin(i * 0.01 + t), w[i] = std::cos(i * 0.02 - t);
        HandVjp(u.data(), w.data(), n, want.data());
        for (int k = 0; k < 20; ++k) {
          vjp(t, u.data(), w.data(), got.data());
          if (MaxDiff(got, want) > 1e-9) ++wrong;
        }
      });
    }
    for (auto& thread : threads) thread.join();
    std::printf("8 threads x 20 VJPs, %s: %d wrong\n", name, wrong.load());
  };
  if (only == "rad") {
    concurrent("Sacado Rad (its tape is one static context)",
               [&](int, const double* u, const double* w, double* out) { SacadoVjp(u, w, n, out); });
    return 0;
  }
  if (only == "adolc-unlocked") {
    concurrent("ADOL-C, one tape tag per thread, no lock",
               [&](int t, const double* u, const double* w, double* out) {
                 AdolcVjp(static_cast<short>(10 + t), u, w, n, out);
               });
    return 0;
  }
  // Forward mode is value-typed: JVPs need no shared state (counted wrong
  // when the JVP differs from the hand-written one).
  concurrent("Sacado SFad JVPs", [&](int, const double* u, const double* w, double* out) {
    std::vector<double> jv(n), ref(n);
    SacadoJvp(u, w, n, jv.data());
    HandJvp(u, w, n, ref.data());
    HandVjp(u, w, n, out);
    if (MaxDiff(jv, ref) > 1e-9) out[0] = 1e300;
  });
  std::mutex adolc;
  concurrent("ADOL-C, one tape tag per thread, serialised by a mutex",
             [&](int t, const double* u, const double* w, double* out) {
               std::lock_guard<std::mutex> lock(adolc);
               AdolcVjp(static_cast<short>(10 + t), u, w, n, out);
             });
  return 0;
}
