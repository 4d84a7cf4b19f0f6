// nn::utils::rnn (PackedSequence, pack_padded_sequence, pad_packed_sequence, pad_sequence,
// unpad_sequence, pack_sequence, unpack_sequence) and RNN, LSTM and GRU on packed batches:
// against PyTorch 2.15 (tests/nn/golden/packed_golden.safetensors from
// tools/gen_packed_golden.py: packed data, padded outputs, final states and every gradient, in
// float64 and float32), values PyTorch printed for the same calls, PyTorch's error messages,
// each sequence of a packed batch against the same sequence run alone, and float64 first- and
// second-order gradchecks through packing, the layers and unpacking.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/packed_sequence.h"
#include "ember/nn/rnn.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace R = ember::nn::utils::rnn;
using ember_test::error_of;
using ember_test::expect_close;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/packed_golden.safetensors");
  return data;
}

std::vector<int64_t> values(const Tensor& t) {
  std::vector<int64_t> out;
  Tensor host = t.to(Device(kCPU)).to(kInt64).contiguous();
  for (int64_t i = 0; i < host.numel(); ++i) out.push_back(host.data_ptr<int64_t>()[i]);
  return out;
}

// ---------------------------------------------------------------- the layers against PyTorch

struct Case : ember_test::GoldenCase {
  bool has(const std::string& name) const { return golden().contains(prefix + name); }
  Tensor at(const std::string& name) const { return golden().at(prefix + name); }
};

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (ember_test::GoldenCase& c : ember_test::golden_cases(golden().metadata)) out.push_back(Case{std::move(c)});
  return out;
}

std::shared_ptr<nn::RNNBase> build(const Case& c, Dtype dtype) {
  const int64_t input = std::stoll(golden().metadata.at("input"));
  nn::RNNOptions o{.num_layers = c.num("layers"),
                   .batch_first = c.flag("batch_first"),
                   .bidirectional = c.flag("bidirectional"),
                   .proj_size = c.num("proj")};
  std::shared_ptr<nn::RNNBase> m;
  if (c.kind == "RNN") m = std::make_shared<nn::RNN>(input, c.num("hidden"), o);
  if (c.kind == "LSTM") m = std::make_shared<nn::LSTM>(input, c.num("hidden"), o);
  if (c.kind == "GRU") m = std::make_shared<nn::GRU>(input, c.num("hidden"), o);
  m->to(dtype);
  nn::StateDict state;
  for (const std::string& key : c.keys) state.insert(key, c.at("p." + key).to(dtype));
  m->load_state_dict(state);
  return m;
}

struct PackedOut {
  R::PackedSequence output;
  Tensor h_n, c_n;
};

PackedOut run(nn::RNNBase& m, const R::PackedSequence& in, const Tensor& h0, const Tensor& c0) {
  if (auto* lstm = dynamic_cast<nn::LSTM*>(&m)) {
    nn::PackedLSTMOutput r = lstm->forward(in, h0, c0);
    return {r.output, r.h_n, r.c_n};
  }
  nn::PackedRNNOutput r = dynamic_cast<nn::RNN*>(&m) ? dynamic_cast<nn::RNN&>(m).forward(in, h0)
                                                     : dynamic_cast<nn::GRU&>(m).forward(in, h0);
  return {r.output, r.h_n, Tensor()};
}

Tensor leaf(const Tensor& t, Dtype dtype) { return t.to(dtype).clone().requires_grad_(); }

