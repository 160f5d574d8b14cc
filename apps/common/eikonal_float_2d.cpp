// The Eikonal solvers on float cells in 2-D, compiled once for the app, its tests and
// its benchmark (ripple_eikonal.hpp declares them extern).
#include "ripple_eikonal.hpp"

namespace apps {
APPS_EIKONAL_SOLVERS(, float, 2)
}  // namespace apps
