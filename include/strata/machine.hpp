// The machine layer: places, discovery, JSON and text descriptions.
#pragma once

#include <strata/machine/discovery.hpp>
#include <strata/machine/json.hpp>
#include <strata/machine/place.hpp>
#include <strata/machine/sim_config.hpp>
#include <strata/machine/text.hpp>
