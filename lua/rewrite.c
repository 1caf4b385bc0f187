/*
 * rewrite.c — the `parallel<key=value, ...> do` sugar, turned into plain Lua
 * 5.4 before a chunk is compiled (tl_rewrite, declared in rewrite.h).
 *
 *   parallel<mode=all, overdecompose=2> do
 * becomes
 *   do local __tycho_scope <close> = require("tycho").parallel({mode="all",
 *   overdecompose=2}, nil, "scope at file.lua:12");
 * written on the line of `parallel`, followed by exactly the newlines the
 * header spanned, so every line after it keeps its number and error messages
 * and tracebacks point at the user's lines.
 *
 * Why this shape:
 *  - `require("tycho")` rather than the global `tycho`: a module loaded by
 *    `require` in stock lua5.4 has no global `tycho` (scripts write
 *    `local tycho = require "tycho"`), and `require` of a loaded module is a
 *    table lookup.
 *  - The trailing `;` ends the local statement, so a block that starts with
 *    `(` (`do (f)() end`) is not read as a call of the scope object.
 *  - Values are checked here, at load time, with the runtime's own parser
 *    (ty_policy_set), and emitted in a canonical form (sizes as byte counts),
 *    so tycho.parallel never sees a value the sugar let through.
 *
 * Recognising the sugar: `parallel` `<` NAME `=` (the `=` not part of `==`)
 * is never valid Lua (a comparison cannot be assigned to, and an attribute
 * `local x <const> = ...` has `>` after the NAME), so it is unambiguous;
 * `parallel < x`, `parallel <= y`, `t.parallel`, `local parallel <const>` and
 * every occurrence inside a string, long string or comment are left alone.
 * The scanner below knows just enough of Lua's lexical grammar for that:
 * names, numbers, short strings with their escapes (\z, escaped newlines),
 * long brackets of any level, short and long comments. Line breaks count as
 * Lua counts them (\n, \r, \r\n, \n\r are one each).
 *
 * Invariants: the output equals the input outside the headers it replaced;
 * each replacement holds as many line breaks as the text it replaced (the
 * same bytes, emitted after the rewritten header, kept apart by a space where
 * two that were apart would otherwise read as one \r\n or \n\r). Nothing
 * here allocates except the output buffer; nothing depends on Lua.
 */
#include "rewrite.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tycho/task.h"
#include "tycho/tycho.h"

#define SUGAR "parallel"
#define SUGAR_LEN 8
#define IDSIZE 60 /* LUA_IDSIZE: room for a chunk's name in messages */
#define MAX_VALUE 64 /* bytes of one value ("max-concurrency", "256MB") */

/* ---- output ------------------------------------------------------------------ */

typedef struct obuf {
  char *p;
  size_t len, cap;
  bool failed;
} obuf;

static void ob_add(obuf *b, const char *s, size_t n) {
  if (b->failed) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) {
      b->failed = true;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void ob_str(obuf *b, const char *s) { ob_add(b, s, strlen(s)); }

/* A Lua string literal for arbitrary bytes: never a raw line break (it would
 * move the lines after it), decimal escapes of three digits (so a digit
 * after one cannot extend it). */
static void ob_quote(obuf *b, const char *s) {
  ob_add(b, "\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    char esc[8];
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      ob_add(b, esc, 2);
    } else if (c < 0x20 || c == 0x7f) {
      snprintf(esc, sizeof esc, "\\%03u", c);
      ob_add(b, esc, 4);
    } else {
      ob_add(b, (const char *)&c, 1);
    }
  }
  ob_add(b, "\"", 1);
}

/* ---- the scanner -------------------------------------------------------------- */

typedef struct scan {
  const char *s;
  size_t n;
  size_t i;         /* cursor */
  int line;         /* line of s[i], from 1 */
  const char *chunk;
  char *err;
  size_t errlen;
} scan;

