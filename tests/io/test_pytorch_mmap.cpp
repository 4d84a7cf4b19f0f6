// io::torch_load with TorchLoadOptions::mmap (torch.load(mmap=True)): the same values as a read,
// tensors that keep the mapping alive, writes that never reach the file, and the records a
// mapping cannot serve (big-endian, deflated) read as without it.
#include <gtest/gtest.h>
#include <zlib.h>

#include "io/pytorch_format_support.h"
#include "support/mapped_file.h"

namespace {

using namespace ember_test::pytorch_format;
using ember_test::mapped_from;

io::TorchLoadOptions mapped(std::optional<Device> where = std::nullopt) {
  io::TorchLoadOptions o;
  o.mmap = true;
  o.map_location = where;
  return o;
}

// The same archive with every entry deflated (raw deflate, method 8), written by hand.
Bytes deflated(const Bytes& stored) {
  auto reader = zip::ZipReader::from_bytes(stored, "stored");
  Bytes out, directory;
  auto put = [](Bytes& b, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  uint16_t count = 0;
  for (const zip::ZipEntry& e : reader.entries()) {
    const Bytes data = reader.read_bytes(e, uint64_t{1} << 30);
    z_stream z{};
    EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    Bytes packed(deflateBound(&z, data.size()));
    z.next_in = const_cast<Bytes::value_type*>(data.data());
    z.avail_in = static_cast<uInt>(data.size());
    z.next_out = packed.data();
    z.avail_out = static_cast<uInt>(packed.size());
    EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    packed.resize(z.total_out);
    deflateEnd(&z);
    const uint64_t offset = out.size();
    for (Bytes* b : {&out, &directory}) {
      const bool central = b == &directory;
      put(*b, central ? 0x02014b50 : 0x04034b50, 4);
      if (central) put(*b, 20, 2);
      put(*b, 20, 2);  // version needed
      put(*b, 0, 2);   // flags
      put(*b, 8, 2);   // deflated
      put(*b, 0, 4);   // time, date
      put(*b, e.crc32, 4);
      put(*b, packed.size(), 4);
      put(*b, data.size(), 4);
      put(*b, e.name.size(), 2);
      put(*b, 0, 2);  // extra
      if (central) {
        put(*b, 0, 2);  // comment
        put(*b, 0, 2);  // disk
        put(*b, 0, 2);  // internal attributes
        put(*b, 0, 4);  // external attributes
        put(*b, offset, 4);
      }
      b->insert(b->end(), e.name.begin(), e.name.end());
      if (!central) b->insert(b->end(), packed.begin(), packed.end());
    }
    ++count;
  }
  const uint64_t cd_offset = out.size();
  out.insert(out.end(), directory.begin(), directory.end());
  put(out, 0x06054b50, 4);
  put(out, 0, 4);
  put(out, count, 2);
  put(out, count, 2);
  put(out, directory.size(), 4);
  put(out, cd_offset, 4);
  put(out, 0, 2);
  return out;
}

TEST(TorchLoadMmap, EveryGoldenLoadsAsWhenRead) {
  for (const std::string& file : readable_goldens()) {
    SCOPED_TRACE(file);
    const bool cuda = expected()["files"][file].contains("location");
    const Value read = load_golden(file);
    const Value map = io::torch_load(golden(file), mapped(cuda ? std::optional<Device>(Device("cpu")) : std::nullopt));
    expect_same_value(read, map);
    check_golden_value(file, map);
  }
}

TEST(TorchLoadMmap, TensorsKeepTheMappingAliveAndWritesStayInMemory) {
  TempDir dir("torch_mmap");
  const fs::path path = dir / "w.pt";
  const Tensor w = arange(1000, TensorOptions(kFloat32)).reshape({10, 100});
  io::torch_save(path, Value::list({w, w.slice(0, 2, 5)}));
  const Bytes before = read_file(path);

  Tensor kept, view;
  {
    const Value v = io::torch_load(path, mapped());
    kept = v.items()[0].to_tensor();
    view = v.items()[1].to_tensor();
  }  // the Value, the archive reader and the policy are gone; the tensors still read the mapping
  EXPECT_TRUE(equal(kept, w));
  EXPECT_TRUE(mapped_from(path, kept.data_ptr())) << "the tensor was read, not mapped";
  EXPECT_FALSE(mapped_from(path, io::torch_load(path).items()[0].to_tensor().data_ptr()));
  EXPECT_EQ(kept.impl().storage, view.impl().storage) << "views of one storage share it under mmap too";
  kept.add_(1);  // a private copy of the page, as PyTorch's MAP_PRIVATE mapping gives
  EXPECT_EQ(view.select(0, 0).select(0, 0).item<float>(), 201.0f) << "a view sees the write";
  EXPECT_EQ(read_file(path), before) << "the write reached the file";
  EXPECT_TRUE(equal(io::torch_load(path).items()[0].to_tensor(), w));
}

TEST(TorchLoadMmap, RecordsAMappingCannotServeAreRead) {
  // Big-endian records need swapping; a mapping would show the file's byte order.
  check_golden_value("big_endian.pt", io::torch_load(golden("big_endian.pt"), mapped()));
  // A deflated record (the archive recompressed, as `zip -9` would) cannot be mapped either.
  const Tensor x = arange(64, TensorOptions(kFloat64));
  TempDir dir("torch_mmap");
  const fs::path path = dir / "deflated.pt";
  const Bytes bytes = deflated(io::torch_save_to_bytes(Value::list({x})));
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  const Tensor got = io::torch_load(path, mapped()).items()[0].to_tensor();
  EXPECT_TRUE(equal(got, x));
  EXPECT_FALSE(mapped_from(path, got.data_ptr()));
  EXPECT_TRUE(equal(io::torch_load(path).items()[0].to_tensor(), x)) << "and a read inflates it";
}

TEST(TorchLoadMmap, BytesInMemoryCannotBeMapped) {
  const Bytes bytes = io::torch_save_to_bytes(Value(1));
  const std::string msg = error_of([&] { io::torch_load_from_bytes(bytes, "mem", mapped()); });
  EXPECT_NE(msg.find("nothing to map"), std::string::npos) << msg;
}

TEST(TorchLoadMmap, MissingAndForeignFilesGiveTheReadersMessages) {
  TempDir dir("torch_mmap");
  EXPECT_NE(error_of([&] { io::torch_load(dir / "missing.pt", mapped()); }).find("cannot open the file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { io::torch_load(dir.path(), mapped()); }).find("not a regular file"), std::string::npos);
  std::ofstream(dir / "empty.pt").close();
  EXPECT_NE(error_of([&] { io::torch_load(dir / "empty.pt", mapped()); }).find("empty"), std::string::npos);
  std::ofstream(dir / "text.pt") << "not a checkpoint at all";
  EXPECT_NE(error_of([&] { io::torch_load(dir / "text.pt", mapped()); }).find("not a torch.save file"),
            std::string::npos);
}

}  // namespace
