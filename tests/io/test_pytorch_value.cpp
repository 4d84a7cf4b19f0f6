// io::Value, the Python value torch_load returns and torch_save takes: lookups by string and
// integer keys, Python's key identity (1 == 1.0 == True), messages for wrong kinds and missing
// keys, and the refusals that keep a bad value from reaching a file.
#include <gtest/gtest.h>

#include <string>

#include "ember/ember.h"
#include "ember/io/pytorch.h"
#include "support/error_of.h"

namespace {

using ember::io::Value;
using ember_test::error_of;

Value optimizer_like() {
  Value::DictItems state;
  state.emplace_back(Value(0), Value("first"));
  state.emplace_back(Value(1), Value("second"));
  return Value::dict({{"state", Value::dict(std::move(state))}, {"epoch", 3}});
}

TEST(TorchValue, IntegerKeysLookUpByIntegerNotByPointer) {
  const Value v = optimizer_like();
  EXPECT_EQ(v["state"][0].to_string(), "first");  // 0 is an int here, not a null const char*
  EXPECT_EQ(v["state"][int64_t{1}].to_string(), "second");
  EXPECT_EQ(v["state"][Value(1.0)].to_string(), "second") << "Python: 1.0 == 1 is one key";
  EXPECT_EQ(v["state"][Value(true)].to_string(), "second") << "Python: True == 1 is one key";
  EXPECT_EQ(v["epoch"].to_int(), 3);
}

TEST(TorchValue, MissingKeysAndWrongKindsSayWhatThereIs) {
  const Value v = optimizer_like();
  const std::string missing = error_of([&] { (void)v["model"]; });
  EXPECT_NE(missing.find("no key 'model'"), std::string::npos) << missing;
  EXPECT_NE(missing.find("'state', 'epoch'"), std::string::npos) << missing;
  const std::string kind = error_of([&] { (void)v["epoch"].to_tensor(); });
  EXPECT_NE(kind.find("expected a Tensor but the value is a int: 3"), std::string::npos) << kind;
}

TEST(TorchValue, BadValuesAreRefusedWhenMade) {
  const char* null = nullptr;
  EXPECT_NE(error_of([&] { Value{null}; }).find("null string pointer"), std::string::npos);
  EXPECT_NE(error_of([&] { Value{ember::Tensor()}; }).find("undefined tensor"), std::string::npos);
  Value::DictItems twice;
  twice.emplace_back(Value(1), Value("a"));
  twice.emplace_back(Value(true), Value("b"));
  EXPECT_NE(error_of([&] { Value::dict(twice); }).find("appears twice"), std::string::npos);
  Value::DictItems list_key;
  list_key.emplace_back(Value::list({}), Value(1));
  EXPECT_NE(error_of([&] { Value::dict(list_key); }).find("cannot be a dict key"), std::string::npos);
}

TEST(TorchValue, SetReplacesInPlaceAndSummaryReadsLikePython) {
  Value v = optimizer_like();
  v.set("epoch", 4);
  v.set("name", "run");
  EXPECT_EQ(v.summary(), "{'state': {0: 'first', 1: 'second'}, 'epoch': 4, 'name': 'run'}");
  EXPECT_EQ(Value::tuple({Value(0.5), Value(), Value::bytes(std::string("\x00", 1))}).summary(),
            "(0.5, None, b'\\x00')");
  EXPECT_EQ(Value(ember::zeros({2, 3})).summary(), "tensor(float32, [2, 3])");
}

}  // namespace
