// Device specs (parse, print, match, merge) and the DeviceManager of a Runtime.
#include <catch2/catch.hpp>

#include <memory>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/devices/device_manager.hpp"
#include "actorflow/devices/device_name.hpp"

using namespace actorflow;

namespace {
DeviceName Parse(const std::string& spec) {
  DeviceName n;
  Status s = ParseDeviceName(spec, &n);
  INFO(spec << " -> " << s.ToString());
  REQUIRE(s.ok());
  return n;
}

DeviceName Full(const std::string& job, int replica, int task, const std::string& type, int id) {
  DeviceName n;
  n.has_job = n.has_replica = n.has_task = n.has_type = n.has_id = true;
  n.job = job;
  n.replica = replica;
  n.task = task;
  n.type = type;
  n.id = id;
  return n;
}

const char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
const char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";
const char kCpu2[] = "/job:localhost/replica:0/task:0/device:CPU:2";
}  // namespace

TEST_CASE("ParseDeviceName: a full name sets every component") {
  DeviceName n = Parse("/job:worker/replica:2/task:17/device:GPU:3");
  REQUIRE(n == Full("worker", 2, 17, "GPU", 3));
  REQUIRE(n.job == "worker");
  REQUIRE(n.replica == 2);
  REQUIRE(n.task == 17);
  REQUIRE(n.type == "GPU");
  REQUIRE(n.id == 3);
}

TEST_CASE("ParseDeviceName: partial specs set only what they name") {
  DeviceName job = Parse("/job:ps");
  REQUIRE(job.has_job);
  REQUIRE(job.job == "ps");
  REQUIRE_FALSE(job.has_replica);
  REQUIRE_FALSE(job.has_task);
  REQUIRE_FALSE(job.has_type);
  REQUIRE_FALSE(job.has_id);

  DeviceName wt = Parse("/job:worker/task:1");
  REQUIRE(wt.has_job);
  REQUIRE(wt.has_task);
  REQUIRE(wt.task == 1);
  REQUIRE_FALSE(wt.has_replica);
  REQUIRE_FALSE(wt.has_type);

  DeviceName rep = Parse("/replica:0/task:0");
  REQUIRE(rep.has_replica);
  REQUIRE(rep.has_task);
  REQUIRE_FALSE(rep.has_job);

  DeviceName dev = Parse("/device:GPU:0");
  REQUIRE(dev.has_type);
  REQUIRE(dev.type == "GPU");
  REQUIRE(dev.has_id);
  REQUIRE(dev.id == 0);
  REQUIRE_FALSE(dev.has_job);

  DeviceName none = Parse("");
  REQUIRE(none == DeviceName());
}

TEST_CASE("ParseDeviceName: TYPE:N with or without /device:, legacy lower case upper-cased") {
  DeviceName gpu0;
  gpu0.has_type = gpu0.has_id = true;
  gpu0.type = "GPU";
  gpu0.id = 0;
  REQUIRE(Parse("GPU:0") == gpu0);
  REQUIRE(Parse("/gpu:0") == gpu0);
  REQUIRE(Parse("gpu:0") == gpu0);
  REQUIRE(Parse("/device:GPU:0") == gpu0);
  REQUIRE(Parse("/device:gpu:0") == gpu0);
  REQUIRE(Parse("/device:gpu:0").type == "GPU");

  DeviceName cpu1 = Parse("cpu:1");
  REQUIRE(cpu1.type == "CPU");
  REQUIRE(cpu1.id == 1);

  // The legacy form after other components, as old TensorFlow wrote full names.
  REQUIRE(Parse("/job:worker/replica:0/task:1/gpu:2") == Full("worker", 0, 1, "GPU", 2));
}

TEST_CASE("ParseDeviceName: '*' for the id, and a type without an id, mean any device of the type") {
  DeviceName any_cpu = Parse("/device:CPU:*");
  REQUIRE(any_cpu.has_type);
  REQUIRE(any_cpu.type == "CPU");
  REQUIRE_FALSE(any_cpu.has_id);
  REQUIRE(Parse("CPU:*") == any_cpu);
  REQUIRE(Parse("/cpu:*") == any_cpu);
  REQUIRE(Parse("/device:CPU") == any_cpu);

  DeviceName any_type = Parse("/job:a/device:*:1");
  REQUIRE_FALSE(any_type.has_type);
  REQUIRE(any_type.has_id);
  REQUIRE(any_type.id == 1);
}

