/*
 * test_rewrite.c — the `parallel<...> do` rewriter (lua/rewrite.c): what it
 * produces, that every line keeps its number, that strings, comments and
 * comparisons are never touched, its errors (chunk:line, the valid values,
 * "near <eof>" for a header cut short), and a few hundred generated chunks.
 *
 * rewrite.c has no Lua dependency; it is compiled into this test directly
 * (test executables link tycho_runtime only).
 */
#include "check.h"

#include "../../lua/rewrite.c"

/* ---- helpers ----------------------------------------------------------------- */

typedef struct rw_result {
  int r;
  char *out; /* the rewritten text, or a copy of the input when unchanged */
  char err[512];
} rw_result;

static rw_result rw_chunk(const char *src, const char *chunk) {
  rw_result res;
  memset(&res, 0, sizeof res);
  size_t outlen = 0;
  res.r = tl_rewrite(src, strlen(src), chunk, &res.out, &outlen, res.err, sizeof res.err);
  if (res.r == TL_REWRITE_DONE) {
    CHECK(res.out != NULL);
    CHECK_EQ_INT(strlen(res.out), outlen);
  } else {
    CHECK(res.out == NULL);
    res.out = strdup(src);
  }
  return res;
}

static rw_result rw(const char *src) { return rw_chunk(src, "@t.lua"); }

static int count_lines(const char *s) {
  int n = 1;
  for (; *s; s++)
    if (*s == '\n') n++;
  return n;
}

