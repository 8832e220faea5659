// train_distributed: the Fashion-MNIST MLP 784-256-10 trained by several
// worker processes, against parameter servers (asynchronously or
// synchronously) or by all-reduce, surviving the death of any task.
//
//   actorflow launch --cluster cluster.json --max-restarts 3 --
//       build/examples/train_distributed --mode async|sync|allreduce [--epochs N] [--batch B] [--lr R] [--dir DIR]
//       [--logdir DIR] [--cluster FILE|JSON|tf_config|slurm|auto [--jobs JOB:N,...] [--port-base P]]
//   srun -n 3 actorflow launch --cluster slurm --jobs ps:1,worker:2 --port-base 7000 -- build/examples/train_distributed ...
//   srun -n 4 build/examples/train_distributed --mode allreduce      (every Slurm task a worker)
//
// Each worker is a task of the cluster --cluster resolves
// (core/cluster_resolver.hpp; default auto: TF_CONFIG, which `actorflow
// launch` sets, else the Slurm step, else one local worker; ps tasks are
// `actorflow server`s): it serves its own task in this process, as the
// ACTORFLOW_* variables say (master/server_environment.hpp: bind address, TLS,
// peer timeout), and trains through the master there. Every worker computes
// gradients on its own shard of the training set (allreduce: on its rank's
// batch of each step's examples, which follow the group: an ElasticSampler
// over a data position synced with the variables; --log-steps PREFIX
// writes each step's time, global step, position, group size and rank to
// PREFIX.worker_<i>):
//   async      variables live on the ps tasks (ReplicaDeviceSetter, by
//              bytes; with several ps tasks the hidden layer's weights, nearly
//              all the model's bytes, are cut into one part per ps task,
//              --partitions N to choose); each worker's Adam update is applied
//              there as it comes;
//   sync       SyncReplicasOptimizer: the chief (worker 0) averages one
//              gradient per worker per step, applies it, and hands out the
//              next tokens; --backup-workers K: the first workers-K gradients
//              of each step make it (TensorFlow's backup workers), so K lost
//              or slow workers stall no step; the late gradients are dropped
//              as stale, counted in the chief's progress lines;
//   allreduce  no ps: every worker holds the whole model; the gradients are
//              averaged by CollectiveReduce (client/train/all_reduce.hpp) and
//              every worker applies the same update; each session starts with
//              the chief's variables, broadcast (restored by the chief after a
//              failure, so every replica goes on from the checkpoint).
//              --elastic: the group is the workers alive (group_size 0,
//              comm/collective_executor.hpp): when one dies the others sync
//              from the first of them and go on at n-1, in the same session,
//              no checkpoint restored, at most the step in flight lost.
// A TrainingSupervisor keeps each worker going: the chief restores the latest
// checkpoint of --dir (or initializes) and saves every --save-every steps;
// the others wait for the model; a step that fails because a task died or
// restarted re-creates the session and goes on from the last checkpoint.
// Progress lines give this worker's and the whole cluster's examples/s; the
// chief prints the test accuracy at the end and tells the ps tasks to stop.
// With --logdir, each worker writes TensorBoard events to DIR/worker_<i>: the
// graph, its loss at each global step, and (the chief) the test accuracy
// after each epoch and at the end.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <thread>

#include "actorflow/client/session.hpp"
#include "actorflow/client/train/elastic_sampler.hpp"
#include "actorflow/client/train/straggler_detector.hpp"
#include "actorflow/client/train/queue_runner.hpp"
#include "actorflow/client/train/summary_writer.hpp"
#include "actorflow/client/train/supervisor.hpp"
#include "actorflow/client/train/sync_replicas_optimizer.hpp"
#include "actorflow/core/cluster_resolver.hpp"
#include "examples/datasets.hpp"
#include "examples/train_distributed_graph.hpp"
#include "actorflow/master/server.hpp"
#include "actorflow/master/server_environment.hpp"
#include "actorflow/actors/runtime.hpp"
#include "actorflow/comm/collective_executor.hpp"

using namespace actorflow;
using namespace actorflow::examples;

