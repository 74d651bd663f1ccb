// autodiff_arrays.h: a component's derivative endpoints derived from one apply
// written over whole arrays with Dr.Jit (docs/autodiff.md, "Array form").
//
//   auto burgers = [=](auto& ctx) -> tesscpp::Status {
//     using Float = typename std::decay_t<decltype(ctx)>::Float;
//     const Float& u = ctx.Input("u");                 // flat, row-major
//     const Float h = ctx.Param(ctx.inputs()[dt]);      // a kernel parameter
//     ...
//     return ctx.Output("u_next", next, ctx.InputShape("u"));
//   };
//   tesscpp::autodiff::DeriveArrays(component, burgers);  // after declaring the fields
//
// The function is called with an ArrayContext over Dr.Jit's differentiable
// arrays of doubles, `drjit::DiffArray<JitBackend::LLVM, double>`: Dr.Jit
// records the operations, fuses them into kernels compiled by LLVM for this
// CPU's vector width, and keeps the compiled kernels (in memory and in
// ~/.drjit), so a later call with the same operations compiles nothing.
// DeriveArrays registers apply (the function as it is), abstract_eval (on
// zeros of the given shapes), jacobian_vector_product (Dr.Jit's forward mode),
// vector_jacobian_product (its reverse mode) and jacobian (one recording,
// swept once per input element or per output element, whichever is fewer).
// Only the top-level fields declared differentiable are arrays; every other
// input is read through ctx.inputs().
//
// Numbers written into the function (`2.0 * u`) become literals of the
// compiled kernel: right for true constants. A value that changes from call to
// call (a time step from the inputs, a size) must go through ctx.Param(),
// which makes it an opaque kernel parameter; written as a literal it would
// compile a new kernel for every new value.
//
// Optional: include this header only in components that use it, and link the
// `tesscpp::autodiff_arrays` CMake target (Dr.Jit's C++ libraries from its
// PyPI wheel; at run time Dr.Jit loads an LLVM shared library, Debian's
// libllvm15).
#pragma once

#include <string>

#include "tesscpp/autodiff/array_context.h"
#include "tesscpp/autodiff/detail/array_endpoints.h"
#include "tesscpp/autodiff/detail/array_jacobian.h"
#include "tesscpp/autodiff/detail/fields.h"
#include "tesscpp/autodiff/permutation.h"
#include "tesscpp/component.h"
#include "tesscpp/finite_differences.h"

namespace tesscpp::autodiff {

/// \brief Registers apply, abstract_eval, jacobian, jacobian_vector_product
/// and vector_jacobian_product of `c` computed from `fn`, and tesscpp's
/// hessian_vector_product as central differences of that VJP (Dr.Jit has no
/// second-order derivatives; host arrays only, docs/derivatives.md), a callable taking
/// `ArrayContext<Float>&` and returning Status (a generic lambda
/// `[](auto& ctx)` does). Call it after declaring the fields and after
/// registering any endpoint written by hand: those are kept, the others
/// derived.
template <typename Fn>
void DeriveArrays(Component& c, Fn fn, std::string apply_doc = "") {
  const auto input_fields = internal::DifferentiableFields(*c.input_schema());
  const auto output_fields = internal::DifferentiableFields(*c.output_schema());
  internal::DeriveArrayApply(c, fn, input_fields, output_fields, apply_doc);
  internal::DeriveArrayAbstractEval(c, fn, input_fields, output_fields);
  internal::DeriveArrayJvp(c, fn, input_fields, output_fields);
  internal::DeriveArrayVjp(c, fn, input_fields, output_fields);
  internal::DeriveArrayJacobian(c, fn, input_fields, output_fields);
  DeriveHvpByFiniteDifferences(c);
  // CUDA inputs reach the function on Dr.Jit's CUDA backend, never as bytes
  // it reads on the host; the function itself must not read the bytes of a
  // non-differentiable array input (ctx.inputs()), which may then live on
  // the device too.
  c.AcceptDeviceArrays();
}

}  // namespace tesscpp::autodiff
