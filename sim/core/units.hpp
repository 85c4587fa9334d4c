#pragma once
// Binary byte units: what torch.cuda and Megatron-LM's logs call MB and GB are these.

namespace trainsim {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

}  // namespace trainsim
