#pragma once
#include <cstdint>

namespace trainsim {
/// Megatron-LM's vocabulary padding: the smallest multiple of divisible_by * tp that holds the
/// vocabulary (--make-vocab-size-divisible-by, default 128), so every TP rank gets equal rows.
std::int64_t megatron_padded_vocab(std::int64_t vocab, std::int64_t divisible_by, std::int64_t tp);
}  // namespace trainsim