void check_goldens(Dtype dtype, double rtol, double atol) {
  const std::vector<Case> cases = all_cases();
  ASSERT_EQ(cases.size(), 8u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.description + " in " + std::string(dtype_name(dtype)));
    std::shared_ptr<nn::RNNBase> m = build(c, dtype);
    const bool batch_first = c.flag("batch_first");
    Tensor x = leaf(c.at("x"), dtype);
    Tensor h0 = c.has("h0") ? leaf(c.at("h0"), dtype) : Tensor();
    Tensor c0 = c.has("c0") ? leaf(c.at("c0"), dtype) : Tensor();
    R::PackedSequence packed = R::pack_padded_sequence(x, c.at("lengths"), batch_first, c.flag("sorted"));
    PackedOut out = run(*m, packed, h0, c0);

    EXPECT_EQ(values(out.output.batch_sizes), values(c.at("batch_sizes")));
    EXPECT_EQ(out.output.sorted_indices.defined(), c.has("sorted_indices"));
    if (c.has("sorted_indices")) {
      EXPECT_EQ(values(out.output.sorted_indices), values(c.at("sorted_indices")));
    }
    expect_close(out.output.data, c.at("data"), rtol, atol, "packed output");
    auto [y, lengths] = R::pad_packed_sequence(out.output, batch_first);
    EXPECT_EQ(values(lengths), values(c.at("lengths")));
    EXPECT_EQ(lengths.dtype(), kInt64);
    expect_close(y, c.at("y"), rtol, atol, "padded output");
    expect_close(out.h_n, c.at("h_n"), rtol, atol, "h_n");
    Tensor loss = (y * c.at("gy").to(dtype)).sum() + (out.h_n * c.at("gh").to(dtype)).sum();
    EXPECT_EQ(out.c_n.defined(), c.has("c_n"));
    if (c.has("c_n")) {
      expect_close(out.c_n, c.at("c_n"), rtol, atol, "c_n");
      loss = loss + (out.c_n * c.at("gc").to(dtype)).sum();
    }
    loss.backward();
    expect_close(x.grad(), c.at("gx"), rtol, atol, "grad of x");
    if (h0.defined()) expect_close(h0.grad(), c.at("gh0"), rtol, atol, "grad of h0");
    if (c0.defined()) expect_close(c0.grad(), c.at("gc0"), rtol, atol, "grad of c0");
    for (const auto& [name, p] : m->named_parameters()) expect_close(p.grad(), c.at("g." + name), rtol, atol, name);
  }
}

TEST(PackedRnn, GoldensFloat64) { check_goldens(kFloat64, 1e-10, 1e-10); }

TEST(PackedRnn, GoldensFloat32) { check_goldens(kFloat32, 1e-4, 1e-4); }

// Every sequence of a packed batch gives what it gives run alone (unbatched, no padding): its
// outputs at its own steps, and its final states after its own last step. Ties and a batch in
// no particular order included.
TEST(PackedRnn, EachSequenceAsIfRunAlone) {
  manual_seed(21);
  nn::LSTM lstm(3, 4, {.num_layers = 2, .bidirectional = true, .proj_size = 2});
  nn::GRU gru(3, 4, {.num_layers = 2, .bidirectional = true});
  lstm.to(kFloat64);
  gru.to(kFloat64);
  const std::vector<int64_t> lengths{3, 6, 1, 6, 2, 3};
  const int64_t batch = static_cast<int64_t>(lengths.size()), layers_dirs = 4;
  Tensor x = randn({batch, 6, 3}, kFloat64);
  Tensor h0 = randn({layers_dirs, batch, 2}, kFloat64), c0 = randn({layers_dirs, batch, 4}, kFloat64);
  Tensor g0 = randn({layers_dirs, batch, 4}, kFloat64);
  R::PackedSequence packed = R::pack_padded_sequence(x, lengths, /*batch_first=*/true, /*enforce_sorted=*/false);
  nn::PackedLSTMOutput l = lstm.forward(packed, h0, c0);
  nn::PackedRNNOutput g = gru.forward(packed, g0);
  auto [ly, ll] = R::pad_packed_sequence(l.output, true);
  auto [gy, gl] = R::pad_packed_sequence(g.output, true);
  EXPECT_EQ(values(ll), lengths);
  for (int64_t b = 0; b < batch; ++b) {
    SCOPED_TRACE("sequence " + std::to_string(b));
    Tensor alone = x[b].narrow(0, 0, lengths[static_cast<size_t>(b)]);
    nn::LSTMOutput la = lstm.forward(alone, h0.select(1, b), c0.select(1, b));
    nn::RNNOutput ga = gru.forward(alone, g0.select(1, b));
    expect_close(ly[b].narrow(0, 0, lengths[static_cast<size_t>(b)]), la.output, 1e-12, 1e-12, "LSTM output");
    expect_close(l.h_n.select(1, b), la.h_n, 1e-12, 1e-12, "LSTM h_n");
    expect_close(l.c_n.select(1, b), la.c_n, 1e-12, 1e-12, "LSTM c_n");
    expect_close(gy[b].narrow(0, 0, lengths[static_cast<size_t>(b)]), ga.output, 1e-12, 1e-12, "GRU output");
    expect_close(g.h_n.select(1, b), ga.h_n, 1e-12, 1e-12, "GRU h_n");
    // After its end, a sequence's padded output holds the padding value.
    const int64_t rest = 6 - lengths[static_cast<size_t>(b)];
    if (rest > 0) {
      EXPECT_TRUE(equal(ly[b].narrow(0, lengths[static_cast<size_t>(b)], rest), zeros({rest, 4}, kFloat64)));
    }
  }
}