static int count_str(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* Lines as Lua's lexer counts them: \n, \r, \r\n and \n\r are one break each. */
static int lua_lines(const char *s, size_t upto) {
  int n = 1;
  for (size_t i = 0; s[i] && i < upto;) {
    char c = s[i++];
    if (c != '\n' && c != '\r') continue;
    n++;
    if ((s[i] == '\n' || s[i] == '\r') && s[i] != c) i++;
  }
  return n;
}

/* The 1-based line (Lua's count) of the first occurrence of needle, 0 when absent. */
static int lua_line_of(const char *hay, const char *needle) {
  const char *p = strstr(hay, needle);
  return p ? lua_lines(hay, (size_t)(p - hay)) : 0;
}

/* The 1-based line of the first occurrence of needle, 0 when absent. */
static int line_of(const char *hay, const char *needle) {
  const char *p = strstr(hay, needle);
  if (!p) return 0;
  int line = 1;
  for (const char *q = hay; q < p; q++)
    if (*q == '\n') line++;
  return line;
}

#define OPEN "do local __tycho_scope <close> = require(\"tycho\").parallel("

/* ---- what it produces ------------------------------------------------------------ */

TEST(rewrites_header_on_its_line) {
  rw_result r = rw("local a = 1\nparallel<mode=all, overdecompose=2> do\n  x = 1\nend\n");
  CHECK_EQ_INT(r.r, TL_REWRITE_DONE);
  CHECK(strcmp(r.out, "local a = 1\n" OPEN "{mode=\"all\", overdecompose=2}, nil, "
                      "\"scope at t.lua:2\");\n  x = 1\nend\n") == 0);
  free(r.out);
}

TEST(values_are_canonical) {
  rw_result r = rw("parallel<parallel=single, min_chunk=\"64KiB\", memory=1e6, fuse=off, "
                   "fastmath=on, favor=max-concurrency, stream='relaxed',> do end");
  CHECK_EQ_INT(r.r, TL_REWRITE_DONE);
  CHECK_STR_CONTAINS(r.out, "{mode=\"single\", min_chunk=65536, memory=1000000, fuse=false, "
                            "fastmath=true, favor=\"max-concurrency\", stream=\"relaxed\"}");
  free(r.out);
  r = rw("parallel<memory=off, overdecompose=16, min_chunk=4096> do end");
  CHECK_STR_CONTAINS(r.out, "{memory=0, overdecompose=16, min_chunk=4096}");
  free(r.out);
  r = rw("parallel<mode=task> do end");
  CHECK_STR_CONTAINS(r.out, "{mode=\"task\"}");
  free(r.out);
}

TEST(block_starting_with_paren_is_not_a_call) {
  rw_result r = rw("parallel<mode=all> do(f)() end");
  CHECK_EQ_INT(r.r, TL_REWRITE_DONE);
  CHECK_STR_CONTAINS(r.out, "\"scope at t.lua:1\");(f)() end");
  free(r.out);
}

TEST(nested_and_repeated_scopes) {
  rw_result r = rw("parallel<mode=all> do\n"
                   "  parallel<overdecompose=4> do\n"
                   "    parallel<mode=single> do x() end\n"
                   "  end\n"
                   "end\n"
                   "parallel<fuse=false> do end parallel<fuse=true> do end\n");
  CHECK_EQ_INT(r.r, TL_REWRITE_DONE);
  CHECK_EQ_INT(count_str(r.out, OPEN), 5);
  CHECK_EQ_INT(line_of(r.out, "t.lua:3"), 3);
  CHECK_EQ_INT(line_of(r.out, "x()"), 3);
  CHECK_EQ_INT(count_str(r.out, "t.lua:6"), 2);
  CHECK_EQ_INT(count_lines(r.out), 7);
  free(r.out);
}

TEST(header_over_lines_keeps_following_lines) {
  const char *src = "parallel <\n"
                    "  mode = all, -- every processor\n"
                    "  --[[ a long\n comment ]] overdecompose = 2\n"
                    "> do marker4()\n"
                    "marker5()\n";
  rw_result r = rw(src);
  CHECK_EQ_INT(r.r, TL_REWRITE_DONE);
  CHECK_EQ_INT(count_lines(r.out), count_lines(src));
  CHECK_EQ_INT(line_of(r.out, OPEN), 1);
  CHECK_EQ_INT(line_of(r.out, "marker4"), 5);
  CHECK_EQ_INT(line_of(r.out, "marker5"), 6);
  CHECK_STR_CONTAINS(r.out, "{mode=\"all\", overdecompose=2}");
  free(r.out);
}

/* A lone \n and a lone \r that a comment or spaces kept apart inside a
 * header are two lines; side by side in the output they would read as one
 * \n\r break and move every later line up (found by tests/fuzz/fuzz_rewrite:
 * corpus/rewrite/mixed_breaks.lua). Same for the header's last break and the
 * byte after `do` (corpus/rewrite/crash_break_after_do.lua). */
TEST(lone_breaks_in_header_stay_apart) {
  static const struct {
    const char *src;
    int marker_line;
  } cases[] = {
      {"parallel<mode=all\n--c\r> do\nmarker()\nend\n", 4},
      {"parallel<mode=all\r--c\n> do\nmarker()\nend\n", 4},
      {"parallel<mode=all \n \r > do marker() end", 3},
      {"parallel<mode=all --[[\n]] \r> do marker() end", 3},
      {"parallel<mode=all>\ndo\rmarker() end", 3},
      {"parallel<favor=debug>\rdo\nmarker() end", 3}, /* corpus/rewrite/crash_break_after_do.lua */
      {"parallel<mode=all>\r\ndo\n\rmarker() end", 3},
      {"parallel<mode=all>\rdo\r\nmarker() end", 3},
      {"parallel<mode=all\n\r\n\r> do marker() end", 3},
      {"parallel<mode=all\n\n\r\r> do marker() end", 4},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const char *src = cases[c].src;
    rw_result r = rw(src);
    CHECK_EQ_INT(r.r, TL_REWRITE_DONE);
    CHECK_EQ_INT(lua_line_of(src, "marker"), cases[c].marker_line);
    if (lua_line_of(r.out, "marker") != cases[c].marker_line)
      fprintf(stderr, "case %zu: marker moved to line %d\n", c, lua_line_of(r.out, "marker"));
    CHECK_EQ_INT(lua_line_of(r.out, "marker"), cases[c].marker_line);
    CHECK_EQ_INT(lua_lines(r.out, strlen(r.out)), lua_lines(src, strlen(src)));
    free(r.out);
  }
}

TEST(crlf_line_breaks_are_kept) {
  const char *src = "a = 1\r\nparallel<mode=all,\r\n overdecompose=3> do\r\n b = 2\r\nend\r\n";
  rw_result r = rw(src);
  CHECK_EQ_INT(r.r, TL_REWRITE_DONE);
  CHECK_EQ_INT(count_str(r.out, "\r\n"), 5);
  CHECK_EQ_INT(line_of(r.out, "b = 2"), 4);
  CHECK_STR_CONTAINS(r.out, "\"scope at t.lua:2\");\r\n\r\n b = 2");
  free(r.out);
}

TEST(no_sugar_means_no_copy) {
  const char *plain[] = {
      "local x = 1\nreturn x\n",
      "",
      "parallel = 3",
      "local parallel <const> = 4\nreturn parallel",
      "if parallel<x then end",
      "if parallel < x then end",
      "if parallel<=x then end",
      "if parallel<x==y then end",
      "if parallel < x == y then end",
      "return t.parallel<mode",
      "return t.parallel<mode=1",
      "obj:parallel<k=1",
      "local s = 'parallel<mode=all> do'",
      "local s = \"parallel<mode=all> do\"",
      "local s = \"a\\\"parallel<mode=all> do\"",
      "local s = 'it\\'s parallel<mode=all> do'",
      "local s = [[\nparallel<mode=all> do\n]]",
      "local s = [==[ ]] parallel<mode=all> do ]=] ]==]",
      "-- parallel<mode=all> do\nx = 1",
      "--[[ parallel<mode=all> do ]] x = 1",
      "--[=[\nparallel<mode=all> do\n]=]",
      "local s = \"a\\z\n   parallel<mode=all> do\"",
      "local s = \"a\\\nparallel<mode=all> do\"",
      "myparallel<mode=all> do end",
      "parallel_x<mode=all> do end",
      "goto parallel ::parallel::",
      "x = 0x1parallel",
  };
  for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
    char *out = (char *)1;
    char err[256];
    int r = tl_rewrite(plain[i], strlen(plain[i]), "@t.lua", &out, NULL, err, sizeof err);
    if (r != TL_REWRITE_SAME) fprintf(stderr, "case %zu: %s\n", i, plain[i]);
    CHECK_EQ_INT(r, TL_REWRITE_SAME);
    CHECK(out == NULL);
  }
}

