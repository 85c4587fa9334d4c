// The safetensors reader on files the test writes, good and hostile: every defect is one clear
// input error naming the file (and the tensor and key), and nothing is read past the header.
#include <gtest/gtest.h>

#include "sim/core/error.hpp"
#include "sim/reshard/checkpoint.hpp"
#include "sim/reshard/safetensors.hpp"
#include "tests/support/safetensors_writer.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::make_temp_dir(); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  // The message of the InputError reading `name` raises, which names the file by its path: the
  // folder is cut here.
  std::string error(const std::string& name) const {
    try {
      read_safetensors_header(path(name), name);
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(dir_ + "/", 0), 0u) << what;
      return what.substr(what.rfind(dir_ + "/", 0) == 0 ? dir_.size() + 1 : 0);
    }
    return "(no error)";
  }
  std::string dir_;
};

TEST_F(Safetensors, ReadsTheHeaderOnly) {
  test::write_safetensors(path("a.safetensors"),
                          R"({"b": {"dtype": "F32", "shape": [2, 3], "data_offsets": [4, 28]},
          "a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
          "__metadata__": {"format": "pt"}})",
                          28);
  const SafetensorsHeader h = read_safetensors_header(path("a.safetensors"), "a.safetensors");
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "a");  // in data order
  EXPECT_EQ(h.tensors[1].dtype, "F32");
  EXPECT_EQ(h.tensors[1].shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(h.tensors[1].bytes, 24);
  EXPECT_EQ(h.tensors[1].file, "a.safetensors");
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_EQ(dtype_bytes("BF16"), 2);
  EXPECT_EQ(dtype_bytes("F8_E4M3"), 1);
  EXPECT_EQ(dtype_bytes("F128"), 0);
}

TEST_F(Safetensors, TruncatedHeaderLength) {
  test::write_file(path("t.safetensors"), "abcde");
  EXPECT_EQ(error("t.safetensors"),
            "t.safetensors: truncated: 5 bytes, shorter than safetensors' 8-byte header length");
}

TEST_F(Safetensors, HeaderLengthBeyondTheFile) {
  test::write_raw(path("l.safetensors"), 1000, "{}  ");
  EXPECT_EQ(error("l.safetensors"),
            "l.safetensors: header length 1000 exceeds the 4 bytes after it (truncated or not a "
            "safetensors file)");
  test::write_raw(path("huge.safetensors"), ~std::uint64_t{0}, "{}");
  EXPECT_EQ(error("huge.safetensors")
                .rfind("huge.safetensors: header length 18446744073709551615 "
                       "exceeds the 2 bytes after it",
                       0),
            0u);
}

TEST_F(Safetensors, HeaderNotJson) {
  test::write_safetensors(path("j.safetensors"), "not json at all", 0);
  EXPECT_EQ(error("j.safetensors"),
            "j.safetensors: the header is not valid JSON (not a safetensors file?)");
  test::write_safetensors(path("arr.safetensors"), "[1, 2]", 0);
  EXPECT_EQ(error("arr.safetensors").rfind("arr.safetensors: the header must be a JSON object", 0),
            0u);
  test::write_safetensors(path("utf.safetensors"), "{\"\xff\xfe\": 1}", 0);
  EXPECT_EQ(error("utf.safetensors"),
            "utf.safetensors: the header is not valid JSON (not a safetensors file?)");
}

TEST_F(Safetensors, ShapesThatOverflow) {
  test::write_safetensors(
      path("o.safetensors"),
      R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})", 0);
  EXPECT_EQ(error("o.safetensors"),
            "o.safetensors: $[\"w\"].shape: overflows: [4294967296,4294967296] x 4 bytes exceeds "
            "2^63 - 1");
  test::write_safetensors(
      path("big.safetensors"),
      R"({"w": {"dtype": "F32", "shape": [18446744073709551615], "data_offsets": [0, 0]}})", 0);
  EXPECT_EQ(error("big.safetensors"),
            "big.safetensors: $[\"w\"].shape[0]: is larger than 2^63 - 1: 18446744073709551615");
  test::write_safetensors(path("neg.safetensors"),
                          R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}})", 0);
  EXPECT_EQ(error("neg.safetensors"),
            "neg.safetensors: $[\"w\"].shape[0]: must be a non-negative integer, got -1");
}

