// The FORCE drivers and the shock-bubble solver in the aosoa<16> layout, both precisions,
// compiled once for the apps, their tests and benchmarks (ripple_euler.hpp,
// shock_bubble.hpp). One file per layout, so that a parallel build compiles them at once.
#include "ripple_euler.hpp"
#include "shock_bubble.hpp"

namespace apps {

APPS_EULER_LAYOUTS(, strata::aosoa<16>)
APPS_SHOCK_BUBBLE_INSTANCES(, strata::aosoa<16>)

}  // namespace apps
