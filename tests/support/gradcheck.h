#pragma once
// A float64 finite-difference check of a function's gradients, shared by every test of a
// differentiable op or layer.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember::test {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

/// Checks d<f(x), w>/dx for a random weight w against finite differences, for every input.
inline void gradcheck(const std::string& what, const Fn& f, std::vector<Tensor> inputs, double eps = 1e-6,
                      double tol = 1e-5) {
  for (Tensor& x : inputs) x = x.to(kFloat64).detach().requires_grad_();
  Tensor out = f(inputs);
  ASSERT_TRUE(out.requires_grad()) << what;
  manual_seed(7);
  Tensor w = randn(out.sizes(), kFloat64);
  out.backward(w);
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor analytic = inputs[k].grad();
    ASSERT_TRUE(analytic.defined()) << what << ": input " << k << " got no gradient";
    Tensor flat = inputs[k].detach().reshape({-1});
    std::vector<double> numeric;
    for (int64_t i = 0; i < flat.numel(); ++i) {
      NoGradGuard no_grad;
      double* p = flat.data_ptr<double>() + i;
      const double orig = *p;
      std::vector<Tensor> plain;
      for (const Tensor& t : inputs) plain.push_back(t.detach());
      *p = orig + eps;
      double up = (f(plain).to(kFloat64) * w).sum().item<double>();
      *p = orig - eps;
      double down = (f(plain).to(kFloat64) * w).sum().item<double>();
      *p = orig;
      numeric.push_back((up - down) / (2 * eps));
    }
    Tensor expected = tensor(numeric, kFloat64).reshape(inputs[k].sizes());
    EXPECT_TRUE(allclose(analytic, expected, tol, tol))
        << what << ": input " << k << "\nanalytic " << analytic << "\nnumeric  " << expected;
  }
}

/// Checks second derivatives, like torch.autograd.gradgradcheck. With a random grad_output w
/// (itself a leaf requiring grad) and a random v_k per input, s = sum_k <d<f(x), w>/dx_k, v_k> is
/// built with create_graph; its gradients with respect to every input and to w are compared with
/// central finite differences of s, recomputed with first-order gradients only. An undefined
/// second derivative counts as zeros.
inline void gradgradcheck(const std::string& what, const Fn& f, std::vector<Tensor> inputs, double eps = 1e-6,
                          double tol = 1e-5) {
  for (Tensor& x : inputs) x = x.detach().to(kFloat64).contiguous().clone().requires_grad_();
  Tensor out = f(inputs);
  ASSERT_TRUE(out.requires_grad()) << what;
  manual_seed(8);
  Tensor w = randn(out.sizes(), kFloat64).requires_grad_();
  std::vector<Tensor> v;
  for (const Tensor& x : inputs) v.push_back(randn(x.sizes(), kFloat64));
  auto s_of = [&](const Tensor& result, const Tensor& weight, bool create_graph) {
    std::vector<Tensor> gs = autograd::grad({result}, inputs, {weight}, true, create_graph, /*allow_unused=*/true);
    Tensor sum = zeros({}, kFloat64);
    for (size_t k = 0; k < gs.size(); ++k)
      if (gs[k].defined()) sum = sum + (gs[k] * v[k]).sum();
    return sum;
  };
  Tensor s = s_of(out, w, /*create_graph=*/true);
  ASSERT_TRUE(s.requires_grad()) << what << ": the first gradients were not recorded";
  std::vector<Tensor> wrt = inputs;
  wrt.push_back(w);
  std::vector<Tensor> analytic = autograd::grad({s}, wrt, {}, std::nullopt, false, /*allow_unused=*/true);
  for (size_t k = 0; k < wrt.size(); ++k) {
    // The leaves are contiguous float64 and own their storage: perturb them in place.
    double* data = wrt[k].detach().data_ptr<double>();
    std::vector<double> numeric;
    for (int64_t i = 0; i < wrt[k].numel(); ++i) {
      const double orig = data[i];
      data[i] = orig + eps;
      const double up = s_of(f(inputs), w.detach(), false).item<double>();
      data[i] = orig - eps;
      const double down = s_of(f(inputs), w.detach(), false).item<double>();
      data[i] = orig;
      numeric.push_back((up - down) / (2 * eps));
    }
    Tensor expected = tensor(numeric, kFloat64).reshape(wrt[k].sizes());
    Tensor got = analytic[k].defined() ? analytic[k] : zeros_like(expected);
    const std::string name = k < inputs.size() ? "input " + std::to_string(k) : std::string("grad_output");
    EXPECT_TRUE(allclose(got, expected, tol, tol))
        << what << ": second derivative w.r.t. " << name << "\nanalytic " << got << "\nnumeric  " << expected;
  }
}

}  // namespace ember::test
