#include "sim/plan/vocab.hpp"

namespace trainsim {

std::int64_t padded_vocab(std::int64_t vocab, std::int64_t divisible_by, std::int64_t tp) {
  const std::int64_t multiple = divisible_by * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

}  // namespace trainsim