TEST_CASE("ParseDeviceName: bad specs are InvalidArgument naming the spec") {
  const char* bad[] = {
      "/",                            // empty component
      "//job:a",                      // empty component
      "/job:ps/",                     // trailing empty component
      "/job:a//task:0",               // empty component in the middle
      "/job:",                        // empty job
      "/job",                         // no value
      "/task",                        // no value
      "/device",                      // no value
      "/device:",                     // no value
      "/job:Worker",                  // job names are lower case
      "/job:1ps",                     // job names start with a letter
      "/job:a-b",                     // junk in the job name
      "/replica:x",                   // non-numeric
      "/replica:",                    // empty
      "/task:-1",                     // negative
      "/task:1x",                     // trailing junk
      "/task:99999999999",            // out of int range
      "/device:CPU:x",                // non-numeric id
      "/device:CPU:",                 // empty id
      "/device:CPU:-1",               // negative id
      "/device::0",                   // empty type
      "/device:C-PU:0",               // junk type
      "/device:CPU:0:1",              // junk after the id
      "GPU",                          // a local name needs its id
      "GPU:",                         // empty id
      "GPU:a",                        // non-numeric id
      ":0",                           // empty type
      "*:0",                          // '*' for the type only after /device:
      "/gpu",                         // neither a component nor TYPE:N
      "/job:a/job:b",                 // repeated component
      "/task:0/task:0",               // repeated component
      "/device:CPU:0/gpu:1",          // repeated device component
      "/task:0/job:a",                // out of order
      "/device:CPU:0/job:a",          // out of order
      "/job:a/device:CPU:0/replica:0",  // out of order
      "junk",                         // junk
      " /job:a",                      // leading space
      "job:a",                        // components need the leading '/'
      "/job:a/task:0 ",               // trailing space
  };
  for (const char* spec : bad) {
    DeviceName n = Parse("/job:keep");
    Status s = ParseDeviceName(spec, &n);
    INFO("spec '" << spec << "': " << s.ToString());
    REQUIRE(s.code() == Code::kInvalidArgument);
    REQUIRE_THAT(s.message(), Catch::Contains(std::string("'") + spec + "'"));
    REQUIRE(n == Parse("/job:keep"));  // untouched on error
  }
}

TEST_CASE("ParseDeviceName: messages say what is wrong") {
  DeviceName n;
  REQUIRE_THAT(ParseDeviceName("/job:a/job:b", &n).message(), Catch::Contains("repeated job"));
  REQUIRE_THAT(ParseDeviceName("/device:CPU:0/gpu:1", &n).message(), Catch::Contains("repeated device"));
  REQUIRE_THAT(ParseDeviceName("/task:0/job:a", &n).message(), Catch::Contains("order"));
  REQUIRE_THAT(ParseDeviceName("/job:a//task:0", &n).message(), Catch::Contains("empty component"));
  REQUIRE_THAT(ParseDeviceName("/device:CPU:x", &n).message(), Catch::Contains("device id 'x'"));
  REQUIRE_THAT(ParseDeviceName("/replica:x", &n).message(), Catch::Contains("replica 'x'"));
}

TEST_CASE("DeviceNameString prints what is present and round-trips") {
  REQUIRE(DeviceNameString(Full("localhost", 0, 0, "CPU", 0)) == kCpu0);
  REQUIRE(DeviceNameString(Parse("/gpu:1")) == "/device:GPU:1");
  REQUIRE(DeviceNameString(Parse("cpu:0")) == "/device:CPU:0");
  REQUIRE(DeviceNameString(Parse("/job:worker/task:1")) == "/job:worker/task:1");
  REQUIRE(DeviceNameString(Parse("/device:CPU")) == "/device:CPU:*");
  REQUIRE(DeviceNameString(Parse("/device:*:3")) == "/device:*:3");
  REQUIRE(DeviceNameString(Parse("")) == "");

  const char* specs[] = {kCpu0,           "/job:ps",       "/replica:3",       "/task:2",  "/device:GPU:0",
                         "/device:CPU:*", "/device:*:1",   "/job:w/task:1",    "/job:w/replica:1/device:GPU:*",
                         "",              "/job:a_1/replica:0/task:12/device:TPU:7"};
  for (const char* spec : specs) {
    INFO(spec);
    DeviceName n = Parse(spec);
    REQUIRE(DeviceNameString(n) == spec);
    REQUIRE(Parse(DeviceNameString(n)) == n);
  }
}