TEST(strings_and_comments_beside_sugar_are_untouched) {
  const char *src = "local a = 'parallel<mode=all> do' parallel<mode=single> do\n"
                    "  local b = [[parallel<mode=task> do]] -- parallel<mode=all> do\n"
                    "end --[[ parallel<mode=all> do ]]\n";
  rw_result r = rw(src);
  CHECK_EQ_INT(r.r, TL_REWRITE_DONE);
  CHECK_EQ_INT(count_str(r.out, OPEN), 1);
  CHECK_STR_CONTAINS(r.out, "local a = 'parallel<mode=all> do' " OPEN "{mode=\"single\"}");
  CHECK_STR_CONTAINS(r.out, "\n  local b = [[parallel<mode=task> do]] -- parallel<mode=all> do\n"
                            "end --[[ parallel<mode=all> do ]]\n");
  free(r.out);
}

/* ---- chunk names ---------------------------------------------------------------------- */

TEST(origin_names_the_chunk_like_lua) {
  rw_result r = rw_chunk("\n\nparallel<mode=all> do end", "=stdin");
  CHECK_STR_CONTAINS(r.out, "\"scope at stdin:3\"");
  free(r.out);
  r = rw_chunk("parallel<mode=all> do end", "parallel<mode=all> do end");
  CHECK_STR_CONTAINS(r.out, "\"scope at [string \\\"parallel<mode=all> do end\\\"]:1\"");
  free(r.out);
  r = rw_chunk("parallel<mode=all> do end\n", "parallel<mode=all> do end\n");
  CHECK_STR_CONTAINS(r.out, "[string \\\"parallel<mode=all> do end...\\\"]:1");
  free(r.out);
  r = rw_chunk("parallel<mode=all> do end",
               "@/a/very/long/path/to/some/directory/deep/inside/the/tree/of/a/project/script.lua");
  CHECK_STR_CONTAINS(r.out, "\"scope at ...");
  CHECK_STR_CONTAINS(r.out, "/project/script.lua:1\"");
  CHECK(strlen(strstr(r.out, "\"scope at")) < TY_MAX_ORIGIN + 4);
  free(r.out);
  r = rw_chunk("parallel<mode=all> do end", NULL); /* lua_load's name for NULL: "?" */
  CHECK_STR_CONTAINS(r.out, "\"scope at [string \\\"?\\\"]:1\"");
  free(r.out);
}

