/* The header compiles alone, as C++ (and as C via header_only.c), warnings as errors. */
#include "lance_host.h"

int main(void) {
  LanceScanOptions o;
  if (lance_scan_options_init_v2(&o, sizeof(LanceScanOptions)) != LANCE_OK) return 1;
  return (LANCE_HOST_VERSION_MAJOR >= 0 && o.limit < 0) ? 0 : 1;
}
