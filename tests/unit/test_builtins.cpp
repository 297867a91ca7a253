// Built-ins against independent definitions (formulas.md values from the Bine paper).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstddef>
#include <vector>

#include "bine/builtins.hpp"

TEST_CASE("rho matches the series sum_{i<=s} (-2)^i") {
  int64_t sum = 0, term = 1;
  for (int64_t s = 0; s <= 29; ++s) {
    sum += term;
    term *= -2;
    CHECK(bine::rho(s) == sum);
  }
  CHECK(bine::rho(0) == 1);
  CHECK(bine::rho(1) == -1);
  CHECK(bine::rho(2) == 3);
  CHECK(bine::rho(3) == -5);
}

TEST_CASE("negabinary round-trips and matches base -2 digits") {
  for (int64_t x = -5000; x <= 5000; ++x) {
    // independent: sum of digits * (-2)^i
    const int64_t b = bine::nb(x);
    int64_t v = 0, w = 1;
    for (int i = 0; i < 32; ++i, w *= -2)
      if ((b >> i) & 1) v += w;
    CHECK(v == x);
    CHECK(bine::from_nb(b) == x);
  }
  CHECK(bine::nb(3) == 0b111);
  CHECK(bine::nb(-2) == 0b10);
}

TEST_CASE("nu is a permutation of 0..p-1 for powers of two") {
  for (int64_t p = 1; p <= 1024; p *= 2) {
    std::vector<int> seen(size_t(p), 0);
    for (int64_t r = 0; r < p; ++r) {
      const int64_t v = bine::nu(r, p);
      REQUIRE(v >= 0);
      REQUIRE(v < p);
      ++seen[size_t(v)];
    }
    for (int c : seen) CHECK(c == 1);
  }
  CHECK(bine::take_domain_error() == nullptr);
  bine::nu(3, 6);
  CHECK(bine::take_domain_error() != nullptr);
}

TEST_CASE("nu_inv inverts nu (brute-force inverse table, p = 2^0..2^16; samples at 2^30)") {
  for (int64_t p = 1; p <= (int64_t(1) << 16); p *= 2) {
    std::vector<int64_t> inv(size_t(p), -1);
    for (int64_t r = 0; r < p; ++r) inv[size_t(bine::nu_uncached(r, p))] = r;
    int64_t bad = 0;
    for (int64_t v = 0; v < p; ++v) bad += bine::nu_inv(v, p) != inv[size_t(v)];
    CHECK_MESSAGE(bad == 0, "p = " << p);
  }
  const int64_t big = int64_t(1) << 30;
  for (int64_t r : {int64_t(0), int64_t(1), int64_t(2), big / 3, big / 2, big / 2 + 1, big - 2, big - 1})
    CHECK(bine::nu_inv(bine::nu_uncached(r, big), big) == r);
  CHECK(bine::take_domain_error() == nullptr);
  bine::nu_inv(3, 6);
  CHECK(bine::take_domain_error() != nullptr);
  bine::nu_inv(8, 8);
  CHECK(bine::take_domain_error() != nullptr);
  bine::nu_inv(-1, 8);
  CHECK(bine::take_domain_error() != nullptr);
}

TEST_CASE("checked arithmetic flags domain errors instead of trapping") {
  CHECK(bine::div(7, 0) == 0);
  CHECK(bine::take_domain_error() != nullptr);
  CHECK(bine::shl(1, 64) == 0);
  CHECK(bine::take_domain_error() != nullptr);
  CHECK(bine::mod(-1, 5) == 4);
  CHECK(bine::div(INT64_MIN, -1) == INT64_MIN);
  CHECK(bine::take_domain_error() == nullptr);
}
