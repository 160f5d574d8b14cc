// The FORCE drivers and the shock-bubble solver in the aos layout, both precisions,
// compiled once for the apps, their tests and benchmarks (ripple_euler.hpp,
// shock_bubble.hpp). One file per layout, so that a parallel build compiles them at once.
#include "ripple_euler.hpp"
#include "shock_bubble.hpp"

namespace apps {

APPS_EULER_LAYOUTS(, strata::aos)
APPS_SHOCK_BUBBLE_INSTANCES(, strata::aos)

}  // namespace apps
