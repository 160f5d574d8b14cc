// strata::runtime: lifetime, configuration sources and their errors.
#include <strata/error.hpp>
#include <strata/runtime.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace strata {
namespace {

// Sets an environment variable for one test and restores it afterwards.
class scoped_env {
 public:
  scoped_env(char const* name, char const* value) : name_(name) {
    if (auto old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~scoped_env() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  char const* name_;
  std::optional<std::string> old_;
};

TEST(Runtime, GivesTheMachine) {
  runtime rt;
  EXPECT_TRUE(runtime::active());
  EXPECT_EQ(&runtime::current(), &rt);
  EXPECT_EQ(rt.machine().type(), place_type::machine);
  EXPECT_FALSE(rt.machine().processors().empty());
}

TEST(Runtime, OneAtATime) {
  {
    runtime rt;
    EXPECT_THROW(runtime{}, error);
    EXPECT_TRUE(runtime::active()) << "the failed second runtime must not end the first";
  }
  EXPECT_FALSE(runtime::active());
  EXPECT_THROW(runtime::current(), error);
  runtime again;
  EXPECT_TRUE(runtime::active());
}

TEST(Runtime, EnvironmentConfiguresSimDevices) {
  scoped_env env("STRATA_SIM_DEVICES", "2");
  runtime rt;
  EXPECT_EQ(rt.machine().slice(isa::sim).descendants(place_type::device).size(), 2u);
  EXPECT_EQ(rt.machine().slice(isa::sim).memories().size(), 2u);
}

TEST(Runtime, OptionsWinOverEnvironment) {
  scoped_env env("STRATA_SIM_DEVICES", "2");
  runtime rt({.sim_devices = "3"});
  EXPECT_EQ(rt.machine().slice(isa::sim).descendants(place_type::device).size(), 3u);
}

TEST(Runtime, BadEnvironmentIsAConfigErrorAndLeavesNoRuntime) {
  for (auto bad : {"abc", "2:bw=-3"}) {
    scoped_env env("STRATA_SIM_DEVICES", bad);
    try {
      runtime rt;
      FAIL() << bad;
    } catch (config_error const& e) {
      EXPECT_NE(std::string(e.what()).find("STRATA_SIM_DEVICES"), std::string::npos);
    }
    EXPECT_FALSE(runtime::active());
  }
  scoped_env log("STRATA_LOG", "loud");
  EXPECT_THROW(runtime{}, config_error);
  EXPECT_FALSE(runtime::active());
}

// The CUDA completion worker's poll window is read at the start of every runtime, with or
// without a GPU (src/exec/cuda/spin_window.hpp), so a typo fails here rather than silently
// on the GPU machine.
TEST(Runtime, BadCudaSpinWindowIsAConfigError) {
  for (auto bad : {"", "abc", "-1", "+5", " 5", "12us", "1000001", "99999999999999999999"}) {
    scoped_env env("STRATA_CUDA_SPIN_US", bad);
    try {
      runtime rt;
      FAIL() << '"' << bad << '"';
    } catch (config_error const& e) {
      EXPECT_EQ(std::string(e.what()).rfind("STRATA_CUDA_SPIN_US=\"" + std::string(bad) + "\"", 0),
                0u)
          << e.what();
    }
    EXPECT_FALSE(runtime::active());
  }
  for (auto good : {"0", "250", "1000000"}) {
    scoped_env env("STRATA_CUDA_SPIN_US", good);
    EXPECT_NO_THROW(runtime{}) << good;
  }
}

TEST(Runtime, ConsumesItsCommandLineFlags) {
  std::vector<std::string> args{"prog", "--strata-sim-devices=1:units=2", "input.txt", "--verbose"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  runtime rt(argc, argv.data());
  ASSERT_EQ(argc, 3);
  EXPECT_STREQ(argv[1], "input.txt");
  EXPECT_STREQ(argv[2], "--verbose");
  EXPECT_EQ(argv[3], nullptr);
  EXPECT_EQ(rt.machine().slice(isa::sim).processors().size(), 2u);
  EXPECT_EQ(rt.effective_options().sim_devices_source, "--strata-sim-devices");
}

TEST(Runtime, UnknownStrataFlagIsAConfigError) {
  std::vector<std::string> args{"prog", "--strata-simdevices=2"};
  std::vector<char*> argv{args[0].data(), args[1].data(), nullptr};
  int argc = 2;
  EXPECT_THROW(runtime(argc, argv.data()), config_error);
  EXPECT_FALSE(runtime::active());
}

TEST(Runtime, BadFlagValueNamesTheFlag) {
  std::vector<std::string> args{"prog", "--strata-sim-devices=abc"};
  std::vector<char*> argv{args[0].data(), args[1].data(), nullptr};
  int argc = 2;
  try {
    runtime rt(argc, argv.data());
    FAIL();
  } catch (config_error const& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--strata-sim-devices=\"abc\"", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace strata