TEST(PackedRnn, Gradchecks) {
  manual_seed(22);
  auto lstm = std::make_shared<nn::LSTM>(2, 2, nn::RNNOptions{.num_layers = 2, .bidirectional = true, .proj_size = 1});
  auto gru = std::make_shared<nn::GRU>(2, 2, nn::RNNOptions{.bidirectional = true});
  auto rnn = std::make_shared<nn::RNN>(2, 2, nn::RNNOptions{.nonlinearity = "relu"});
  lstm->to(kFloat64);
  gru->to(kFloat64);
  rnn->to(kFloat64);
  const std::vector<int64_t> lengths{2, 3, 1};
  auto f = [&](const std::vector<Tensor>& in) {
    R::PackedSequence packed = R::pack_padded_sequence(in[0], lengths, false, false);
    nn::PackedLSTMOutput l = lstm->forward(packed, in[1], in[2]);
    nn::PackedRNNOutput g = gru->forward(packed, in[3]);
    nn::PackedRNNOutput r = rnn->forward(packed);
    std::vector<Tensor> parts{R::pad_packed_sequence(l.output, false, 0.5).first,
                              l.h_n,
                              l.c_n,
                              R::pad_packed_sequence(g.output).first,
                              g.h_n,
                              r.output.data,
                              r.h_n};
    for (Tensor& p : parts) p = p.reshape({-1});
    return cat(parts, 0);
  };
  std::vector<Tensor> inputs{randn({3, 3, 2}, kFloat64), randn({4, 3, 1}, kFloat64), randn({4, 3, 2}, kFloat64),
                             randn({2, 3, 2}, kFloat64)};
  test::gradcheck("packed layers", f, inputs);
  test::gradgradcheck("packed layers", f, inputs);
}

TEST(PackedRnn, DropoutBetweenLayersOnPackedData) {
  manual_seed(23);
  nn::GRU gru(3, 4, {.num_layers = 2, .dropout = 0.5});
  R::PackedSequence packed = R::pack_sequence({randn({4, 3}), randn({2, 3})});
  manual_seed(1);
  Tensor a = gru.forward(packed).output.data;
  manual_seed(1);
  Tensor b = gru.forward(packed).output.data;
  manual_seed(2);
  Tensor c = gru.forward(packed).output.data;
  EXPECT_TRUE(equal(a, b));
  EXPECT_FALSE(equal(a, c));
  gru.eval();
  EXPECT_TRUE(equal(gru.forward(packed).output.data, gru.forward(packed).output.data));
}

TEST(PackedRnn, Errors) {
  nn::GRU gru(2, 3);
  nn::LSTM lstm(2, 3);
  Tensor x = arange(12, kFloat32).view({3, 2, 2});
  R::PackedSequence p = R::pack_padded_sequence(x, std::vector<int64_t>{3, 2});
  EXPECT_EQ(error_of([&] { gru.forward(p, zeros({1, 3, 3})); }), "Expected hidden size (1, 2, 3), got [1, 3, 3]");
  EXPECT_EQ(error_of([&] {
              lstm.forward(p, zeros({1, 3, 3}), zeros({1, 2, 3}));
            }),
            "Expected hidden[0] size (1, 2, 3), got [1, 3, 3]");
  EXPECT_EQ(error_of([&] {
              lstm.forward(p, zeros({1, 2, 3}), Tensor());
            }),
            "LSTM: h0 and c0 are given together, or neither (for zeros)");
  EXPECT_EQ(error_of([&] {
              gru.forward(R::pack_padded_sequence(zeros({3, 2, 4}), std::vector<int64_t>{3, 2}));
            }),
            "input.size(-1) must be equal to input_size. Expected 2, got 4");
  EXPECT_EQ(error_of([&] {
              gru.forward(R::PackedSequence(zeros({5, 2, 1}), p.batch_sizes));
            }),
            "input must have 2 dimensions, got 3");
  EXPECT_EQ(error_of([&] { gru.forward(p.to(kFloat64)); }),
            "RNN input dtype (torch.float64) does not match weight dtype (torch.float32). Convert input: "
            "input.to(torch.float32), or convert model: model.to(torch.float64)");
  // Fields changed after construction are checked again where they are used.
  R::PackedSequence broken = p;
  broken.batch_sizes = tensor(std::vector<int64_t>{2, 2, 2}, kInt64);
  EXPECT_EQ(error_of([&] { gru.forward(broken); }),
            "GRU: batch_sizes add up to 6 steps but the packed data has 5 rows");
}