TEST_CASE("operator== compares the components present") {
  DeviceName a = Parse("/job:a");
  DeviceName b = Parse("/job:a");
  b.task = 5;  // absent: ignored
  REQUIRE(a == b);
  REQUIRE(Parse("/job:a") != Parse("/job:b"));
  REQUIRE(Parse("/job:a") != Parse("/job:a/task:0"));
  REQUIRE(Parse("/device:CPU:*") != Parse("/device:CPU:0"));
}

TEST_CASE("DeviceNameMatches: partial specs against full names") {
  const DeviceName cpu0 = Parse(kCpu0);
  const DeviceName gpu1 = Parse("/job:localhost/replica:0/task:0/device:GPU:1");
  REQUIRE(DeviceNameMatches(Parse(""), cpu0));
  REQUIRE(DeviceNameMatches(Parse(kCpu0), cpu0));
  REQUIRE(DeviceNameMatches(Parse("/job:localhost"), cpu0));
  REQUIRE(DeviceNameMatches(Parse("/replica:0/task:0"), cpu0));
  REQUIRE(DeviceNameMatches(Parse("/device:CPU:0"), cpu0));
  REQUIRE(DeviceNameMatches(Parse("CPU:0"), cpu0));
  REQUIRE(DeviceNameMatches(Parse("/cpu:0"), cpu0));  // legacy lower case
  REQUIRE(DeviceNameMatches(Parse("/device:CPU:*"), cpu0));
  REQUIRE(DeviceNameMatches(Parse("/device:*:1"), gpu1));
  REQUIRE(DeviceNameMatches(Parse("/job:localhost/gpu:*"), gpu1));

  REQUIRE_FALSE(DeviceNameMatches(Parse("/job:worker"), cpu0));
  REQUIRE_FALSE(DeviceNameMatches(Parse("/task:1"), cpu0));
  REQUIRE_FALSE(DeviceNameMatches(Parse("/replica:1"), cpu0));
  REQUIRE_FALSE(DeviceNameMatches(Parse("/device:CPU:1"), cpu0));
  REQUIRE_FALSE(DeviceNameMatches(Parse("/device:GPU:*"), cpu0));
  REQUIRE_FALSE(DeviceNameMatches(Parse("/device:*:1"), cpu0));

  // A component the spec has and the name lacks does not match; the reverse does.
  REQUIRE_FALSE(DeviceNameMatches(Parse("/job:localhost"), Parse("/device:CPU:0")));
  REQUIRE(DeviceNameMatches(Parse("/device:CPU:0"), Parse("/job:x/device:CPU:0")));

  // Types are compared ignoring case, also in names built by hand.
  DeviceName lower = Full("localhost", 0, 0, "cpu", 0);
  REQUIRE(DeviceNameMatches(Parse("/device:CPU:0"), lower));
  REQUIRE(DeviceNameMatches(lower, cpu0));
}

TEST_CASE("MergeDeviceNames fills missing components and keeps present ones") {
  DeviceName t = Parse("/job:worker");
  REQUIRE(MergeDeviceNames(&t, Parse("/device:GPU:1")).ok());
  REQUIRE(DeviceNameString(t) == "/job:worker/device:GPU:1");
  REQUIRE(MergeDeviceNames(&t, Parse("/job:worker/replica:0/task:3")).ok());
  REQUIRE(DeviceNameString(t) == "/job:worker/replica:0/task:3/device:GPU:1");
  REQUIRE(MergeDeviceNames(&t, Parse("")).ok());
  REQUIRE(DeviceNameString(t) == "/job:worker/replica:0/task:3/device:GPU:1");

  // An id-less spec merges with one that has the id; the same type in another case is no conflict.
  DeviceName any = Parse("/device:CPU:*");
  REQUIRE(MergeDeviceNames(&any, Parse("/cpu:2")).ok());
  REQUIRE(any == Parse("/device:CPU:2"));
  DeviceName empty;
  REQUIRE(MergeDeviceNames(&empty, Parse(kCpu1)).ok());
  REQUIRE(empty == Parse(kCpu1));
}

