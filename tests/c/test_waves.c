/*
 * test_waves.c — windows run as waves: results identical under every favor,
 * the figures of each favor on a real program, a change of favor flushing the
 * window, and the trace file.
 */
#include "check.h"
#include "internal.h"

#include <tycho/task.h>
#include <tycho/tycho.h>

#include <unistd.h>

static ty_runtime *make_rt(int cpus) {
  ty_config cfg = {.cpus = cpus, .window = 256};
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&cfg, &rt) == TY_OK);
  return rt;
}

/* Four independent chains of element-wise ops joined at the end; returns the
 * sum. */
static double four_chains(ty_runtime *rt, ty_favor favor, ty_flush_stats *fs) {
  ty_policy p = {.set = TY_POL_FAVOR | TY_POL_FUSE, .favor = favor, .fuse = false};
  CHECK(ty_scope_push(rt, &p, "scope at test") == TY_OK);
  int64_t n = 100000;
  ty_store *x, *acc = NULL;
  CHECK(ty_arange(rt, TY_F64, 0, 0.001, n, &x) == TY_OK);
  for (int c = 0; c < 4; c++) {
    ty_store *k, *y, *z;
    CHECK(ty_scalar_f64(rt, TY_F64, c + 1.0, &k) == TY_OK);
    CHECK(ty_binary(rt, TY_OP_MUL, x, k, &y) == TY_OK);
    CHECK(ty_unary(rt, TY_OP_SIN, y, &z) == TY_OK);
    ty_store_release(y);
    CHECK(ty_binary(rt, TY_OP_ADD, z, k, &y) == TY_OK);
    ty_store_release(z);
    ty_store_release(k);
    if (acc) {
      CHECK(ty_binary(rt, TY_OP_ADD, acc, y, &z) == TY_OK);
      ty_store_release(acc);
      ty_store_release(y);
      acc = z;
    } else {
      acc = y;
    }
  }
  ty_store *s;
  CHECK(ty_reduce(rt, TY_RED_SUM, acc, -1, &s) == TY_OK);
  CHECK(ty_scope_pop(rt) == TY_OK);
  ty_store_release(acc);
  ty_store_release(x);
  CHECK(ty_flush(rt) == TY_OK);
  ty_last_flush_stats(rt, fs);
  ty_value v;
  CHECK(ty_item(rt, s, &v) == TY_OK);
  ty_store_release(s);
  return v.f;
}

TEST(results_identical_under_every_favor) {
  ty_runtime *rt = make_rt(2);
  ty_flush_stats d, m, x;
  double rd = four_chains(rt, TY_FAVOR_DEBUG, &d);
  double rm = four_chains(rt, TY_FAVOR_MIN_PEAK, &m);
  double rx = four_chains(rt, TY_FAVOR_MAX_CONCURRENCY, &x);
  CHECK(rd == rm && rm == rx);
  CHECK(strcmp(d.favor, "debug") == 0);
  CHECK_EQ_INT(d.waves, d.launches);
  CHECK_EQ_INT(d.concurrent, 0);
  CHECK_EQ_INT(x.waves, x.critical_path);
  CHECK(x.waves <= m.waves && m.waves <= d.waves);
  CHECK(x.concurrent > 0);
  CHECK_EQ_INT(m.peak_transient, d.peak_transient);
  CHECK(x.peak_transient >= m.peak_transient);
  ty_runtime_destroy(rt);
}

