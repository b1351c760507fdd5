/* Shared pieces of the fuzz harnesses in tests/fuzz.
 *
 * Each harness is one file defining LLVMFuzzerInitialize() and LLVMFuzzerTestOneInput(), the
 * libFuzzer entry points. The same file is built twice: with clang and -fsanitize=fuzzer into
 * fuzz_NAME (DTSIM_ENABLE_FUZZ=ON, driven by libFuzzer), and with any compiler into
 * fuzz_replay_NAME, whose main() (replay_main.c) feeds it every file of the seed corpus and of
 * the crash reproducers, so the ctest label fuzz-regression keeps found crashes fixed.
 *
 * A harness rejects nothing itself: bad input must come back as a GError in DT_ERROR. What it
 * adds to the sanitizers are invariants checked with FUZZ_CHECK, which aborts (a finding) with
 * the harness file and line. */
#ifndef DTSIM_FUZZ_H
#define DTSIM_FUZZ_H

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with a message naming the harness file, line and the failed condition. */
#define FUZZ_CHECK(cond, ...)                                                                  \
  do {                                                                                         \
    if (!(cond))                                                                               \
      fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                                       \
  } while (0)

G_NORETURN void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

/* Common set-up for every harness: GLib criticals and warnings become aborts (a
 * g_return_if_fail reached from input is a finding), and DTSIM_DATA_DIR points at the source
 * tree when unset, so catalog names resolve. */
void fuzz_init(void);

/* A NUL-terminated copy of the input (g_free it). */
char *fuzz_text(const uint8_t *data, size_t size);

/* Writes the input to this process's temporary file, whose name ends in `suffix` (".ini"), and
 * returns its path (owned by the harness; removed at exit). Loaders that take only a path read
 * the input from there. */
const char *fuzz_temp_file(const char *suffix, const uint8_t *data, size_t size);

/* Counts an input the loader accepted; the replay driver reports the count, so a corpus that
 * no longer reaches past the parser shows. */
void fuzz_accepted(void);
unsigned fuzz_accepted_count(void);

/* Checks that a failure is a DT_ERROR with a non-empty message that names `where` (a file
 * path or option; NULL: no check), as every user-facing message must. */
void fuzz_check_error(const GError *error, const char *where);

#endif