static int at(const scan *z, size_t i) { return i < z->n ? (unsigned char)z->s[i] : -1; }
static bool is_nl(int c) { return c == '\n' || c == '\r'; }
static bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_alnum(int c) { return is_alpha(c) || is_digit(c); }
static bool is_space(int c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || is_nl(c); }

/* Skip one line break at z->i (\n, \r, \r\n or \n\r) and count it. */
static void skip_nl(scan *z) {
  int c = at(z, z->i);
  z->i++;
  int d = at(z, z->i);
  if (is_nl(d) && d != c) z->i++;
  z->line++;
}

/* At '[': the level of a long bracket `[==[` (number of '='), or -1 when it
 * is not one. */
static int long_open(const scan *z, size_t i) {
  size_t j = i + 1;
  while (at(z, j) == '=') j++;
  return at(z, j) == '[' ? (int)(j - i - 1) : -1;
}

/* Skip a long bracket of `level` starting at z->i ('['), to after its close
 * (or to the end of the chunk: Lua reports the unfinished one). */
static void skip_long(scan *z, int level) {
  z->i += (size_t)level + 2;
  while (z->i < z->n) {
    int c = at(z, z->i);
    if (is_nl(c)) {
      skip_nl(z);
    } else if (c == ']') {
      size_t j = z->i + 1;
      while (at(z, j) == '=') j++;
      if (at(z, j) == ']' && (int)(j - z->i - 1) == level) {
        z->i = j + 1;
        return;
      }
      z->i = j;
    } else {
      z->i++;
    }
  }
}

/* A short string from its quote at z->i. An unescaped line break ends it
 * (unfinished: Lua reports it); \z skips the spaces and line breaks after it. */
static void skip_string(scan *z) {
  int q = at(z, z->i++);
  while (z->i < z->n) {
    int c = at(z, z->i);
    if (c == q) {
      z->i++;
      return;
    }
    if (is_nl(c)) return;
    if (c == '\\') {
      z->i++;
      int e = at(z, z->i);
      if (is_nl(e)) {
        skip_nl(z);
      } else if (e == 'z') {
        z->i++;
        while (is_space(at(z, z->i))) {
          if (is_nl(at(z, z->i)))
            skip_nl(z);
          else
            z->i++;
        }
      } else if (e >= 0) {
        z->i++;
      }
      continue;
    }
    z->i++;
  }
}

/* At "--": a long or a short comment, up to (not including) its line break. */
static void skip_comment(scan *z) {
  z->i += 2;
  if (at(z, z->i) == '[') {
    int level = long_open(z, z->i);
    if (level >= 0) {
      skip_long(z, level);
      return;
    }
  }
  while (z->i < z->n && !is_nl(at(z, z->i))) z->i++;
}

/* Spaces, line breaks and comments. */
static void skip_blank(scan *z) {
  for (;;) {
    int c = at(z, z->i);
    if (is_nl(c)) {
      skip_nl(z);
    } else if (is_space(c)) {
      z->i++;
    } else if (c == '-' && at(z, z->i + 1) == '-') {
      skip_comment(z);
    } else {
      return;
    }
  }
}

/* A numeral (Lua's read_numeral: exponent signs after e/E, or p/P in hex). */
static void skip_number(scan *z) {
  const char *expo = "Ee";
  if (at(z, z->i) == '0' && (at(z, z->i + 1) == 'x' || at(z, z->i + 1) == 'X')) {
    expo = "Pp";
    z->i += 2;
  }
  for (;;) {
    int c = at(z, z->i);
    if (c >= 0 && (c == expo[0] || c == expo[1]) && (at(z, z->i + 1) == '+' || at(z, z->i + 1) == '-'))
      z->i += 2;
    else if (is_alnum(c) || c == '.')
      z->i++;
    else
      return;
  }
}

static size_t name_end(const scan *z, size_t i) {
  while (is_alnum(at(z, i))) i++;
  return i;
}

/* ---- messages ---------------------------------------------------------------- */

