/*===- consumer.c - a C program built against an installed attnc ---------===*\
|*                                                                            *|
|* Built by scripts/install-check.sh with only the installed tree (through    *|
|* pkg-config or find_package(attnc)): the C API without a GPU. Exits 0 when  *|
|* all is well, 1 with a line on stderr naming what is not.                   *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "attnc/attnc_c.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;

static void expect(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "consumer.c: %s (%s)\n", what, attnc_last_error());
    ++failures;
  }
}

int main(void) {
  attnc_variant_spec spec;
  attnc_variant variant = NULL;
  attnc_status status;

  /* The header the consumer was built with is the library's. */
  expect(attnc_api_version() == ATTNC_C_API_VERSION,
         "libattnc.so's C API version is not attnc_c.h's");

  attnc_variant_spec_init(&spec);
  spec.query_heads = 32;
  spec.kv_heads = 8;
  spec.head_dim = 128;
  spec.causal = 1;
  status = attnc_variant_from_spec(&spec, &variant);
  expect(status == ATTNC_OK, "attnc_variant_from_spec failed");
  if (status == ATTNC_OK)
    expect(strstr(attnc_variant_mlir(variant), "attn.") != NULL,
           "the variant's MLIR has no attn op");
  expect(attnc_variant_destroy(variant) == ATTNC_OK,
         "attnc_variant_destroy failed");

  status = attnc_variant_from_mlir("no IR", &variant);
  expect(status == ATTNC_PARSE_ERROR && attnc_last_error()[0] != '\0',
         "attnc_variant_from_mlir took text that is no IR");

  if (failures)
    return 1;
  printf("attnc C consumer: ok (C API version %d)\n", attnc_api_version());
  return 0;
}