TEST(change_of_favor_flushes_the_window) {
  ty_runtime *rt = make_rt(2);
  int64_t n = 10;
  ty_store *a, *b;
  CHECK(ty_full(rt, TY_F64, 1, &n, 1.0, &a) == TY_OK);
  ty_stats st;
  ty_get_stats(rt, &st);
  CHECK_EQ_INT(st.flushes, 0);
  ty_policy p = {.set = TY_POL_FAVOR, .favor = TY_FAVOR_DEBUG};
  CHECK(ty_scope_push(rt, &p, "scope") == TY_OK);
  CHECK(ty_full(rt, TY_F64, 1, &n, 2.0, &b) == TY_OK);
  CHECK(ty_scope_pop(rt) == TY_OK);
  ty_get_stats(rt, &st);
  CHECK_EQ_INT(st.flushes, 1);
  ty_store_release(a);
  ty_store_release(b);
  ty_runtime_destroy(rt);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  size_t got = fread(b, 1, (size_t)n, f);
  b[got] = 0;
  fclose(f);
  return b;
}

static int count(const char *hay, const char *needle) {
  int c = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) c++;
  return c;
}

TEST(trace_has_one_event_per_point_task) {
  ty_runtime *rt = make_rt(2);
  char dir[] = "/tmp/tycho_trace_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char json[256], svg[256];
  snprintf(json, sizeof json, "%s/t.json", dir);
  snprintf(svg, sizeof svg, "%s/t.svg", dir);
  CHECK(ty_trace_start(rt, json, svg) == TY_OK);
  CHECK(ty_trace_start(rt, json, NULL) == TY_EINVAL);
  ty_stats before;
  ty_get_stats(rt, &before);
  ty_flush_stats fs;
  (void)four_chains(rt, TY_FAVOR_MAX_CONCURRENCY, &fs);
  ty_stats after;
  ty_get_stats(rt, &after);
  CHECK(ty_trace_stop(rt) == TY_OK);
  char *text = slurp(json);
  CHECK(text != NULL);
  if (text) {
    CHECK_EQ_INT(count(text, "\"cat\":\"task\""), (int)(after.pieces - before.pieces));
    CHECK_STR_CONTAINS(text, "\"traceEvents\"");
    CHECK_STR_CONTAINS(text, "\"name\":\"flush\"");
    CHECK_STR_CONTAINS(text, "\"transient bytes\"");
    CHECK_STR_CONTAINS(text, "\"name\":\"sin\"");
    CHECK(text[strlen(text) - 2] == '}');
  }
  free(text);
  char *pic = slurp(svg);
  CHECK_STR_CONTAINS(pic, "<svg");
  CHECK_STR_CONTAINS(pic, "processor 1");
  free(pic);
  unlink(json);
  unlink(svg);
  rmdir(dir);
  ty_runtime_destroy(rt);
}

/* sin over 2^20 f64 in 16 pieces (mode all, overdecompose 8, no fusion) on
 * `cpus`; its values in *out (malloc'd). With a trace file, the workers'
 * pieces of the sin launch into seq[worker] (time order), their counts into
 * len[worker]. */
static void sin_pieces(int cpus, const char *json, double **out, int seq[2][16], int len[2]) {
  const int64_t n = (int64_t)1 << 20;
  ty_runtime *rt = make_rt(cpus);
  if (json) CHECK(ty_trace_start(rt, json, NULL) == TY_OK);
  ty_policy p = {.set = TY_POL_MODE | TY_POL_OVERDECOMPOSE | TY_POL_FUSE,
                 .mode = TY_MODE_ALL, .overdecompose = 8, .fuse = false};
  CHECK(ty_scope_push(rt, &p, "scope at test") == TY_OK);
  ty_store *x = NULL, *y = NULL;
  CHECK(ty_arange(rt, TY_F64, 0, 0.001, n, &x) == TY_OK);
  CHECK(ty_unary(rt, TY_OP_SIN, x, &y) == TY_OK);
  CHECK(ty_scope_pop(rt) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK);
  *out = malloc((size_t)n * sizeof **out);
  CHECK(ty_store_read(rt, y, *out, (size_t)n * sizeof **out) == TY_OK);
  if (json) {
    CHECK(ty_trace_stop(rt) == TY_OK);
    char *text = slurp(json);
    CHECK(text != NULL);
    /* events in time order per worker: the trace lists a wave's pieces by
     * slot, so sort each worker's by their start */
    double ts[2][16];
    for (const char *at = text; at && (at = strstr(at, "{\"name\":\"sin\",\"cat\":\"task\"")); at++) {
      int worker, piece, pieces;
      double t0;
      const char *t = strstr(at, "\"tid\":"), *a = strstr(at, "\"piece\":");
      if (!t || !a || sscanf(t, "\"tid\":%d,\"ts\":%lf", &worker, &t0) != 2 ||
          sscanf(a, "\"piece\":%d,\"pieces\":%d", &piece, &pieces) != 2 || pieces != 16 || worker < 1 ||
          worker > 2 || len[worker - 1] >= 16)
        continue;
      int w = worker - 1, k = len[w]++;
      for (; k > 0 && ts[w][k - 1] > t0; k--) ts[w][k] = ts[w][k - 1], seq[w][k] = seq[w][k - 1];
      ts[w][k] = t0, seq[w][k] = piece;
    }
    free(text);
  }
  ty_store_release(y);
  ty_store_release(x);
  ty_runtime_destroy(rt);
}

