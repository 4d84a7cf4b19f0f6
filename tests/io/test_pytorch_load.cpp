// io::torch_load on files torch.save itself wrote: exact values, dtypes, shapes, strides and
// shared storages, every kind of value, refusals that name the problem, devices and map_location.
#include <gtest/gtest.h>

#include "io/pytorch_format_support.h"

namespace {

using namespace ember_test::pytorch_format;

// ============================================================================================
// Goldens written by PyTorch
// ============================================================================================

TEST(TorchLoad, EveryGoldenReadsWithExactValuesGeometryAndSharing) {
  const auto files = readable_goldens();
  ASSERT_GE(files.size(), 14u);
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    Value v;
    ASSERT_NO_THROW(v = load_golden(file)) << error_of([&] { load_golden(file); });
    check_golden_value(file, v);
    // The same bytes from memory read the same.
    const Bytes bytes = read_file(golden(file));
    const io::TorchLoadOptions options =
        expected()["files"][file].contains("location") ? on_cpu() : io::TorchLoadOptions{};
    check_golden_value(file, io::torch_load_from_bytes(bytes, file, options));
  }
}

TEST(TorchLoad, StateDictIsAnOrderedDictWithNumBatchesTracked) {
  const Value v = io::torch_load(golden("state_dict.pt"));
  EXPECT_TRUE(v.is_ordered_dict());
  EXPECT_EQ(v.type_name(), "OrderedDict");
  const std::vector<std::string> keys = {
      "0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var", "1.num_batches_tracked",
      "3.weight", "3.bias"};
  ASSERT_EQ(v.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(v.dict_items()[i].first.to_string(), keys[i]);
  const Tensor& n = v["1.num_batches_tracked"].to_tensor();
  EXPECT_EQ(n.dtype(), kInt64);
  EXPECT_EQ(n.dim(), 0);
  EXPECT_EQ(n.item<int64_t>(), 1);

  const nn::StateDict sd = io::to_state_dict(v);
  EXPECT_EQ(sd.keys(), keys);
  EXPECT_TRUE(sd.at("0.weight").is_same(v["0.weight"].to_tensor()) ||
              storage_of(sd.at("0.weight")) == storage_of(v["0.weight"].to_tensor()));
  auto model =
      std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 4), std::make_shared<nn::BatchNorm1d>(4),
                                       std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(4, 2));
  model->load_state_dict(sd);
  for (const auto& [name, tensor] : model->state_dict()) EXPECT_TRUE(equal(tensor, sd.at(name))) << name;
}

TEST(TorchLoad, CheckpointDictHoldsEveryKind) {
  for (const char* file : {"checkpoint.pt", "checkpoint_p4.pt"}) {
    SCOPED_TRACE(file);
    const Value ckpt = io::torch_load(golden(file));
    ASSERT_TRUE(ckpt.is_dict());
    EXPECT_FALSE(ckpt.is_ordered_dict());
    EXPECT_EQ(ckpt.type_name(), "dict");
    EXPECT_EQ(ckpt["epoch"].to_int(), 3);
    EXPECT_EQ(ckpt["epoch"].to_double(), 3.0);
    EXPECT_EQ(ckpt["loss"].to_double(), 0.25);
    EXPECT_EQ(ckpt["name"].to_string(), "run-1");
    EXPECT_EQ(ckpt["flags"].kind(), Value::Kind::List);
    EXPECT_TRUE(ckpt["flags"].items()[0].to_bool());
    EXPECT_FALSE(ckpt["flags"].items()[1].to_bool());
    EXPECT_TRUE(ckpt["flags"].items()[2].is_none());
    EXPECT_EQ(ckpt["shape"].kind(), Value::Kind::Tuple);
    EXPECT_EQ(ckpt["shape"].items()[1].to_int(), 3);
    EXPECT_TRUE(ckpt["model"].is_ordered_dict());
    EXPECT_EQ(ckpt["optimizer"]["param_groups"].items()[0]["lr"].to_double(), 0.01);
    EXPECT_EQ(ckpt["optimizer"]["state"][Value(0)]["exp_avg"].to_tensor().dtype(), kFloat32);
    EXPECT_TRUE(contains(ckpt.summary(100000), "'epoch': 3")) << ckpt.summary(100000);
    EXPECT_LE(ckpt.summary(80).size(), 80u + 16u) << ckpt.summary(80);
  }
}

