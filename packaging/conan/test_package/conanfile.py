import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout


class StrataTestConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    generators = "CMakeDeps"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def generate(self):
        tc = CMakeToolchain(self)
        archs = os.environ.get("STRATA_CUDA_ARCHITECTURES")
        if archs:
            tc.cache_variables["CMAKE_CUDA_ARCHITECTURES"] = archs
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if can_run(self):
            # Without a GPU the program reports a skip and exits 0.
            self.run(os.path.join(self.cpp.build.bindir, "test_package"), env="conanrun")
