// libFuzzer's driver entry point (compiler-rt, linked by `-sanitize=fuzzer`). The harnesses call it from
// their own `main`, since SwiftPM names each executable's entry point after its module.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