TEST_CASE("MergeDeviceNames: conflicts are InvalidArgument naming both specs and the component") {
  struct Case {
    const char* a;
    const char* b;
    const char* component;
  };
  const Case cases[] = {
      {"/job:a", "/job:b/task:0", "job"},
      {"/replica:0", "/replica:1", "replica"},
      {"/job:a/task:0", "/job:a/task:1", "task"},
      {"/device:CPU:0", "/device:GPU:0", "device type"},
      {"/job:a/device:GPU:0", "/gpu:1", "device id"},
  };
  for (const Case& c : cases) {
    INFO(c.a << " + " << c.b);
    DeviceName t = Parse(c.a);
    const DeviceName before = t;
    REQUIRE_FALSE(DeviceNamesCompatible(t, Parse(c.b)));
    Status s = MergeDeviceNames(&t, Parse(c.b));
    INFO(s.ToString());
    REQUIRE(s.code() == Code::kInvalidArgument);
    REQUIRE_THAT(s.message(), Catch::Contains(std::string("'") + DeviceNameString(Parse(c.a)) + "'") &&
                                  Catch::Contains(std::string("'") + DeviceNameString(Parse(c.b)) + "'") &&
                                  Catch::Contains(std::string("conflicting ") + c.component));
    REQUIRE(t == before);  // untouched on error
  }
}

TEST_CASE("DeviceNamesCompatible: no component present in both with different values") {
  REQUIRE(DeviceNamesCompatible(Parse(""), Parse(kCpu0)));
  REQUIRE(DeviceNamesCompatible(Parse("/job:a"), Parse("/device:GPU:0")));
  REQUIRE(DeviceNamesCompatible(Parse("/device:CPU:*"), Parse(kCpu2)));
  REQUIRE(DeviceNamesCompatible(Parse(kCpu2), Parse(kCpu2)));
  REQUIRE_FALSE(DeviceNamesCompatible(Parse(kCpu1), Parse(kCpu2)));
  REQUIRE_FALSE(DeviceNamesCompatible(Parse("/job:a"), Parse("/job:b")));
  REQUIRE_FALSE(DeviceNamesCompatible(Parse("/device:GPU:*"), Parse(kCpu0)));
}

TEST_CASE("DeviceManager over a Runtime with three CPU devices") {
  RuntimeOptions ro;
  ro.num_threads = 1;
  ro.num_cpu_devices = 3;
  ro.num_gpu_devices = 0;  // the same devices on a machine with GPUs
  Runtime rt(ro);
  const DeviceManager& dm = rt.device_manager();
  REQUIRE(dm.size() == 3);
  REQUIRE(dm.devices() == rt.devices());
  REQUIRE(rt.devices()[0]->name() == kCpu0);
  REQUIRE(rt.devices()[2]->name() == kCpu2);

  SECTION("Lookup by full name or by any spec naming one device") {
    Device* d = nullptr;
    REQUIRE(dm.Lookup(kCpu1, &d).ok());
    REQUIRE(d == rt.devices()[1]);
    for (const char* spec :
         {"CPU:2", "cpu:2", "/device:CPU:2", "/cpu:2", "/job:localhost/device:CPU:2", "/device:*:2"}) {
      INFO(spec);
      d = nullptr;
      REQUIRE(dm.Lookup(spec, &d).ok());
      REQUIRE(d == rt.devices()[2]);
    }
    REQUIRE(rt.FindDevice("CPU:0") == 0);
    REQUIRE(rt.FindDevice("/device:CPU:1") == 1);
    REQUIRE(rt.FindDevice(kCpu2) == 2);
    REQUIRE(rt.FindDevice("GPU:0") == -1);
    REQUIRE(rt.FindDevice("PU:0") == -1);  // no suffix matching
  }

  SECTION("Lookup: NotFound naming the spec and listing the devices") {
    Device* d = nullptr;
    for (const char* spec : {"GPU:0", "/device:CPU:3", "/job:worker/device:CPU:0", "/task:1"}) {
      Status s = dm.Lookup(spec, &d);
      INFO(s.ToString());
      REQUIRE(s.code() == Code::kNotFound);
      REQUIRE_THAT(s.message(), Catch::Contains(std::string("'") + spec + "'") && Catch::Contains(kCpu0) &&
                                    Catch::Contains(kCpu1) && Catch::Contains(kCpu2));
    }
    // A spec matching several devices names none of them.
    for (const char* spec : {"/device:CPU:*", "", "/job:localhost"}) {
      Status s = dm.Lookup(spec, &d);
      INFO(s.ToString());
      REQUIRE(s.code() == Code::kNotFound);
      REQUIRE_THAT(s.message(), Catch::Contains("matches 3 devices"));
    }
    REQUIRE(d == nullptr);
    Status s = dm.Lookup("/job:", &d);
    REQUIRE(s.code() == Code::kInvalidArgument);
    REQUIRE_THAT(s.message(), Catch::Contains("'/job:'"));
  }

  SECTION("Matching returns the matched devices in order") {
    std::vector<Device*> out;
    REQUIRE(dm.Matching("/device:CPU:*", &out).ok());
    REQUIRE(out == rt.devices());
    REQUIRE(dm.Matching("", &out).ok());
    REQUIRE(out == rt.devices());
    REQUIRE(dm.Matching("/job:localhost/replica:0/task:0", &out).ok());
    REQUIRE(out == rt.devices());
    REQUIRE(dm.Matching("/cpu:1", &out).ok());
    REQUIRE(out == std::vector<Device*>{rt.devices()[1]});
    REQUIRE(dm.Matching("/device:*:2", &out).ok());
    REQUIRE(out == std::vector<Device*>{rt.devices()[2]});
    REQUIRE(dm.Matching("/job:worker", &out).ok());
    REQUIRE(out.empty());
    REQUIRE(dm.Matching("/device:GPU:*", &out).ok());
    REQUIRE(out.empty());
    Status s = dm.Matching("/device:CPU:x", &out);
    REQUIRE(s.code() == Code::kInvalidArgument);
    REQUIRE_THAT(s.message(), Catch::Contains("'/device:CPU:x'"));
  }

  SECTION("IndexOf, OfType and DebugString") {
    for (int i = 0; i < 3; ++i) {
      REQUIRE(dm.IndexOf(rt.devices()[i]) == i);
      REQUIRE(rt.device_index(rt.devices()[i]) == i);
    }
    Device stranger(kCpu0, DEVICE_CPU, nullptr, nullptr);
    REQUIRE(dm.IndexOf(&stranger) == -1);
    REQUIRE(dm.IndexOf(nullptr) == -1);
    REQUIRE(rt.device_index(&stranger) == -1);
    REQUIRE(dm.OfType("CPU") == rt.devices());
    REQUIRE(dm.OfType("cpu") == rt.devices());
    REQUIRE(dm.OfType("GPU").empty());
    REQUIRE(dm.DebugString() == std::string("0: ") + kCpu0 + " (CPU)\n1: " + kCpu1 + " (CPU)\n2: " + kCpu2 +
                                    " (CPU)\n");
  }
}

