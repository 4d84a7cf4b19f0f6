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

}  // namespace ember::test