namespace {

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s --mode async|sync|allreduce [--epochs N] [--batch B] [--lr R] [--dir DIR] [--save-every "
               "STEPS] [--steps N] [--report] [--bucket-bytes N] [--partitions N] [--elastic [--scale-lr]] [--backup-workers K]\n"
               "       [--straggler-ratio R] [--slow-worker I:MS] [--log-steps PREFIX] [--logdir DIR]\n"
               "       [--cluster FILE|JSON|tf_config|slurm|auto [--jobs JOB:N,...] [--port-base P]]\n"
               "  --lr: Adam's learning rate (default 0.001; sync, allreduce: 0.001 x the number of workers)\n"
               "  --partitions: async, sync: the hidden layer's weights in N parts over the ps tasks\n"
               "    (default: one per ps task; 1: whole)\n"
               "  --elastic: allreduce: a worker that dies is not waited for: the others sync and go on\n"
               "  --scale-lr: elastic: the learning rate x the live workers / the cluster's workers (each step)\n"
               "  --backup-workers K: sync: each step takes the first workers-K gradients; late ones are dropped\n"
               "  --straggler-ratio R: allreduce: report a worker whose own step time is R x the others' median\n"
               "    (default 1.5) and 5 ms over it; --slow-worker I:MS: worker I sleeps MS ms in each step (chaos, tests)\n"
               "  --cluster: this worker's cluster and task (default auto: TF_CONFIG, which `actorflow launch`\n"
               "    sets, else the Slurm step with --jobs and --port-base (as `actorflow launch`), else one local\n"
               "    worker); how it serves: the ACTORFLOW_* variables (ACTORFLOW_BIND, ACTORFLOW_TLS_*, ...)\n",
               argv0);
  return 2;
}

int Fail(const std::string& task, const Status& s) {
  std::fprintf(stderr, "train_distributed %s: %s\n", task.c_str(), s.ToString().c_str());
  return 1;
}



}  // namespace

