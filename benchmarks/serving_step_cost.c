/*===- serving_step_cost.c - the serving loop over the C API alone --------===*\
|*                                                                            *|
|* The C half of benchmarks/serving_step_cost.py: it serves the workload file *|
|* that script writes through attnc_c.h with the same stand-in model (each    *|
|* sampler's token is the row it samples from, no request stops before its   *|
|* max_tokens), and prints one JSON line per run: the steps, the loop's wall  *|
|* and CPU seconds, and the scheduler's totals, which the Python loops must   *|
|* reproduce. What it times is what a C engine pays per step: idle, step,     *|
|* step info, commit, step destroy.                                           *|
|*                                                                            *|
|*   attnc-serving-step-cost WORKLOAD [RUNS]                                  *|
|*                                                                            *|
|* The workload file (text, whitespace-separated):                            *|
|*   attnc-serving-workload 1                                                 *|
|*   pages page_size token_budget max_running policy-name                     *|
|*   num_requests                                                             *|
|*   then per request: id max_tokens namespace prompt_len token...            *|
\*===----------------------------------------------------------------------===*/

#include "attnc/attnc_c.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct Workload {
  int64_t pages, page_size, token_budget, max_running;
  char policy[32];
  int64_t num_requests;
  attnc_request *requests; /* prompts owned here */
} Workload;

static int fail(const char *what) {
  fprintf(stderr, "attnc-serving-step-cost: %s\n", what);
  return 1;
}

static int check(attnc_status status, const char *call) {
  if (status == ATTNC_OK)
    return 0;
  fprintf(stderr, "attnc-serving-step-cost: %s: %s: %s\n", call,
          attnc_status_name(status), attnc_last_error());
  return 1;
}

static int readWorkload(const char *path, Workload *w) {
  FILE *file = fopen(path, "r");
  if (!file)
    return fail("cannot open the workload file");
  int version = 0;
  char magic[64];
  int ok =
      fscanf(file, "%63s %d", magic, &version) == 2 &&
      strcmp(magic, "attnc-serving-workload") == 0 && version == 1 &&
      fscanf(file,
             "%" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 " %31s %" SCNd64,
             &w->pages, &w->page_size, &w->token_budget, &w->max_running,
             w->policy, &w->num_requests) == 6 &&
      w->num_requests > 0;
  if (ok) {
    w->requests = calloc((size_t)w->num_requests, sizeof *w->requests);
    ok = w->requests != NULL;
  }
  for (int64_t i = 0; ok && i < w->num_requests; ++i) {
    attnc_request *r = &w->requests[i];
    attnc_request_init(r);
    ok = fscanf(file, "%" SCNd64 " %" SCNd64 " %" SCNu64 " %" SCNd64, &r->id,
                &r->max_tokens, &r->cache_namespace, &r->prompt_len) == 4 &&
         r->prompt_len > 0;
    int32_t *prompt =
        ok ? malloc((size_t)r->prompt_len * sizeof *prompt) : NULL;
    ok = ok && prompt;
    for (int64_t t = 0; ok && t < r->prompt_len; ++t)
      ok = fscanf(file, "%" SCNd32, &prompt[t]) == 1;
    r->prompt = prompt;
  }
  fclose(file);
  return ok ? 0 : fail("the workload file is malformed");
}

/* Seconds of `clock`: CLOCK_MONOTONIC (wall) or CLOCK_PROCESS_CPUTIME_ID
 * (this process's CPU, what a loaded machine's other work leaves out). */
static double now(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One run: a fresh pool, cache and scheduler, every request queued, then
 * the loop timed until the scheduler is idle. */
static int serve(const Workload *w) {
  attnc_kv_pool_config poolConfig;
  attnc_kv_pool_config_init(&poolConfig);
  poolConfig.num_pages = w->pages;
  poolConfig.page_size = w->page_size;
  poolConfig.memory = ATTNC_KV_ACCOUNTING;
  attnc_scheduler_config config;
  attnc_scheduler_config_init(&config);
  config.token_budget = w->token_budget;
  config.max_running = w->max_running;
  config.policy = (attnc_policy)-1;
  for (int p = 0; *attnc_policy_name(p); ++p)
    if (strcmp(attnc_policy_name(p), w->policy) == 0)
      config.policy = (attnc_policy)p;
  attnc_kv_pool pool = NULL;
  attnc_radix_cache cache = NULL;
  attnc_scheduler scheduler = NULL;
  if (check(attnc_kv_pool_create(&poolConfig, &pool), "pool") ||
      check(attnc_radix_cache_create(pool, &cache), "cache") ||
      check(attnc_scheduler_create(&config, pool, cache, &scheduler),
            "scheduler"))
    return 1;
  for (int64_t i = 0; i < w->num_requests; ++i)
    if (check(attnc_scheduler_add(scheduler, &w->requests[i]), "add"))
      return 1;

  /* Room for a step's samples: at most one per running sequence. */
  size_t room = (size_t)w->max_running + 1;
  attnc_sample *samples = malloc(room * sizeof *samples);
  int64_t *finished = malloc(room * sizeof *finished);
  int64_t steps = 0;
  double start = now(CLOCK_MONOTONIC);
  double cpuStart = now(CLOCK_PROCESS_CPUTIME_ID);
  while (attnc_scheduler_idle(scheduler) == 0) {
    attnc_step step = NULL;
    attnc_step_info info;
    if (check(attnc_scheduler_step(scheduler, &step), "step") ||
        check(attnc_step_get_info(step, &info), "step info"))
      return 1;
    if ((size_t)info.num_samplers > room)
      return fail("more samplers than running sequences");
    for (int64_t k = 0; k < info.num_samplers; ++k) {
      samples[k].request = info.samplers[k];
      samples[k].branch = info.sampler_branches[k];
      samples[k].token = info.sample_rows[k]; /* the stand-in model */
      samples[k].stop = 0;
    }
    int64_t numFinished = 0;
    if (check(attnc_scheduler_commit(scheduler, samples, info.num_samplers,
                                     finished, &numFinished),
              "commit"))
      return 1;
    ++steps;
    attnc_step_destroy(step);
  }
  double seconds = now(CLOCK_MONOTONIC) - start;
  double cpuSeconds = now(CLOCK_PROCESS_CPUTIME_ID) - cpuStart;
  attnc_scheduler_stats stats;
  if (check(attnc_scheduler_get_stats(scheduler, &stats), "stats"))
    return 1;
  printf("{\"steps\": %" PRId64 ", \"seconds\": %.9f, \"cpu_seconds\": %.9f"
         ", \"prompt_tokens\": %" PRId64 ", \"cached_tokens\": %" PRId64
         ", \"computed_prefill_tokens\": %" PRId64 ", \"preemptions\": %" PRId64
         ", \"finished\": %" PRId64 "}\n",
         steps, seconds, cpuSeconds, stats.prompt_tokens, stats.cached_tokens,
         stats.computed_prefill_tokens, stats.preemptions, stats.finished);
  free(samples);
  free(finished);
  attnc_scheduler_destroy(scheduler);
  attnc_radix_cache_destroy(cache);
  attnc_kv_pool_destroy(pool);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3)
    return fail("usage: attnc-serving-step-cost WORKLOAD [RUNS]");
  int runs = argc == 3 ? atoi(argv[2]) : 1;
  if (runs < 1)
    return fail("RUNS must be a positive number");
  Workload w;
  memset(&w, 0, sizeof w);
  if (readWorkload(argv[1], &w))
    return 1;
  for (int run = 0; run < runs; ++run)
    if (serve(&w))
      return 1;
  return 0;
}
