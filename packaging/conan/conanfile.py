"""Conan 2 recipe for Strata, a header-only C++17/CUDA library.

    conan create packaging/conan          (from the repository root)

The package holds the headers and Strata's own CMake package files; consumers call
find_package(Strata CONFIG REQUIRED) and link Strata::strata, exactly as with an install tree.
The CUDA toolkit (nvcc, CCCL) is a system requirement, not a Conan package.
"""
import os

from conan import ConanFile
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load
import re


class StrataConan(ConanFile):
    name = "strata"
    description = "Multi-GPU parallel primitives (reduce, scan, transform) on CUB"
    license = "MIT"
    topics = ("cuda", "gpu", "multi-gpu", "cub", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    # nccl: also package Strata::nccl (the layer beyond one process); needs NCCL on the system
    # (CUDA toolkit, NCCL_ROOT, or the nvidia-nccl-cu13 wheel) when the package is built and used.
    options = {"nccl": [True, False]}
    default_options = {"nccl": False}
    no_copy_source = True

    def set_version(self):
        # The version comes from the project itself, so recipe and headers never disagree.
        root = os.path.join(self.recipe_folder, "..", "..")
        text = load(self, os.path.join(root, "CMakeLists.txt"))
        self.version = re.search(r"project\(Strata VERSION ([0-9.]+)", text).group(1)

    def export_sources(self):
        root = os.path.join(self.recipe_folder, "..", "..")
        for pattern in ("CMakeLists.txt", "LICENSE", "cmake/*", "include/*"):
            copy(self, pattern, root, self.export_sources_folder)
        # Directories the top-level CMakeLists.txt adds only when its options are on.
        for sub in ("tests", "examples", "benchmarks"):
            os.makedirs(os.path.join(self.export_sources_folder, sub), exist_ok=True)

    def layout(self):
        cmake_layout(self)

    def package_id(self):
        # Header-only: one package for every configuration (the nccl option still tells apart the
        # packages with and without the NCCL component).
        self.info.settings.clear()

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["STRATA_BUILD_TESTS"] = False
        tc.cache_variables["STRATA_BUILD_BENCHMARKS"] = False
        tc.cache_variables["STRATA_BUILD_EXAMPLES"] = False
        tc.cache_variables["STRATA_BUILD_DOCS"] = False
        tc.cache_variables["STRATA_WITH_NCCL"] = "ON" if self.options.nccl else "OFF"
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        cmake = CMake(self)
        cmake.install()

    def package_info(self):
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        # Names matching find_package(Strata) and Strata::strata.
        self.cpp_info.set_property("cmake_file_name", "Strata")
        self.cpp_info.set_property("cmake_target_name", "Strata::strata")
        # Use Strata's own installed config (it finds CUDAToolkit and CCCL the way Strata's build
        # does) rather than a generated one.
        self.cpp_info.set_property("cmake_find_mode", "none")
        self.cpp_info.builddirs = [os.path.join("lib", "cmake", "Strata")]