/* Lua's luaO_chunkid: "file.lua" for "@file.lua" (the tail, "...ile.lua", when
 * long), "stdin" for "=stdin", [string "first line..."] for a source. */
static void chunkid(char *out, size_t outlen, const char *source, size_t idsize) {
  if (outlen < idsize) idsize = outlen;
  if (!source) source = "?";
  size_t srclen = strlen(source);
  if (*source == '=') {
    snprintf(out, idsize, "%s", source + 1);
  } else if (*source == '@') {
    if (srclen - 1 < idsize)
      snprintf(out, idsize, "%s", source + 1);
    else
      snprintf(out, idsize, "...%s", source + srclen - (idsize - 4));
  } else {
    const char *nl = strchr(source, '\n');
    size_t room = idsize - sizeof "[string \"...\"]";
    size_t take = nl ? (size_t)(nl - source) : srclen;
    bool cut = nl != NULL || take >= room;
    if (take > room) take = room;
    snprintf(out, idsize, "[string \"%.*s%s\"]", (int)take, source, cut ? "..." : "");
  }
}

/* "near 'x'" for the token at i, "near <eof>" at the end. */
static void near_token(const scan *z, size_t i, char *out, size_t len) {
  if (i >= z->n) {
    snprintf(out, len, "near <eof>");
    return;
  }
  size_t j = i;
  if (is_alnum(at(z, j)))
    j = name_end(z, j);
  else
    j++;
  if (j - i > 32) j = i + 32;
  snprintf(out, len, "near '%.*s'", (int)(j - i), z->s + i);
}

static int fail(scan *z, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(scan *z, int line, const char *fmt, ...) {
  if (z->err && z->errlen) {
    char id[IDSIZE];
    chunkid(id, sizeof id, z->chunk, IDSIZE);
    int k = snprintf(z->err, z->errlen, "%s:%d: parallel<...>: ", id, line);
    if (k >= 0 && (size_t)k < z->errlen) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(z->err + k, z->errlen - (size_t)k, fmt, ap);
      va_end(ap);
    }
  }
  return TL_REWRITE_ERROR;
}

/* ---- the header ------------------------------------------------------------------ */

/* Keys a scope takes, with the name ty_policy_set knows them by and the
 * policy bit they set. */
static const struct key_info {
  const char *name;
  const char *core;
  unsigned bit;
} keys[] = {
    {"mode", "parallel", TY_POL_MODE},
    {"parallel", "parallel", TY_POL_MODE},
    {"overdecompose", "overdecompose", TY_POL_OVERDECOMPOSE},
    {"min_chunk", "min_chunk", TY_POL_MIN_CHUNK},
    {"favor", "favor", TY_POL_FAVOR},
    {"memory", "memory", TY_POL_MEMORY},
    {"stream", "stream", TY_POL_STREAM},
    {"fuse", "fuse", TY_POL_FUSE},
    {"fastmath", "fastmath", TY_POL_FASTMATH},
    {"target", "target", TY_POL_TARGET},
};
#define VALID_KEYS "mode (or parallel), overdecompose, min_chunk, favor, memory, stream, fuse, fastmath, target"

static const struct key_info *find_key(const char *s, size_t len) {
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
    if (strlen(keys[k].name) == len && memcmp(keys[k].name, s, len) == 0) return &keys[k];
  return NULL;
}

/* Characters of a bare value: words with dashes (max-concurrency), numbers,
 * sizes (64KiB, 1e6, 1.5GB). */
static bool is_value_char(int c) {
  return is_alnum(c) || c == '-' || c == '.' || c == '+';
}

