/* The fork policy (README, "Conventions"): a child forked without exec after the library's
 * first use gets LANCE_ERR_FAILED_PRECONDITION naming the fork from every call — an open, and a
 * read of a stream it inherited — at once, never a hang; the parent keeps working.
 * argv[1] = warehouse directory. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

int main(int argc, char** argv) {
  CHECK(argc >= 2);
  Facts facts;
  facts_load(&facts, argv[1]);
  char uri[1024];
  facts_get(&facts, "people.uri", uri, sizeof uri);
  LanceDataset* ds = lance_dataset_open(uri, NULL, 0);
  CHECK(ds != NULL);
  LanceScanOptions o;
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof o));
  o.batch_size = 10;
  struct ArrowArrayStream st;
  CHECK_OK(lance_dataset_scan_v2(ds, &o, &st));
  fflush(stdout);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    alarm(20); /* a hang would be a failure, not a stuck test */
    LanceDataset* again = lance_dataset_open(uri, NULL, 0);
    if (again != NULL || lance_last_error_code() != LANCE_ERR_FAILED_PRECONDITION ||
        strstr(lance_last_error_message(), "fork") == NULL) {
      fprintf(stderr, "child: open did not fail clearly: %s\n", lance_last_error_message());
      _exit(3);
    }
    struct ArrowArray a;
    int rc = st.get_next(&st, &a);
    const char* msg = rc ? st.get_last_error(&st) : "";
    if (rc == 0 || msg == NULL || strstr(msg, "fork") == NULL) {
      fprintf(stderr, "child: an inherited stream did not fail clearly (rc %d): %s\n", rc, msg ? msg : "");
      _exit(4);
    }
    _exit(0);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  /* The parent is unaffected. */
  struct ArrowArray a;
  CHECK(st.get_next(&st, &a) == 0 && a.release != NULL);
  a.release(&a);
  st.release(&st);
  uint64_t n = 0;
  CHECK_OK(lance_dataset_count_rows(ds, &n));
  CHECK(n > 0);
  lance_dataset_free(ds);
  printf("fork_child: ok (the forked child failed clearly, the parent read on)\n");
  return 0;
}
