// Checks shared by the process-wide kernel switches (--fused-add-norm, --fused-bias-gelu): off until a scope
// switches them on, nested scopes win while they live, the previous setting comes back after each.
#pragma once
#include "tests/catch_compat.h"

namespace lmzoo::test {

// Scope(bool) sets the switch that `enabled` reads, for its lifetime.
template <typename Scope>
void check_switch_scopes(bool (*enabled)()) {
  CHECK_FALSE(enabled());
  {
    const Scope on(true);
    CHECK(enabled());
    {
      const Scope off(false);
      CHECK_FALSE(enabled());
    }
    CHECK(enabled());
  }
  CHECK_FALSE(enabled());
}

}  // namespace lmzoo::test