/* Append `key=<canonical value>` for an axis just set in p. */
static void emit_field(obuf *b, unsigned bit, const ty_policy *p) {
  char v[64];
  switch (bit) {
  case TY_POL_MODE: ob_str(b, "mode="); ob_quote(b, ty_mode_name(p->mode)); return;
  case TY_POL_OVERDECOMPOSE: snprintf(v, sizeof v, "overdecompose=%d", p->overdecompose); break;
  case TY_POL_MIN_CHUNK: snprintf(v, sizeof v, "min_chunk=%lld", (long long)p->min_chunk); break;
  case TY_POL_FAVOR: ob_str(b, "favor="); ob_quote(b, ty_favor_name(p->favor)); return;
  case TY_POL_MEMORY: snprintf(v, sizeof v, "memory=%llu", (unsigned long long)p->memory); break;
  case TY_POL_STREAM: snprintf(v, sizeof v, "stream=\"%s\"", p->stream_relaxed ? "relaxed" : "strict"); break;
  case TY_POL_FUSE: snprintf(v, sizeof v, "fuse=%s", p->fuse ? "true" : "false"); break;
  case TY_POL_TARGET: ob_str(b, "target="); ob_quote(b, ty_target_name(p->target)); return;
  default: snprintf(v, sizeof v, "fastmath=%s", p->fastmath ? "true" : "false"); break;
  }
  ob_str(b, v);
}

/* Is there `parallel` `<` NAME `=` (not `==`) after the name ending at i? Only
 * looks; the caller parses. */
static bool starts_sugar(const scan *z0, size_t i) {
  scan z = *z0;
  z.i = i;
  skip_blank(&z);
  if (at(&z, z.i) != '<') return false;
  z.i++;
  skip_blank(&z);
  if (!is_alpha(at(&z, z.i))) return false;
  z.i = name_end(&z, z.i);
  skip_blank(&z);
  return at(&z, z.i) == '=' && at(&z, z.i + 1) != '=';
}

/* Parse the header from just after `parallel` up to and including `do`
 * (z->i ends after it) and append its replacement to b. `line` is the line
 * of `parallel`. */