// ---------------------------------------------------------------- packing and padding

TEST(PackedSequence, PackPaddedSortedAndUnsorted) {
  Tensor x = arange(12, kFloat32).view({3, 2, 2});
  R::PackedSequence p = R::pack_padded_sequence(x, std::vector<int64_t>{3, 2});
  EXPECT_TRUE(equal(p.data, tensor({{0., 1.}, {2., 3.}, {4., 5.}, {6., 7.}, {8., 9.}})));
  EXPECT_EQ(values(p.batch_sizes), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(p.batch_sizes.dtype(), kInt64);
  EXPECT_FALSE(p.sorted_indices.defined());
  EXPECT_FALSE(p.unsorted_indices.defined());

  R::PackedSequence q = R::pack_padded_sequence(x, tensor(std::vector<int64_t>{2, 3}), false, false);
  EXPECT_TRUE(equal(q.data, tensor({{2., 3.}, {0., 1.}, {6., 7.}, {4., 5.}, {10., 11.}})));
  EXPECT_EQ(values(q.batch_sizes), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(values(q.sorted_indices), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(values(q.unsorted_indices), (std::vector<int64_t>{1, 0}));

  // torch.sort keeps equal lengths in their order: sorted_indices [1, 0, 2] for [2, 3, 2].
  R::PackedSequence ties =
      R::pack_padded_sequence(arange(9, kFloat32).view({3, 3, 1}), std::vector<int64_t>{2, 3, 2}, false, false);
  EXPECT_EQ(values(ties.sorted_indices), (std::vector<int64_t>{1, 0, 2}));

  // Lengths in another integer dtype are converted, as torch.as_tensor(lengths, dtype=int64) does.
  R::PackedSequence from_int32 = R::pack_padded_sequence(x, tensor(std::vector<int64_t>{3, 2}).to(kInt32));
  EXPECT_TRUE(equal(from_int32.data, p.data));
}

TEST(PackedSequence, PadPacked) {
  Tensor x = arange(12, kFloat32).view({3, 2, 2});
  R::PackedSequence p = R::pack_padded_sequence(x, std::vector<int64_t>{3, 2});
  auto [padded, lengths] = R::pad_packed_sequence(p, false, -1.0, 4);
  EXPECT_TRUE(equal(
      padded, tensor({{{0., 1.}, {2., 3.}}, {{4., 5.}, {6., 7.}}, {{8., 9.}, {-1., -1.}}, {{-1., -1.}, {-1., -1.}}})));
  EXPECT_EQ(values(lengths), (std::vector<int64_t>{3, 2}));
  EXPECT_TRUE(lengths.device().is_cpu());

  R::PackedSequence q = R::pack_padded_sequence(x, std::vector<int64_t>{2, 3}, false, false);
  auto [back, back_lengths] = R::pad_packed_sequence(q, true);
  EXPECT_TRUE(equal(back, tensor({{{0., 1.}, {4., 5.}, {0., 0.}}, {{2., 3.}, {6., 7.}, {10., 11.}}})));
  EXPECT_EQ(values(back_lengths), (std::vector<int64_t>{2, 3}));

  // Integer data: the padding value is converted like torch.full's, -1.5 to -1.
  R::PackedSequence ints = R::pack_padded_sequence(arange(6, kInt64).view({3, 2}), std::vector<int64_t>{3, 1});
  EXPECT_TRUE(equal(ints.data, tensor(std::vector<int64_t>{0, 1, 2, 4})));
  EXPECT_TRUE(equal(R::pad_packed_sequence(ints, false, -1.5).first,
                    tensor(std::vector<int64_t>{0, 1, 2, -1, 4, -1}).view({3, 2})));
}

TEST(PackedSequence, PadSequenceBothSides) {
  Tensor a = ones({2, 1}), b = full({3, 1}, 2.0);
  EXPECT_TRUE(equal(R::pad_sequence({a, b}, true, 0.0, "left"), tensor({{{0.}, {1.}, {1.}}, {{2.}, {2.}, {2.}}})));
  EXPECT_TRUE(equal(R::pad_sequence({a, b}, true, 7.0), tensor({{{1.}, {1.}, {7.}}, {{2.}, {2.}, {2.}}})));
  Tensor time_major = R::pad_sequence({a, b});
  EXPECT_EQ(time_major.sizes().vec(), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_TRUE(equal(time_major.select(1, 0).flatten(), tensor({1., 1., 0.})));
  // The first sequence's dtype wins, as copying into torch.full's result does in PyTorch.
  EXPECT_EQ(R::pad_sequence({zeros({2, 3}), zeros({1, 3}, kFloat64)}).dtype(), kFloat32);
  // 1-D sequences: the result is [T, B].
  EXPECT_EQ(R::pad_sequence({ones({4}), ones({1})}).sizes().vec(), (std::vector<int64_t>{4, 2}));
}

TEST(PackedSequence, RoundTrips) {
  manual_seed(31);
  std::vector<Tensor> seqs{randn({2, 3}), randn({5, 3}), randn({1, 3}), randn({5, 3})};
  std::vector<Tensor> back = R::unpack_sequence(R::pack_sequence(seqs, false));
  ASSERT_EQ(back.size(), seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i) EXPECT_TRUE(equal(back[i], seqs[i])) << i;
  Tensor padded = R::pad_sequence(seqs, true);
  std::vector<Tensor> unpadded = R::unpad_sequence(padded, tensor(std::vector<int64_t>{2, 5, 1, 5}), true);
  for (size_t i = 0; i < seqs.size(); ++i) EXPECT_TRUE(equal(unpadded[i], seqs[i])) << i;
  std::vector<Tensor> time_major = R::unpad_sequence(padded.transpose(0, 1), tensor(std::vector<int64_t>{2, 5, 1, 5}));
  for (size_t i = 0; i < seqs.size(); ++i) EXPECT_TRUE(equal(time_major[i], seqs[i])) << i;
  R::PackedSequence sorted = R::pack_sequence({seqs[1], seqs[3], seqs[0], seqs[2]});
  EXPECT_EQ(values(sorted.batch_sizes), (std::vector<int64_t>{4, 3, 2, 2, 2}));
}

TEST(PackedSequence, GradientsThroughPackingAndPadding) {
  const std::vector<int64_t> lengths{2, 4, 1};
  auto f = [&](const std::vector<Tensor>& in) {
    R::PackedSequence p = R::pack_padded_sequence(in[0], lengths, true, false);
    Tensor padded = R::pad_packed_sequence(p, false, 3.0, 5).first;
    return cat({padded.reshape({-1}), R::pad_sequence({in[1], in[2]}, false, 0.0, "left").reshape({-1})}, 0);
  };
  manual_seed(32);
  std::vector<Tensor> inputs{randn({3, 4, 2}, kFloat64), randn({3, 2}, kFloat64), randn({1, 2}, kFloat64)};
  test::gradcheck("pack and pad", f, inputs);
  test::gradgradcheck("pack and pad", f, inputs);
}

TEST(PackedSequence, ToKeepsBatchSizesOnTheCpu) {
  R::PackedSequence p = R::pack_sequence({ones({2, 1}), ones({3, 1})}, false);
  R::PackedSequence d = p.to(kFloat64);
  EXPECT_EQ(d.data.dtype(), kFloat64);
  EXPECT_EQ(d.batch_sizes.dtype(), kInt64);
  EXPECT_EQ(values(d.unsorted_indices), values(p.unsorted_indices));
  R::PackedSequence same = p.to(Device(kCPU));
  EXPECT_TRUE(same.data.is_same(p.data));
  EXPECT_FALSE(p.is_cuda());
}

TEST(PackedSequence, Errors) {
  Tensor x = arange(12, kFloat32).view({3, 2, 2});
  auto pack = [&](std::vector<int64_t> lengths, bool sorted = true) {
    return error_of([&] { R::pack_padded_sequence(x, lengths, false, sorted); });
  };
  EXPECT_EQ(pack({1, 3}),
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
            "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if you "
            "do not need ONNX exportability.");
  EXPECT_EQ(pack({3, 0}),
            "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0");
  EXPECT_EQ(pack({-1, 2}, false),
            "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0");
  EXPECT_EQ(pack({3, 2, 1}), "Expected `len(lengths)` to be equal to batch_size, but got 3 (batch_size=2)");
  // PyTorch accepts this one and returns a PackedSequence whose batch_sizes overrun its data.
  EXPECT_EQ(pack({4, 2}), "pack_padded_sequence: the longest sequence has length 4 but the input holds only 3 steps");
  EXPECT_EQ(error_of([&] {
              R::pack_padded_sequence(x, tensor({{3, 2}}, kInt64));
            }),
            "'lengths' argument should be a 1D CPU int64 tensor, but got 2D cpu Long tensor");
  EXPECT_EQ(error_of([&] {
              R::pack_padded_sequence(x.narrow(0, 0, 0), std::vector<int64_t>{3, 2});
            }),
            "Cannot pack empty tensors.");
  EXPECT_EQ(error_of([&] { R::pack_padded_sequence(zeros({3}), std::vector<int64_t>{3}); }),
            "pack_padded_sequence: input must have at least 2 dimensions ([T, B, *]), got a 1-D tensor");

  R::PackedSequence p = R::pack_padded_sequence(x, std::vector<int64_t>{3, 2});
  EXPECT_EQ(error_of([&] { R::pad_packed_sequence(p, false, 0.0, 2); }),
            "Expected total_length to be at least the length of the longest sequence in input, but got "
            "total_length=2 and max sequence length being 3");

  EXPECT_EQ(error_of([] { R::pad_sequence({}); }), "received an empty list of sequences");
  EXPECT_EQ(error_of([] {
              R::pad_sequence({zeros({2, 3}), zeros({1, 2})});
            }),
            "pad_sequence: sequence 1 has sizes [1, 2] but sequence 0 has [2, 3]; all must agree after the first "
            "dimension");
  EXPECT_EQ(error_of([] {
              R::pad_sequence({zeros({2, 3}), zeros({1, 3})}, false, 0.0, "middle");
            }),
            "Expected padding_side to be one of left or right, but got middle.");
  EXPECT_EQ(error_of([] {
              R::pad_sequence({zeros({}), zeros({1})});
            }),
            "pad_sequence: sequence 0 is a 0-D tensor; every sequence needs a first (time) dimension");
  EXPECT_EQ(error_of([] {
              R::unpad_sequence(zeros({3, 2}), tensor(std::vector<int64_t>{4, 2}));
            }),
            "unpad_sequence: lengths[0] = 4 is outside [0, 3], the padded length");

  // A PackedSequence made by hand is checked where it is made.
  Tensor data = zeros({5, 2});
  EXPECT_EQ(error_of([&] {
              R::PackedSequence(data, tensor(std::vector<int64_t>{2, 3}));
            }),
            "PackedSequence: batch_sizes must be positive and non-increasing, but batch_sizes[1] = 3 follows 2");
  EXPECT_EQ(error_of([&] {
              R::PackedSequence(data, tensor(std::vector<int64_t>{2, 2}));
            }),
            "PackedSequence: batch_sizes add up to 4 steps but the packed data has 5 rows");
  EXPECT_EQ(error_of([&] {
              R::PackedSequence(data, tensor(std::vector<int64_t>{3, 2}).to(kInt32));
            }),
            "'batch_sizes' argument should be a 1D CPU int64 tensor, but got 1D cpu Int tensor");
  EXPECT_EQ(error_of([&] {
              R::PackedSequence(data, tensor(std::vector<int64_t>{3, 2}), tensor(std::vector<int64_t>{0, 1}));
            }),
            "PackedSequence: sorted_indices must be a 1-D int64 tensor of batch_sizes[0] = 3 elements, but got a 1-D "
            "Long tensor of 2 elements");
}

}  // namespace
