// io::torch_load on broken and hostile files: truncated, corrupted and hand-made archives and
// pickles give an ember::Error that names the problem, never a crash, a leak or a huge allocation
// (this suite runs under ASan/UBSan in CI).
#include <gtest/gtest.h>

#include "io/pytorch_format_support.h"

namespace {

using namespace ember_test::pytorch_format;

// ============================================================================================
// Broken and hostile files: an ember::Error, never a crash (this suite runs under ASan/UBSan)
// ============================================================================================

TEST(TorchLoadHostile, EveryTruncationIsAnError) {
  for (const char* file : {"state_dict.pt", "views.pt", "values.pt", "checkpoint_p4.pt"}) {
    const Bytes bytes = read_file(golden(file));
    const size_t stride = bytes.size() > 4000 ? 7 : 1;
    for (size_t n = 0; n < bytes.size(); n += stride) {
      const Bytes cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
      try {
        io::torch_load_from_bytes(cut, "cut.pt");
        ADD_FAILURE() << file << " cut to " << n << " bytes was accepted";
      } catch (const Error& e) {
        if (n == 100) {
          EXPECT_TRUE(contains(e.what(), "cut.pt")) << e.what();
        }
      }
    }
  }
}

TEST(TorchLoadHostile, FlippedBytesAreAnErrorOrAValue) {
  for (const char* file : {"views.pt", "tensors.pt", "optim_sgd.pt"}) {
    const Bytes bytes = read_file(golden(file));
    int accepted = 0;
    for (size_t i = 0; i < bytes.size(); i += (bytes.size() > 2000 ? 3 : 1)) {
      for (uint8_t mask : {uint8_t{0x01}, uint8_t{0xff}}) {
        Bytes b = bytes;
        b[i] ^= mask;
        try {
          Value v = io::torch_load_from_bytes(b, "flipped.pt");
          ++accepted;
          (void)v.summary();
        } catch (const Error&) {
        }
      }
    }
    RecordProperty(std::string(file) + "_accepted_flips", accepted);
  }
}

TEST(TorchLoadHostile, EveryTruncatedPickleIsAnError) {
  for (const char* file : {"views.pt", "values.pt", "checkpoint.pt", "checkpoint_p4.pt", "tensors.pt"}) {
    const Bytes original = read_file(golden(file));
    const size_t size = pickle_of(original).size();
    for (size_t n = 0; n < size; ++n) {
      const Bytes bytes = with_pickle(original, [&](Bytes p) {
        p.resize(n);
        return p;
      });
      EXPECT_THROW(io::torch_load_from_bytes(bytes, "cut-pickle.pt"), Error) << file << " pickle cut to " << n;
    }
  }
}

TEST(TorchLoadHostile, CorruptedPicklesAreAnErrorOrAValue) {
  for (const char* file : {"views.pt", "values.pt", "checkpoint.pt", "tensors.pt", "checkpoint_p4.pt"}) {
    const Bytes original = read_file(golden(file));
    const size_t size = pickle_of(original).size();
    for (size_t i = 0; i < size; ++i) {
      for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
        const Bytes bytes = with_pickle(original, [&](Bytes p) {
          p[i] ^= mask;
          return p;
        });
        try {
          Value v = io::torch_load_from_bytes(bytes, "corrupt-pickle.pt");
          (void)v.summary();
          (void)io::torch_save_to_bytes(v);  // what was accepted can be saved
        } catch (const Error&) {
        }
      }
    }
  }
}

TEST(TorchLoadHostile, ACraftedFileLoads) {
  // The builder itself is right: a well-formed file of its making reads back.
  PickleBuilder p;
  p.op('}').str("w").tensor("FloatStorage", "0", "cpu", 4, 1, {3}, {1}).op('s');
  const Value v = io::torch_load_from_bytes(archive(p.done(), {{"0", floats({1, 2, 3, 4})}}), "crafted.pt");
  const Tensor& w = v["w"].to_tensor();
  EXPECT_EQ(w.storage_offset(), 1);
  EXPECT_EQ(at<float>(w, {0}), 2.f);
  EXPECT_EQ(at<float>(w, {2}), 4.f);
}

