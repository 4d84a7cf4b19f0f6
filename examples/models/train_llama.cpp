// Training ember::models::llama::Transformer (Meta's llama/model.py: RMSNorm, rotary embedding,
// grouped-query attention, SwiGLU) from C++ as a character-level language model of a short text
// built into this file, then continuing a prompt greedily. The loss falls from ln(vocabulary)
// toward the text's entropy; the state_dict has the reference's keys (tok_embeddings.weight,
// layers.0.attention.wq.weight, ..., output.weight).
//   usage: train_llama [STEPS]   (default 200)
#include <ember/ember.h>
#include <ember/models/llama.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace {

const char* const kText =
    "Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in "
    "my purse, and nothing particular to interest me on shore, I thought I would sail about a "
    "little and see the watery part of the world. It is a way I have of driving off the spleen "
    "and regulating the circulation. Whenever I find myself growing grim about the mouth; "
    "whenever it is a damp, drizzly November in my soul; whenever I find myself involuntarily "
    "pausing before coffin warehouses, and bringing up the rear of every funeral I meet; then, "
    "I account it high time to get to sea as soon as I can.";

}  // namespace

int main(int argc, char** argv) try {
  using namespace ember;
  namespace llama = ember::models::llama;
  const int steps = argc > 1 ? std::stoi(argv[1]) : 200;
  const Device device = best_device();
  manual_seed(0);

  const std::string text = kText;
  std::string chars = text;
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  std::map<char, int64_t> index_of;
  for (size_t i = 0; i < chars.size(); ++i) index_of[chars[i]] = static_cast<int64_t>(i);
  std::vector<int64_t> encoded;
  for (char c : text) encoded.push_back(index_of[c]);
  const Tensor data = tensor(encoded);

  // 4 query heads sharing 2 key/value heads; SwiGLU hidden size 176 (int(2 * 256 / 3), rounded
  // up to a multiple of 16).
  const int64_t block_size = 64;
  const llama::ModelArgs args{.dim = 64,
                              .n_layers = 2,
                              .n_heads = 4,
                              .n_kv_heads = 2,
                              .vocab_size = static_cast<int64_t>(chars.size()),
                              .multiple_of = 16,
                              .max_seq_len = block_size};
  auto model = std::make_shared<llama::Transformer>(args);
  model->to(device);
  int64_t parameters = 0;
  for (const Tensor& p : model->parameters()) parameters += p.numel();
  std::printf("vocabulary %zu characters, %lld parameters\n", chars.size(), static_cast<long long>(parameters));
  optim::AdamW optimizer(model->parameters(), {.lr = 3e-3, .weight_decay = 0.1});

  // Random windows of block_size + 1 characters: inputs and the next characters as targets.
  const int64_t batch_size = 16;
  auto get_batch = [&] {
    const Tensor starts = randint(0, data.size(0) - block_size - 1, {batch_size});
    std::vector<Tensor> xs, ys;
    for (int64_t b = 0; b < batch_size; ++b) {
      const int64_t start = starts[b].item<int64_t>();
      xs.push_back(data.narrow(0, start, block_size));
      ys.push_back(data.narrow(0, start + 1, block_size));
    }
    return std::pair{stack(xs).to(device), stack(ys).to(device)};
  };

  model->train();
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    auto [x, y] = get_batch();
    const Tensor logits = (*model)(x);
    const Tensor loss = nn::functional::cross_entropy(logits.view({-1, args.vocab_size}), y.reshape({-1}));
    optimizer.zero_grad();
    loss.backward();
    optim::clip_grad_norm_(model->parameters(), 1.0);
    optimizer.step();
    losses.push_back(loss.item<double>());
    if (step % 20 == 0 || step == steps - 1) std::printf("step %4d  loss %.4f\n", step, losses.back());
  }

  model->eval();
  const std::string prompt_text = "Call me";
  std::vector<int64_t> prompt;
  for (char c : prompt_text) prompt.push_back(index_of[c]);
  const Tensor sample = model->generate(tensor(prompt).view({1, -1}).to(device), 80).cpu();
  std::string out;
  for (int64_t i = 0; i < sample.size(1); ++i) out += chars[static_cast<size_t>(sample[0][i].item<int64_t>())];
  std::printf("greedy: %s\n", out.c_str());
  io::save_safetensors("llama_chars.safetensors", model->state_dict().items());

  const size_t window = std::max<size_t>(1, std::min<size_t>(5, losses.size() / 2));
  double first = 0.0, last = 0.0;
  for (size_t i = 0; i < window; ++i) {
    first += losses[i] / static_cast<double>(window);
    last += losses[losses.size() - 1 - i] / static_cast<double>(window);
  }
  std::printf("mean loss of the first %zu steps %.4f, of the last %zu %.4f\n", window, first, window, last);
  if (!(last < first)) {
    std::fprintf(stderr, "the loss did not fall\n");
    return 1;
  }
  return 0;
} catch (const ember::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
