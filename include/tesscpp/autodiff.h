// autodiff.h: a component's derivative endpoints derived from one apply
// written generically over its scalar type (docs/autodiff.md).
//
//   struct Rosenbrock {
//     template <typename T>
//     tesscpp::Status operator()(tesscpp::autodiff::Context<T>& ctx) const {
//       const T x = ctx.Input("x")[0], y = ctx.Input("y")[0];
//       const double a = ctx.inputs()[a_key], b = ctx.inputs()[b_key];
//       TESS_ASSIGN_OR_RETURN(std::span<T> result, ctx.Output("result", {}));
//       result[0] = (a - x) * (a - x) + b * (y - x * x) * (y - x * x);
//       return tesscpp::Status::OK();
//     }
//   };
//   tesscpp::autodiff::Derive(component, Rosenbrock{...});  // after declaring the fields
//
// Derive registers apply (T = double), abstract_eval (apply on zeros of the
// given shapes), jacobian_vector_product (forward mode,
// Sacado's Fad numbers), vector_jacobian_product and jacobian (reverse and
// vector modes on an ADOL-C tape), and tesscpp's hessian_vector_product
// (forward over reverse on the tape, docs/derivatives.md). An apply a client asks to keep its forward
// (tesscpp/forward_reuse.h) runs on the tape, and the VJP at its inputs then
// sweeps back only. Only the top-level fields declared
// differentiable take part; every other input is read through ctx.inputs().
// Branches may depend on values: a tape is reused for later calls with the same
// non-differentiable inputs only while every comparison it recorded still
// comes out the same (ADOL-C checks; otherwise the call is recorded again).
//
// Optional: include this header only in components that use it, and link the
// `tesscpp::autodiff` CMake target (ADOL-C and Sacado's headers, Debian's
// libadolc-dev and libtrilinos-sacado-dev).
#pragma once

#include <cstdint>
#include <string>

#include "tesscpp/autodiff/context.h"
#include "tesscpp/autodiff/detail/scalar_endpoints.h"
#include "tesscpp/component.h"

namespace tesscpp::autodiff {

/// \brief Registers apply, abstract_eval, jacobian, jacobian_vector_product,
/// vector_jacobian_product and hessian_vector_product of `c` computed from `fn`, a callable with
/// `template <typename T> Status operator()(Context<T>&) const`. Call it
/// after declaring the fields and after registering any endpoint written by
/// hand: those are kept, the others derived.
template <typename Fn>
void Derive(Component& c, Fn fn, std::string apply_doc = "") {
  const auto input_fields = internal::DifferentiableFields(*c.input_schema());
  const auto output_fields = internal::DifferentiableFields(*c.output_schema());
  const uint64_t function = internal::NextFunctionId();  // names this fn's tapes
  internal::DeriveApply(c, fn, input_fields, output_fields, apply_doc, function);
  internal::DeriveAbstractEval(c, fn, input_fields, output_fields);
  internal::DeriveJvp(c, fn, input_fields, output_fields);
  internal::DeriveVjp(c, fn, input_fields, output_fields, function);
  internal::DeriveHvp(c, fn, input_fields, output_fields, function);
  internal::DeriveJacobian(c, fn, input_fields, output_fields, function);
}

}  // namespace tesscpp::autodiff