TEST(TorchLoadHostile, ForbiddenGlobalsAreNamedAndNeverCalled) {
  for (auto [module, name] : {std::pair{"os", "system"}, std::pair{"builtins", "eval"}, std::pair{"posix", "system"},
                              std::pair{"subprocess", "Popen"}, std::pair{"torch", "load"}}) {
    PickleBuilder p;
    p.global(module, name).str("touch /tmp/ember-pwned").op(0x85).op('R');
    const std::string message = load_error(archive(p.done()));
    EXPECT_TRUE(contains(message, std::string(module) + "." + name)) << message;
    EXPECT_TRUE(contains(message, "crafted.pt")) << message;
  }
  EXPECT_FALSE(fs::exists("/tmp/ember-pwned"));
}

TEST(TorchLoadHostile, MalformedStoragesAndGeometries) {
  struct Case {
    const char* what;
    std::function<void(PickleBuilder&)> tensor;
    std::map<std::string, Bytes> records;
  };
  const Bytes four = floats({1, 2, 3, 4});
  const std::vector<Case> cases = {
      {"storage longer than its record",
       [](PickleBuilder& p) { p.tensor("FloatStorage", "0", "cpu", 1000, 0, {4}, {1}); },
       {{"0", four}}},
      {"record missing", [](PickleBuilder& p) { p.tensor("FloatStorage", "7", "cpu", 4, 0, {4}, {1}); }, {{"0", four}}},
      {"view past the storage's end",
       [](PickleBuilder& p) { p.tensor("FloatStorage", "0", "cpu", 4, 2, {4}, {1}); },
       {{"0", four}}},
      {"strides past the end",
       [](PickleBuilder& p) {
         p.tensor("FloatStorage", "0", "cpu", 4, 0, {2, 2}, {3, 1});
       },
       {{"0", four}}},
      {"negative size", [](PickleBuilder& p) { p.tensor("FloatStorage", "0", "cpu", 4, 0, {-1}, {1}); }, {{"0", four}}},
      {"negative stride",
       [](PickleBuilder& p) { p.tensor("FloatStorage", "0", "cpu", 4, 3, {4}, {-1}); },
       {{"0", four}}},
      {"negative offset",
       [](PickleBuilder& p) { p.tensor("FloatStorage", "0", "cpu", 4, -2, {2}, {1}); },
       {{"0", four}}},
      {"numel overflows",
       [](PickleBuilder& p) {
         p.tensor("FloatStorage", "0", "cpu", 4, 0, {int64_t{1} << 62, int64_t{1} << 62}, {1, 1});
       },
       {{"0", four}}},
      {"huge storage numel",
       [](PickleBuilder& p) { p.tensor("FloatStorage", "0", "cpu", INT64_MAX, 0, {1}, {1}); },
       {{"0", four}}},
      {"sizes and strides of different lengths",
       [](PickleBuilder& p) {
         p.tensor("FloatStorage", "0", "cpu", 4, 0, {2, 2}, {1});
       },
       {{"0", four}}},
      {"unknown location",
       [](PickleBuilder& p) { p.tensor("FloatStorage", "0", "tpu:0", 4, 0, {4}, {1}); },
       {{"0", four}}},
      {"malformed location",
       [](PickleBuilder& p) { p.tensor("FloatStorage", "0", "cuda:x", 4, 0, {4}, {1}); },
       {{"0", four}}},
      {"unknown storage type",
       [](PickleBuilder& p) { p.tensor("SillyStorage", "0", "cpu", 4, 0, {4}, {1}); },
       {{"0", four}}},
      {"one record as two dtypes",
       [](PickleBuilder& p) {
         p.op('(').tensor("FloatStorage", "0", "cpu", 4, 0, {4}, {1});
         p.tensor("IntStorage", "0", "cpu", 4, 0, {4}, {1}).op('l');
       },
       {{"0", four}}},
      {"persistent id that is not a storage", [](PickleBuilder& p) { p.str("hello").op('Q'); }, {}},
      {"persistent id tuple too short", [](PickleBuilder& p) { p.op('(').str("storage").op('t').op('Q'); }, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    PickleBuilder p;
    c.tensor(p);
    const std::string message = load_error(archive(p.done(), c.records));
    EXPECT_NE(message, "no error");
    EXPECT_TRUE(contains(message, "crafted.pt")) << message;
  }
}

TEST(TorchLoadHostile, MalformedPickles) {
  const std::vector<std::pair<const char*, Bytes>> cases = {
      {"empty pickle", Bytes{}},
      {"no STOP", Bytes{0x80, 2, 'N'}},
      {"STOP on an empty stack", Bytes{0x80, 2, '.'}},
      {"unknown opcode", Bytes{0x80, 2, 0xff, '.'}},
      {"protocol 6", Bytes{0x80, 6, 'N', '.'}},
      {"undefined memo entry", Bytes{0x80, 2, 'h', 5, '.'}},
      {"APPEND on an empty stack", Bytes{0x80, 2, 'a', '.'}},
      {"APPEND to a non-list", Bytes{0x80, 2, 'K', 1, 'K', 2, 'a', '.'}},
      {"SETITEM on a list", Bytes{0x80, 2, ']', 'K', 1, 'K', 2, 's', '.'}},
      {"TUPLE without MARK", Bytes{0x80, 2, 'K', 1, 't', '.'}},
      {"string length past the end", Bytes{0x80, 2, 'X', 0xff, 0xff, 0xff, 0x7f, 'a', '.'}},
      {"invalid UTF-8", Bytes{0x80, 2, 'X', 2, 0, 0, 0, 0xc3, 0x28, '.'}},
      {"int too big for int64", Bytes{0x80, 2, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1, '.'}},
      {"LONG4 of a gigabyte", Bytes{0x80, 2, 0x8b, 0, 0, 0, 0x40, '.'}},
      {"GLOBAL without newline", Bytes{0x80, 2, 'c', 'o', 's', '.'}},
      {"REDUCE of a non-callable", Bytes{0x80, 2, 'K', 1, ')', 'R', '.'}},
      {"dict with a list key", Bytes{0x80, 2, '}', ']', 'K', 1, 's', '.'}},
  };
  for (const auto& [what, pickle] : cases) {
    SCOPED_TRACE(what);
    const std::string message = load_error(archive(pickle));
    EXPECT_NE(message, "no error");
  }
  // Python refuses these too, but they are harmless: an error or a value, never a crash.
  for (const Bytes& pickle : {Bytes{0x80, 2, 'K', 1, '}', 'b', '.'},                         // BUILD on an int
                              Bytes{0x80, 4, 0x95, 0xff, 0, 0, 0, 0, 0, 0, 0, 'N', '.'}}) {  // FRAME past the end
    try {
      io::torch_load_from_bytes(archive(pickle), "crafted.pt");
    } catch (const Error&) {
    }
  }
}

TEST(TorchLoadHostile, HugeLengthsAndIndicesAreErrorsNotAllocations) {
  const uint8_t ff = 0xff;
  const std::vector<std::pair<const char*, Bytes>> cases = {
      {"LONG_BINGET 2^32-1", Bytes{0x80, 2, 'j', ff, ff, ff, ff, '.'}},
      {"BINUNICODE8 of 2^64-1 bytes", Bytes{0x80, 4, 0x8d, ff, ff, ff, ff, ff, ff, ff, ff, 'a', '.'}},
      {"BINUNICODE8 of 2^63 bytes", Bytes{0x80, 4, 0x8d, 0, 0, 0, 0, 0, 0, 0, 0x80, 'a', '.'}},
      {"BINBYTES8 of 2^64-1 bytes", Bytes{0x80, 4, 0x8e, ff, ff, ff, ff, ff, ff, ff, ff, 'a', '.'}},
      {"BINBYTES of 2^32-1 bytes", Bytes{0x80, 3, 'B', ff, ff, ff, ff, 'a', '.'}},
      {"SHORT_BINBYTES past the end", Bytes{0x80, 3, 'C', 200, 'a', '.'}},
      {"SHORT_BINUNICODE past the end", Bytes{0x80, 4, 0x8c, 200, 'a', '.'}},
      {"BINSTRING of negative length", Bytes{0x80, 2, 'T', ff, ff, ff, ff, 'a', '.'}},
      {"LONG4 of negative length", Bytes{0x80, 2, 0x8b, ff, ff, ff, ff, '.'}},
      {"LONG1 of 255 bytes past the end", Bytes{0x80, 2, 0x8a, ff, 1, '.'}},
      {"BINGET of an entry never put", Bytes{0x80, 2, ']', 'q', 3, 'h', 2, '.'}},
      {"POP on an empty stack", Bytes{0x80, 2, '0', '.'}},
      {"DUP on an empty stack", Bytes{0x80, 2, '2', '.'}},
      {"POP_MARK without MARK", Bytes{0x80, 2, 'N', '1', '.'}},
      {"PERSID (text form)", Bytes{0x80, 2, 'P', '0', '\n', '.'}},
      {"INST", Bytes{0x80, 2, '(', 'i', 'o', 's', '\n', 's', 'y', 's', 't', 'e', 'm', '\n', '.'}},
      {"OBJ", Bytes{0x80, 2, '(', 'c', 'o', 's', '\n', 's', 'y', 's', 't', 'e', 'm', '\n', 'o', '.'}},
      {"STACK_GLOBAL of non-strings", Bytes{0x80, 4, 'K', 1, 'K', 2, 0x93, '.'}},
      {"EXT1", Bytes{0x80, 2, 0x82, 1, '.'}},
  };
  for (const auto& [what, pickle] : cases) {
    SCOPED_TRACE(what);
    EXPECT_NE(load_error(archive(pickle)), "no error");  // anything but an ember::Error escapes and fails
  }
  // Python refuses a frame longer than the data, and runs out of memory on a memo index of 2^32-1;
  // ember may take both, as long as it allocates nothing of that size.
  for (const Bytes& pickle : {Bytes{0x80, 2, ']', 'r', ff, ff, ff, ff, '.'},
                              Bytes{0x80, 4, 0x95, ff, ff, ff, ff, ff, ff, ff, ff, 'N', '.'}}) {
    try {
      io::torch_load_from_bytes(archive(pickle), "crafted.pt");
    } catch (const Error&) {
    }
  }
  // A million MARKs, and a million items on the stack: bounded by the data, an error or a value.
  for (uint8_t op : {uint8_t{'('}, uint8_t{'N'}}) {
    Bytes p{0x80, 2};
    p.insert(p.end(), 1000000, op);
    p.push_back('.');
    try {
      io::torch_load_from_bytes(archive(p), "crafted.pt");
    } catch (const Error&) {
    }
  }
}

TEST(TorchLoadHostile, CallsWithWrongArguments) {
  const Bytes four = floats({1, 2, 3, 4});
  const std::vector<std::pair<const char*, std::function<void(PickleBuilder&)>>> cases = {
      {"_rebuild_tensor_v2 with no arguments",
       [](PickleBuilder& p) { p.global("torch._utils", "_rebuild_tensor_v2").op(')').op('R'); }},
      {"_rebuild_tensor_v2 of a string",
       [](PickleBuilder& p) {
         p.global("torch._utils", "_rebuild_tensor_v2").op('(').str("x").integer(0).int_tuple({1}).int_tuple({1});
         p.op(0x89).global("collections", "OrderedDict").op(')').op('R').op('t').op('R');
       }},
      {"_rebuild_parameter of an int",
       [](PickleBuilder& p) {
         p.global("torch._utils", "_rebuild_parameter").op('(').integer(1).op(0x88).op('}').op('t').op('R');
       }},
      {"torch.device of an int", [](PickleBuilder& p) { p.global("torch", "device").integer(7).op(0x85).op('R'); }},
      {"torch.device('cuda', -5)",
       [](PickleBuilder& p) { p.global("torch", "device").str("cuda").integer(-5).op(0x86).op('R'); }},
      {"torch.device('warp:0')", [](PickleBuilder& p) { p.global("torch", "device").str("warp:0").op(0x85).op('R'); }},
      {"a float8 dtype", [](PickleBuilder& p) { p.global("torch", "float8_e4m3fn"); }},
      {"OrderedDict of non-pairs",
       [](PickleBuilder& p) {
         p.global("collections", "OrderedDict").op('(').op(']').integer(1).op('a').op(0x85).op('R');
       }},
      {"an int tensor that requires grad",
       [](PickleBuilder& p) {
         p.global("torch._utils", "_rebuild_tensor_v2").op('(');
         p.op('(').str("storage").global("torch", "IntStorage").str("0").str("cpu").integer(4).op('t').op('Q');
         p.integer(0).int_tuple({4}).int_tuple({1}).op(0x88).global("collections", "OrderedDict").op(')').op('R');
         p.op('t').op('R');
       }},
  };
  for (const auto& [what, build] : cases) {
    SCOPED_TRACE(what);
    PickleBuilder p;
    build(p);
    EXPECT_NE(load_error(archive(p.done(), {{"0", four}})), "no error");
  }
}

TEST(TorchLoadHostile, SelfReferenceAndExponentialSharingAreErrors) {
  // l = []; l.append(l)
  PickleBuilder cycle;
  cycle.op(']').op('q').op(0).op('h').op(0).op('a');
  EXPECT_NE(load_error(archive(cycle.done())), "no error");
  // d = {}; d["self"] = d
  PickleBuilder dict_cycle;
  dict_cycle.op('}').op('q').op(0).str("self").op('h').op(0).op('s');
  EXPECT_NE(load_error(archive(dict_cycle.done())), "no error");
  // "Billion laughs": l0 = [1]; l(k+1) = [lk, lk]; 2^60 elements once expanded.
  PickleBuilder laughs;
  laughs.op(']').op('K').op(1).op('a').op('r').u32(0);
  for (uint32_t k = 0; k < 60; ++k) laughs.op('(').op('j').u32(k).op('j').u32(k).op('l').op('r').u32(k + 1);
  EXPECT_NE(load_error(archive(laughs.done())), "no error");
}

TEST(TorchLoadHostile, DeepNestingIsAnErrorNotAStackOverflow) {
  for (int depth : {1000, 100000}) {
    SCOPED_TRACE(depth);
    PickleBuilder p;
    for (int i = 0; i < depth; ++i) p.op(']');
    for (int i = 1; i < depth; ++i) p.op('a');
    try {
      const Value v = io::torch_load_from_bytes(archive(p.done()), "deep.pt");
      (void)v.summary();
    } catch (const Error&) {
    }
  }
  SUCCEED();
}

TEST(TorchLoadHostile, FuzzTargetTakesEveryGolden) {
  // fuzz/fuzz_torch_load.cpp's checks (re-save, reload, same bytes again) on every golden, the
  // refused ones included: an ember::Error is swallowed there, anything else escaping is a finding.
  // (tests/fuzz/test_fuzz_replay.cpp replays its corpus.)
  std::vector<fs::path> inputs;
  for (const auto& e : fs::directory_iterator(golden_dir()))
    if (e.path().extension() == ".pt") inputs.push_back(e.path());
  std::sort(inputs.begin(), inputs.end());
  ASSERT_GE(inputs.size(), 22u);
  for (const fs::path& path : inputs) {
    try {
      fuzz::torch_load_one_input(read_file(path));
    } catch (const std::exception& e) {
      ADD_FAILURE() << path << ": " << e.what();
    }
  }
}

}  // namespace
