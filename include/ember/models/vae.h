#pragma once
/// ember::models::VAE: the variational autoencoder of pytorch/examples (vae/main.py), with its
/// module names and registration order, so a state_dict moves between the two unchanged
/// ("fc1.weight", "fc1.bias", "fc21.weight", ..., "fc4.bias").
///
///   auto model = std::make_shared<ember::models::VAE>();     // 784 -> 400 -> 20, as the example
///   auto [recon, mu, logvar] = model->forward(images, {});   // images [N, 1, 28, 28] or [N, 784]
///   Tensor loss = ember::models::vae_loss(recon, images, mu, logvar);
///
/// encode: h1 = relu(fc1(x)), mu = fc21(h1), logvar = fc22(h1); reparameterize: mu + eps * exp(logvar / 2)
/// with eps ~ N(0, 1) drawn by randn_like (on the CPU the same numbers as torch.randn_like after the
/// same manual_seed), or given explicitly; decode: sigmoid(fc4(relu(fc3(z)))). Every Linear keeps
/// nn.Linear's default initialisation, as the example does.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "ember/nn/modules.h"

namespace ember::models {

/// NOT arguments of the example (ember's extension): its fixed sizes 784 (a 28x28 image), 400 and
/// 20 as options, so that smaller models have the same structure; the defaults are the example's.
struct VAEOptions {
  int64_t input_size = 784;   // fc1's in_features and fc4's out_features
  int64_t hidden_size = 400;  // fc1's and fc3's out_features
  int64_t latent_size = 20;   // fc21's and fc22's out_features, fc3's in_features
};

/// What VAE::forward returns: the reconstruction [N, input_size] (probabilities), and the
/// posterior's mean and log-variance [N, latent_size].
struct VAEOutput {
  Tensor recon, mu, logvar;
};

class VAE : public nn::Module {
 public:
  explicit VAE(VAEOptions options = {});
  std::string name() const override { return "VAE"; }

  /// (mu, logvar) of x [N, input_size].
  std::pair<Tensor, Tensor> encode(const Tensor& x);
  /// mu + eps * exp(0.5 logvar); eps undefined draws it with randn_like (the example's), else it
  /// must have logvar's size (so that a test or a caller can fix the noise).
  Tensor reparameterize(const Tensor& mu, const Tensor& logvar, const Tensor& eps = Tensor());
  /// The reconstruction sigmoid(fc4(relu(fc3(z)))) of z [N, latent_size].
  Tensor decode(const Tensor& z);
  /// The example's forward: x viewed as [-1, input_size] (x.view(-1, 784)), encoded, sampled
  /// with `eps` (undefined: drawn) and decoded.
  VAEOutput forward(const Tensor& x, const Tensor& eps);
  /// forward(x, {}).recon, so that the model can be called as a one-input module.
  Tensor forward(const Tensor& x) override { return forward(x, Tensor()).recon; }

  std::shared_ptr<nn::Linear> fc1, fc21, fc22, fc3, fc4;
  VAEOptions options;
};

/// The example's loss_function: binary_cross_entropy(recon_x, x.view(-1, recon_x.size(-1)),
/// reduction "sum") plus the KL divergence -0.5 * sum(1 + logvar - mu^2 - exp(logvar)), summed
/// over the batch (the example divides by the dataset's size only when it reports it).
Tensor vae_loss(const Tensor& recon_x, const Tensor& x, const Tensor& mu, const Tensor& logvar);

}  // namespace ember::models
