/* Turn a shared library into a loadable DuckDB extension file: append the 512-byte footer
 * DuckDB reads before loading (eight 32-byte metadata fields, last field first, then a
 * 256-byte signature area, left empty: the extension is unsigned, so DuckDB loads it only with
 * `allow_unsigned_extensions`). Fields: magic "4", platform, C API version, extension version,
 * ABI type "C_STRUCT".
 *   append_footer <in.so> <out.duckdb_extension> <platform> <capi version> <extension version> */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int copy_file(const char* from, FILE* out) {
  FILE* in = fopen(from, "rb");
  if (!in) return 0;
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0)
    if (fwrite(buf, 1, n, out) != n) break;
  int ok = !ferror(in) && !ferror(out);
  fclose(in);
  return ok;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s <in.so> <out> <platform> <capi version> <extension version>\n", argv[0]);
    return 2;
  }
  const char* fields[8] = {"4", argv[3], argv[4], argv[5], "C_STRUCT", "", "", ""};
  unsigned char footer[512];
  memset(footer, 0, sizeof footer);
  for (int i = 0; i < 8; i++) {
    size_t len = strlen(fields[i]);
    if (len >= 32) {
      fprintf(stderr, "metadata field '%s' is longer than 31 bytes\n", fields[i]);
      return 1;
    }
    memcpy(footer + (7 - i) * 32, fields[i], len); /* stored last field first */
  }
  FILE* out = fopen(argv[2], "wb");
  if (!out || !copy_file(argv[1], out) || fwrite(footer, 1, sizeof footer, out) != sizeof footer) {
    perror(argv[2]);
    return 1;
  }
  return fclose(out) == 0 ? 0 : 1;
}
