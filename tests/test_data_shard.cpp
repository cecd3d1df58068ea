// Data sharding across ranks: with R ranks of batch B, every batcher gives rank r exactly rows [rB, (r+1)B) of what
// one rank of batch R*B draws, and micro-batch m of one rank exactly rows [mB, (m+1)B): the property that makes
// N ranks, one big batch and gradient accumulation train alike.
#include "tests/catch_compat.h"

#include "data/batching/batcher_causal.h"
#include "data/batching/batcher_mlm.h"
#include "data/batching/batcher_prefix.h"
#include "data/batching/batcher_span.h"
#include "data/tokenizers/tokenizer.h"

using namespace lmzoo;

namespace {

TokenStream random_stream(int64_t n) {
  std::vector<int32_t> tokens(size_t(n), 0);
  for (int64_t i = 0; i < n; ++i) tokens[size_t(i)] = int32_t(special::kNumSpecial + (i * 7919 + i / 13) % 300);
  return TokenStream::from_tokens(tokens);
}

// Rows [first, first + part.size(0)) of `whole`, padded or cut to part's width: the columns either one has beyond
// the other's width must be `pad`.
bool rows_equal(const torch::Tensor& whole, int64_t first, const torch::Tensor& part, int64_t pad) {
  auto rows = whole.narrow(0, first, part.size(0));
  if (rows.dim() == 1) return torch::equal(rows, part);
  const int64_t width = std::min(rows.size(1), part.size(1));
  auto beyond_is_pad = [&](const torch::Tensor& t) {
    return t.size(1) == width || (t.narrow(1, width, t.size(1) - width) == pad).all().item<bool>();
  };
  return torch::equal(rows.narrow(1, 0, width), part.narrow(1, 0, width)) && beyond_is_pad(rows) && beyond_is_pad(part);
}

constexpr int64_t kB = 3, kRanks = 2;

}  // namespace

TEST_CASE("causal and prefix batches: rank r of R draws rows r*B .. r*B+B-1 of one R*B batch", "[data][shard]") {
  const auto stream = random_stream(5000);
  const CausalBatcher whole(stream, kB * kRanks, 16, 42);
  for (int64_t r = 0; r < kRanks; ++r) {
    const CausalBatcher part(stream, kB, 16, 42, DataShard{r, kRanks});
    const CausalBatcher micro(stream, kB, 16, 42);  // one rank, micro-batch r
    for (int64_t step : {0, 7}) {
      CHECK(rows_equal(whole.batch(step, 0).inputs, r * kB, part.batch(step, 0).inputs, -2));
      CHECK(rows_equal(whole.batch(step, 0).targets, r * kB, part.batch(step, 0).targets, -2));
      CHECK(rows_equal(whole.batch(step, 0).inputs, r * kB, micro.batch(step, r).inputs, -2));
    }
  }
  // Different steps, and the two ranks' rows, differ.
  CHECK_FALSE(torch::equal(whole.batch(0, 0).inputs, whole.batch(1, 0).inputs));
  CHECK_FALSE(torch::equal(whole.batch(0, 0).inputs.narrow(0, 0, kB), whole.batch(0, 0).inputs.narrow(0, kB, kB)));

  PrefixOptions o;
  o.batch_size = kB * kRanks;
  o.seq_len = 12;
  const PrefixBatcher prefix_whole(stream, native_special_ids(), o, 9);
  o.batch_size = kB;
  for (int64_t r = 0; r < kRanks; ++r) {
    const PrefixBatcher part(stream, native_special_ids(), o, 9, DataShard{r, kRanks});
    CHECK(rows_equal(prefix_whole.decoder_only_batch(3, 0).targets, r * kB, part.decoder_only_batch(3, 0).targets, -2));
    CHECK(rows_equal(prefix_whole.decoder_only_batch(3, 0).prefix_len, r * kB, part.decoder_only_batch(3, 0).prefix_len, -2));
    const auto a = prefix_whole.seq2seq_batch(3, 0), b = part.seq2seq_batch(3, 0);
    CHECK(rows_equal(a.input_ids, r * kB, b.input_ids, special::kPad));
    CHECK(rows_equal(a.labels, r * kB, b.labels, -1));
  }
}

TEST_CASE("masked-LM and span batches: rank r of R draws rows r*B .. r*B+B-1 of one R*B batch", "[data][shard]") {
  const auto stream = random_stream(5000);
  MlmOptions mlm;
  mlm.batch_size = kB * kRanks;
  mlm.seq_len = 20;
  mlm.min_seq_len = 8;  // rows of different lengths: each batch pads to its own longest row
  const MlmBatcher mlm_whole(stream, native_special_ids(), 400, mlm, 5);
  SpanOptions span;
  span.batch_size = kB * kRanks;
  span.input_length = 24;
  const SpanBatcher span_whole(stream, native_special_ids(), span, 5);
  mlm.batch_size = span.batch_size = kB;
  for (int64_t r = 0; r < kRanks; ++r) {
    const MlmBatcher mlm_part(stream, native_special_ids(), 400, mlm, 5, DataShard{r, kRanks});
    const MlmBatcher mlm_micro(stream, native_special_ids(), 400, mlm, 5);
    const auto a = mlm_whole.batch(4, 0), b = mlm_part.batch(4, 0), c = mlm_micro.batch(4, r);
    CHECK(rows_equal(a.input_ids, r * kB, b.input_ids, special::kPad));
    CHECK(rows_equal(a.labels, r * kB, b.labels, -1));
    CHECK(rows_equal(a.attention_mask, r * kB, b.attention_mask, 0));
    CHECK(rows_equal(a.labels, r * kB, c.labels, -1));
    const SpanBatcher span_part(stream, native_special_ids(), span, 5, DataShard{r, kRanks});
    const auto s = span_whole.batch(4, 0), t = span_part.batch(4, 0);
    CHECK(rows_equal(s.input_ids, r * kB, t.input_ids, special::kPad));
    CHECK(rows_equal(s.labels, r * kB, t.labels, -1));
    CHECK(rows_equal(s.decoder_input_ids, r * kB, t.decoder_input_ids, special::kPad));
  }
}