TEST_CASE("DeviceManager with CPUs and a GPU, and a device whose name is no spec") {
  Device cpu0(kCpu0, DEVICE_CPU, nullptr, nullptr);
  Device cpu1(kCpu1, DEVICE_CPU, nullptr, nullptr);
  Device gpu0("/job:localhost/replica:0/task:0/device:GPU:0", DEVICE_GPU, nullptr, nullptr);
  Device odd("my device", DEVICE_CPU, nullptr, nullptr);
  DeviceManager dm({&cpu0, &cpu1, &gpu0, &odd});
  REQUIRE(dm.size() == 4);
  REQUIRE(dm.OfType("GPU") == std::vector<Device*>{&gpu0});
  REQUIRE(dm.OfType("CPU") == std::vector<Device*>{&cpu0, &cpu1, &odd});
  Device* d = nullptr;
  REQUIRE(dm.Lookup("/gpu:0", &d).ok());
  REQUIRE(d == &gpu0);
  REQUIRE(dm.Lookup("GPU:0", &d).ok());
  REQUIRE(d == &gpu0);
  REQUIRE(dm.Lookup("/device:GPU:*", &d).ok());  // the only GPU
  REQUIRE(d == &gpu0);
  REQUIRE(dm.Lookup("my device", &d).ok());  // by its exact name only
  REQUIRE(d == &odd);
  std::vector<Device*> out;
  REQUIRE(dm.Matching("", &out).ok());
  REQUIRE(out == std::vector<Device*>{&cpu0, &cpu1, &gpu0});
  REQUIRE(dm.Matching("/device:CPU:*", &out).ok());
  REQUIRE(out == std::vector<Device*>{&cpu0, &cpu1});
  REQUIRE(dm.Matching("/device:*:0", &out).ok());
  REQUIRE(out == std::vector<Device*>{&cpu0, &gpu0});
  REQUIRE(dm.IndexOf(&odd) == 3);

  DeviceManager none({});
  REQUIRE(none.size() == 0);
  Status s = none.Lookup("CPU:0", &d);
  REQUIRE(s.code() == Code::kNotFound);
  REQUIRE_THAT(s.message(), Catch::Contains("'CPU:0'"));
  REQUIRE(none.DebugString().empty());
}