static int parse_header(scan *z, int line, obuf *b) {
  char near[48];
  ty_policy p;
  memset(&p, 0, sizeof p);
  obuf fields = {0};
  skip_blank(z); /* starts_sugar saw '<' */
  z->i++;
  for (;;) {
    skip_blank(z);
    /* key */
    size_t k0 = z->i;
    if (!is_alpha(at(z, k0))) {
      near_token(z, k0, near, sizeof near);
      free(fields.p);
      return fail(z, z->line, "expected a key (" VALID_KEYS ") %s", near);
    }
    z->i = name_end(z, k0);
    const struct key_info *key = find_key(z->s + k0, z->i - k0);
    if (!key) {
      int kl = (int)(z->i - k0 > 32 ? 32 : z->i - k0);
      free(fields.p);
      return fail(z, z->line, "unknown key '%.*s' (valid keys: " VALID_KEYS ")", kl, z->s + k0);
    }
    skip_blank(z);
    if (at(z, z->i) != '=' || at(z, z->i + 1) == '=') {
      near_token(z, z->i, near, sizeof near);
      free(fields.p);
      return fail(z, z->line, "expected '=' after '%s' %s", key->name, near);
    }
    z->i++;
    skip_blank(z);
    /* value */
    int vline = z->line;
    char value[MAX_VALUE];
    size_t v0 = z->i, vlen;
    int q = at(z, v0);
    if (q == '"' || q == '\'') {
      size_t j = v0 + 1;
      while (j < z->n && at(z, j) != q && at(z, j) != '\\' && !is_nl(at(z, j))) j++;
      if (at(z, j) != q) {
        free(fields.p);
        if (j >= z->n) return fail(z, vline, "unfinished quoted value near <eof>");
        return fail(z, vline, "a quoted value for '%s' must be plain text on one line", key->name);
      }
      vlen = j - v0 - 1;
      v0++;
      z->i = j + 1;
    } else {
      size_t j = v0;
      while (is_value_char(at(z, j)) && !(at(z, j) == '-' && at(z, j + 1) == '-')) j++;
      vlen = j - v0;
      z->i = j;
      if (vlen == 0) {
        near_token(z, v0, near, sizeof near);
        free(fields.p);
        return fail(z, vline, "expected a value for '%s' %s", key->name, near);
      }
    }
    if (vlen >= sizeof value) {
      free(fields.p);
      return fail(z, vline, "the value of '%s' is too long (%zu bytes)", key->name, vlen);
    }
    memcpy(value, z->s + v0, vlen);
    value[vlen] = '\0';
    if (p.set & key->bit) {
      free(fields.p);
      return fail(z, vline, "'%s' is given twice%s", key->name,
                  key->bit == TY_POL_MODE ? " (mode and parallel are the same key)" : "");
    }
    /* memory=off: no budget */
    const char *v = value;
    if (key->bit == TY_POL_MEMORY && (!strcmp(v, "off") || !strcmp(v, "false") || !strcmp(v, "none")))
      v = "0";
    char msg[256];
    if (ty_policy_set(&p, key->core, v, msg, sizeof msg) != TY_OK) {
      free(fields.p);
      const char *core_key = key->core;
      /* the core names the key as it knows it; say the user's */
      if (strncmp(msg, core_key, strlen(core_key)) == 0 && strcmp(core_key, key->name) != 0)
        return fail(z, vline, "%s%s", key->name, msg + strlen(core_key));
      bool numeric = key->bit & (TY_POL_OVERDECOMPOSE | TY_POL_MIN_CHUNK | TY_POL_MEMORY);
      return fail(z, vline, "%s%s", msg,
                  numeric && is_alpha((unsigned char)value[0])
                      ? " (values here are literals: for one computed at run time, use "
                        "tycho.parallel{...})"
                      : "");
    }
    if (fields.len) ob_str(&fields, ", ");
    emit_field(&fields, key->bit, &p);
    /* ',' or '>' */
    skip_blank(z);
    int c = at(z, z->i);
    if (c == ',') {
      z->i++;
      skip_blank(z);
      if (at(z, z->i) == '>') c = '>'; /* a trailing comma */
      else continue;
    }
    if (c == '>') {
      z->i++;
      break;
    }
    near_token(z, z->i, near, sizeof near);
    free(fields.p);
    return fail(z, z->line, "expected ',' or '>' after the value of '%s' %s", key->name, near);
  }
  skip_blank(z);
  if (!(at(z, z->i) == 'd' && at(z, z->i + 1) == 'o' && !is_alnum(at(z, z->i + 2)))) {
    near_token(z, z->i, near, sizeof near);
    free(fields.p);
    return fail(z, z->line, "expected 'do' after the scope header %s", near);
  }
  z->i += 2;
  if (fields.failed) {
    free(fields.p);
    b->failed = true;
    return TL_REWRITE_NOMEM;
  }
  /* the origin, as explain prints it: "scope at file.lua:12" */
  char id[TY_MAX_ORIGIN - 20], origin[TY_MAX_ORIGIN];
  chunkid(id, sizeof id, z->chunk, sizeof id);
  snprintf(origin, sizeof origin, "scope at %s:%d", id, line);
  ob_str(b, "do local __tycho_scope <close> = require(\"tycho\").parallel({");
  if (fields.p) ob_str(b, fields.p);
  ob_str(b, "}, nil, ");
  ob_quote(b, origin);
  ob_str(b, ");");
  free(fields.p);
  return TL_REWRITE_DONE;
}

/* Copy the line breaks of the header s[from, to), each as it is (\r\n stays
 * \r\n), so that the lines after it keep their numbers. Lua reads \n\r and
 * \r\n as one break: a lone \n and a lone \r that were apart in the header
 * ("\n-- note\r") must not meet in the output, nor the header's last lone
 * break and the byte after `do` (`next`), so a space goes between them
 * (found by tests/fuzz/fuzz_rewrite). */