/* ---- errors ------------------------------------------------------------------------------ */

static void check_error(const char *src, const char *chunk, const char *want1, const char *want2) {
  rw_result r = rw_chunk(src, chunk);
  if (r.r != TL_REWRITE_ERROR) fprintf(stderr, "no error for: %s\n", src);
  CHECK_EQ_INT(r.r, TL_REWRITE_ERROR);
  CHECK_STR_CONTAINS(r.err, want1);
  if (want2) CHECK_STR_CONTAINS(r.err, want2);
  free(r.out);
}

TEST(errors_name_chunk_line_and_valid_values) {
  check_error("x = 1\n\nparallel<colour=red> do end", "@s.lua",
              "s.lua:3: parallel<...>: unknown key 'colour'",
              "(valid keys: mode (or parallel), overdecompose, min_chunk, favor, memory, stream, "
              "fuse, fastmath, target)");
  check_error("parallel<mode=most> do end", "@s.lua",
              "s.lua:1: parallel<...>: mode must be one of auto, all, single, task; got 'most'",
              NULL);
  check_error("parallel<parallel=most> do end", "=stdin", "stdin:1: parallel<...>: parallel must be one of auto, all, single, task", NULL);
  check_error("parallel<mode=all,\n overdecompose=0> do end", "@s.lua",
              "s.lua:2: parallel<...>: overdecompose must be an integer in 1..4096, got '0'", NULL);
  check_error("parallel<overdecompose=n> do end", "@s.lua", "got 'n'",
              "use tycho.parallel{...}");
  check_error("parallel<favor=fast> do end", "@s.lua",
              "favor must be one of debug, min-peak-memory, max-concurrency; got 'fast'", NULL);
  check_error("parallel<fuse=maybe> do end", "@s.lua", "fuse must be true or false", NULL);
  check_error("parallel<stream=loose> do end", "@s.lua", "stream must be strict or relaxed", NULL);
  check_error("parallel<min_chunk=lots> do end", "@s.lua", "min_chunk must be a size such as 64KiB",
              NULL);
  check_error("parallel<mode=all, mode=single> do end", "@s.lua", "'mode' is given twice", NULL);
  check_error("parallel<mode=all, parallel=single> do end", "@s.lua", "'parallel' is given twice",
              "same key");
  check_error("parallel<mode=all> x = 1", "@s.lua", "s.lua:1: parallel<...>: expected 'do'",
              "near 'x'");
  check_error("parallel<mode=all> done()", "@s.lua", "expected 'do'", "near 'done'");
  check_error("parallel<mode=all; fuse=off> do end", "@s.lua", "expected ',' or '>'", "near ';'");
  check_error("parallel<mode=> do end", "@s.lua", "expected a value for 'mode'", "near '>'");
  check_error("parallel<mode=\"a\\\"ll\"> do end", "@s.lua", "plain text on one line", NULL);
  check_error("parallel<mode=all, 3=4> do end", "@s.lua", "expected a key", NULL);
}

