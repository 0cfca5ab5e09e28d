// Strata: multi-GPU parallel primitives. The umbrella header: everything public.
#pragma once

#include <strata/version.hpp>
#include <strata/error.hpp>
#include <strata/partition.hpp>
#include <strata/device_set.cuh>
#include <strata/distributed_span.cuh>
#include <strata/distributed_vector.cuh>
#include <strata/future.cuh>
#include <strata/results.cuh>
#include <strata/tags.cuh>
#include <strata/topology.cuh>
#include <strata/zip.cuh>
#include <strata/algorithm/adjacent_difference.cuh>
#include <strata/algorithm/compact.cuh>
#include <strata/algorithm/copy.cuh>
#include <strata/algorithm/find.cuh>
#include <strata/algorithm/gather.cuh>
#include <strata/algorithm/histogram.cuh>
#include <strata/algorithm/redistribute.cuh>
#include <strata/algorithm/search.cuh>
#include <strata/algorithm/reduce.cuh>
#include <strata/algorithm/reduce_by_key.cuh>
#include <strata/algorithm/scan.cuh>
#include <strata/algorithm/sort.cuh>
#include <strata/algorithm/transform.cuh>