TEST(TorchLoad, ViewsShareOneStorage) {
  const Value v = io::torch_load(golden("views.pt"));
  ASSERT_EQ(v.size(), 4u);
  Tensor t = v.items()[0].to_tensor(), rows = v.items()[1].to_tensor(), tr = v.items()[2].to_tensor(),
         cols = v.items()[3].to_tensor();
  for (const Tensor& view : {rows, tr, cols}) EXPECT_EQ(storage_of(view), storage_of(t));
  const auto* base = static_cast<const uint8_t*>(t.data_ptr());
  EXPECT_EQ(static_cast<const uint8_t*>(rows.data_ptr()), base + 4 * sizeof(float));
  EXPECT_EQ(static_cast<const uint8_t*>(tr.data_ptr()), base);
  EXPECT_EQ(static_cast<const uint8_t*>(cols.data_ptr()), base);
  EXPECT_EQ(vec(tr.strides()), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(vec(cols.strides()), (std::vector<int64_t>{4, 2}));
  // Writing through one shows in the others.
  rows.select(0, 0).select(0, 0).fill_(100.0);
  EXPECT_EQ(at<float>(t, {1, 0}), 100.f);
  EXPECT_EQ(at<float>(tr, {0, 1}), 100.f);
  EXPECT_EQ(at<float>(cols, {1, 0}), 100.f);
  cols.fill_(-1.0);
  EXPECT_EQ(at<float>(t, {2, 2}), -1.f);
  EXPECT_EQ(at<float>(t, {2, 3}), 11.f);
  EXPECT_EQ(at<float>(rows, {1, 3}), 11.f);
}

TEST(TorchLoad, SliceOfALargerStorageKeepsItsOffset) {
  const Value v = io::torch_load(golden("slice.pt"));
  ASSERT_TRUE(v.is_tensor());
  const Tensor& t = v.to_tensor();
  EXPECT_EQ(t.dtype(), kInt32);
  EXPECT_EQ(t.storage_offset(), 5);
  EXPECT_EQ(t.impl().storage->nbytes(), 20 * sizeof(int32_t));
  EXPECT_EQ(at<int32_t>(t, {0, 0}), 5);
  EXPECT_EQ(at<int32_t>(t, {1, 2}), 10);
  EXPECT_EQ(storage_base(t)[0], 0);  // the element before the slice is there too
  EXPECT_EQ(reinterpret_cast<const int32_t*>(storage_base(t))[19], 19);
}

TEST(TorchLoad, ScalarsEmptyTensorsParametersAndLeaves) {
  const Value v = io::torch_load(golden("tensors.pt"));
  EXPECT_EQ(v["scalar"].to_tensor().dim(), 0);
  EXPECT_EQ(v["scalar"].to_tensor().item<float>(), 3.5f);
  EXPECT_EQ(v["int_scalar"].to_tensor().item<int64_t>(), -7);
  EXPECT_EQ(vec(v["empty"].to_tensor().sizes()), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(v["empty"].to_tensor().numel(), 0);
  for (const char* name : {"parameter", "leaf"}) {
    const Tensor& t = v[name].to_tensor();
    EXPECT_TRUE(t.requires_grad()) << name;
    EXPECT_TRUE(t.is_leaf()) << name;
    EXPECT_FALSE(t.grad().defined()) << name;
  }
  EXPECT_FALSE(v["frozen_parameter"].to_tensor().requires_grad());
  // A leaf that requires grad takes part in autograd as one.
  Tensor leaf = v["leaf"].to_tensor();
  (leaf * leaf).sum().backward();
  EXPECT_TRUE(equal(leaf.grad(), leaf.detach() * 2));
  EXPECT_EQ(vec(v["channels_last"].to_tensor().strides()), (std::vector<int64_t>{24, 1, 8, 2}));
  EXPECT_EQ(vec(v["expanded"].to_tensor().strides()), (std::vector<int64_t>{0, 1}));
}

TEST(TorchLoad, ValuesOfEveryKind) {
  const Value v = io::torch_load(golden("values.pt"));
  EXPECT_EQ(v["dtype"].to_dtype(), kFloat16);
  EXPECT_EQ(v["device"].to_device(), Device("cpu"));
  EXPECT_EQ(v["cuda_device"].to_device().str(), "cuda:1");
  EXPECT_EQ(v["nested"][Value(1)][Value(-3)].items()[1].to_double(), 2.5);
  EXPECT_EQ(v["nested"][Value(1)][Value(2)].to_string(), "two");
  EXPECT_EQ(v["big"].to_int(), int64_t{1} << 40);
  EXPECT_EQ(v["int64_min"].to_int(), INT64_MIN);
  EXPECT_EQ(v["int64_max"].to_int(), INT64_MAX);
  EXPECT_TRUE(std::isnan(v["nan"].to_double()));
  EXPECT_EQ(v["ninf"].to_double(), -INFINITY);
  EXPECT_TRUE(std::signbit(v["negzero"].to_double()));
  EXPECT_EQ(v["unicode"].to_string(),
            std::string("h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xf0\x9f\x90\x8d \0 end", 28));
  EXPECT_EQ(v["bytes"].kind(), Value::Kind::Bytes);
  EXPECT_EQ(v["bytes"].to_string(), std::string("\0\xff"
                                                "abc\n",
                                                6));
  EXPECT_EQ(v["bytes"].size(), 6u);
  EXPECT_EQ(v["odict"].dict_items()[0].first.to_string(), "b");
  // Kind names and accessor errors.
  EXPECT_EQ(v["big"].type_name(), "int");
  EXPECT_EQ(v["pi"].type_name(), "float");
  EXPECT_EQ(v["unicode"].type_name(), "str");
  EXPECT_EQ(v["bytes"].type_name(), "bytes");
  EXPECT_EQ(v["empty_list"].type_name(), "list");
  EXPECT_EQ(v["one_tuple"].type_name(), "tuple");
  EXPECT_EQ(v["true"].type_name(), "bool");
  const std::string message = error_of([&] { v["big"].to_string(); });
  EXPECT_TRUE(contains(message, "int")) << message;
  EXPECT_TRUE(contains(message, "str")) << message;
  const std::string tensor_message = error_of([&] { v["unicode"].to_tensor(); });
  EXPECT_TRUE(contains(tensor_message, "str")) << tensor_message;
  EXPECT_TRUE(contains(tensor_message, "Tensor")) << tensor_message;
}

TEST(TorchLoad, MissingKeysAreListed) {
  const Value ckpt = io::torch_load(golden("checkpoint.pt"));
  EXPECT_FALSE(ckpt.contains("state_dict"));
  const std::string message = error_of([&] { ckpt["state_dict"]; });
  for (const char* key : {"state_dict", "model", "optimizer", "epoch"}) EXPECT_TRUE(contains(message, key)) << message;
  const std::string int_key = error_of([&] { ckpt["optimizer"]["state"][Value(99)]; });
  EXPECT_TRUE(contains(int_key, "99")) << int_key;
}

TEST(TorchLoad, ToStateDictRefusesACheckpointListingItsKeys) {
  const Value ckpt = io::torch_load(golden("checkpoint.pt"));
  const std::string message = error_of([&] { io::to_state_dict(ckpt); });
  for (const char* key : {"model", "optimizer", "epoch", "loss"}) EXPECT_TRUE(contains(message, key)) << message;
  const nn::StateDict sd = io::to_state_dict(ckpt["model"]);
  EXPECT_EQ(sd.size(), 9u);
  EXPECT_EQ(sd.at("1.num_batches_tracked").item<int64_t>(), 2);
  EXPECT_THROW(io::to_state_dict(Value(3)), Error);
  EXPECT_THROW(io::to_state_dict(io::torch_load(golden("values.pt"))), Error);
}

TEST(TorchLoad, Protocol4ReadsAsProtocol2) {
  expect_same_value(io::torch_load(golden("checkpoint.pt")), io::torch_load(golden("checkpoint_p4.pt")));
}

TEST(TorchLoad, BigEndianFilesReadWithTheirValues) {
  const Value v = io::torch_load(golden("big_endian.pt"));
  check_golden_value("big_endian.pt", v);
  EXPECT_EQ(v["i64"].to_tensor().select(0, 2).item<int64_t>(), int64_t{1} << 40);
  EXPECT_EQ(v["i16"].to_tensor().select(0, 0).select(0, 0).item<int16_t>(), 258);
}

// ============================================================================================
// Refusals
// ============================================================================================

TEST(TorchLoad, RefusedFilesNameTheProblem) {
  ASSERT_GE(expected()["refused"].size(), 8u);
  for (const auto& [name, phrases] : expected()["refused"].items()) {
    const std::string file = name;  // a copy: lambdas cannot capture structured bindings before clang 16
    SCOPED_TRACE(file);
    const std::string message = error_of([&] { io::torch_load(golden(file)); });
    EXPECT_NE(message, "no error");
    EXPECT_TRUE(contains(message, file)) << "the message does not name the file: " << message;
    for (const auto& phrase : phrases) EXPECT_TRUE(contains(message, phrase.get<std::string>())) << message;
    const Bytes bytes = read_file(golden(file));
    EXPECT_THROW(io::torch_load_from_bytes(bytes, file), Error);
  }
}

TEST(TorchLoad, AWholeModuleIsRefusedByClassAndNothingRuns) {
  const std::string message = error_of([&] { io::torch_load(golden("module.pt")); });
  EXPECT_TRUE(contains(message, "torch.nn.modules.container.Sequential")) << message;
}

TEST(TorchLoad, CudaFileWithoutCudaAdvisesMapLocation) {
  if (cuda::is_available()) {
    const Value v = io::torch_load(golden("cuda.pt"));
    EXPECT_EQ(v["w"].to_tensor().device().str(), "cuda:0");
  } else {
    const std::string message = error_of([&] { io::torch_load(golden("cuda.pt")); });
    EXPECT_TRUE(contains(message, "map_location")) << message;
    EXPECT_TRUE(contains(message, "cuda")) << message;
  }
  const Value v = io::torch_load(golden("cuda.pt"), on_cpu());
  EXPECT_TRUE(v["w"].to_tensor().is_cpu());
  check_golden_value("cuda.pt", v);
}

TEST(TorchLoad, MapLocationPutsEveryTensorOnTheDevice) {
  ember_test::ScopedHostDevice host_device;
  io::TorchLoadOptions options;
  options.map_location = ember_test::ScopedHostDevice::device();
  {
    const Value v = io::torch_load(golden("views.pt"), options);
    for (const Value& item : v.items()) EXPECT_EQ(item.to_tensor().device(), ember_test::ScopedHostDevice::device());
    EXPECT_EQ(storage_of(v.items()[0].to_tensor()), storage_of(v.items()[3].to_tensor()));
    check_golden_value("views.pt", v);
    const Value cuda = io::torch_load(golden("cuda.pt"), options);
    EXPECT_EQ(cuda["w"].to_tensor().device(), ember_test::ScopedHostDevice::device());
  }
}

TEST(TorchLoad, AFileSavedFromADeviceGoesBackThere) {
  ember_test::ScopedHostDevice host_device;  // mps:0, as the rest of ember sees it
  io::TorchLoadOptions options;
  options.map_location = ember_test::ScopedHostDevice::device();
  const Value v = io::torch_load(golden("views.pt"), options);
  const Bytes bytes = io::torch_save_to_bytes(v);
  const Bytes pickle = pickle_of(bytes);
  EXPECT_TRUE(contains(std::string(pickle.begin(), pickle.end()), "mps"));
  // Without map_location, as in PyTorch.
  Value back;
  ASSERT_NO_THROW(back = io::torch_load_from_bytes(bytes)) << error_of([&] { io::torch_load_from_bytes(bytes); });
  EXPECT_EQ(back.items()[1].to_tensor().device(), ember_test::ScopedHostDevice::device());
  expect_same_value(v, back);
  const Value on_host = io::torch_load_from_bytes(bytes, "mps file", on_cpu());
  EXPECT_TRUE(on_host.items()[0].to_tensor().is_cpu());
  check_golden_value("views.pt", on_host);
}

}  // namespace