TEST(header_cut_short_is_incomplete_at_eof) {
  const char *cut[] = {"parallel<mode=all,", "parallel<mode=all", "parallel<mode=",
                       "parallel<mode=all>", "parallel<mode=all> -- comment\n",
                       "parallel<mode=\"all"};
  for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
    rw_result r = rw_chunk(cut[i], "=stdin");
    CHECK_EQ_INT(r.r, TL_REWRITE_ERROR);
    size_t n = strlen(r.err);
    if (n < 5 || strcmp(r.err + n - 5, "<eof>") != 0) fprintf(stderr, "case %zu: %s\n", i, r.err);
    CHECK(n >= 5 && strcmp(r.err + n - 5, "<eof>") == 0);
    free(r.out);
  }
}

TEST(small_error_buffer_is_safe) {
  char err[8];
  char *out = NULL;
  const char *src = "parallel<colour=red> do end";
  CHECK_EQ_INT(tl_rewrite(src, strlen(src), "@t.lua", &out, NULL, err, sizeof err),
               TL_REWRITE_ERROR);
  CHECK(strlen(err) == 7);
  CHECK_EQ_INT(tl_rewrite(src, strlen(src), "@t.lua", &out, NULL, NULL, 0), TL_REWRITE_ERROR);
  CHECK(out == NULL);
}

/* ---- generated chunks ------------------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (unsigned)(rng_state % n);
}

typedef struct gen {
  char *p;
  size_t len, cap;
  int line;     /* current line, from 1 */
  int headers;  /* sugar headers written */
  int markers;  /* markers written: m<k>_<line> */
} gen;

static void g_add(gen *g, const char *s) {
  size_t n = strlen(s);
  if (g->len + n + 1 > g->cap) {
    g->cap = (g->len + n + 1) * 2;
    g->p = realloc(g->p, g->cap);
  }
  memcpy(g->p + g->len, s, n + 1);
  g->len += n;
  for (; *s; s++)
    if (*s == '\n') g->line++;
}

/* Blank between header tokens: nothing, spaces, line breaks, comments. */
static void g_blank(gen *g) {
  switch (rnd(6)) {
  case 0: break;
  case 1: g_add(g, " "); break;
  case 2: g_add(g, "\n"); break;
  case 3: g_add(g, " -- note\n  "); break;
  case 4: g_add(g, " --[[ a\nlong ]] "); break;
  default: g_add(g, "\t\n \n"); break;
  }
}

static void g_marker(gen *g) {
  char m[48];
  snprintf(m, sizeof m, " m%d_%d() ", g->markers++, g->line);
  g_add(g, m);
}

static const char *const values[][4] = {
    {"mode", "all", "single", "\"task\""},
    {"parallel", "auto", "all", "'single'"},
    {"overdecompose", "1", "2", "16"},
    {"min_chunk", "64KiB", "\"1MB\"", "4096"},
    {"favor", "debug", "max-concurrency", "min-peak-memory"},
    {"memory", "256MB", "off", "\"1GiB\""},
    {"stream", "strict", "relaxed", "'strict'"},
    {"fuse", "on", "false", "true"},
};

static void g_header(gen *g) {
  g_add(g, " parallel");
  g_blank(g);
  g_add(g, "<");
  int nkeys = 1 + (int)rnd(3);
  unsigned used = 0;
  for (int k = 0; k < nkeys; k++) {
    unsigned key;
    do key = rnd(8);
    while ((used >> key) & 1 || (key <= 1 && (used & 3)));
    used |= 1u << key;
    if (k) {
      g_add(g, ",");
      g_blank(g);
    }
    g_blank(g);
    g_add(g, values[key][0]);
    g_blank(g);
    g_add(g, "=");
    g_blank(g);
    g_add(g, values[key][1 + rnd(3)]);
    g_blank(g);
  }
  if (rnd(4) == 0) g_add(g, ",");
  g_add(g, ">");
  g_blank(g);
  g_add(g, "do");
  g->headers++;
}