/* A launch of more pieces than workers runs by home (exec.c, home_slots):
 * a worker takes the pieces of its half of the store first to last, then
 * what is left of the other half last first. So, whatever the timing, each
 * worker's pieces are a run up from a half's first piece (0 or 8) and then
 * a run down from the other half's last one left; claimed one by one in
 * launch order (before), each worker took every other piece. Every piece
 * runs once, and the values are 1 processor's bits. */
TEST(a_launch_of_more_pieces_than_workers_runs_by_home) {
  char dir[] = "/tmp/tycho_home_XXXXXX", json[64];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(json, sizeof json, "%s/t.json", dir);
  double *one = NULL, *two = NULL;
  int seq[2][16], len[2] = {0, 0}, unused[2][16], unused_len[2] = {0, 0};
  sin_pieces(1, NULL, &one, unused, unused_len);
  sin_pieces(2, json, &two, seq, len);
  CHECK(memcmp(one, two, sizeof(double) << 20) == 0);
  CHECK_EQ_INT(len[0] + len[1], 16);
  int seen = 0;
  for (int w = 0; w < 2; w++) {
    int i = 0;
    if (len[w] > 0 && (seq[w][0] == 0 || seq[w][0] == 8))
      for (i = 1; i < len[w] && seq[w][i] == seq[w][i - 1] + 1;) i++;
    for (int j = i + 1; j < len[w]; j++) CHECK_EQ_INT(seq[w][j], seq[w][j - 1] - 1);
    for (int j = 0; j < len[w]; j++) seen |= 1 << seq[w][j];
  }
  CHECK_EQ_INT(seen, 0xffff);
  CHECK(len[0] >= 1); /* the flushing thread claims its half's first piece at once */
  free(one);
  free(two);
  unlink(json);
  rmdir(dir);
}

TEST(stats_format_text_json_csv) {
  ty_runtime *rt = make_rt(2);
  ty_flush_stats fs;
  (void)four_chains(rt, TY_FAVOR_MIN_PEAK, &fs);
  char *t = NULL;
  CHECK(ty_stats_format(rt, "text", &t) == TY_OK);
  CHECK_STR_CONTAINS(t, "waves");
  CHECK_STR_CONTAINS(t, "transient peak");
  free(t);
  CHECK(ty_stats_format(rt, "json", &t) == TY_OK);
  CHECK_STR_CONTAINS(t, "\"waves\": ");
  CHECK_STR_CONTAINS(t, "\"favor\": \"min-peak-memory\"");
  free(t);
  CHECK(ty_stats_format(rt, "csv", &t) == TY_OK);
  CHECK_STR_CONTAINS(t, "name,value\nlaunches,");
  free(t);
  CHECK(ty_stats_format(rt, "xml", &t) == TY_EINVAL);
  ty_runtime_destroy(rt);
}

