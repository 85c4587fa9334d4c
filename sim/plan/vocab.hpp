#pragma once
#include <cstdint>

namespace trainsim {
/// Vocabulary padding as Megatron-LM (--make-vocab-size-divisible-by, default 128), ColossalAI
/// (make_vocab_size_divisible_by, default 64) and nanotron (make_vocab_size_divisible_by, default
/// 1) all do it: the smallest multiple of divisible_by * tp that holds the vocabulary, so every
/// TP rank gets the same number of rows.
std::int64_t padded_vocab(std::int64_t vocab, std::int64_t divisible_by, std::int64_t tp);
}  // namespace trainsim
