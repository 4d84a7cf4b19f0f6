// Training ember::models::GPT (nanoGPT's GPT-2) from C++ as a character-level language model on
// a short text built into this file, then sampling from it. The loss falls from ln(vocabulary)
// toward the text's entropy; the state_dict has nanoGPT's keys (lm_head.weight tied to
// transformer.wte.weight), so nanoGPT's GPT(GPTConfig(...)).load_state_dict(...) reads it.
//   usage: train_gpt2 [STEPS]   (default 300)
#include <ember/ember.h>
#include <ember/models/gpt2.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace {

const char* const kText =
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a wife. However little known the feelings or views of such a man may be "
    "on his first entering a neighbourhood, this truth is so well fixed in the minds of the "
    "surrounding families, that he is considered the rightful property of some one or other of "
    "their daughters. My dear Mr. Bennet, said his lady to him one day, have you heard that "
    "Netherfield Park is let at last? Mr. Bennet replied that he had not. But it is, returned "
    "she; for Mrs. Long has just been here, and she told me all about it. Mr. Bennet made no "
    "answer. Do you not want to know who has taken it? cried his wife impatiently. You want to "
    "tell me, and I have no objection to hearing it. This was invitation enough.";

}  // namespace

int main(int argc, char** argv) try {
  using namespace ember;
  const int steps = argc > 1 ? std::stoi(argv[1]) : 300;
  const Device device = best_device();
  manual_seed(0);

  // The characters of the text are the vocabulary.
  const std::string text = kText;
  std::string chars = text;
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  std::map<char, int64_t> index_of;
  for (size_t i = 0; i < chars.size(); ++i) index_of[chars[i]] = static_cast<int64_t>(i);
  std::vector<int64_t> encoded;
  for (char c : text) encoded.push_back(index_of[c]);
  const Tensor data = tensor(encoded);

  const models::GPTConfig config{.block_size = 64,
                                 .vocab_size = static_cast<int64_t>(chars.size()),
                                 .n_layer = 4,
                                 .n_head = 4,
                                 .n_embd = 128,
                                 .dropout = 0.0,
                                 .bias = false};
  auto model = std::make_shared<models::GPT>(config);
  model->to(device);
  std::printf("vocabulary %zu characters, %.2fM parameters\n", chars.size(),
              static_cast<double>(model->get_num_params()) / 1e6);
  optim::AdamW optimizer(model->parameters(), {.lr = 1e-3, .weight_decay = 0.1});

  // Random windows of block_size + 1 characters: inputs and the next characters as targets.
  const int64_t batch_size = 16, span = config.block_size;
  auto get_batch = [&] {
    const Tensor starts = randint(0, data.size(0) - span - 1, {batch_size});
    std::vector<Tensor> xs, ys;
    for (int64_t b = 0; b < batch_size; ++b) {
      const int64_t start = starts[b].item<int64_t>();
      xs.push_back(data.narrow(0, start, span));
      ys.push_back(data.narrow(0, start + 1, span));
    }
    return std::pair{stack(xs).to(device), stack(ys).to(device)};
  };

  model->train();
  for (int step = 0; step < steps; ++step) {
    auto [x, y] = get_batch();
    const Tensor loss = model->forward(x, y).loss;
    optimizer.zero_grad();
    loss.backward();
    optim::clip_grad_norm_(model->parameters(), 1.0);
    optimizer.step();
    if (step % 25 == 0 || step == steps - 1) std::printf("step %4d  loss %.4f\n", step, loss.item<double>());
  }

  model->eval();
  const Tensor prompt = tensor(std::vector<int64_t>{index_of['M'], index_of['r'], index_of['.']}).view({1, 3});
  const Tensor sample = model->generate(prompt.to(device), 200, 0.8, 10).cpu();
  std::string out;
  for (int64_t i = 0; i < sample.size(1); ++i) out += chars[static_cast<size_t>(sample[0][i].item<int64_t>())];
  std::printf("sample: %s\n", out.c_str());
  io::save_safetensors("gpt2_chars.safetensors", model->state_dict().items());
} catch (const ember::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