static void sleep_hook(void *ud) {
  (void)ud;
  usleep(5000);
}

/* ty_set_timing: the flushes' phases add up to the time in flushes, the rest
 * of the wall time is the program's, and off means no figures. */
TEST(timing_splits_the_wall_time_of_flushes) {
  ty_runtime *rt = make_rt(2);
  ty_flush_stats fs;
  ty_stats s;
  (void)four_chains(rt, TY_FAVOR_MIN_PEAK, &fs);
  ty_get_stats(rt, &s);
  CHECK(s.timed_ns == 0 && s.flush_ns == 0 && s.tasks_ns == 0 && s.launch_ns == 0);
  char *t = NULL;
  CHECK(ty_stats_format(rt, "text", &t) == TY_OK);
  CHECK(strstr(t, "  time ") == NULL); /* no line without figures */
  free(t);

  CHECK(!ty_set_timing(rt, true));
  ty_set_flush_hook(rt, sleep_hook, NULL);
  const double sum = four_chains(rt, TY_FAVOR_MIN_PEAK, &fs);
  usleep(20000); /* the program's own time */
  ty_get_stats(rt, &s);
  CHECK(s.collect_ns >= 5000000);        /* the hook, once */
  CHECK(s.tasks_ns > 0 && s.launch_ns > 0 && s.schedule_ns > 0);
  CHECK_EQ_INT(s.flush_ns, s.collect_ns + s.fuse_ns + s.schedule_ns + s.tasks_ns + s.launch_ns);
  CHECK(s.timed_ns >= s.flush_ns + 20000000);
  CHECK(ty_stats_format(rt, "text", &t) == TY_OK);
  CHECK_STR_CONTAINS(t, "% in flushes (tasks ");
  CHECK_STR_CONTAINS(t, "outside them (the program)");
  free(t);
  CHECK(ty_stats_format(rt, "json", &t) == TY_OK);
  CHECK_STR_CONTAINS(t, "\"tasks_ns\": ");
  free(t);

  CHECK(ty_set_timing(rt, true)); /* on already: the figures go on */
  ty_stats s2;
  ty_get_stats(rt, &s2);
  CHECK(s2.flush_ns == s.flush_ns && s2.timed_ns >= s.timed_ns);
  CHECK(ty_set_timing(rt, false)); /* off: nothing more is added */
  ty_get_stats(rt, &s);
  CHECK_NEAR(four_chains(rt, TY_FAVOR_MIN_PEAK, &fs), sum, 0);
  usleep(2000);
  ty_get_stats(rt, &s2);
  CHECK(s2.timed_ns == s.timed_ns && s2.flush_ns == s.flush_ns && s2.tasks_ns == s.tasks_ns);
  CHECK(!ty_set_timing(rt, true)); /* on again: from zero */
  ty_get_stats(rt, &s);
  CHECK(s.flush_ns == 0 && s.tasks_ns == 0 && s.collect_ns == 0);
  ty_runtime_destroy(rt);

  /* the configuration's timing: from creation */
  ty_config cfg = {.cpus = 1, .timing = true};
  CHECK(ty_runtime_create(&cfg, &rt) == TY_OK);
  (void)four_chains(rt, TY_FAVOR_MIN_PEAK, &fs);
  ty_get_stats(rt, &s);
  CHECK(s.timed_ns > 0);
  CHECK(s.flush_ns > 0);
  CHECK(s.tasks_ns > 0);
  CHECK_EQ_INT(s.collect_ns, 0);
  ty_runtime_destroy(rt);
}

static const check_case cases[] = {
    CASE(results_identical_under_every_favor),
    CASE(change_of_favor_flushes_the_window),
    CASE(trace_has_one_event_per_point_task),
    CASE(stats_format_text_json_csv),
    CASE(timing_splits_the_wall_time_of_flushes),
    CASE(a_launch_of_more_pieces_than_workers_runs_by_home),
};
CHECK_MAIN(cases)
