// pytorch/examples' VAE (see include/ember/models/vae.h), built from ember::nn layers.
#include "ember/models/vae.h"

#include "core/check.h"
#include "ember/factories.h"
#include "ember/nn/functional.h"

namespace ember::models {

namespace F = nn::functional;

VAE::VAE(VAEOptions options) : options(options) {
  EMBER_CHECK(options.input_size >= 1 && options.hidden_size >= 1 && options.latent_size >= 1,
              "VAE: input_size, hidden_size and latent_size must be positive, got ", options.input_size, ", ",
              options.hidden_size, " and ", options.latent_size);
  // The example's attribute order, which fixes the state_dict order and the order of the draws.
  fc1 = register_module("fc1", std::make_shared<nn::Linear>(options.input_size, options.hidden_size));
  fc21 = register_module("fc21", std::make_shared<nn::Linear>(options.hidden_size, options.latent_size));
  fc22 = register_module("fc22", std::make_shared<nn::Linear>(options.hidden_size, options.latent_size));
  fc3 = register_module("fc3", std::make_shared<nn::Linear>(options.latent_size, options.hidden_size));
  fc4 = register_module("fc4", std::make_shared<nn::Linear>(options.hidden_size, options.input_size));
}

std::pair<Tensor, Tensor> VAE::encode(const Tensor& x) {
  const Tensor h1 = F::relu((*fc1)(x));
  return {(*fc21)(h1), (*fc22)(h1)};
}

Tensor VAE::reparameterize(const Tensor& mu, const Tensor& logvar, const Tensor& eps) {
  const Tensor std = (0.5 * logvar).exp();
  if (eps.defined()) {
    EMBER_CHECK(eps.sizes().vec() == std.sizes().vec(), "VAE.reparameterize: eps must have logvar's size ",
                detail::shape_str(std.sizes()), ", got ", detail::shape_str(eps.sizes()));
    return mu + eps * std;
  }
  return mu + randn_like(std) * std;
}

Tensor VAE::decode(const Tensor& z) { return F::sigmoid((*fc4)(F::relu((*fc3)(z)))); }

VAEOutput VAE::forward(const Tensor& x, const Tensor& eps) {
  auto [mu, logvar] = encode(x.view({-1, options.input_size}));
  const Tensor z = reparameterize(mu, logvar, eps);
  return {decode(z), mu, logvar};
}

Tensor vae_loss(const Tensor& recon_x, const Tensor& x, const Tensor& mu, const Tensor& logvar) {
  const Tensor bce = F::binary_cross_entropy(recon_x, x.view({-1, recon_x.size(-1)}), Tensor(), nn::Reduction::Sum);
  const Tensor kld = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum();
  return bce + kld;
}

}  // namespace ember::models