TEST_F(Safetensors, OffsetsMustCoverTheDataExactly) {
  test::write_safetensors(path("s.safetensors"),
                          R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8]}})", 8);
  EXPECT_EQ(error("s.safetensors"),
            "s.safetensors: $[\"w\"].data_offsets: [0,8] holds 8 bytes, but F32 [2,2] needs 16");
  test::write_safetensors(path("h.safetensors"),
                          R"({"a": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]},
          "b": {"dtype": "U8", "shape": [8], "data_offsets": [16, 24]}})",
                          24);
  EXPECT_EQ(error("h.safetensors"),
            "h.safetensors: $[\"b\"].data_offsets: begins at 16 but the previous tensor ends at 8 "
            "(a hole)");
  test::write_safetensors(path("p.safetensors"),
                          R"({"a": {"dtype": "U8", "shape": [64], "data_offsets": [0, 64]}})", 8);
  EXPECT_EQ(error("p.safetensors"),
            "p.safetensors: the tensors' data ends at byte 64 after the header, but the file holds "
            "8 (truncated)");
  test::write_safetensors(path("d.safetensors"),
                          R"({"a": {"dtype": "F128", "shape": [1], "data_offsets": [0, 16]}})", 16);
  EXPECT_EQ(error("d.safetensors"), "d.safetensors: $[\"a\"].dtype: unknown dtype \"F128\"");
  test::write_safetensors(
      path("k.safetensors"),
      R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "code": "x"}})", 1);
  EXPECT_EQ(error("k.safetensors"),
            "k.safetensors: $[\"a\"].code: unknown key (known keys: data_offsets, dtype, shape)");
}

// An index whose weight_map leaves the checkpoint directory, or names a tensor the file lacks.
TEST_F(Safetensors, HostileIndex) {
  test::write_file(path("model.safetensors.index.json"),
                   R"({"weight_map": {"w": "../../etc/passwd"}})");
  try {
    read_checkpoint(dir_);
    ADD_FAILURE() << "an index leaving the directory was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "model.safetensors.index.json: $.weight_map.w: must name a file inside the "
              "checkpoint directory, got \"../../etc/passwd\"");
  }
  test::write_safetensors(path("m.safetensors"),
                          R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})", 1);
  test::write_file(path("model.safetensors.index.json"),
                   R"({"weight_map": {"b": "m.safetensors"}})");
  try {
    read_checkpoint(dir_);
    ADD_FAILURE() << "a missing tensor was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "model.safetensors.index.json: $.weight_map.b: names m.safetensors, which has no such "
        "tensor");
  }
}

// nanotron's file per tensor shard: the tensor "data" named after its path, its TP rank and size
// from the file name, compared with the shard the layout predicts.
TEST_F(Safetensors, NanotronShards) {
  const std::string module =
      dir_ + "/model/model/token_position_embeddings/pp_block/token_embedding";
  std::filesystem::create_directories(module);
  for (int r = 0; r < 2; ++r) {
    test::write_safetensors(
        module + "/model_weight_pp-rank-0-of-1_tp-rank-" + std::to_string(r) + "-of-2.safetensors",
        R"({"data": {"dtype": "BF16", "shape": [25139, 16], "data_offsets": [0, 804448]}})",
        804448);
  }
  std::filesystem::create_directories(dir_ + "/optimizer");
  test::write_file(dir_ + "/optimizer/optimizer_pp-0-of-1_tp-0-of-2_exp-0-of-1.pt", "pickle");
  const CheckpointListing ck = read_checkpoint(dir_);
  EXPECT_EQ(ck.format, "safetensors, one file per tensor shard (nanotron)");
  EXPECT_EQ(ck.pickled_files, 1);
  ASSERT_EQ(ck.tensors.size(), 2u);
  EXPECT_EQ(ck.tensors[1].name, "model.token_position_embeddings.pp_block.token_embedding.weight");
  EXPECT_EQ(ck.tensors[1].tp_rank, 1);
  EXPECT_EQ(ck.tensors[1].tp_size, 2);
}

}  // namespace
}  // namespace trainsim