/* Fragments that contain the sugar's text but are not sugar. */
static const char *const decoys[] = {
    "local s = 'parallel<mode=all> do'",
    "local s = \"parallel<mode=\\\"all\\\"> do\"",
    "local s = [[parallel<mode=all>\ndo]]",
    "local s = [=[ ]] parallel<mode=all> do ]=]",
    "-- parallel<mode=all> do",
    "--[[ parallel<mode=all>\n do ]]",
    "if parallel<x then y() end",
    "if parallel <= x then y() end",
    "local parallel <const> = 3",
    "t.parallel = 1",
    "local s = \"line\\z\n   parallel<mode=all> do\"",
};

static char *generate(int *headers) {
  gen g = {0};
  g.line = 1;
  g_add(&g, "");
  int depth = 0;
  int stmts = 5 + (int)rnd(20);
  for (int s = 0; s < stmts; s++) {
    switch (rnd(5)) {
    case 0:
      g_header(&g);
      g_marker(&g);
      depth++;
      break;
    case 1:
      if (depth) {
        g_add(&g, " end");
        depth--;
      }
      g_marker(&g);
      break;
    case 2:
      g_add(&g, " ");
      g_add(&g, decoys[rnd(sizeof decoys / sizeof decoys[0])]);
      g_add(&g, "\n"); /* ends the comment decoys */
      break;
    case 3: g_add(&g, "\n"); break;
    default: g_marker(&g); g_add(&g, "\n"); break;
    }
    if (rnd(2)) g_add(&g, "\n");
  }
  while (depth--) g_add(&g, " end");
  g_marker(&g);
  *headers = g.headers;
  return g.p;
}

TEST(generated_chunks_keep_every_line) {
  for (int iter = 0; iter < 400; iter++) {
    int headers = 0;
    char *src = generate(&headers);
    rw_result r = rw(src);
    CHECK_EQ_INT(r.r, headers ? TL_REWRITE_DONE : TL_REWRITE_SAME);
    if (r.r < 0) fprintf(stderr, "%s\n--\n%s\n", r.err, src);
    CHECK_EQ_INT(count_lines(r.out), count_lines(src));
    CHECK_EQ_INT(count_str(r.out, OPEN), headers);
    /* every marker m<k>_<line> stands on <line> */
    for (const char *p = r.out; (p = strstr(p, " m")); p += 2) {
      int k, line;
      if (sscanf(p, " m%d_%d()", &k, &line) != 2) continue;
      int at = 1;
      for (const char *q = r.out; q < p; q++)
        if (*q == '\n') at++;
      if (at != line) fprintf(stderr, "marker m%d_%d on line %d\n%s\n", k, line, at, src);
      CHECK_EQ_INT(at, line);
    }
    /* decoys come out verbatim */
    for (size_t d = 0; d < sizeof decoys / sizeof decoys[0]; d++)
      CHECK_EQ_INT(count_str(r.out, decoys[d]), count_str(src, decoys[d]));
    free(src);
    free(r.out);
  }
}

static const check_case cases[] = {
    CASE(rewrites_header_on_its_line),
    CASE(values_are_canonical),
    CASE(block_starting_with_paren_is_not_a_call),
    CASE(nested_and_repeated_scopes),
    CASE(header_over_lines_keeps_following_lines),
    CASE(crlf_line_breaks_are_kept),
    CASE(lone_breaks_in_header_stay_apart),
    CASE(no_sugar_means_no_copy),
    CASE(strings_and_comments_beside_sugar_are_untouched),
    CASE(origin_names_the_chunk_like_lua),
    CASE(errors_name_chunk_line_and_valid_values),
    CASE(header_cut_short_is_incomplete_at_eof),
    CASE(small_error_buffer_is_safe),
    CASE(generated_chunks_keep_every_line),
};
CHECK_MAIN(cases)
