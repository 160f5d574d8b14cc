// Task graphs on the work-stealing pool (Ripple §5.3, §6): see docs/tasks.md.
#pragma once

#include <strata/task/deque.hpp>
#include <strata/task/graph.hpp>
#include <strata/task/partitioned.hpp>
#include <strata/task/task_group.hpp>
