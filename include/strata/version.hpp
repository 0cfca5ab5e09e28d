// Strata version macros. Kept in step with project(VERSION) in the top-level CMakeLists.txt;
// a host test checks that they agree.
#pragma once

/// Major version: incompatible API changes.
#define STRATA_VERSION_MAJOR 0
/// Minor version: compatible additions.
#define STRATA_VERSION_MINOR 1
/// Patch version: fixes.
#define STRATA_VERSION_PATCH 0
/// One number for comparisons: MAJOR * 10000 + MINOR * 100 + PATCH.
#define STRATA_VERSION (STRATA_VERSION_MAJOR * 10000 + STRATA_VERSION_MINOR * 100 + STRATA_VERSION_PATCH)
/// The version as a string literal, "MAJOR.MINOR.PATCH".
#define STRATA_VERSION_STRING "0.1.0"
