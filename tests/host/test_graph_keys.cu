// The graph cache's call keys (host logic, no device needed): stateless functors key by type
// alone (an empty object's byte is indeterminate), stateful ones by type and bytes.
#include <strata/detail/graph_replay.cuh>
#include <strata/distributed_vector.cuh>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <typeinfo>

namespace {

struct empty_op {
  __host__ __device__ int operator()(int a, int b) const { return a + b; }
};
struct scaled_op {
  int k;
  __host__ __device__ int operator()(int a, int b) const { return k * (a + b); }
};
struct not_trivially_copyable {
  std::string s;
};

template <class F>
std::string key_of(const F& f, bool* keyable = nullptr) {
  strata::detail::call_key k;
  const bool ok = strata::detail::add_state_key(k, f);
  if (keyable) *keyable = ok;
  return k.bytes();
}

}  // namespace

TEST(GraphKeys, EmptyFunctorsKeyByTypeOnly) {
  empty_op a, b;
  std::memset(static_cast<void*>(&a), 0x11, sizeof a);  // what an empty object's byte holds is arbitrary
  std::memset(static_cast<void*>(&b), 0x77, sizeof b);
  EXPECT_EQ(key_of(a), key_of(b));
  EXPECT_EQ(key_of(a), std::string(typeid(empty_op).name()) + '\0');
}

TEST(GraphKeys, StatefulFunctorsKeyByValue) {
  EXPECT_EQ(key_of(scaled_op{3}), key_of(scaled_op{3}));
  EXPECT_NE(key_of(scaled_op{3}), key_of(scaled_op{4}));
  EXPECT_NE(key_of(scaled_op{3}), key_of(empty_op{}));
}

TEST(GraphKeys, StateThatCannotBeComparedBytewiseIsNotCached) {
  bool keyable = true;
  (void)key_of(not_trivially_copyable{"x"}, &keyable);
  EXPECT_FALSE(keyable);
}

// The container memory cache's host-side rules: request sizes round up (512 bytes, 2 MiB from
// 1 MiB on) and a kept block serves requests from 4/5 of its size up to its size; switching the
// cache and emptying it work without a device.
TEST(ContainerCache, SizesRoundAndKeptBlocksFitWithinAFifth) {
  using c = strata::detail::container_cache;
  EXPECT_EQ(c::rounded(1), 512u);
  EXPECT_EQ(c::rounded(512), 512u);
  EXPECT_EQ(c::rounded(513), 1024u);
  EXPECT_EQ(c::rounded((1u << 20) - 1), 1u << 20);
  EXPECT_EQ(c::rounded(1u << 20), 2u << 20);
  EXPECT_EQ(c::rounded((2u << 20) + 1), 4u << 20);
  EXPECT_TRUE(c::fits(1000, 800));
  EXPECT_FALSE(c::fits(1001, 800));
  EXPECT_FALSE(c::fits(799, 800));
  EXPECT_TRUE(c::fits(800, 800));
  const bool was = strata::memory_caching();
  strata::set_memory_caching(true);
  EXPECT_TRUE(strata::memory_caching());
  EXPECT_EQ(strata::memory_cache_bytes(), 0u);
  strata::release_memory_cache();
  strata::set_memory_caching(false);
  EXPECT_FALSE(strata::memory_caching());
  strata::set_memory_caching(was);
}

// strata::counting's bounds (host logic of views.cuh): the last value first + n - 1 must fit the
// type, exactly at the edges; the values of a place's segment come from first + offset computed
// without signed overflow.
TEST(Views, CountingFitsItsTypeExactly) {
  using strata::detail::require_counting_fits;
  EXPECT_NO_THROW(require_counting_fits(std::int8_t{100}, 28));  // ... 127
  EXPECT_THROW(require_counting_fits(std::int8_t{100}, 29), std::invalid_argument);
  EXPECT_NO_THROW(require_counting_fits(std::int8_t{-128}, 256));
  EXPECT_THROW(require_counting_fits(std::int8_t{-128}, 257), std::invalid_argument);
  EXPECT_NO_THROW(require_counting_fits(std::uint32_t{0}, std::uint64_t{1} << 32));
  EXPECT_THROW(require_counting_fits(std::uint32_t{0}, (std::uint64_t{1} << 32) + 1), std::invalid_argument);
  EXPECT_THROW(require_counting_fits(std::uint32_t{1}, std::uint64_t{1} << 32), std::invalid_argument);
  EXPECT_NO_THROW(require_counting_fits(std::numeric_limits<std::int64_t>::min(), ~std::uint64_t{0}));
  EXPECT_NO_THROW(require_counting_fits(std::numeric_limits<std::int64_t>::max(), 1));
  EXPECT_THROW(require_counting_fits(std::numeric_limits<std::int64_t>::max(), 2), std::invalid_argument);
  EXPECT_NO_THROW(require_counting_fits(std::numeric_limits<std::uint64_t>::max(), 0));
  EXPECT_NO_THROW(require_counting_fits(std::numeric_limits<std::uint64_t>::max(), 1));
  EXPECT_THROW(require_counting_fits(std::numeric_limits<std::uint64_t>::max(), 2), std::invalid_argument);
  EXPECT_EQ(strata::detail::counting_at(std::int8_t{-128}, 255), std::int8_t{127});
  EXPECT_EQ(strata::detail::counting_at(std::int64_t{-5}, 10), std::int64_t{5});
  EXPECT_EQ(strata::detail::counting_at(std::numeric_limits<std::int64_t>::min(), ~std::uint64_t{0}),
            std::numeric_limits<std::int64_t>::max());
}