int main(int argc, char** argv) {
  Options o;
  const char* tmp = std::getenv("TMPDIR");
  o.dir = std::string(tmp ? tmp : "/tmp") + "/actorflow-distributed";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--mode" && has) o.mode = argv[++i];
    else if (a == "--epochs" && has) o.epochs = std::atoi(argv[++i]);
    else if (a == "--batch" && has) o.batch = std::atoi(argv[++i]);
    else if (a == "--lr" && has) o.lr = std::atof(argv[++i]);
    else if (a == "--dir" && has) o.dir = argv[++i];
    else if (a == "--save-every" && has) o.save_every = std::atoi(argv[++i]);
    else if (a == "--steps" && has) o.steps = std::atoll(argv[++i]);
    else if (a == "--report") o.report = true;
    else if (a == "--bucket-bytes" && has) o.bucket_bytes = std::atoll(argv[++i]);
    else if (a == "--partitions" && has) o.partitions = std::atoi(argv[++i]);
    else if (a == "--elastic") o.elastic = true;
    else if (a == "--scale-lr") o.scale_lr = true;
    else if (a == "--backup-workers" && has) o.backup_workers = std::atoi(argv[++i]);
    else if (a == "--logdir" && has) o.logdir = argv[++i];
    else if (a == "--log-steps" && has) o.log_steps = argv[++i];
    else if (a == "--straggler-ratio" && has) o.straggler_ratio = std::atof(argv[++i]);
    else if (a == "--slow-worker" && has && std::sscanf(argv[i + 1], "%d:%d", &o.slow_worker, &o.slow_ms) == 2) ++i;
    else if (a == "--cluster" && has) o.cluster = argv[++i];
    else if (a == "--jobs" && has) o.resolver.jobs = argv[++i];
    else if (a == "--port-base" && has) o.resolver.port_base = std::atoi(argv[++i]);
    else return Usage(argv[0]);
  }
  if ((o.mode != "async" && o.mode != "sync" && o.mode != "allreduce") || o.epochs <= 0 || o.batch <= 0 || o.lr < 0 || o.save_every <= 0 ||
      o.partitions < 0 || (o.elastic && o.mode != "allreduce") || (o.scale_lr && !o.elastic) || o.backup_workers < 0 ||
      (o.backup_workers > 0 && o.mode != "sync") ||
      !(o.straggler_ratio > 1) || ((o.slow_worker >= 0 || o.slow_ms < 0) && o.mode != "allreduce"))
    return Usage(argv[0]);

  // This worker: its task in the cluster --cluster resolves, served in this process.
  ServerOptions so;
  ResolvedCluster resolved;
  Status s = ResolveCluster(o.cluster, o.resolver, nullptr, &resolved);
  if (s.ok() && resolved.task.job != "worker")
    s = errors::InvalidArgument("--cluster ", o.cluster, " (", resolved.source, ") must name a worker task, not '",
                                resolved.task.valid() ? resolved.task.job : "none",
                                "' (run me by `actorflow launch`, which serves the ps tasks)");
  if (s.ok() && !resolved.cluster.IsDense("worker"))
    s = errors::InvalidArgument("--cluster ", o.cluster, " (", resolved.source,
                                "): the worker job is sparse (Kubeflow's dynamic workers); every worker's address "
                                "is needed: sync and allreduce average over them all, the chief waits for them");
  if (!s.ok()) return Fail("", s);
  so.cluster = resolved.cluster;
  so.task = resolved.task;
  const int task = so.task.index, workers = so.cluster.num_tasks("worker");
  if (o.slow_worker >= workers || (o.slow_worker >= 0 && o.slow_ms < 0))
    return Fail("", errors::InvalidArgument("--slow-worker ", o.slow_worker, ":", o.slow_ms, ": no such worker of ",
                                            workers, ", or a negative time"));
  if (o.backup_workers >= workers)
    return Fail("", errors::InvalidArgument("--backup-workers ", o.backup_workers, " leaves no gradient of ", workers,
                                            " workers to aggregate"));
  // The linear scaling rule (Goyal et al., 2017): a sync step's batch is `workers` batches.
  const bool allreduce = o.mode == "allreduce";
  if (o.lr == 0) o.lr = o.mode == "async" ? 0.001 : 0.001 * (workers - o.backup_workers);
  const std::string me = "worker:" + std::to_string(task);
  so.has_cluster = true;
  so.port = -1;  // this task's address in the cluster
  // How to serve (bind address, TLS, peer timeout): what `actorflow launch` or the cluster manager set.
  if (!(s = ApplyServerEnvironment(&so)).ok()) return Fail(me, s);
  std::unique_ptr<Server> server;
  if (!(s = Server::Create(so, &server)).ok()) return Fail(me, s);

  Dataset train, test;
  if (!(s = LoadFashionMnist(&train, &test)).ok()) return Fail(me, s);
  TrainGraph g;
  if (!(s = Build(o, so.cluster, task, workers, &g)).ok()) return Fail(me, s);

  SupervisorOptions sup_options;
  // All-reduce: every worker initializes its own replica (the chief restores
  // it), then takes the chief's variables; its session finds every worker
  // (the members of the all-reduce).
  sup_options.is_chief = task == 0 || allreduce;
  sup_options.session.target = server->target();
  sup_options.session.device_filters = {"/job:ps", "/job:worker/task:" + std::to_string(task)};
  if (allreduce) sup_options.session.device_filters = {"/job:worker"};
  if (o.elastic) {  // a rendezvous round: the workers there (at least the quorum) after a last call of 2 s
    const char* min_env = std::getenv("ACTORFLOW_MIN_WORKERS");
    sup_options.session.rendezvous.job = "worker";
    sup_options.session.rendezvous.min_tasks = min_env && std::atoi(min_env) > 0 ? std::atoi(min_env) : workers;
    sup_options.session.rendezvous.last_call_ms = 2000;
    // A round that finds no quorum gives up after 15 s (the supervisor tries again, 20 times at most).
    sup_options.session.device_find_timeout_ms = 15000;
    const char* max_env = std::getenv("ACTORFLOW_MAX_WORKERS");  // launch --max-workers
    if (max_env && std::atoi(max_env) > 0) sup_options.session.rendezvous.max_tasks = std::atoi(max_env);
  }
  sup_options.run.timeout_in_ms = 120000;
  sup_options.max_recoveries = 10;
  sup_options.ready_timeout = std::chrono::seconds(60);
  if (g.sync) {
    sup_options.after_init = {g.local_step_init};
    sup_options.chief_after_init = {g.chief_init, g.init_tokens};
  }
  // The chief's sync op runs on a thread of its own, in each session the
  // supervisor makes: started when one is ready, joined when it is closed.
  std::unique_ptr<QueueRunner> runner;
  if (g.sync && task == 0) {
    sup_options.on_session_ready = [&](Session* session) -> Status {
      AF_RETURN_IF_ERROR(QueueRunner::New(g.chief_runner, &runner));
      return runner->Start(session);
    };
    sup_options.on_session_closed = [&] { runner.reset(); };
  }
  if (allreduce) {
    sup_options.max_recoveries = 20;  // each worker's death costs every replica a recovery or two
    sup_options.on_session_ready = [&](Session* session) -> Status {
      if (o.elastic) {  // when a joiner is ready to sync (bench/bench_elastic.sh: how soon the group grows)
        std::printf("%s: session ready: syncing with the live workers [unix ms %lld]\n", me.c_str(),
                    static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::system_clock::now().time_since_epoch())
                                               .count()));
        std::fflush(stdout);
      }
      std::vector<Tensor> none;
      if (!o.elastic) return session->Run(sup_options.run, {}, {}, {g.broadcast}, &none);
      // Elastic: a joiner the others still hold failed (their news of its
      // silence came after its new session said it is back) waits in vain;
      // after 20 s a new session (a recovery) tells them again.
      RunOptions sync = sup_options.run;
      sync.timeout_in_ms = 20000;
      Status synced = session->Run(sync, {}, {}, {g.broadcast}, &none);
      if (errors::IsDeadlineExceeded(synced))
        return errors::Unavailable(me, ": no sync with the group within 20 s (", synced.message(), ")");
      return synced;
    };
  }
  // Elastic: a member lost (or the group changed) costs the survivors the
  // step in flight and a sync from the first of them, in this session.
  CollectiveExecutor* collectives = server->runtime()->collectives();
  constexpr int64_t kGroup = 1;  // AllReduceOptions' default group_key
  int64_t group_now = workers;  // the group's size at the last sync
  if (o.elastic) {
    sup_options.elastic_resync = [&](Session* session, const Status& why) -> Status {
      const int64_t before = group_now;
      const auto t = std::chrono::steady_clock::now();
      std::vector<Tensor> none;
      AF_RETURN_IF_ERROR(session->Run(sup_options.run, {}, {}, {g.broadcast}, &none));
      std::vector<std::string> members;
      const int64_t now = collectives ? collectives->formed_size(kGroup, &members) : 0;
      group_now = now;
      std::string who;
      for (const auto& m : members) who += (who.empty() ? "" : " ") + m.substr(m.rfind('/') + 1);
      std::printf("%s: the group changed (%lld -> %lld workers: %s) after %s; synced from the first in %.0f ms "
                  "[unix ms %lld]\n",
                  me.c_str(), static_cast<long long>(before), static_cast<long long>(now), who.c_str(),
                  why.ToString().c_str(),
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count(),
                  static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count()));
      std::fflush(stdout);
      return Status::OK();
    };
  }
  // Why training pauses: each failure the supervisor recovers from, with the time (for tests and bench/recovery.sh).
  sup_options.on_recovery = [&](const Status& why, int n) {
    std::printf("%s: recovering (%d of at most %d) from %s [unix ms %lld]\n", me.c_str(), n, sup_options.max_recoveries,
                why.ToString().c_str(),
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count()));
    std::fflush(stdout);
  };
  const int64_t per_step = g.sync ? workers - o.backup_workers : allreduce ? workers : 1;
  const int64_t steps_per_epoch = train.size() / (o.batch * per_step);
  const int64_t total = o.steps > 0 ? o.steps : o.epochs * steps_per_epoch;
  // All-reduce by --epochs: training ends when the group has read that many
  // epochs of examples (a data position every member holds, synced), however
  // many steps its sizes took; `total` is then the steps at the full size.
  const int64_t end_position = allreduce && o.steps == 0 ? o.epochs * train.size() : -1;
  if (o.elastic && end_position < 0) sup_options.last_step = total;
  // All-reduce: the data follows the group. Each step reads the next
  // members x batch examples of one stream of reshuffled epochs, this worker
  // the batch of its rank; the group's position in the stream is a variable,
  // synced with the others, so after a change the rest of the epoch is split
  // over the members alive (no example skipped or read twice).
  ElasticSampler sampler(train.size(), 2024);
  // Stragglers (all-reduce): each worker's own time in a step, from its start
  // to its last gradient bucket's all-reduce (its work, not the wait for the
  // others), gathered with the step; every worker sees the same report.
  double own_ms = 0;
  StragglerDetector stragglers({o.straggler_ratio});
  std::string straggling, straggler_tasks;  // the last report, and its tasks when last logged
  int64_t position = 0, members = workers, rank = task;
  std::vector<int64_t> batch_index;
  auto locate = [&](Session* session) -> Status {  // the synced position, this worker's group and rank
    std::vector<Tensor> p;
    AF_RETURN_IF_ERROR(session->Run(sup_options.run, {}, {g.position}, {}, &p));
    if (o.elastic && collectives) {
      std::vector<std::string> names;
      collectives->formed_size(kGroup, &names);
      auto at = std::find(names.begin(), names.end(), so.task.name());
      if (at == names.end()) return errors::Unavailable(me, " is not in its group as formed: it syncs again");
      members = static_cast<int64_t>(names.size());
      rank = at - names.begin();
    }
    position = p[0].scalar<int64_t>();
    return Status::OK();
  };
  auto next_batch = [&](std::vector<std::pair<std::string, Tensor>>* feeds) {
    sampler.Batch(position, members, rank, o.batch, &batch_index);
    Tensor x, y;
    Gather(train, batch_index, 0, o.batch, &x, &y);
    Tensor own(DT_FLOAT, TensorShape{workers});  // this worker's time in its last step, at its place
    std::fill(own.data<float>(), own.data<float>() + workers, 0.f);
    own.data<float>()[task] = static_cast<float>(own_ms);
    *feeds = {{"images", x},
              {"labels", y},
              {"examples_this_step", Tensor::Scalar<int64_t>(o.batch)},
              {"own_step_time", own}};
    if (o.scale_lr) feeds->emplace_back("lr_scale", Tensor::Scalar<float>(static_cast<float>(members) / workers));
  };
  if (allreduce)
    sup_options.feeds_again = [&](Session* session, std::vector<std::pair<std::string, Tensor>>* feeds) -> Status {
      AF_RETURN_IF_ERROR(locate(session));
      if (end_position >= 0 && position >= end_position)  // the others read the last examples while this worker synced
        return errors::OutOfRange("training is over: the sync brought data position ", position, " of ", end_position);
      next_batch(feeds);
      return Status::OK();
    };
  TrainingSupervisor sup(g.def, g.sup, sup_options);
  if (!(s = sup.Start()).ok()) return Fail(me, s);
  if (allreduce && !(s = locate(sup.session())).ok()) return Fail(me, s);
  if (o.elastic && collectives) {  // who the rendezvous round found (the first sync formed the group)
    std::vector<std::string> names;
    group_now = collectives->formed_size(kGroup, &names);
    std::string who;
    for (const auto& n : names) who += (who.empty() ? "" : " ") + n.substr(n.rfind('/') + 1);
    std::printf("%s: the group formed with %lld of %d workers (%s), this one rank %lld\n", me.c_str(),
                static_cast<long long>(group_now), workers, who.c_str(), static_cast<long long>(rank));
  }
  std::FILE* steps_log = nullptr;
  if (!o.log_steps.empty() &&
      !(steps_log = std::fopen((o.log_steps + ".worker_" + std::to_string(task)).c_str(), "a")))
    return Fail(me, errors::NotFound("cannot open ", o.log_steps, ".worker_", task, " to append"));
  std::unique_ptr<FileWriter> events;
  if (!o.logdir.empty()) {
    if (!(s = FileWriter::Create(o.logdir + "/worker_" + std::to_string(task), {}, &events)).ok()) return Fail(me, s);
    if (!(s = events->AddGraph(g.def)).ok()) return Fail(me, s);
    std::printf("%s: TensorBoard events in %s\n", me.c_str(), events->filename().c_str());
  }
  // The chief's test accuracy, written to the events.
  auto evaluate = [&](std::vector<Tensor>* result) -> Status {
    AF_RETURN_IF_ERROR(
        sup.session()->Run({{"images", test.images}, {"labels", test.labels}}, {g.accuracy}, {}, result));
    return events ? events->AddScalar("test_accuracy", (*result)[0].scalar<float>(), sup.global_step()) : Status::OK();
  };

  std::printf("%s of %d: %s training, Fashion-MNIST MLP 784-256-10, Adam(%.4g), batch %d; %lld steps; from step %lld "
              "[unix ms %lld]\n",
              me.c_str(), workers, o.mode.c_str(), o.lr, o.batch, static_cast<long long>(total),
              static_cast<long long>(sup.global_step()),
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count()));
  std::fflush(stdout);  // out now: a test waits for every worker to be training
  // This worker's shard: every workers-th image of a fixed order, reshuffled each pass.
  std::vector<int64_t> shard;
  for (int64_t i = task; i < train.size(); i += workers) shard.push_back(i);
  std::vector<int64_t> order = shard;
  int64_t next = static_cast<int64_t>(order.size()), pass = 0;
  std::vector<Tensor> out;
  const auto t0 = std::chrono::steady_clock::now();
  auto last_print = t0;
  const int64_t first_step = sup.global_step(), first_position = position;
  int64_t mine = 0;
  // For --report: the cluster's examples/s from this worker's 10th step (warm) to the last.
  std::chrono::steady_clock::time_point warm;
  int64_t warm_step = -1, warm_position = 0;
  int recoveries = sup.recoveries();
  double loss_avg = 0;
  float last_rate = 0;                // --scale-lr: the last step's learning rate
  int64_t rate_members = members;     // and the group's size it was for
  // Sync: the stale gradients the accumulators dropped so far (a late or
  // backup worker's work), for the chief's progress lines and events.
  auto stale_note = [&]() -> std::string {
    std::vector<Tensor> n;
    if (g.num_dropped.empty() || !sup.session() || !sup.session()->Run({}, {g.num_dropped}, {}, &n).ok()) return "";
    const int64_t dropped = n[0].scalar<int64_t>();
    if (events) events->AddScalar("stale_gradients_dropped", static_cast<float>(dropped), sup.global_step());
    return "  " + std::to_string(dropped) + " stale gradients dropped";
  };
  auto training = [&] { return end_position >= 0 ? position < end_position : sup.global_step() < total; };
  int64_t epoch_before = allreduce ? sampler.EpochOf(position) : sup.global_step() / steps_per_epoch;
  while (training()) {
    if (next + o.batch > static_cast<int64_t>(order.size())) {
      order = shard;
      std::mt19937_64 rng(1000 + static_cast<uint64_t>(task) * 7919 + static_cast<uint64_t>(pass++));
      std::shuffle(order.begin(), order.end(), rng);
      next = 0;
    }
    std::vector<std::pair<std::string, Tensor>> feeds;
    const auto step_begin = std::chrono::steady_clock::now();
    if (allreduce) {
      next_batch(&feeds);
    } else {
      Tensor x, y;
      Gather(train, order, next, o.batch, &x, &y);
      next += o.batch;
      feeds = {{"images", x}, {"labels", y}};
    }
    if (allreduce && task == o.slow_worker)  // chaos: a slow worker (its own time, as a slow host's)
      std::this_thread::sleep_for(std::chrono::milliseconds(o.slow_ms));
    std::vector<std::string> fetches{g.loss};
    if (allreduce) fetches.insert(fetches.end(), {g.step_times, g.examples_read});
    if (!g.learning_rate.empty()) fetches.push_back(g.learning_rate);
    s = sup.Run(feeds, fetches, {g.train}, &out);
    if (allreduce && errors::IsOutOfRange(s)) break;  // the others finished while this worker synced
    if (!s.ok()) return Fail(me, s);
    // The step, for tests and bench/chaos.sh: its end, the global step after
    // it, and (all-reduce) the data position it read from, the group's size
    // and this worker's rank (ps modes: -1 0 0).
    if (steps_log &&
        std::fprintf(steps_log, "%lld %lld %lld %lld %lld\n",
                     static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                std::chrono::system_clock::now().time_since_epoch())
                                                .count()),
                     static_cast<long long>(sup.global_step()), static_cast<long long>(allreduce ? position : -1),
                     static_cast<long long>(allreduce ? members : 0), static_cast<long long>(allreduce ? rank : 0)) > 0)
      std::fflush(steps_log);  // each line out as it is made: a kill -9 loses none
    if (!g.learning_rate.empty()) {  // --scale-lr: a change of the rate with the group's size is logged
      const float rate = out[3].scalar<float>();
      if (last_rate > 0 && members != rate_members)
        std::printf("%s: learning rate %g -> %g (x %lld/%d: the group %lld -> %lld workers)\n", me.c_str(), last_rate,
                    rate, static_cast<long long>(members), workers, static_cast<long long>(rate_members),
                    static_cast<long long>(members));
      last_rate = rate;
      rate_members = members;
    }
    if (allreduce) {  // the step read position.. position + members x batch (feeds_again may have moved it)
      position += out[2].scalar<int64_t>();  // as the variable moved: by what every member read
      if (collectives)
        own_ms = std::max(0.0, std::chrono::duration<double, std::milli>(collectives->last_bucket_started(kGroup) -
                                                                          step_begin)
                                   .count());
      const Tensor& times = out[1];
      stragglers.Add(std::vector<float>(times.data<float>(), times.data<float>() + times.NumElements()));
      const std::string report = stragglers.Describe("worker");
      std::string who;  // the stragglers' tasks: a change of them is logged (and when)
      for (const auto& st : stragglers.Stragglers()) who += std::to_string(st.task) + " ";
      const bool changed = who != straggler_tasks;
      straggling = report;
      straggler_tasks = who;
      if (changed) {
        std::printf("%s: %s [unix ms %lld]\n", me.c_str(),
                    report.empty() ? "no straggler now" : ("straggler: " + report).c_str(),
                    static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::system_clock::now().time_since_epoch())
                                               .count()));
      }
    }
    // An epoch over: by the data position (all-reduce), else by the global step.
    const int64_t epoch_now = allreduce ? sampler.EpochOf(position) : sup.global_step() / steps_per_epoch;
    const bool epoch_over = epoch_now != epoch_before;
    epoch_before = epoch_now;
    if (sup.recoveries() != recoveries) {  // a step after a recovery went through (the time: for bench/recovery.sh)
      recoveries = sup.recoveries();
      const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
      std::printf("recovered (%d so far): training goes on at step %lld [unix ms %lld]\n", recoveries,
                  static_cast<long long>(sup.global_step()), static_cast<long long>(wall));
    }
    ++mine;
    if (events && !(s = events->AddScalar("loss", out[0].scalar<float>(), sup.global_step())).ok()) return Fail(me, s);
    std::vector<Tensor> accuracy;
    if (events && task == 0 && epoch_over && training() && !(s = evaluate(&accuracy)).ok()) return Fail(me, s);
    if (mine == 10) {
      warm = std::chrono::steady_clock::now();
      warm_step = sup.global_step();
      warm_position = position;
    }
    loss_avg = mine == 1 ? out[0].scalar<float>() : 0.98 * loss_avg + 0.02 * out[0].scalar<float>();
    const auto now = std::chrono::steady_clock::now();
    if (now - last_print > std::chrono::seconds(2) || !training()) {
      last_print = now;
      const double secs = std::chrono::duration<double>(now - t0).count();
      // The cluster's examples: by the data position (all-reduce: exact at any group size).
      const double cluster = static_cast<double>(allreduce ? position - first_position
                                                           : (sup.global_step() - first_step) * o.batch * per_step) /
                             secs;
      const std::string note =
          (task == 0 ? stale_note() : std::string()) + (straggling.empty() ? "" : "  straggler: " + straggling);
      std::printf("epoch %lld/%d  step %lld/%lld  loss %.4f  %6.0f examples/s here  %6.0f examples/s in the cluster%s\n",
                  static_cast<long long>(std::min<int64_t>(epoch_now + 1, o.epochs)),
                  o.epochs, static_cast<long long>(sup.global_step()), static_cast<long long>(total), loss_avg,
                  static_cast<double>(mine * o.batch) / secs, cluster, note.c_str());
      if (events && allreduce)  // every worker's smoothed own time, and the slowest's ratio to the others
        for (int w = 0; w < workers; ++w)
          events->AddScalar("step_time_ms/worker_" + std::to_string(w), static_cast<float>(stragglers.smoothed_ms(w)),
                            sup.global_step());
      std::fflush(stdout);
    }
  }
  if (o.report && task == 0 && warm_step >= 0) {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - warm).count();
    const double cluster = static_cast<double>(allreduce ? position - warm_position
                                                         : (sup.global_step() - warm_step) * o.batch * per_step) /
                           secs;
    std::printf("{\"bench\":\"train_distributed\",\"params\":{\"mode\":\"%s\",\"batch\":%d,\"workers\":%d},"
                "\"metric\":\"throughput\",\"unit\":\"examples/s\",\"median\":%.1f}\n",
                o.mode.c_str(), o.batch, workers, cluster);
    std::fflush(stdout);
  }
  if (task != 0 && !g.done.empty() && !(s = sup.session()->Run({}, {}, {g.done}, &out)).ok()) return Fail(me, s);
  if (workers > 1 && !g.all_done.empty()) {
    // Once this returns every worker has finished training (each gave its
    // float after its last step); a worker that leaves first may fail this
    // one collective elsewhere, which says nothing about the training.
    std::vector<Tensor> end;
    Status over = sup.session()->Run({}, {}, {g.all_done}, &end);
    // Elastic: a member lost at the end: the others sync and meet again.
    for (int i = 0; i < 3 && o.elastic && (errors::IsAborted(over) || errors::IsUnavailable(over)); ++i) {
      over = sup.session()->Run(sup_options.run, {}, {}, {g.broadcast}, &end);
      if (over.ok()) over = sup.session()->Run({}, {}, {g.all_done}, &end);
    }
    if (!over.ok()) std::printf("the end of training was not seen by every worker (%s)\n", over.ToString().c_str());
  }
  // The test accuracy: the chief's, or (elastic) the first live worker's.
  bool evaluates = task == 0;
  if (o.elastic && collectives) {
    std::vector<std::string> members;
    collectives->formed_size(kGroup, &members);
    evaluates = !members.empty() && members.front() == so.task.name();
  }
  if (evaluates) {
    // Tokens for a worker still waiting for one (sync), then the test set.
    if (g.sync && !(s = sup.session()->Run({}, {}, {g.init_tokens}, &out)).ok()) return Fail(me, s);
    if (!(s = evaluate(&out)).ok()) return Fail(me, s);
    std::printf("trained %lld steps: test accuracy %.2f%%\n", static_cast<long long>(sup.global_step()),
                100.0 * out[0].scalar<float>());
    if (g.sync)
      std::printf("%s: each step took the first %d of %d workers' gradients,%s\n", me.c_str(),
                  workers - o.backup_workers, workers, stale_note().c_str());
    if (o.elastic)
      std::printf("%s: %d membership changes synced in the same session, %d recoveries\n", me.c_str(), sup.resyncs(),
                  sup.recoveries());
  }
  if (task == 0 && !g.wait_done.empty()) {
    // Every other worker done, one token each: those training needs (the
    // quorum --min-workers sets, or all but the backup workers) waited for up
    // to a minute, the rest a few seconds each (one that died for good is not
    // waited for long: the others finish within a step of the chief).
    const char* min_env = std::getenv("ACTORFLOW_MIN_WORKERS");
    int needed = workers - 1 - o.backup_workers;
    if (min_env && std::atoi(min_env) > 0) needed = std::min(needed, std::atoi(min_env) - 1);
    int said = 0;
    Status all_done;
    for (; said < workers - 1; ++said) {
      RunOptions wait;
      wait.timeout_in_ms = said < needed ? 60000 : 5000;
      if (!(all_done = sup.session()->Run(wait, {}, {}, {g.wait_done}, &out)).ok()) break;
    }
    if (!all_done.ok())
      std::printf("%d of the %d other workers said they were done (%s)\n", said, workers - 1,
                  all_done.ToString().c_str());
  }
  if (steps_log) std::fclose(steps_log);
  if (events && !(s = events->Close()).ok()) return Fail(me, s);
  if (!(s = sup.Finish()).ok()) return Fail(me, s);
  // The end of training: the chief tells the ps tasks to stop (they exit 0).
  if (task == 0 && !allreduce && !(s = server->ShutdownTasks("ps", "training is over")).ok()) return Fail(me, s);
  return 0;
}
