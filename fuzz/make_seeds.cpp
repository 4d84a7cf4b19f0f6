// Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/: valid files written by
// ember itself (and the reference safetensors files of the tests), plus edge cases and a few
// broken files, each small. Run from a fuzz build: build-fuzz/fuzz/fuzz_make_seeds .
// The output is deterministic, so rerunning it leaves the committed seeds as they are.
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/checkpoint.h"
#include "ember/io/safetensors.h"

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

namespace {

fs::path g_root;

void write(const std::string& target, const std::string& name, const Bytes& bytes) {
  const fs::path dir = g_root / "fuzz" / "corpus" / target;
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

Bytes read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Bytes cut(Bytes b, size_t n) {
  b.resize(std::min(n, b.size()));
  return b;
}

// A safetensors file with a hand-written header (padded with spaces to a multiple of 8) and data.
Bytes raw_safetensors(std::string header, const Bytes& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  Bytes out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(uint64_t{header.size()} >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// Small tensors of every dtype, with values that are not all alike.
ember::io::NamedTensors all_dtypes() {
  using namespace ember;
  ember::io::NamedTensors out;
  const Dtype dtypes[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
  int i = 0;
  for (Dtype d : dtypes) {
    Tensor t = arange(0, 6).reshape({2, 3}).to(d);
    out.emplace_back("t" + std::to_string(i++) + "." + std::string(dtype_name(d)), t);
  }
  return out;
}

void safetensors_seeds() {
  using namespace ember;
  using io::save_safetensors_to_bytes;
  manual_seed(0);
  write("safetensors", "ember-empty", save_safetensors_to_bytes(io::NamedTensors{}));
  write("safetensors", "ember-metadata-only", save_safetensors_to_bytes(io::NamedTensors{}, {{"format", "pt"}}));
  write("safetensors", "ember-one-f32",
        save_safetensors_to_bytes(io::NamedTensors{{"weight", rand({2, 3})}}, {{"format", "pt"}}));
  const Bytes dtypes = save_safetensors_to_bytes(all_dtypes(), {{"a", "1"}, {"b", "two"}});
  write("safetensors", "ember-all-dtypes", dtypes);
  write("safetensors", "ember-scalar-and-empty",
        save_safetensors_to_bytes(io::NamedTensors{{"scalar", tensor(3.5)},
                                                   {"empty", zeros({0, 3})},
                                                   {"empty_inner", zeros({4, 0, 2}, kInt64)},
                                                   {"one", ones({1, 1, 1, 1, 1, 1, 1}, kInt8)}}));
  write("safetensors", "ember-odd-names",
        save_safetensors_to_bytes(io::NamedTensors{{"a\"b\\c\n\t\x01", ones({2}, kUInt8)},
                                                   {"\xc3\xa9t\xc3\xa9 \xe2\x82\xac", zeros({1}, kFloat16)},
                                                   {"", ones({1}, kBool)}}));
  // Hand-written headers the reference accepts: unknown fields, null metadata, unsorted offsets.
  write(
      "safetensors", "hand-extra-fields",
      raw_safetensors(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"x":{"y":[1,2.5,null,true]}}})", {7, 9}));
  write("safetensors", "hand-null-metadata",
        raw_safetensors(R"({"__metadata__":null,"b":{"data_offsets":[0,1],"shape":[],"dtype":"BOOL"}})", {1}));
  write("safetensors", "hand-unsorted",
        raw_safetensors(R"({"b":{"dtype":"I16","shape":[1],"data_offsets":[2,4]},)"
                        R"("a":{"dtype":"I16","shape":[1],"data_offsets":[0,2]}})",
                        {1, 2, 3, 4}));
  // Broken files.
  write("safetensors", "bad-truncated", cut(dtypes, dtypes.size() - 5));
  write("safetensors", "bad-short", {8, 0, 0, 0});
  write("safetensors", "bad-header-length", cut(dtypes, 8));
  write("safetensors", "bad-json", raw_safetensors(R"({"a":{"dtype":"F32","shape":[1],)", {}));
  write("safetensors", "bad-huge-claim",
        raw_safetensors(R"({"a":{"dtype":"F64","shape":[1099511627776],"data_offsets":[0,8796093022208]}})", {}));
  write("safetensors", "bad-unsupported-dtype",
        raw_safetensors(R"({"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", {0}));
  // The reference implementation's own files from the tests.
  for (const char* name : {"all_dtypes", "no_tensors", "state_dict"})
    write("safetensors", std::string("reference-") + name,
          read_file(g_root / "tests" / "io" / "golden" / (std::string(name) + ".safetensors")));
}

Bytes checkpoint_bytes(const ember::io::Checkpoint& checkpoint) {
  char dir[] = "/tmp/ember-seeds-XXXXXX";
  if (!mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
  const fs::path file = fs::path(dir) / "checkpoint.safetensors";
  ember::io::save_checkpoint(file, checkpoint);
  Bytes bytes = read_file(file);
  fs::remove_all(dir);
  return bytes;
}

void checkpoint_seeds() {
  using namespace ember;
  manual_seed(1);
  io::Checkpoint full;
  full.model.insert("0.weight", rand({3, 2}));
  full.model.insert("0.bias", zeros({3}));
  full.model.insert("1.running_mean", zeros({3}, kFloat64));
  full.model.insert("1.num_batches_tracked", tensor(int64_t{5}));
  full.optimizer.tensors["state.0.exp_avg"] = rand({3, 2});
  full.optimizer.tensors["state.0.step"] = tensor(2.0f);
  full.optimizer.numbers = {{"param_groups.0.lr", 1e-3}, {"param_groups.0.betas.0", 0.9}};
  full.scheduler = {{"last_epoch", 3}, {"base_lrs.0", 0.01}};
  full.rng = get_rng_state();
  full.loader = {2, 128};
  full.epoch = 2;
  full.step = 300;
  full.extra = {{"config", R"({"model":"mlp"})"}, {"note", "seed"}};
  const Bytes full_bytes = checkpoint_bytes(full);
  write("checkpoint", "ember-full", full_bytes);
  write("checkpoint", "ember-empty", checkpoint_bytes(io::Checkpoint{}));
  io::Checkpoint weights_only;
  weights_only.model.insert("weight", ones({2, 2}, kBFloat16));
  weights_only.epoch = -1;
  weights_only.step = INT64_MAX;
  write("checkpoint", "ember-weights-only", checkpoint_bytes(weights_only));
  // Broken: cut short, plain weights without the checkpoint metadata, a wrong version.
  write("checkpoint", "bad-truncated", cut(full_bytes, full_bytes.size() / 2));
  write("checkpoint", "bad-not-a-checkpoint",
        io::save_safetensors_to_bytes(io::NamedTensors{{"model.weight", ones({1})}}));
  write("checkpoint", "bad-version",
        io::save_safetensors_to_bytes(io::NamedTensors{}, {{"format", "ember-checkpoint"}, {"version", "2"}}));
  write(
      "checkpoint", "bad-numbers",
      io::save_safetensors_to_bytes(
          io::NamedTensors{},
          {{"format", "ember-checkpoint"}, {"version", "1"}, {"optimizer", R"({"lr":"fast"})"}, {"scheduler", "{}"}}));
}

Bytes idx(const std::vector<uint32_t>& dims, size_t payload, uint8_t type = 0x08) {
  Bytes out = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(d >> shift));
  for (size_t i = 0; i < payload; ++i) out.push_back(static_cast<uint8_t>(i * 7 % 251));
  return out;
}

Bytes gzip(const Bytes& plain) {
  z_stream s{};
  if (deflateInit2(&s, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw std::runtime_error("zlib");
  Bytes out(deflateBound(&s, plain.size()) + 32);
  s.next_in = const_cast<uint8_t*>(plain.data());
  s.avail_in = static_cast<uInt>(plain.size());
  s.next_out = out.data();
  s.avail_out = static_cast<uInt>(out.size());
  if (deflate(&s, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("zlib deflate");
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

void idx_seeds() {
  const Bytes labels = idx({10}, 10);
  const Bytes images = idx({3, 4, 5}, 60);
  const Bytes empty = idx({0, 28, 28}, 0);
  const Bytes four = idx({1, 2, 1, 3}, 6);
  for (const auto& [name, bytes] : {std::pair{"labels", labels}, {"images", images}, {"empty", empty}, {"4d", four}}) {
    write("idx", std::string("plain-") + name, bytes);
    write("idx", std::string("gzip-") + name, gzip(bytes));
  }
  // Two gzip members and zero padding, as the reader accepts them.
  Bytes two = gzip(cut(images, 30));
  const Bytes rest = gzip(Bytes(images.begin() + 30, images.end()));
  two.insert(two.end(), rest.begin(), rest.end());
  two.insert(two.end(), 4, 0);
  write("idx", "gzip-two-members-padded", two);
  // Broken: cut short, trailing bytes, another element type, a huge claim, bad gzip.
  write("idx", "plain-bad-truncated", cut(images, 40));
  write("idx", "plain-bad-trailing", idx({2}, 3));
  write("idx", "plain-bad-float32", idx({2}, 8, 0x0D));
  write("idx", "plain-bad-huge-claim", idx({60000, 65536, 65536}, 4));
  const Bytes gz = gzip(images);
  write("idx", "gzip-bad-truncated", cut(gz, gz.size() - 6));
  write("idx", "gzip-bad-huge-claim", gzip(idx({4000000000u}, 16)));
}

void device_seeds() {
  int i = 0;
  for (const char* spec : {"cpu",
                           "cuda",
                           "mps",
                           "cpu:0",
                           "cuda:0",
                           "cuda:7",
                           "cuda:511",
                           "mps:0",
                           "cuda:512",
                           "cuda:01",
                           "cpu:1",
                           "CUDA",
                           "xla:1",
                           "cuda:",
                           ":0",
                           "cuda:1:2",
                           " cpu",
                           "cuda:-1",
                           "cuda:99999999999999999999",
                           ""}) {
    write("device", "spec-" + std::to_string(i++), text(spec));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " REPO_ROOT   (writes REPO_ROOT/fuzz/corpus/<target>/)\n";
    return 2;
  }
  g_root = argv[1];
  safetensors_seeds();
  checkpoint_seeds();
  idx_seeds();
  device_seeds();
  std::cout << "seeds written to " << (g_root / "fuzz" / "corpus").string() << "\n";
  return 0;
}