static void copy_breaks(obuf *b, const char *s, size_t from, size_t to, int next) {
  int lone = 0; /* the last break written, when it was a single byte */
  for (size_t i = from; i < to;) {
    char c = s[i];
    if (c != '\n' && c != '\r') {
      i++;
      continue;
    }
    size_t n = i + 1 < to && is_nl((unsigned char)s[i + 1]) && s[i + 1] != c ? 2 : 1;
    if (lone && lone != c) ob_add(b, " ", 1);
    ob_add(b, s + i, n);
    lone = n == 1 ? c : 0;
    i += n;
  }
  if (lone && is_nl(next) && next != lone) ob_add(b, " ", 1);
}

/* ---- the chunk ------------------------------------------------------------------- */

static bool has_sugar_word(const char *s, size_t n) {
  for (size_t i = 0; i + SUGAR_LEN <= n; i++)
    if (s[i] == 'p' && memcmp(s + i, SUGAR, SUGAR_LEN) == 0) return true;
  return false;
}

int tl_rewrite(const char *src, size_t len, const char *chunkname, char **out, size_t *outlen,
               char *err, size_t errlen) {
  *out = NULL;
  if (outlen) *outlen = 0;
  if (err && errlen) err[0] = '\0';
  if (!src || !has_sugar_word(src, len)) return TL_REWRITE_SAME;
  scan z = {.s = src, .n = len, .i = 0, .line = 1, .chunk = chunkname, .err = err, .errlen = errlen};
  obuf b = {0};
  size_t copied = 0; /* src[0, copied) is in b */
  int prev = 0;      /* the last token when it was '.' or ':' (a field or method name follows) */
  bool changed = false;
  while (z.i < z.n) {
    int c = at(&z, z.i);
    if (is_nl(c)) {
      skip_nl(&z);
      continue;
    }
    if (is_space(c)) {
      z.i++;
      continue;
    }
    int tok = 0;
    if (c == '-' && at(&z, z.i + 1) == '-') {
      skip_comment(&z);
      continue;
    } else if (c == '[' && long_open(&z, z.i) >= 0) {
      skip_long(&z, long_open(&z, z.i));
    } else if (c == '"' || c == '\'') {
      skip_string(&z);
    } else if (is_digit(c) || (c == '.' && is_digit(at(&z, z.i + 1)))) {
      skip_number(&z);
    } else if (is_alpha(c)) {
      size_t s0 = z.i;
      z.i = name_end(&z, s0);
      if (z.i - s0 == SUGAR_LEN && memcmp(src + s0, SUGAR, SUGAR_LEN) == 0 && prev == 0 &&
          starts_sugar(&z, z.i)) {
        int line = z.line;
        ob_add(&b, src + copied, s0 - copied);
        int r = parse_header(&z, line, &b);
        if (r != TL_REWRITE_DONE || b.failed) {
          free(b.p);
          if (r == TL_REWRITE_ERROR) return r;
          if (err && errlen) snprintf(err, errlen, "parallel<...>: not enough memory");
          return TL_REWRITE_NOMEM;
        }
        copy_breaks(&b, src, s0, z.i, at(&z, z.i));
        copied = z.i;
        changed = true;
      }
    } else if (c == '.' || c == ':') {
      /* '..', '...' and '::' are other tokens */
      if (at(&z, z.i + 1) == c) {
        z.i += 2;
        if (c == '.' && at(&z, z.i) == '.') z.i++;
      } else {
        tok = c;
        z.i++;
      }
    } else {
      z.i++;
    }
    prev = tok;
  }
  if (!changed) {
    free(b.p);
    return TL_REWRITE_SAME;
  }
  ob_add(&b, src + copied, len - copied);
  if (b.failed) {
    free(b.p);
    if (err && errlen) snprintf(err, errlen, "parallel<...>: not enough memory");
    return TL_REWRITE_NOMEM;
  }
  *out = b.p;
  if (outlen) *outlen = b.len;
  return TL_REWRITE_DONE;
}
